#include "support/npm_packages.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

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
  const auto install =
      system->run({"npm", "ci", "--prefix", prefix.string(), "--no-audit", "--no-fund"}, std::chrono::seconds(300));
  if (install.exit_code != 0) {
    why = "`npm ci` in " + prefix.string() + " failed (offline?): " + install.err.substr(0, 400);
    std::ofstream(failed, std::ios::binary) << wanted << why;
    return {};
  }
  fs::remove(failed, ignored);
  std::ofstream(marker, std::ios::binary) << wanted;
  return prefix / "node_modules";
}

}  // namespace gpuenv::testing
