// Link error rates: how much the NVLink, PCIe replay and RDMA port counters grew between the start and the end of
// doctor's run (probe/link_counters.hpp), judged by DCGM's health-watch limits (NVLink5's counters by
// probe/nvlink5.hpp's table, which smoke and watch judge them by too) and, for InfiniBand symbol errors, ibcheckerrs'
// count and the InfiniBand specification's bit error rate, which warn and never fail (data/doctor/thresholds.toml).

#include <cmath>
#include <cstdio>

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
  std::vector<std::string> shown;  // NVLink5 effective errors: listed, never judged
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
      // judges them (gpuenv's policy after DCGM 4.6.0 MonitorNVLink5Fields and MonitorNVLinkErrorFields).
      for (const bool warns : {false, true}) {
        for (const std::string& rise : probe::nvlink5_rises(link.link, link.nvlink5, warns))
          problems.add(warns ? Status::warn : Status::fail, counter_gpu_label(gpu) + " " + rise, remedy);
      }
      // Effective errors are listed, not judged (the effective bit error rate below judges them).
      for (const std::string& rise : probe::nvlink5_unjudged_rises(link.link, link.nvlink5))
        shown.push_back(counter_gpu_label(gpu) + " " + rise);
    }
    for (const std::string& fault : probe::nvlink5_ber_faults(gpu.nvlink5_effective_ber, gpu.nvlink5_symbol_ber))
      problems.add(Status::fail, counter_gpu_label(gpu) + ": " + fault + " at the end of the run", remedy);
    // NVLink5's ECC data error total over all links (NVML field 160, read on NVLink5 GPUs only): any rise fails, as
    // DCGM 4.6.0 MonitorNVLink5Fields fails DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL's.
    if (const std::optional<std::string> rise = probe::nvlink_ecc_rise(gpu.nvlink5_ecc_errors))
      problems.add(Status::fail, counter_gpu_label(gpu) + ": " + *rise, remedy);
  }
  const std::string source =
      nvlink5_links == 0 ? replay_t.source : replay_t.source + "; NVLink5: " + probe::k_nvlink5_source;
  const std::string shown_text =
      shown.empty() ? "" : "; " + util::join(shown, ", ") + " (not judged: the effective bit error rate judges them)";
  if (links == 0) {
    out.push_back(make("nvlink.errors", Status::skip,
                       "no GPU reported NVLink error counters (replay, recovery and CRC, or NVLink5's) at both "
                       "readings"));
  } else if (problems.lines.empty()) {
    const std::string kinds = nvlink5_links == links ? "no NVLink5 error counter rose"
                              : nvlink5_links == 0   ? "no replay, recovery or CRC error"
                                                     : "no replay, recovery, CRC or NVLink5 error";
    out.push_back(make("nvlink.errors", Status::pass,
                       std::to_string(links) + " NVLinks: " + kinds + " " + window_text(growth.seconds) + shown_text,
                       {}, source));
  } else {
    out.push_back(make("nvlink.errors", problems.status,
                       util::join(problems.lines, "; ") + " " + window_text(growth.seconds) + shown_text,
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

/// "4.6e-12".
std::string ber_text(double ber) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", ber);
  return text;
}

/// The widest value a port error counter of sysfs can hold: the kernel reads symbol_error and port_rcv_errors as the
/// 16-bit and link_downed as the 8-bit fields of the PMA PortCounters (drivers/infiniband/core/sysfs.c
/// PORT_PMA_ATTR(symbol_error, 0, 16, 32), (link_downed, 2, 8, 56)), and those counters stop at their maximum.
constexpr std::uint64_t k_symbol_error_max = 0xffff;
constexpr std::uint64_t k_link_downed_max = 0xff;

/// Whether a port's symbol errors are the errors left after forward error correction: on HDR and NDR links (sysfs
/// rate "200 Gb/sec (4X HDR)", "400 Gb/sec (4X NDR)"), not on EDR or slower ones, whose symbol errors are counted
/// before it (NVIDIA ibdiagnet 2.24.0, "Bit Error Rate (BER)": symbol errors on NDR/HDR, effective errors on EDR).
bool symbol_errors_post_fec(const std::string& rate_text) {
  return rate_text.find("HDR") != std::string::npos || rate_text.find("NDR") != std::string::npos;
}

/// The port's sysfs facts (rate, link layer) for a counter reading; nullptr when the port was not listed.
const probe::RdmaPort* port_facts(const std::vector<probe::RdmaPort>& ports, const std::string& device, unsigned port) {
  const auto it = std::find_if(ports.begin(), ports.end(), [&](const probe::RdmaPort& candidate) {
    return candidate.device == device && candidate.port == port;
  });
  return it == ports.end() ? nullptr : &*it;
}

void check_port_growth(const probe::LinkCounterGrowth& growth, const probe::LinkCounterSnapshot& end,
                       const std::vector<probe::RdmaPort>& ports, const Thresholds& thresholds, Findings& out) {
  if (growth.ports.empty()) {
    out.push_back(make("ib.errors", Status::skip, "no RDMA port counters"));
    return;
  }
  const Threshold& downed_t = thresholds.at("ib.link_downed");
  const Threshold& symbols_t = thresholds.at("ib.symbol_errors_per_run");
  const Threshold& ber_t = thresholds.at("ib.symbol_error_ber");  // warn_at only: never a failure
  const std::string symbol_remedy =
      "run `ibdiagnet --get_phy_info` (NVIDIA's BER check) on the port; if its BER is past the limit, reseat or "
      "replace the cable or transceiver, or open a ticket with the provider";
  Problems problems;
  std::vector<std::string> sources;  // of the limits the finding applied
  const auto cite = [&sources](const std::string& source) {
    if (std::find(sources.begin(), sources.end(), source) == sources.end()) sources.push_back(source);
  };
  std::vector<std::string> notes;
  unsigned symbol_ports = 0;
  for (const probe::PortGrowth& port : growth.ports) {
    const std::string where = port.device + ":" + std::to_string(port.port);
    const bool went_down = port.link_downed && *port.link_downed >= *downed_t.warn_at;
    if (went_down) {
      problems.add(Status::warn, where + " went down " + std::to_string(*port.link_downed) + " time(s)",
                   "a link that flaps under load drops multi-node jobs: check `ibstat` and the switch port, reseat or "
                   "replace the cable");
      cite(downed_t.source);
    }
    if (port.symbol_error) ++symbol_ports;
    const probe::RdmaPort* facts = port_facts(ports, port.device, port.port);
    // The InfiniBand specification's bit error rate applies to InfiniBand links; RoCE ports are reported only.
    const bool infiniband = facts == nullptr || facts->link_layer.empty() || facts->link_layer == "InfiniBand";
    if (port.symbol_error && *port.symbol_error > 0) {
      const std::uint64_t errors = *port.symbol_error;
      std::optional<double> ber;  // a lower bound: every symbol error is at least one bit error
      if (facts != nullptr && facts->rate_gbps && *facts->rate_gbps > 0 && growth.seconds > 0)
        ber = static_cast<double>(errors) / (*facts->rate_gbps * 1e9 * growth.seconds);
      std::string line = where + ": " + std::to_string(errors) + " symbol error" + (errors == 1 ? "" : "s");
      // The bound is one of the post-FEC bit error rate on HDR/NDR only; on EDR and slower links the counter holds
      // errors before forward error correction, and the specification's rate is no limit for them: reported only.
      const bool post_fec = facts != nullptr && symbol_errors_post_fec(facts->rate_text);
      std::string rate_text;
      if (!ber) {
        rate_text = "no link rate to judge its bit error rate by";
      } else if (post_fec) {
        rate_text =
            "post-FEC bit error rate at least " + ber_text(*ber) + " at " + number(*facts->rate_gbps, 0) + " Gb/s";
      } else {
        rate_text = "bit error rate at least " + ber_text(*ber) + " at " +
                    (facts->rate_text.empty() ? number(*facts->rate_gbps, 0) + " Gb/s" : facts->rate_text) +
                    " (not HDR/NDR: symbol errors before forward error correction, reported, not judged)";
      }
      // A link that retrained during the run brings symbol errors with it: said, and judged no worse than a warning
      // (which is as far as symbol errors go).
      const std::string retrain =
          went_down ? "; the link went down during the run, and a retrain brings symbol errors" : std::string();
      if (!infiniband) {
        notes.push_back(line + " (" + facts->link_layer + " link: reported, not judged)");
      } else if (static_cast<double>(errors) >= *symbols_t.warn_at && post_fec && ber && *ber >= *ber_t.warn_at) {
        // An uncalibrated figure changes a verdict no further than a warning.
        problems.add(Status::warn,
                     line + " (" + rate_text + ", above the InfiniBand specification's " + ber_text(*ber_t.warn_at) +
                         "; a lower bound, HDR/NDR only" + retrain + ")",
                     symbol_remedy);
        cite(ber_t.source);
        cite(symbols_t.source);
      } else if (static_cast<double>(errors) >= *symbols_t.warn_at) {
        problems.add(
            Status::warn,
            line + " (ibcheckerrs warns from " + number(*symbols_t.warn_at, 0) + "; " + rate_text + retrain + ")",
            symbol_remedy);
        cite(symbols_t.source);
      } else {
        notes.push_back(line + " (below ibcheckerrs' " + number(*symbols_t.warn_at, 0) + "; " + rate_text + retrain +
                        ")");
      }
    }
    if (port.port_rcv_errors && *port.port_rcv_errors > 0)
      notes.push_back(where + ": " + std::to_string(*port.port_rcv_errors) + " receive errors (reported, not judged)");
  }
  // A counter at its maximum stops counting: growth from there is invisible, not zero. A saturated symbol_error
  // leaves the port's symbol errors unjudged (a warning); a saturated link_downed is reported.
  for (const probe::PortCounters& counters : end.ports) {
    const std::string where = counters.device + ":" + std::to_string(counters.port);
    if (counters.symbol_error && *counters.symbol_error >= k_symbol_error_max) {
      problems.add(Status::warn,
                   where + " symbol_error at the counter's maximum (" + std::to_string(k_symbol_error_max) +
                       "): its symbol errors cannot be judged",
                   "clear the port's counters with `perfquery -R` and run doctor again");
      cite(symbols_t.source);
    }
    if (counters.link_downed && *counters.link_downed >= k_link_downed_max)
      notes.push_back(where +
                      " link_downed at the counter's maximum: new errors cannot show until it is cleared "
                      "(`perfquery -R`)");
  }
  std::string message = util::join(problems.lines, "; ");
  if (problems.lines.empty()) {
    message = std::to_string(growth.ports.size()) + " ports: no link went down";
    if (symbol_ports > 0) message += ", symbol errors within the limits";
    for (const Threshold* limit : {&downed_t, &symbols_t, &ber_t}) cite(limit->source);
  }
  message += " " + window_text(growth.seconds);
  if (!notes.empty()) message += " (" + util::join(notes, "; ") + ")";
  out.push_back(
      make("ib.errors", problems.status, message, util::join(problems.remedies, "; "), util::join(sources, "; ")));
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
  check_port_growth(growth, *facts.counters_end, facts.rdma.ports, thresholds, out);
}

}  // namespace gpuenv::doctor::rules_detail
