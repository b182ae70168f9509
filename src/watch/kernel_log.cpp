#include "watch/kernel_log.hpp"

#include "probe/collect.hpp"
#include "probe/sxid.hpp"
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

KernelRecord record_of(const probe::SxidEvent& event, std::int64_t now_ms) {
  KernelRecord record;
  record.time_ms = now_ms;
  record.kind = "sxid";
  record.code = event.code;
  record.pci_bus_id = event.pci_bus_id;  // the NVSwitch's
  util::TextRepairs repairs;
  record.message = util::clean_host_text((event.fatal ? "Fatal, " : "Non-fatal, ") + event.message,
                                         util::CleanOptions{true, 512}, repairs);
  return record;
}

}  // namespace

// The records come from /dev/kmsg where it can be read (each raw record carries its sequence number, so a repeated
// message is still new) and from dmesg or the log files otherwise (docs/security.md, "Kernel log").
std::vector<KernelRecord> KernelLogFollower::poll(system::System& system, std::int64_t now_ms) {
  const probe::KernelLog log = probe::read_kernel_log(system, true);
  m_source = log.source;
  m_readable = log.readable();
  if (!m_readable) return {};
  std::vector<KernelRecord> out;
  std::set<std::string> seen;
  for (const probe::KernelEvent& event : probe::kernel_log_events(log).events) {
    if (!is_gpu_record(event)) continue;
    seen.insert(event.raw);
    if (m_primed && m_seen.count(event.raw) == 0) out.push_back(record_of(event, now_ms));
  }
  // NVSwitch SXid headlines (probe/sxid.hpp, as doctor's fabric.sxid reads them): a headline is the same record when
  // its switch, time stamp (from /dev/kmsg: the record's own microseconds), code and text are.
  const std::vector<probe::SxidEvent> sxids =
      log.records ? probe::sxid_events_from_kmsg(*log.records) : probe::parse_sxid_events(log.text.value_or(""));
  for (const probe::SxidEvent& event : sxids) {
    const std::string key =
        "sxid|" + event.nvswitch + "|" + event.timestamp + "|" + std::to_string(event.code) + "|" + event.message;
    seen.insert(key);
    if (m_primed && m_seen.count(key) == 0) out.push_back(record_of(event, now_ms));
  }
  // Only what the log holds now is remembered: lines that left the ring buffer or a rotated file are forgotten.
  m_seen = std::move(seen);
  m_primed = true;
  return out;
}

}  // namespace gpuenv::watch
