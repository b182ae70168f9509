#pragma once
// The one seam between gpuenv and the machine: files, commands, environment and dynamic libraries.
// Probes receive a System&; tests pass a FakeSystem built from a fixture host tree.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "util/expected.hpp"

namespace gpuenv::system {

/// What a finished (or killed) command left behind.
struct CommandResult {
  int exit_code = -1;      ///< -1 when the command did not run to an exit
  bool timed_out = false;  ///< killed after the timeout
  bool not_found = false;  ///< the program does not exist or is not executable
  std::string out;         ///< standard output
  std::string err;         ///< standard error
  // After the fields above, so that positional initialisers {exit_code, timed_out, not_found, out, err} still work.
  int signal = 0;          ///< the signal that killed it (exit_code is then -1); 0 when it exited
  bool truncated = false;  ///< more output than k_command_output_cap: the rest was read and dropped
};

/// The most of each of a command's stdout and stderr that is kept: a command that floods its output (a looping
/// tool, a kernel log gone wild) cannot take gpuenv's memory with it.
inline constexpr std::size_t k_command_output_cap = 16u << 20;

/// A library opened at run time; symbols are looked up by name. Closed on destruction.
class DynamicLibrary {
 public:
  virtual ~DynamicLibrary() = default;
  /// The address of `symbol`, or nullptr when the library does not export it.
  virtual void* symbol(const std::string& name) = 0;
};

/// Why a library could not be opened (the loader's message), or the library.
using LibraryResult = util::Expected<std::unique_ptr<DynamicLibrary>>;

/// One plain HTTP/1.1 request (no TLS, no redirects): what link-local metadata services need.
struct HttpRequest {
  std::string host;  ///< a numeric IPv4 address ("169.254.169.254"); names are not resolved
  unsigned port = 80;
  std::string method = "GET";
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  ///< sent with its Content-Length (Azure's POST of StartRequests); usually empty
};

/// The status and body of an answered request.
struct HttpResponse {
  int status = 0;
  std::string body;
};

/// What a file is, which fixes how much of it gpuenv reads (docs/reliability.md, "Limits").
enum class FileKind {
  host_text,   ///< host configuration and package databases (/etc, /var/lib/dpkg, CUDA's version files): 32 MiB
  profile,     ///< a profile or a data file a user gives: 1 MiB
  report,      ///< a captured tool report (`nvidia-smi -q -x`): 64 MiB
  kernel_log,  ///< a kernel log file: only its last 4 MiB (the recent window doctor scans for Xid events) are read
};

/// The cap for one kind of file; /proc and /sys files (whose size stat cannot tell) get `k_pseudo_file_limit`.
struct ReadLimit {
  std::uint64_t max_bytes = 0;
  bool keep_tail = false;  ///< read the last max_bytes (from a line start) instead of refusing a larger file
  std::string_view what;   ///< "a profile", for messages
};

/// The limit of `kind`.
ReadLimit read_limit(FileKind kind);
/// The cap on a /proc or /sys file: these are read until end of file, since their size is not known in advance.
constexpr std::uint64_t k_pseudo_file_limit = 4u << 20;
/// The error for a file of `size` bytes over `limit`, naming the path, the limit and what to do.
util::Error too_large_error(const std::string& path, std::uint64_t size, const ReadLimit& limit);
/// `text` cut to `limit` as a reader would: the tail from a line start for kernel logs, else an Error over the cap.
util::Expected<std::string> apply_read_limit(const std::string& path, std::string text, const ReadLimit& limit);

/// Who owns a path and its permission bits, as lstat(2) reports them (a symlink is not followed).
struct PathStatus {
  std::uint32_t uid = 0;
  std::uint32_t mode = 0;  ///< the permission bits (07777)
  bool directory = false;
  bool symlink = false;
};

/// Everything gpuenv reads from or does to the machine goes through this interface.
class System {
 public:
  virtual ~System() = default;

