// Bounded reading of files: a regular file only, never more than the cap for its kind (docs/reliability.md,
// "Limits"). A profile check on /dev/zero or on a FIFO without a writer must return at once, and a huge file must be
// refused before it is read, not after.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "system/files.hpp"
#include "util/strings.hpp"

namespace gpuenv::system {
namespace {

using util::Error;
using util::Expected;

constexpr std::uint64_t k_mib = 1u << 20;

std::string mib(std::uint64_t bytes) {
  if (bytes % k_mib == 0) return std::to_string(bytes / k_mib) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string_view file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Reads at most `budget` bytes from `fd` (EINTR retried); sets `more` when a byte past the budget exists.
Expected<std::string> read_up_to(int fd, const std::string& shown_path, std::uint64_t budget, bool& more) {
  std::string out;
  char buffer[65536];
  more = false;
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error::input("error while reading " + shown_path + ": " + std::strerror(errno));
    if (got == 0) return out;
    const std::uint64_t room = budget - out.size();
    if (static_cast<std::uint64_t>(got) > room) {
      out.append(buffer, static_cast<std::size_t>(room));
      more = true;
      return out;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
}

/// The last `limit.max_bytes` of a regular file of `size` bytes, from the first line start in that window.
Expected<std::string> read_tail(int fd, const std::string& shown_path, std::uint64_t size, const ReadLimit& limit) {
  const std::uint64_t start = size > limit.max_bytes ? size - limit.max_bytes : 0;
  if (start > 0 && ::lseek(fd, static_cast<off_t>(start), SEEK_SET) < 0)
    return Error::input("cannot seek in " + shown_path + ": " + std::strerror(errno));
  bool more = false;
  auto text = read_up_to(fd, shown_path, limit.max_bytes, more);
  if (!text || start == 0) return text;
  const std::size_t newline = text->find('\n');
  return newline == std::string::npos ? std::string() : text->substr(newline + 1);
}

}  // namespace

ReadLimit read_limit(FileKind kind) {
  switch (kind) {
    case FileKind::profile:
      return {1 * k_mib, false, "a profile or data file"};
    case FileKind::report:
      return {64 * k_mib, false, "a tool report"};
    case FileKind::kernel_log:
      return {4 * k_mib, true, "a kernel log"};
    case FileKind::host_text:
      break;
  }
  return {32 * k_mib, false, "a host text file"};
}

Error too_large_error(const std::string& path, std::uint64_t size, const ReadLimit& limit) {
  const std::string size_text = size == 0 ? "more than " + mib(limit.max_bytes) : std::to_string(size) + " bytes";
  return Error::input(
      path + " is " + size_text + ", over the " + mib(limit.max_bytes) + " limit for " + std::string(limit.what),
      "check that " + path + " is the file you meant (docs/reliability.md lists the limits)");
}

Expected<std::string> apply_read_limit(const std::string& path, std::string text, const ReadLimit& limit) {
  if (text.size() <= limit.max_bytes) return text;
  if (!limit.keep_tail) return too_large_error(path, text.size(), limit);
  text.erase(0, text.size() - limit.max_bytes);
  const std::size_t newline = text.find('\n');
  return newline == std::string::npos ? std::string() : text.substr(newline + 1);
}

bool is_pseudo_file(const std::string& path) {
  return util::starts_with(path, "/proc/") || util::starts_with(path, "/sys/");
}

Expected<std::string> read_bounded(const std::string& full_path, const std::string& shown_path, const ReadLimit& limit,
                                   bool no_follow) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once (then fstat refuses it) instead of blocking.
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (no_follow ? O_NOFOLLOW : 0);
  const FileDescriptor fd(::open(full_path.c_str(), flags));
  if (fd.get() < 0) return Error::input("cannot read " + shown_path + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return Error::input("cannot read " + shown_path + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) {
    return Error::input(shown_path + " is " + std::string(file_type(info.st_mode)) + ", not a regular file",
                        "give the path of a regular file (gpuenv reads no devices, FIFOs or sockets)");
  }
  // Reads block again from here: a regular file never blocks, and O_NONBLOCK only mattered for the open.
  (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK & ~O_ACCMODE);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  const bool pseudo = is_pseudo_file(shown_path);
  const ReadLimit effective = pseudo ? ReadLimit{k_pseudo_file_limit, false, "a /proc or /sys file"} : limit;
  if (effective.keep_tail) return read_tail(fd.get(), shown_path, size, effective);
  if (size > effective.max_bytes) return too_large_error(shown_path, size, effective);
  bool more = false;
  auto text = read_up_to(fd.get(), shown_path, effective.max_bytes, more);
  if (text && more) return too_large_error(shown_path, 0, effective);
  return text;
}

}  // namespace gpuenv::system
