// Link error rates: how much the NVLink, PCIe replay and RDMA port counters grew between the start and the end of
// doctor's run (probe/link_counters.hpp), judged by DCGM's health-watch limits (data/doctor/thresholds.toml; NVLink5's
// counters by probe/nvlink5.hpp's table, which smoke and watch judge them by too).

#include <cmath>

#include "doctor/rules_detail.hpp"
#include "probe/link_counters.hpp"
#include "probe/nvlink5.hpp"

namespace gpuenv::doctor::rules_detail {

namespace {

/// The label doctor uses for a GPU of the counter snapshot: "GPU 3 (00000000:5D:00.0)".
std::string counter_gpu_label(const probe::GpuLinkGrowth& gpu) {
  return "GPU " + std::to_string(gpu.index) + (gpu.pci_bus_id.empty() ? "" : " (" + gpu.pci_bus_id + ")");
}

/// A finding line list that keeps the worst status, the problems and their remedies.
struct Problems {
  Status status = Status::pass;
  std::vector<std::string> lines;
  std::vector<std::string> remedies;
  void add(Status s, std::string line, const std::string& remedy) {
    status = std::max(status, s);
    lines.push_back(std::move(line));
    if (std::find(remedies.begin(), remedies.end(), remedy) == remedies.end()) remedies.push_back(remedy);
  }
};

std::string window_text(double seconds) { return "in " + number(seconds, 0) + " s of this run"; }

void check_nvlink_growth(const probe::LinkCounterGrowth& growth, const Thresholds& thresholds, Findings& out) {
  const Threshold& replay_t = thresholds.at("nvlink.replay_errors");
  const Threshold& recovery_t = thresholds.at("nvlink.recovery_errors");
  const Threshold& crc_t = thresholds.at("nvlink.crc_errors");
  const Threshold& crc_rate_t = thresholds.at("nvlink.crc_errors_per_second");
  const std::string remedy =
      "check `nvidia-smi nvlink -e` and `nvidia-smi nvlink --status`; NVLink errors that grow under load point at a "
      "failing link, NVSwitch or baseboard: drain the node, reset the GPUs (reboot) and open a hardware ticket if "
      "they come back";
  Problems problems;
  unsigned links = 0, nvlink5_links = 0;
  for (const probe::GpuLinkGrowth& gpu : growth.gpus) {
    for (const probe::NvLinkGrowth& link : gpu.nvlinks) {
      // A link none of whose counters read at both ends is not "no error".
      const bool read = link.replay || link.recovery || link.crc || !link.nvlink5.empty() ||
                        (link.active_before && !link.active_after);
      if (!read) continue;
      ++links;
      if (!link.nvlink5.empty()) ++nvlink5_links;
      const std::string where = counter_gpu_label(gpu) + " link " + std::to_string(link.link);
      if (link.active_before && !link.active_after)
        problems.add(Status::fail, where + " went down during the run", remedy);
      if (link.replay && *link.replay >= *replay_t.fail_at)
        problems.add(Status::fail, where + ": " + std::to_string(*link.replay) + " replay errors", remedy);
      if (link.recovery && *link.recovery >= *recovery_t.fail_at)
        problems.add(Status::fail, where + ": " + std::to_string(*link.recovery) + " recovery errors", remedy);
      if (link.crc && *link.crc >= *crc_t.warn_at) {
        const double per_second = growth.seconds > 0 ? static_cast<double>(*link.crc) / growth.seconds : 0;
        problems.add(per_second >= *crc_rate_t.fail_at ? Status::fail : Status::warn,
                     where + ": " + std::to_string(*link.crc) + " CRC errors (" + number(per_second, 1) + "/s)",
                     remedy);
      }
      // NVLink5 (Blackwell): the counters its links give instead, judged by probe's table as smoke.link_errors
      // judges them (DCGM 4.6.0 MonitorNVLink5Fields and MonitorNVLinkErrorFields).
      for (const bool warns : {false, true}) {
        for (const std::string& rise : probe::nvlink5_rises(link.link, link.nvlink5, warns))
          problems.add(warns ? Status::warn : Status::fail, counter_gpu_label(gpu) + " " + rise, remedy);
      }
    }
    for (const std::string& fault : probe::nvlink5_ber_faults(gpu.nvlink5_effective_ber, gpu.nvlink5_symbol_ber))
      problems.add(Status::fail, counter_gpu_label(gpu) + ": " + fault + " at the end of the run", remedy);
  }
  const std::string source =
      nvlink5_links == 0 ? replay_t.source : replay_t.source + "; NVLink5: " + probe::k_nvlink5_source;
  if (links == 0) {
    out.push_back(make("nvlink.errors", Status::skip,
                       "no GPU reported NVLink error counters (replay, recovery and CRC, or NVLink5's) at both "
                       "readings"));
  } else if (problems.lines.empty()) {
    const std::string kinds = nvlink5_links == links ? "no NVLink5 error counter rose"
                              : nvlink5_links == 0   ? "no replay, recovery or CRC error"
                                                     : "no replay, recovery, CRC or NVLink5 error";
    out.push_back(make("nvlink.errors", Status::pass,
                       std::to_string(links) + " NVLinks: " + kinds + " " + window_text(growth.seconds), {}, source));
  } else {
    out.push_back(make("nvlink.errors", problems.status,
                       util::join(problems.lines, "; ") + " " + window_text(growth.seconds),
                       util::join(problems.remedies, "; "), source));
  }
}

void check_pcie_growth(const probe::LinkCounterGrowth& growth, const Thresholds& thresholds, Findings& out) {
  const Threshold& run_t = thresholds.at("pcie.replays_per_run");
  const std::string remedy =
      "PCIe replays retransmit corrupted packets: reseat the GPU or its riser, check the slot and BIOS PCIe settings; "
      "if they keep growing, open a hardware ticket (`nvidia-smi -q -d PCIE` shows the counter)";
  Problems problems;
  unsigned checked = 0;
  const double minutes = std::max(1.0, growth.seconds / 60);
  for (const probe::GpuLinkGrowth& gpu : growth.gpus) {
    if (!gpu.pcie_replays) continue;
    ++checked;
    const std::uint64_t replays = *gpu.pcie_replays;
    if (replays >= *run_t.fail_at) {
      problems.add(Status::fail, counter_gpu_label(gpu) + ": " + std::to_string(replays) + " PCIe replays", remedy);
      continue;
    }
    if (!gpu.pcie_gen || !gpu.pcie_width || replays == 0) continue;
    const std::string id = "pcie.replays_per_lane_per_minute_gen" + std::to_string(std::clamp(*gpu.pcie_gen, 1U, 6U));
    const double allowed = std::ceil(*thresholds.at(id).warn_at * *gpu.pcie_width * minutes);
    if (static_cast<double>(replays) > allowed) {
      problems.add(Status::warn,
                   counter_gpu_label(gpu) + ": " + std::to_string(replays) + " PCIe replays (Gen" +
                       std::to_string(*gpu.pcie_gen) + " x" + std::to_string(*gpu.pcie_width) + " allows " +
                       number(allowed, 0) + ")",
                   remedy);
    }
  }
  if (checked == 0) {
    out.push_back(make("pcie.replay", Status::skip, "no GPU reports its PCIe replay counter"));
  } else if (problems.lines.empty()) {
    out.push_back(make("pcie.replay", Status::pass,
                       std::to_string(checked) + (checked == 1 ? " GPU" : " GPUs") +
                           ": PCIe replays within DCGM's allowance " + window_text(growth.seconds),
                       {}, run_t.source));
  } else {
    out.push_back(make("pcie.replay", problems.status,
                       util::join(problems.lines, "; ") + " " + window_text(growth.seconds),
                       util::join(problems.remedies, "; "), run_t.source));
  }
}

void check_port_growth(const probe::LinkCounterGrowth& growth, const Thresholds& thresholds, Findings& out) {
  if (growth.ports.empty()) {
    out.push_back(make("ib.errors", Status::skip, "no RDMA port counters"));
    return;
  }
  const Threshold& downed_t = thresholds.at("ib.link_downed");
  Problems problems;
  std::vector<std::string> notes;
  for (const probe::PortGrowth& port : growth.ports) {
    const std::string where = port.device + ":" + std::to_string(port.port);
    if (port.link_downed && *port.link_downed >= *downed_t.warn_at) {
      problems.add(Status::warn, where + " went down " + std::to_string(*port.link_downed) + " time(s)",
                   "a link that flaps under load drops multi-node jobs: check `ibstat` and the switch port, reseat or "
                   "replace the cable");
    }
    if (port.symbol_error && *port.symbol_error > 0)
      notes.push_back(where + ": " + std::to_string(*port.symbol_error) + " symbol errors");
    if (port.port_rcv_errors && *port.port_rcv_errors > 0)
      notes.push_back(where + ": " + std::to_string(*port.port_rcv_errors) + " receive errors");
  }
  std::string message = problems.lines.empty() ? std::to_string(growth.ports.size()) + " ports: no link went down"
                                               : util::join(problems.lines, "; ");
  message += " " + window_text(growth.seconds);
  if (!notes.empty()) message += " (reported, not judged: " + util::join(notes, "; ") + ")";
  out.push_back(make("ib.errors", problems.status, message, util::join(problems.remedies, "; "), downed_t.source));
}

}  // namespace

void check_link_counters(const HostFacts& facts, const Thresholds& thresholds, Findings& out) {
  if (!facts.counters_start || !facts.counters_end) return;
  const probe::LinkCounterGrowth growth = probe::link_counter_growth(*facts.counters_start, *facts.counters_end);
  if (facts.counters_end->nvml) {
    check_nvlink_growth(growth, thresholds, out);
    check_pcie_growth(growth, thresholds, out);
  } else {
    for (const char* id : {"nvlink.errors", "pcie.replay"})
      out.push_back(make(id, Status::skip, "GPU link counters not read: " + facts.counters_end->nvml_reason));
  }
  check_port_growth(growth, thresholds, out);
}

}  // namespace gpuenv::doctor::rules_detail