  /// The whole file at `path`, a host text file; an input Error naming the path when it cannot be read.
  virtual util::Expected<std::string> read_file(const std::string& path) = 0;
  /// The file at `path` within the cap of `kind`: a regular file only (no FIFO, device or socket), an input Error
  /// naming the path and the limit above it. The default applies the cap to what read_file(path) returns.
  virtual util::Expected<std::string> read_file(const std::string& path, FileKind kind) {
    auto text = read_file(path);
    if (!text) return text;
    return apply_read_limit(path, std::move(*text), read_limit(kind));
  }
  /// True when `path` exists (file, directory or device node).
  virtual bool exists(const std::string& path) = 0;
  /// Names (not paths) in directory `path`, sorted; empty when it is not a readable directory.
  virtual std::vector<std::string> list_directory(const std::string& path) = 0;
  /// The environment variable `name`, if set.
  virtual std::optional<std::string> environment(const std::string& name) = 0;
  /// Every variable of the environment as NAME=value pairs, in order (a name given twice is listed twice;
  /// environment(name) answers the first): what a library that reads variables by prefix (NCCL_*) sees.
  virtual std::vector<std::pair<std::string, std::string>> environment_variables() = 0;
  /// Removes `name` from this process's environment, so that a library reading it with getenv (NCCL) no longer sees
  /// it. POSIX unsetenv is not safe while another thread reads the environment: call it before the library's
  /// threads start (nccl/allreduce.cpp, NCCL_COMM_ID, is the one caller).
  virtual void unset_environment(const std::string& name) = 0;
  /// Runs argv[0] with the rest as arguments; never through a shell. A name without a slash is looked up in the
  /// safe search path (`program_search_path`: PATH's absolute entries, then fixed system directories); the child
  /// starts in "/" with the scrubbed environment of `child_environment`, so neither the caller's working directory
  /// nor its variables (PYTHONPATH, LD_PRELOAD, APT_CONFIG, HOME, ...) steer what a root child loads.
  virtual CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
  /// Opens a shared library by soname or path with dlopen.
  virtual LibraryResult load_library(const std::string& name) = 0;
  /// Bytes available to an unprivileged user on the filesystem holding `path`; nullopt when unknown.
  virtual std::optional<std::uint64_t> available_bytes(const std::string& path) = 0;
  /// Writes `contents` to `path` with permission bits `mode` (whatever the umask) through a hidden temporary file
  /// (".name.XXXXXX", created O_EXCL|O_NOFOLLOW) in the same directory, fsync'ed and renamed through a directory
  /// descriptor opened O_NOFOLLOW, so readers never see half a file, scanners that skip dot files never see it at
  /// all, and a planted symlink redirects nothing. As root, a directory others than root can write is refused
  /// unless it is sticky (/tmp) and the target, if present, is root's (docs/security.md).
  virtual util::Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents,
                                                     unsigned mode) = 0;
  /// The same with mode 0644.
  util::Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents) {
    return write_file_atomic(path, contents, 0644);
  }
  /// Renames the file `from` to `to` in the same filesystem (replacing `to`); an input Error naming both when it
  /// fails. The default answers "not supported".
  virtual util::Expected<util::Ok> rename_file(const std::string& from, const std::string& to) {
    return util::Error::input("cannot rename " + from + " to " + to + ": not supported by this System");
  }
  /// Removes the file `path`; Ok when there was none. The default answers "not supported".
  virtual util::Expected<util::Ok> remove_file(const std::string& path) {
    return util::Error::input("cannot remove " + path + ": not supported by this System");
  }
  /// Why gpuenv must not load or trust the file at `path` that a variable or flag named (a library, a data
  /// directory): it, or a directory above it, is owned by someone other than root and the user running gpuenv, or
  /// is writable by group or others (a sticky directory excepted). nullopt when only root or the user can change
  /// it, or when it does not exist (the caller's own read reports that).
  virtual std::optional<std::string> trust_problem(const std::string& path) = 0;
  /// The kernel's own log records, as /dev/kmsg gives them ("<prio>,<seq>,<usec>,<flags>;<text>" lines, one per
  /// record, dictionary lines indented; Documentation/ABI/testing/dev-kmsg): an input Error when the device cannot
  /// be opened (no CAP_SYSLOG under kernel.dmesg_restrict, or no /dev/kmsg in a container).
  virtual util::Expected<std::string> read_kernel_messages() {
    return util::Error::input("/dev/kmsg is not available to this System");
  }
  /// Sends `request` and reads the whole answer within `timeout` (connect included); an Error naming the host
  /// when it cannot connect, times out or the answer is not HTTP. The default answers "not supported".
  virtual util::Expected<HttpResponse> http_request(const HttpRequest& request, std::chrono::milliseconds timeout) {
    (void)timeout;
    return util::Error::input("HTTP is not available to reach " + request.host);
  }
  /// The monotonic clock that limits and deadlines are measured on (tests substitute a clock they move).
  virtual std::chrono::steady_clock::time_point now() { return std::chrono::steady_clock::now(); }
  /// The owner and mode of `path` itself (lstat); nullopt when it does not exist or cannot be read.
  virtual std::optional<PathStatus> path_status(const std::string& path) {
    (void)path;
    return std::nullopt;
  }
  /// Waits `duration` (a bounded retry's pause; tests substitute a clock they move instead of waiting).
  virtual void sleep_for(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }
};

/// The real machine. `root` ("" or "/") reads files under another tree; with a root set,
/// nothing is executed and no library is loaded (inspecting an image must not run its code).
std::unique_ptr<System> make_real_system(const std::string& root = "");
/// The real machine's files under `root` (`doctor --root`): a usage Error unless `root` is a directory. Paths are
/// resolved inside the root: absolute symlink targets are re-rooted and `..` stops at the root.
util::Expected<std::unique_ptr<System>> make_rooted_system(const std::string& root);

}  // namespace gpuenv::system
