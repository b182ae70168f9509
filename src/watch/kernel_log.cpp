#include "watch/kernel_log.hpp"

#include "probe/collect.hpp"
#include "probe/xid.hpp"
#include "util/host_text.hpp"

namespace gpuenv::watch {
namespace {

bool is_gpu_record(const probe::KernelEvent& event) {
  return event.kind == probe::KernelEventKind::xid || event.kind == probe::KernelEventKind::fallen_off_bus;
}

KernelRecord record_of(const probe::KernelEvent& event, std::int64_t now_ms) {
  KernelRecord record;
  record.time_ms = now_ms;
  record.kind = event.kind == probe::KernelEventKind::xid ? "xid" : "fallen_off_bus";
  record.code = event.xid;
  record.pci_bus_id = event.pci_bus_id;
  // Kernel-log text is host text: cleaned (and cut) before it is stored and shown.
  util::TextRepairs repairs;
  record.message = util::clean_host_text(event.kind == probe::KernelEventKind::xid ? event.message : event.raw,
                                         util::CleanOptions{true, 512}, repairs);
  return record;
}

}  // namespace

// SEAM (issue 30): once probe reads /dev/kmsg records (their facility proves the kernel wrote them, their sequence
// numbers say which are new), poll() follows the records by sequence number instead of comparing raw lines, and
// picks up SXid records (issue 27) the same way.
std::vector<KernelRecord> KernelLogFollower::poll(system::System& system, std::int64_t now_ms) {
  const probe::KernelLog log = probe::read_kernel_log(system, true);
  m_source = log.source;
  m_readable = log.text.has_value();
  if (!log.text) return {};
  std::vector<KernelRecord> out;
  std::set<std::string> seen;
  for (const probe::KernelEvent& event : probe::parse_xid_events(*log.text).events) {
    if (!is_gpu_record(event)) continue;
    seen.insert(event.raw);
    if (m_primed && m_seen.count(event.raw) == 0) out.push_back(record_of(event, now_ms));
  }
  // Only what the log holds now is remembered: lines that left the ring buffer or a rotated file are forgotten.
  m_seen = std::move(seen);
  m_primed = true;
  return out;
}

}  // namespace gpuenv::watch
