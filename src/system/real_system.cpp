#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <boost/process/async_pipe.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

#include "system/abandon.hpp"
#include "system/child_process.hpp"
#include "system/files.hpp"
#include "system/http.hpp"
#include "system/system.hpp"

namespace gpuenv::system {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;
using util::Error;
using util::Expected;

class RealLibrary final : public DynamicLibrary {
 public:
  explicit RealLibrary(void* handle) : m_handle(handle) {}
  ~RealLibrary() override { dlclose(m_handle); }
  RealLibrary(const RealLibrary&) = delete;
  RealLibrary& operator=(const RealLibrary&) = delete;
  void* symbol(const std::string& name) override { return dlsym(m_handle, name.c_str()); }

 private:
  void* m_handle;
};

/// Polls for the child's exit. Boost 1.74's child::wait_for waits on SIGCHLD with sigtimedwait and can miss
/// a signal that arrived before it started waiting, sleeping out the whole timeout; polling cannot.
bool wait_with_timeout(bp::child& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  std::error_code error;
  while (child.running(error) && !error) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  return true;
}

/// Reads a pipe to its end and keeps the first k_command_output_cap bytes; the rest is read and dropped, so a
/// flooding child never blocks on a full pipe and never takes gpuenv's memory.
class CappedReader {
 public:
  explicit CappedReader(bp::async_pipe& pipe) : m_pipe(pipe) {}
  void start() {
    m_pipe.async_read_some(boost::asio::buffer(m_chunk),
                           [this](const boost::system::error_code& error, std::size_t size) { on_read(error, size); });
  }
  std::string text;
  bool truncated = false;

 private:
  void on_read(const boost::system::error_code& error, std::size_t size) {
    const std::size_t room = k_command_output_cap - text.size();
    text.append(m_chunk.data(), std::min(size, room));
    if (size > room) truncated = true;
    if (!error) start();
  }
  bp::async_pipe& m_pipe;
  std::array<char, 64 * 1024> m_chunk{};
};

/// How long a killed child gets to die. One stuck in the kernel (nvidia-smi in a hung driver: D state) ignores
/// SIGKILL until the driver lets go; waiting for it would hang gpuenv, so it is left behind instead.
constexpr std::chrono::milliseconds k_reap_wait{2000};

/// SIGKILL, then reap; a child that does not die within k_reap_wait is detached and the work noted abandoned.
void kill_and_reap(bp::child& child) {
  ::kill(child.id(), SIGKILL);
  if (wait_with_timeout(child, k_reap_wait)) return;
  child.detach();
  note_abandoned_work();
}

/// The home directory of the user running gpuenv, from the password database ("/" when it has none).
std::string own_home() {
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::array<char, 4096> buffer{};
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_dir == nullptr)
    return "/";
  return found->pw_dir;
}

/// The directories root may run programs from: only those no one else can add a program to (a PATH entry a user
/// owns or can write would make root run that user's `dmesg`). Anyone else searches every directory of theirs.
DirectoryCheck searchable_directories() {
  if (::geteuid() != 0) return {};
  return [](const std::string& directory) { return !program_directory_problem(directory); };
}

/// The PATH variable of this process, read by its exact name.
std::optional<std::string> own_path() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? std::optional<std::string>(path) : std::nullopt;
}

/// The scrubbed environment every child gets (child_process.hpp).
bp::environment child_environment_block() {
  bp::environment out;
  for (const auto& [name, value] :
       child_environment(process_environment(), own_home(), ::geteuid() == 0, searchable_directories()))
    out[name] = value;
  return out;
}

/// Runs `program` with stdin closed and stdout/stderr captured (each capped), killing it at `timeout`; in "/" with
/// the scrubbed environment, so neither the caller's directory nor its variables reach the child.
void run_program(const boost::filesystem::path& program, const std::vector<std::string>& args,
                 std::chrono::milliseconds timeout, CommandResult& result) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  boost::asio::io_context io;
  bp::async_pipe out_pipe(io);
  bp::async_pipe err_pipe(io);
  CappedReader out(out_pipe);
  CappedReader err(err_pipe);
  bp::child child(program, bp::args(args), child_environment_block(), bp::start_dir("/"), bp::std_in.close(),
                  bp::std_out > out_pipe, bp::std_err > err_pipe);
  out.start();
  err.start();
  // The I/O loop runs on its own thread so the wait below can give up at the timeout.
  auto io_done = std::async(std::launch::async, [&io] { io.run(); });
  if (!wait_with_timeout(child, timeout)) {
    result.timed_out = true;
    kill_and_reap(child);
  } else if (const int status = child.native_exit_code(); WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = child.exit_code();
  }
  // A grandchild may still hold the pipes open: read until they close or the time is up, then stop reading.
  const auto left = std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(0));
  if (io_done.wait_for(left) != std::future_status::ready) io.stop();
  io_done.wait();
  if (!result.timed_out) {
    result.out = std::move(out.text);
    result.err = std::move(err.text);
    result.truncated = out.truncated || err.truncated;
  }
}

class RealSystem final : public System {
 public:
  explicit RealSystem(std::string root) : m_root(std::move(root)) {}

  Expected<std::string> read_file(const std::string& path) override { return read_file(path, FileKind::host_text); }

  Expected<std::string> read_file(const std::string& path, FileKind kind) override {
    GPUENV_TRY_ASSIGN(auto full, under_root(path));
    // Under a root the path is resolved already: a symlink in its place now is a race, refused by O_NOFOLLOW.
    return read_bounded(full, path, read_limit(kind), !m_root.empty());
  }

