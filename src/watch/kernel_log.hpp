#pragma once
// The kernel log followed for GPU-health records (Xid, a GPU fallen off the bus, NVSwitch SXid) through probe's
// reader, as doctor reads it: /dev/kmsg or `dmesg` where allowed, else the tail of /var/log/kern.log, syslog or
// messages.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "watch/sample.hpp"

namespace gpuenv::watch {

class KernelLogFollower {
 public:
  /// The records that appeared since the poll before, stamped `now_ms`. The first poll only learns what the log
  /// already holds (those are doctor's to judge) and returns nothing.
  std::vector<KernelRecord> poll(system::System& system, std::int64_t now_ms);
  /// Where the last poll read ("dmesg", a path), or why it could not.
  const std::string& source() const { return m_source; }
  bool readable() const { return m_readable; }

 private:
  bool m_primed = false;
  bool m_readable = false;
  std::string m_source;
  std::set<std::string> m_seen;  ///< the raw lines of the GPU records in the log at the last poll
};

}  // namespace gpuenv::watch
