// doctor's link rates on HostFacts built in C++: nvlink.errors, pcie.replay and ib.errors from the counters read at
// the start and the end of the run, and gpu.nvlink's NVLink5 counters (docs/fabric.md). The contracts are DCGM's
// limits and the InfiniBand bit error rate, quoted at each case; the shared nodes are in fabric_rules_support.hpp.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctor/fabric_rules_support.hpp"

namespace {

using gpuenv::probe::LinkCounterSnapshot;

/// Start and end readings `seconds` apart: GPU 0 with links 0 and 1 at Gen5 x16, one port.
HostFacts with_counters(double seconds, const std::function<void(LinkCounterSnapshot&)>& change) {
  HostFacts facts = hgx();
  LinkCounterSnapshot start;
  start.nvml = true;
  gpuenv::probe::GpuLinkCounters gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-0";
  gpu.pci_bus_id = "00000000:10:00.0";
  gpu.pcie_replays = 3;
  gpu.pcie_gen = 5;
  gpu.pcie_width = 16;
  gpu.nvlinks = {{0, true, 0, 0, 0, 0}, {1, true, 0, 0, 0, 0}};
  start.gpus.push_back(gpu);
  start.ports.push_back({"mlx5_0", 1, 2, 0, 0, 14});
  LinkCounterSnapshot end = start;
  end.taken_ms = static_cast<std::int64_t>(seconds * 1000);
  change(end);
  facts.counters_start = start;
  facts.counters_end = end;
  return facts;
}

}  // namespace

TEST_CASE("link rates: NVLink, PCIe replay and IB port counters that grow during the run", "[doctor][fabric]") {
  // DCGM's limits (NVIDIA/DCGM): health watch DCGM_LIMIT_MAX_NVLINK_ERROR 1 (any replay or recovery error) and
  // DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100 per second; diag max_pcie_replays 80; health GetExpectedPcieReplayRate (BER
  // 1e-12 x the link's bit rate per lane x lanes, per minute). The values are rows of data/doctor/thresholds.toml.
  struct Row {
    std::string name;
    std::function<void(LinkCounterSnapshot&)> change;
    std::string id;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"quiet", [](LinkCounterSnapshot&) {}, "nvlink.errors", Status::pass, "2 NVLinks: no replay"},
      {"one replay", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].replay = 1; }, "nvlink.errors", Status::fail,
       "link 1: 1 replay errors"},
      {"a recovery", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].recovery = 2; }, "nvlink.errors", Status::fail,
       "2 recovery errors"},
      {"a few CRC", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].crc_flit = 5; }, "nvlink.errors", Status::warn,
       "5 CRC errors"},
      {"CRC storm", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].crc_data = 5000; }, "nvlink.errors", Status::fail,
       "(250/s)"},
      {"link down", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].active = false; }, "nvlink.errors", Status::fail,
       "link 1 went down during the run"},
      {"replays within allowance", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 31; }, "pcie.replay",
       Status::pass, "within DCGM's allowance"},
      {"replays above allowance", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 32; }, "pcie.replay",
       Status::warn, "32 PCIe replays (Gen5 x16 allows 31)"},
      {"replays above DCGM diag", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 80; }, "pcie.replay",
       Status::fail, "80 PCIe replays"},
      {"a flap", [](LinkCounterSnapshot& s) { s.ports[0].link_downed = 3; }, "ib.errors", Status::warn,
       "mlx5_0:1 went down 1 time(s)"},
      {"symbol errors", [](LinkCounterSnapshot& s) { s.ports[0].symbol_error = 7; }, "ib.errors", Status::pass,
       "(mlx5_0:1: 7 symbol errors (below ibcheckerrs' 10; no link rate to judge its bit error rate by)"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const Finding& f = require_finding(evaluate(with_counters(20, row.change)), row.id);
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
  }
  // DCGM's per-minute allowance scales with the run's length: 32 replays in 120 s at Gen5 x16 (62 allowed) pass.
  const Finding& longer = require_finding(
      evaluate(with_counters(120, [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 32; })), "pcie.replay");
  CHECK(longer.status == Status::pass);
  // NVML unreadable at the end: both GPU findings skip with the reason; the ports are still judged.
  const auto findings = evaluate(with_counters(20, [](LinkCounterSnapshot& s) {
    s.nvml = false;
    s.nvml_reason = "NVML did not answer within 10000 ms";
    s.gpus.clear();
  }));
  CHECK(require_finding(findings, "nvlink.errors").status == Status::skip);
  CHECK(require_finding(findings, "pcie.replay").message.find("did not answer") != std::string::npos);
  // Links whose DL counters do not read (NVLink5 on Blackwell reports other fields: DCGM's MonitorNVLink5Fields) are
  // not "no error": with none readable the finding skips, and only readable links are counted.
  const auto unread = [](LinkCounterSnapshot& s) {
    for (auto& link : s.gpus[0].nvlinks) link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
  };
  const auto blackwell = evaluate(with_counters(20, [&](LinkCounterSnapshot& s) { unread(s); }));
  CHECK(require_finding(blackwell, "nvlink.errors").status == Status::skip);
  HostFacts one_unread = with_counters(20, [](LinkCounterSnapshot&) {});
  for (auto* snapshot : {&one_unread.counters_start, &one_unread.counters_end}) {
    auto& link = (*snapshot)->gpus[0].nvlinks[1];
    link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
  }
  CHECK(require_finding(evaluate(one_unread), "nvlink.errors").message.find("1 NVLinks: no replay") !=
        std::string::npos);
  CHECK(require_finding(findings, "ib.errors").status == Status::pass);
  // evaluate_link_counters is the same judgement alone (doctor appends it after its end reading).
  const auto alone = gpuenv::doctor::evaluate_link_counters(
      with_counters(20, [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].replay = 1; }), thresholds());
  REQUIRE(alone.size() == 3);
  CHECK(alone[0].id == "nvlink.errors");
  CHECK(alone[0].status == Status::fail);
}

