// Reading the kernel's record buffer through /dev/kmsg (Documentation/ABI/testing/dev-kmsg in the Linux source):
// each read(2) returns one whole record, "<prio>,<seq>,<usec>,<flags>;<text>\n" plus indented dictionary lines;
// EAGAIN on a non-blocking descriptor means there is no newer record, EPIPE that records were overwritten while
// reading (the position moves on to the oldest left), EINVAL that the buffer was smaller than the record (the
// kernel's devkmsg_read moves past it all the same).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "system/files.hpp"

namespace gpuenv::system {

util::Expected<std::string> read_kmsg_device(const std::string& device) {
  const FileDescriptor fd(::open(device.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return util::Error::input(device + ": " + std::strerror(errno));
  // Larger than any record the kernel formats for a reader (CONSOLE_EXT_LOG_MAX, 8 KiB, in kernels 4.x-5.x).
  std::vector<char> buffer(16 * 1024);
  std::string out;
  int errors = 0;  // a device that keeps failing (not /dev/kmsg) must not hold the loop
  while (out.size() < k_command_output_cap) {
    const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
    if (got > 0) {
      out.append(buffer.data(), static_cast<std::size_t>(got));
      if (out.back() != '\n') out += '\n';
      continue;
    }
    if (got < 0 && (errno == EINTR || errno == EPIPE || errno == EINVAL) && ++errors < 1000) continue;
    break;  // EAGAIN: the end of the buffer for now; 0 or another error: nothing more to read
  }
  return out;
}

}  // namespace gpuenv::system
