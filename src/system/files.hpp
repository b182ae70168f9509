#pragma once
// The real file readers behind RealSystem (bounded_read.cpp, root_path.cpp): internal to the system module.

#include <unistd.h>

#include <string>

#include "system/system.hpp"

namespace gpuenv::system {

/// Closes a file descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : m_fd(fd) {}
  ~FileDescriptor() {
    if (m_fd >= 0) ::close(m_fd);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return m_fd; }
  /// Closes now and returns what close(2) says (a delayed write error on NFS shows here).
  int close() {
    const int result = ::close(m_fd);
    m_fd = -1;
    return result;
  }

 private:
  int m_fd;
};

/// Reads `full_path` (shown to the user as `shown_path`) within `limit`: opened non-blocking, refused unless a
/// regular file, never more than the cap read into memory. `no_follow`: refuse a symlink as the last component
/// (the caller resolved the path itself).
util::Expected<std::string> read_bounded(const std::string& full_path, const std::string& shown_path,
                                         const ReadLimit& limit, bool no_follow);

/// True for paths of the kernel's pseudo file systems (/proc, /sys), whose sizes stat does not report.
bool is_pseudo_file(const std::string& path);

/// `path` resolved inside `root` the way the kernel would resolve it with `root` as "/": each symlink followed with
/// absolute targets re-rooted, `..` stopping at the root, at most 40 links (ELOOP, as the kernel). The result is
/// `root` + a path free of symlinks, `.` and `..`, or the path up to the first missing component (which does not
/// exist either); an input Error on a loop.
util::Expected<std::string> resolve_in_root(const std::string& root, const std::string& path);

}  // namespace gpuenv::system

namespace gpuenv::system {

/// Why a file at `path` is not one only root and `user` control: it, a directory above it or a link on the way
/// belongs to someone else or is writable by group or others (sticky directories excepted); nullopt when it is
/// safe, or when an entry on the way does not exist.
std::optional<std::string> path_trust_problem(const std::string& path, unsigned user);

/// Why root must not run programs from `directory`: someone other than root could add one there (it, a directory
/// above it or a link on the way belongs to another user, or it is writable by group or others, sticky or not:
/// anyone may add a file to /tmp); nullopt when only root can, or "does not exist".
std::optional<std::string> program_directory_problem(const std::string& directory);

/// RealSystem's write_file_atomic (system.hpp has the contract).
util::Expected<util::Ok> write_file_atomically(const std::string& path, const std::string& contents, unsigned mode);

}  // namespace gpuenv::system

namespace gpuenv::system {

/// Every record /dev/kmsg (at `device`) holds now, read one record per read(2) without blocking, until the device
/// has no more (EAGAIN) or k_command_output_cap bytes are read; records the ring overwrote meanwhile (EPIPE) are
/// skipped. An input Error naming the device and errno when it cannot be opened.
util::Expected<std::string> read_kmsg_device(const std::string& device);

}  // namespace gpuenv::system