// Blackwell (NVLink5): nvml.h marks the replay/recovery/CRC counters "unsupported for Blackwell+" (NVIDIA/go-nvml
// gen/nvml/nvml.h @ 2f9e261f), so doctor's start and end readings carry the NVML_FI_DEV_NVLINK_COUNT_* counters
// instead, judged by probe/nvlink5.hpp's table as smoke.link_errors judges them, after DCGM 4.6.0
// (modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields: any rise of an error counter fails,
// DCGM_LIMIT_MAX_NVLINK_ERROR 1; MonitorNVLinkErrorFields: a successful link recovery warns, a failed one fails;
// common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded: an effective bit error rate above 1e-12 fails).
TEST_CASE("link rates: NVLink5 counters that grow during the run, judged by probe's table", "[doctor][fabric]") {
  using gpuenv::probe::LinkCounterSnapshot;
  // Links 0 and 1 of GPU 0 read as a B200's: the older counters refused, every NVLink5 counter of the table read.
  const auto blackwell = [](LinkCounterSnapshot& s) {
    for (auto& link : s.gpus[0].nvlinks) {
      link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
      link.nvlink5.clear();
      for (const auto& field : gpuenv::probe::nvlink5_error_fields())
        link.nvlink5.push_back({field.id, 100 * link.link + 7});  // each link its own counts
    }
    s.gpus[0].nvlink5_effective_ber = 0xfff;  // NVML's zero, 15e-255
    s.gpus[0].nvlink5_symbol_ber = 73710;     // DCGM's healthy Blackwell aggregate
    s.gpus[0].nvlink5_ecc_errors = 5;         // the NVLink ECC data error total over all links (field 160)
  };
  /// `field` of link `link` at the end reading, `by` more than at the start.
  const auto rise = [](unsigned link, unsigned field, std::uint64_t by) {
    return [=](LinkCounterSnapshot& s) {
      for (auto& counter : s.gpus[0].nvlinks[link].nvlink5)
        if (counter.field == field) counter.value += by;
    };
  };
  struct Row {
    std::string name;
    std::function<void(LinkCounterSnapshot&)> change;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"quiet", [](LinkCounterSnapshot&) {}, Status::pass, "2 NVLinks: no NVLink5 error counter rose in 20 s"},
      {"symbol errors", rise(1, 221, 2), Status::fail, "GPU 0 (00000000:10:00.0) link 1: 2 symbol errors"},
      {"malformed packets", rise(0, 206, 1), Status::fail, "link 0: 1 malformed packet errors"},
      {"buffer overrun", rise(1, 207, 3), Status::fail, "link 1: 3 buffer overrun errors"},
      {"receive errors", rise(0, 208, 1), Status::fail, "link 0: 1 receive errors"},
      {"remote receive errors", rise(0, 209, 1), Status::fail, "link 0: 1 remote receive errors"},
      {"general receive errors", rise(0, 210, 1), Status::fail, "link 0: 1 general receive errors"},
      {"link integrity", rise(1, 211, 1), Status::fail, "link 1: 1 local link integrity errors"},
      {"a failed link recovery", rise(1, 214, 1), Status::fail, "link 1: 1 failed link recoveries"},
      {"a successful link recovery", rise(0, 213, 1), Status::warn, "link 0: 1 successful link recoveries"},
      // Shown, not judged (gpuenv's policy): the effective BER, judged against DCGM's 1e-12, judges them.
      {"effective errors", rise(1, 219, 40), Status::pass,
       "; GPU 0 (00000000:10:00.0) link 1: 40 effective errors (not judged: the effective bit error rate judges them)"},
      {"effective BER above 1e-12", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_effective_ber = (2u << 8) | 12; },
       Status::fail, "GPU 0 (00000000:10:00.0): effective bit error rate 2e-12 over all links"},
      {"symbol BER above the floor", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_symbol_ber = (15u << 8) | 237; },
       Status::fail, "symbol bit error rate 15e-237"},
      {"a link down", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].active = false; }, Status::fail,
       "link 1 went down during the run"},
      // The ECC data error total (DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL): any rise fails (MonitorNVLink5Fields,
      // DCGM_LIMIT_MAX_NVLINK_ERROR 1); unread at one end is no growth; a drop (driver reload) counts its later value.
      {"NVLink ECC data errors", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_ecc_errors = 6; }, Status::fail,
       "GPU 0 (00000000:10:00.0): 1 NVLink ECC data errors (all links)"},
      {"NVLink ECC total unread at the end", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_ecc_errors.reset(); },
       Status::pass, "2 NVLinks: no NVLink5 error counter rose"},
      {"NVLink ECC total reset by a driver reload", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_ecc_errors = 2; },
       Status::fail, "GPU 0 (00000000:10:00.0): 2 NVLink ECC data errors (all links)"},
      {"NVLink ECC total reset to 0", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_ecc_errors = 0; }, Status::pass,
       "2 NVLinks: no NVLink5 error counter rose"},
  };
  // Both readings are a B200's (with_counters changes only the end reading).
  const auto b200_readings = [&blackwell] {
    HostFacts facts = with_counters(20, [](LinkCounterSnapshot&) {});
    blackwell(*facts.counters_start);
    blackwell(*facts.counters_end);
    return facts;
  };
  for (const Row& row : rows) {
    INFO(row.name);
    HostFacts facts = b200_readings();
    row.change(*facts.counters_end);
    const Finding& f = require_finding(evaluate(facts), "nvlink.errors");
    CHECK(f.status == row.expected);
    CHECK_THAT(f.message, Catch::Contains(row.says));
    if (row.expected != Status::pass) CHECK_THAT(f.source, Catch::Contains("MonitorNVLink5Fields"));
  }
  // A warning and a failure together: the failure decides, both are named.
  HostFacts both = b200_readings();
  rise(0, 213, 1)(*both.counters_end);
  rise(1, 221, 1)(*both.counters_end);
  const Finding& f = require_finding(evaluate(both), "nvlink.errors");
  CHECK(f.status == Status::fail);
  CHECK_THAT(f.message, Catch::Contains("link 0: 1 successful link recoveries"));
  CHECK_THAT(f.message, Catch::Contains("link 1: 1 symbol errors"));
}

