// Fuzz target: the kernel-log scanner (dmesg, /dev/kmsg, journalctl, syslog) for Xid and driver-health events,
// with the embedded Xid table looked up for each event.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/xid.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gpuenv::probe::parse_xid_events(gpuenv::fuzz::as_text(data, size));
  return 0;
}