  bool exists(const std::string& path) override {
    auto full = under_root(path);
    if (!full) return false;
    std::error_code ignored;
    return fs::exists(fs::symlink_status(*full, ignored)) || fs::exists(*full, ignored);
  }

  std::vector<std::string> list_directory(const std::string& path) override {
    std::vector<std::string> names;
    auto full = under_root(path);
    if (!full) return names;
    std::error_code error;
    for (fs::directory_iterator it(*full, error), end; !error && it != end; it.increment(error)) {
      names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::optional<std::string> environment(const std::string& name) override {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  std::vector<std::pair<std::string, std::string>> environment_variables() override { return process_environment(); }

  void unset_environment(const std::string& name) override { ::unsetenv(name.c_str()); }

  CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override {
    CommandResult result;
    if (argv.empty() || !m_root.empty()) {
      result.not_found = true;
      return result;
    }
    const boost::filesystem::path program = resolve_program(argv[0]);
    if (program.empty()) {
      result.not_found = true;
      return result;
    }
    try {
      run_program(program, std::vector<std::string>(argv.begin() + 1, argv.end()), timeout, result);
    } catch (const std::exception& e) {
      result.not_found = true;
      result.err = e.what();
    }
    return result;
  }

  LibraryResult load_library(const std::string& name) override {
    if (!m_root.empty())
      return Error::input("not loading " + name + ": inspecting a tree with --root loads nothing from it");
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* message = dlerror();
      return Error::input(message != nullptr ? message : ("cannot load " + name));
    }
    return std::unique_ptr<DynamicLibrary>(std::make_unique<RealLibrary>(handle));
  }

  std::optional<std::uint64_t> available_bytes(const std::string& path) override {
    auto full = under_root(path);
    struct statvfs stats {};
    if (!full || ::statvfs(full->c_str(), &stats) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(stats.f_bavail) * stats.f_frsize;
  }

  std::optional<PathStatus> path_status(const std::string& path) override {
    auto full = under_root(path);
    struct stat info {};
    if (!full || ::lstat(full->c_str(), &info) != 0) return std::nullopt;
    return PathStatus{static_cast<std::uint32_t>(info.st_uid), static_cast<std::uint32_t>(info.st_mode & 07777),
                      S_ISDIR(info.st_mode), S_ISLNK(info.st_mode)};
  }

  Expected<HttpResponse> http_request(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    return send_http_request(request, timeout);
  }

  Expected<util::Ok> rename_file(const std::string& from, const std::string& to) override {
    if (!m_root.empty()) return Error::input("not renaming " + from + ": --root inspects a tree, it changes nothing");
    if (::rename(from.c_str(), to.c_str()) != 0)
      return Error::input("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
    return util::Ok{};
  }

  Expected<util::Ok> remove_file(const std::string& path) override {
    if (!m_root.empty()) return Error::input("not removing " + path + ": --root inspects a tree, it changes nothing");
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Error::input("cannot remove " + path + ": " + std::strerror(errno));
    return util::Ok{};
  }

  Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents, unsigned mode) override {
    return write_file_atomically(path, contents, mode);
  }

  std::optional<std::string> trust_problem(const std::string& path) override {
    return path_trust_problem(path, ::geteuid());
  }

  Expected<std::string> read_kernel_messages() override {
    if (!m_root.empty()) return Error::input("not reading /dev/kmsg: --root inspects the files of a tree only");
    return read_kmsg_device("/dev/kmsg");
  }

 private:
  /// The host path of `path`: itself, or resolved inside the inspected tree (symlinks cannot leave it).
  Expected<std::string> under_root(const std::string& path) const {
    if (m_root.empty()) return path;
    return resolve_in_root(m_root, path);
  }

  /// `name` itself when it has a slash (made absolute: the child starts in "/"), else the first executable regular
  /// file of that name in the safe search path (root's: directories only root can change); empty when there is none.
  /// PATH is read by its exact name (Boost's search_path also took a variable spelled `path`).
  static boost::filesystem::path resolve_program(const std::string& name) {
    const auto executable = [](const std::string& path) {
      struct stat st {};
      return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    };
    if (name.find('/') != std::string::npos) {
      std::error_code error;
      const std::string absolute = fs::absolute(name, error).string();
      return !error && executable(absolute) ? boost::filesystem::path(absolute) : boost::filesystem::path();
    }
    if (name.empty() || name == "." || name == "..") return {};
    for (const std::string& directory : program_search_path(own_path(), searchable_directories())) {
      const std::string candidate = directory + "/" + name;
      if (executable(candidate)) return boost::filesystem::path(candidate);
    }
    return {};
  }

  std::string m_root;
};

}  // namespace

std::unique_ptr<System> make_real_system(const std::string& root) {
  return std::make_unique<RealSystem>(root == "/" ? std::string() : root);
}

util::Expected<std::unique_ptr<System>> make_rooted_system(const std::string& root) {
  std::error_code error;
  const fs::file_status status = fs::status(root, error);
  if (error || !fs::is_directory(status)) {
    const std::string what = error ? "no such directory" : "not a directory";
    return Error::usage("--root " + root + ": " + what, "give the directory at the top of the tree to inspect");
  }
  // The canonical path: the tree's own top may be reached through a symlink, but nothing below it may leave it.
  const fs::path top = fs::canonical(root, error);
  if (error) return Error::usage("--root " + root + ": " + error.message());
  return std::unique_ptr<System>(make_real_system(top.string()));
}

}  // namespace gpuenv::system