TEST_CASE("gpu.nvlink: a B200's NVLink5 counters since the driver loaded are shown, not judged", "[doctor][fabric]") {
  HostFacts facts = hgx();
  for (auto& gpu : facts.gpus.gpus) {
    gpuenv::probe::NvLinkFacts links;  // 18 links up; the older counters refused (unknown), NVLink5's read
    for (unsigned link = 0; link < 18; ++link) links.active.push_back(link);
    links.nvlink5 = {{221, 0}, {213, gpu.index == 5 ? 3U : 0U}, {219, gpu.index == 5 ? 120U : 0U}};
    gpu.nvlink = links;
  }
  const Finding& f = require_finding(evaluate(facts), "gpu.nvlink");
  CHECK(f.status == Status::pass);
  CHECK_THAT(f.message, Catch::Contains("GPU 5 (00000000:15:00.0): 18 of 18 NVLinks active; NVLink5 counters since the "
                                        "driver loaded: 3 successful link recoveries, 120 effective errors"));
  CHECK_THAT(f.message, !Catch::Contains("GPU 4 (00000000:14:00.0): 18 of 18"));  // nothing counted: no note
}

// Symbol errors by their growth during the run, on a real 8x NDR node's /sys/class/infiniband (tests/fixtures/probe/
// ib-h100-8x400: 400 Gb/s InfiniBand ports, "400 Gb/sec (4X NDR)", mlx5_bond_0 an Ethernet port) read twice through
// FakeSystem, `seconds` apart, with `errors` added to one port's symbol_error in between (and `rate` written over its
// rate, `downed` added to its link_downed). The limits are rows of data/doctor/thresholds.toml, both gpuenv policy,
// and symbol errors never fail a node:
// - rdma-core infiniband-diags/scripts/ibcheckerrs.in @ 41293e0e: "# Default thresholds SymbolErrorCounter=10", and
//   `if (th[$1] > 0 && $2 >= th[$1]) warn = warn "#warn: counter " ...`: 10 or more is a warning; the same project's
//   rate limit is higher (infiniband-diags/scripts/IBswcountlimits.pm: `%IBswcountlimits::rate_dep_thresholds =
//   ("SymbolErrors", 10, ...)` per second, check_counter_rates);
// - the InfiniBand specification "requires less than one-bit error per 10^12 bits transmitted" (NVIDIA DGX SuperPOD
//   cabling design guide, "Bit Error Rate (BER)"), and NVIDIA's ibdiagnet: "For NDR/HDR/EDR links, symbol errors
//   (NDR/HDR) or effective errors (EDR) are the actual errors seen by the application level after error correction"
//   (IBUtils2 2.24.0, "Bit Error Rate (BER)"): on HDR/NDR, errors / (400e9 x seconds) bounds the post-FEC BER from
//   below (each symbol error is at least one bit error); on EDR symbol errors come before FEC and are not held to it.
// - the kernel reads symbol_error as the 16-bit and link_downed as the 8-bit PMA counter (drivers/infiniband/core/
//   sysfs.c PORT_PMA_ATTR(symbol_error, 0, 16, 32), PORT_PMA_ATTR(link_downed, 2, 8, 56)); the capture's mlx5_1
//   link_downed reads 255, at its maximum. A counter at its maximum stops counting (IBA PortCounters).
TEST_CASE("ib.errors: symbol errors judged by ibcheckerrs' count and the InfiniBand bit error rate",
          "[doctor][fabric]") {
  struct Row {
    std::string name;
    std::string device;
    unsigned errors;
    double seconds;
    Status expected;
    std::string says;
    std::string rate;     ///< written over the port's rate; "" keeps the capture's
    unsigned downed = 0;  ///< added to the port's link_downed
  };
  const std::vector<Row> rows = {
      {"quiet", "mlx5_4", 0, 60, Status::pass, "ports: no link went down, symbol errors within the limits in 60 s", ""},
      {"a few, reported", "mlx5_4", 4, 60, Status::pass,
       "mlx5_4:1: 4 symbol errors (below ibcheckerrs' 10; post-FEC bit error rate at least 1.7e-13 at 400 Gb/s)", ""},
      {"ibcheckerrs' count, within the BER", "mlx5_4", 12, 60, Status::warn,
       "mlx5_4:1: 12 symbol errors (ibcheckerrs warns from 10; post-FEC bit error rate at least 5.0e-13 at 400 Gb/s)",
       ""},
      {"above the specification's BER on NDR: a warning, never a failure", "mlx5_4", 36, 60, Status::warn,
       "mlx5_4:1: 36 symbol errors (post-FEC bit error rate at least 1.5e-12 at 400 Gb/s, above the InfiniBand "
       "specification's 1.0e-12; a lower bound, HDR/NDR only)",
       ""},
      {"the same count over a longer run is within the BER", "mlx5_4", 36, 300, Status::warn,
       "post-FEC bit error rate at least 3.0e-13", ""},
      {"HDR: post-FEC as NDR", "mlx5_4", 36, 60, Status::warn,
       "post-FEC bit error rate at least 3.0e-12 at 200 Gb/s, above the InfiniBand specification's",
       "200 Gb/sec (4X HDR)"},
      {"EDR: symbol errors before FEC, the BER not judged", "mlx5_4", 500, 60, Status::warn,
       "mlx5_4:1: 500 symbol errors (ibcheckerrs warns from 10; bit error rate at least 8.3e-11 at 100 Gb/sec (4X EDR) "
       "(not HDR/NDR: symbol errors before forward error correction, reported, not judged))",
       "100 Gb/sec (4X EDR)"},
      {"EDR: fewer than 10 reported", "mlx5_4", 5, 60, Status::pass, "reported, not judged", "100 Gb/sec (4X EDR)"},
      {"a burst in a one-second window: too few to judge", "mlx5_4", 8, 1, Status::pass,
       "mlx5_4:1: 8 symbol errors (below ibcheckerrs' 10; post-FEC bit error rate at least 2.0e-11", ""},
      {"an Ethernet (RoCE) port is reported only", "mlx5_bond_0", 500, 60, Status::pass,
       "mlx5_bond_0:1: 500 symbol errors (Ethernet link: reported, not judged)", ""},
      {"a link that retrained during the run: its symbol errors warn at most", "mlx5_4", 3600, 60, Status::warn,
       "a lower bound, HDR/NDR only; the link went down during the run, and a retrain brings symbol errors", "", 1},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    gpuenv::testing::FakeSystem system;
    system.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
    const std::string port = "/sys/class/infiniband/" + row.device + "/ports/1/";
    if (!row.rate.empty()) system.files[port + "rate"] = row.rate + "\n";
    HostFacts facts = hgx();
    facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
    const gpuenv::probe::LinkCounterOptions ports_only{"", std::chrono::seconds(1)};
    facts.counters_start = gpuenv::probe::read_link_counters(system, ports_only);
    const std::vector<std::pair<std::string, unsigned>> added = {{"symbol_error", row.errors},
                                                                 {"link_downed", row.downed}};
    for (const auto& [counter, count] : added)
      system.files[port + "counters/" + counter] =
          std::to_string(std::stoul(system.files[port + "counters/" + counter]) + count) + "\n";
    system.clock += std::chrono::milliseconds(static_cast<long>(row.seconds * 1000));
    facts.counters_end = gpuenv::probe::read_link_counters(system, ports_only);
    const Finding& f = require_finding(evaluate(facts), "ib.errors");
    INFO(f.message);
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
    CHECK(f.message.find("mlx5_1:1 link_downed at the counter's maximum") != std::string::npos);
    if (row.expected != Status::pass) CHECK(f.remedy.find("ibdiagnet --get_phy_info") != std::string::npos);
    if (row.says.find("above the InfiniBand") != std::string::npos)
      CHECK(f.source.find("10^12 bits") != std::string::npos);
  }
  // A symbol_error counter already at its 16-bit maximum cannot grow: its errors cannot be judged, a warning.
  gpuenv::testing::FakeSystem saturated;
  saturated.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
  saturated.files["/sys/class/infiniband/mlx5_4/ports/1/counters/symbol_error"] = "65535\n";
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(saturated, true);
  facts.counters_start = gpuenv::probe::read_link_counters(saturated, {"", std::chrono::seconds(1)});
  saturated.clock += std::chrono::seconds(60);
  facts.counters_end = gpuenv::probe::read_link_counters(saturated, {"", std::chrono::seconds(1)});
  const Finding& stuck = require_finding(evaluate(facts), "ib.errors");
  CHECK(stuck.status == Status::warn);
  CHECK(stuck.message.find("mlx5_4:1 symbol_error at the counter's maximum (65535): its symbol errors cannot be "
                           "judged") != std::string::npos);
  CHECK(stuck.remedy.find("perfquery -R") != std::string::npos);
}
