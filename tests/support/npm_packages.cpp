#include "support/npm_packages.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "support/text_files.hpp"
#include "system/system.hpp"

namespace gpuenv::testing {
namespace {

namespace fs = std::filesystem;

/// An exclusive flock on `path` for the lifetime of the object (released when the descriptor closes).
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

/// Runs `npm ci` into `prefix` with this process's whole environment, its stderr in `errors_file`, for at most
/// `timeout`; npm's exit code, or -1 when it was killed at the timeout. npm is the developer's tool, not a child
/// gpuenv starts, so it must not get the scrubbed environment System::run gives every child (child_process.hpp):
/// behind a TLS-intercepting proxy NODE_EXTRA_CA_CERTS names the CA node needs, and without it each fetch here waited
/// 70 s and `npm ci` took 143 s instead of 4 s (`env -i` runs with and without it); npm_config_* settings likewise.
int run_npm_ci(const fs::path& prefix, const fs::path& errors_file, std::chrono::seconds timeout) {
  namespace bp = boost::process;
  bp::child npm(bp::search_path("npm"), bp::args({"ci", "--prefix", prefix.string(), "--no-audit", "--no-fund"}),
                bp::std_in.close(), bp::std_out > bp::null, bp::std_err > errors_file.string());
  if (!npm.wait_for(timeout)) {
    npm.terminate();
    return -1;
  }
  return npm.exit_code();
}

/// npm's error lines: the tail of its output without the `npm warn` lines that come first (engine warnings).
std::string npm_errors(const std::string& output) {
  std::string errors;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (!line.starts_with("npm warn")) errors += line + "\n";
  return errors.size() > 600 ? errors.substr(errors.size() - 600) : errors;
}

}  // namespace

fs::path npm_ci_once(const fs::path& source_dir, const fs::path& prefix, std::string& why) {
  auto system = system::make_real_system();
  if (system->run({"node", "--version"}, std::chrono::seconds(30)).exit_code != 0 ||
      system->run({"npm", "--version"}, std::chrono::seconds(60)).exit_code != 0) {
    why = "node and npm are not both installed";
    return {};
  }
  fs::create_directories(prefix);
  const FileLock lock(prefix / ".install.lock");
  // The marker holds the lock file it was made from and is written only after `npm ci` succeeded.
  const fs::path marker = prefix / ".installed-lock.json";
  const std::string wanted = read_text(source_dir / "package-lock.json");
  if (fs::exists(marker) && read_text(marker) == wanted) return prefix / "node_modules";
  // A failed `npm ci` (offline: about a minute of retries) is not tried again by every test of the same run: its
  // reason is kept for ten minutes with the lock file it was for.
  const fs::path failed = prefix / ".failed-install";
  std::error_code ignored;
  if (fs::exists(failed) && read_text(failed).starts_with(wanted) &&
      fs::file_time_type::clock::now() - fs::last_write_time(failed, ignored) < std::chrono::minutes(10)) {
    why = read_text(failed).substr(wanted.size());
    return {};
  }

  fs::remove(marker);
  fs::copy_file(source_dir / "package.json", prefix / "package.json", fs::copy_options::overwrite_existing);
  fs::copy_file(source_dir / "package-lock.json", prefix / "package-lock.json", fs::copy_options::overwrite_existing);
  const fs::path errors_file = prefix / ".npm-ci-errors";
  if (run_npm_ci(prefix, errors_file, std::chrono::seconds(300)) != 0) {
    why = "`npm ci` in " + prefix.string() + " failed (offline?): " + npm_errors(read_text(errors_file));
    std::ofstream(failed, std::ios::binary) << wanted << why;
    return {};
  }
  fs::remove(failed, ignored);
  std::ofstream(marker, std::ios::binary) << wanted;
  return prefix / "node_modules";
}

}  // namespace gpuenv::testing
