#include <dlfcn.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

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

class RealSystem final : public System {
 public:
  explicit RealSystem(std::string root) : m_root(std::move(root)) {}

  Expected<std::string> read_file(const std::string& path) override { return read_file(path, FileKind::host_text); }

  Expected<std::string> read_file(const std::string& path, FileKind kind) override {
    auto full = under_root(path);
    if (!full) return full.error();
    // Under a root the path is resolved already: a symlink in its place now is a race, refused by O_NOFOLLOW.
    return read_bounded(*full, path, read_limit(kind), !m_root.empty());
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
      boost::asio::io_context io;
      std::future<std::string> out;
      std::future<std::string> err;
      std::vector<std::string> args(argv.begin() + 1, argv.end());
      bp::child child(program, bp::args(args), bp::std_in.close(), bp::std_out > out, bp::std_err > err, io);
      // Run the I/O loop on its own thread so the wait below can give up after the timeout.
      auto io_done = std::async(std::launch::async, [&io] { io.run(); });
      if (!wait_with_timeout(child, timeout)) {
        result.timed_out = true;
        std::error_code ignored;
        child.terminate(ignored);
        io.stop();  // a grandchild may still hold the pipes open; stop reading them
      } else {
        result.exit_code = child.exit_code();
      }
      io_done.wait();
      if (!result.timed_out) {
        result.out = out.get();
        result.err = err.get();
      }
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

  Expected<HttpResponse> http_request(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    return send_http_request(request, timeout);
  }

  Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents) override {
    const fs::path target(path);
    // A hidden name in the same directory: readers that scan the directory (node_exporter's textfile collector,
    // NFD's features.d) skip dot files, and the rename stays on one filesystem.
    const fs::path temporary =
        target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      if (!out) return Error::input("cannot write " + temporary.string() + ": " + std::strerror(errno));
      out << contents;
      out.flush();
      if (!out) {
        std::error_code ignored;
        fs::remove(temporary, ignored);
        return Error::input("cannot write " + temporary.string() + ": " + std::strerror(errno));
      }
    }
    std::error_code error;
    fs::rename(temporary, target, error);
    if (error) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return Error::input("cannot rename " + temporary.string() + " to " + path + ": " + error.message());
    }
    return util::Ok{};
  }

 private:
  /// The host path of `path`: itself, or resolved inside the inspected tree (symlinks cannot leave it).
  Expected<std::string> under_root(const std::string& path) const {
    if (m_root.empty()) return path;
    return resolve_in_root(m_root, path);
  }

  static boost::filesystem::path resolve_program(const std::string& name) {
    if (name.find('/') != std::string::npos) {
      return ::access(name.c_str(), X_OK) == 0 ? boost::filesystem::path(name) : boost::filesystem::path();
    }
    return bp::search_path(name);
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
