// doctor's fabric rules for the links off the board, on HostFacts built in C++: fabric.sxid, ib.ports,
// fabric.gpudirect and fabric.affinity (docs/fabric.md). The sources are quoted at each case (the Fabric Manager user
// guide's SXid appendix, NCCL's GPUDirect check); the shared nodes are in fabric_rules_support.hpp.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctor/fabric_rules_support.hpp"

TEST_CASE("fabric.sxid: fatal SXids fail, corrected ECC passes, an unknown code warns", "[doctor][fabric]") {
  // Severity per data/sxid.toml: the Fabric Manager user guide's SXid appendix (fatal vs non-fatal NVSwitch errors)
  // as leptonai/gpud copies it; the log lines are the real ones in tests/fixtures/probe/sxid-xid79-h100.log.
  HostFacts facts = hgx();
  facts.sxid_events = gpuenv::probe::parse_sxid_events(gpuenv::testing::read_fixture("probe/sxid-xid79-h100.log"));
  const Finding& fatal = require_finding(evaluate(facts), "fabric.sxid");
  CHECK(fatal.status == Status::fail);
  CHECK(fatal.message.find("SXid 20034 on 0000:05:00.0 x2: LTSSM Fault Up") != std::string::npos);
  CHECK(fatal.remedy.find("SXid 20034") != std::string::npos);

  HostFacts corrected = hgx();
  corrected.sxid_events.push_back({11012, "nvidia-nvswitch0", "0000:05:00.0", false, "Single bit ECC", "", 1});
  CHECK(require_finding(evaluate(corrected), "fabric.sxid").status == Status::pass);
  corrected.sxid_events.push_back({99999, "nvidia-nvswitch0", "0000:05:00.0", false, "new", "", 2});
  const Finding& unknown = require_finding(evaluate(corrected), "fabric.sxid");
  CHECK(unknown.status == Status::warn);
  CHECK(unknown.message.find("not in gpuenv's SXid table") != std::string::npos);
  corrected.sxid_events.push_back({99998, "nvidia-nvswitch0", "0000:05:00.0", true, "new and fatal", "", 3});
  const Finding& unknown_fatal = require_finding(evaluate(corrected), "fabric.sxid");
  CHECK(unknown_fatal.status == Status::fail);  // the driver printed "Fatal": trusted for a code the table lacks
  CHECK(unknown_fatal.message.find("SXid 99998 on 0000:05:00.0 (Fatal, not in gpuenv's SXid table)") !=
        std::string::npos);
  CHECK(unknown_fatal.remedy.find("reset the GPUs and NVSwitches") != std::string::npos);

  // data/sxid.toml's rows are secondary (gpud's copy of the guide): its "error" for 12028, which the driver prints
  // Non-fatal ("12028, Non-fatal, Link 32 egress non-posted PRIV error (First)", probe/sxid.hpp), only warns.
  HostFacts secondary = hgx();
  secondary.sxid_events.push_back({12028, "nvidia-nvswitch3", "0000:05:00.0", false, "Link 32 egress", "", 1});
  const Finding& gpud_fatal = require_finding(evaluate(secondary), "fabric.sxid");
  CHECK(gpud_fatal.status == Status::warn);
  CHECK(gpud_fatal.message.find("the driver printed Non-fatal") != std::string::npos);
  secondary.sxid_events.push_back({12028, "nvidia-nvswitch3", "0000:05:00.0", true, "Link 33 egress", "", 2});
  CHECK(require_finding(evaluate(secondary), "fabric.sxid").status == Status::fail);  // once printed Fatal

  HostFacts unreadable = hgx();
  unreadable.kernel_log_source = "unreadable: dmesg is not allowed";
  CHECK(require_finding(evaluate(unreadable), "fabric.sxid").status == Status::skip);
}

TEST_CASE("ib.ports: a real 8x NDR node against ND H100 v5, a port down, a slow rail", "[doctor][fabric]") {
  const auto* nd = instance("Standard_ND96isr_H100_v5");
  REQUIRE(nd != nullptr);
  REQUIRE(nd->nic_rate_gbps == std::optional<double>(400));
  gpuenv::testing::FakeSystem system;
  system.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  const Finding& ok = require_finding(evaluate(facts, nd), "ib.ports");
  CHECK(ok.status == Status::pass);
  CHECK(ok.message.find("8 InfiniBand/RoCE ports ACTIVE/LinkUp at 400 Gb/s") != std::string::npos);

  HostFacts down = facts;
  down.rdma.ports[2].state = "DOWN";
  down.rdma.ports[2].phys_state = "Polling";
  const Finding& lost = require_finding(evaluate(down, nd), "ib.ports");
  CHECK(lost.status == Status::fail);
  CHECK(lost.message.find("7 of 8") != std::string::npos);
  CHECK(lost.message.find("mlx5_4:1 DOWN/Polling") != std::string::npos);

  HostFacts slow = facts;
  slow.rdma.ports[0].rate_gbps = 200;
  slow.rdma.ports[0].rate_text = "200 Gb/sec (2X NDR)";
  CHECK(require_finding(evaluate(slow, nd), "ib.ports").status == Status::fail);

  // Without an instance type the ports are reported, never judged.
  CHECK(require_finding(evaluate(down), "ib.ports").status == Status::pass);
}

TEST_CASE("ib.ports: EFA ports on a p4d counted by state, a port down fails", "[doctor][fabric]") {
  // An EFA port in sysfs as linux-rdma/rdma-core#884 shows it (`cat /sys/class/infiniband/efa_0/ports/1/link_layer`
  // prints "Unknown"; ibv_devinfo: state PORT_ACTIVE (4)) under the rdmapNsM names the EFA driver gives on p4d/p5
  // (uccl-project/uccl#163: rdmap16s27); the device's uevent names the efa driver. p4d.24xlarge has 4 (the EC2 API).
  const auto* p4d = instance("p4d.24xlarge");
  REQUIRE(p4d != nullptr);
  REQUIRE(p4d->efa_devices == std::optional<unsigned>(4));
  gpuenv::testing::FakeSystem system;
  for (const char* device : {"rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"}) {
    const std::string base = std::string("/sys/class/infiniband/") + device;
    system.files[base + "/device/uevent"] = "DRIVER=efa\nPCI_ID=1D0F:EFA0\n";
    system.files[base + "/ports/1/state"] = "4: ACTIVE\n";
    system.files[base + "/ports/1/phys_state"] = "5: LinkUp\n";
    system.files[base + "/ports/1/link_layer"] = "Unknown\n";
  }
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  REQUIRE(facts.rdma.ports.size() == 4);
  const Finding& ok = require_finding(evaluate(facts, p4d), "ib.ports");
  CHECK(ok.status == Status::pass);
  CHECK(ok.message.find("4 EFA ports ACTIVE/LinkUp, as p4d.24xlarge should have") != std::string::npos);

  system.files["/sys/class/infiniband/rdmap32s27/ports/1/state"] = "1: DOWN\n";
  system.files["/sys/class/infiniband/rdmap32s27/ports/1/phys_state"] = "3: Disabled\n";
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  const Finding& lost = require_finding(evaluate(facts, p4d), "ib.ports");
  CHECK(lost.status == Status::fail);
  CHECK(lost.message.find("3 of 4 EFA ports") != std::string::npos);
  CHECK(lost.message.find("rdmap32s27:1 DOWN/Disabled") != std::string::npos);
}

TEST_CASE("fabric.gpudirect: peer memory, dma-buf, neither, EFA's libfabric and NCCL plugin", "[doctor][fabric]") {
  // NCCL's own check (NVIDIA/nccl src/transport/net_ib/gdr.cc ibGdrSupportInitOnce): GPUDirect RDMA when
  // /sys/kernel/mm/memory_peers/nv_mem/version or /sys/module/nvidia_peermem/version exists, or dma-buf (the open
  // kernel module on Linux 5.12+, NVIDIA GPU Operator "GPUDirect RDMA" page).
  HostFacts ib = hgx();
  ib.rdma.infiniband = {"mlx5_0"};
  ib.fabric.peermem_loaded = false;
  ib.kernel.open_module = false;
  const Finding& neither = require_finding(evaluate(ib), "fabric.gpudirect");
  CHECK(neither.status == Status::warn);
  CHECK(neither.remedy.find("modprobe nvidia_peermem") != std::string::npos);
  ib.kernel.open_module = true;  // kernel 5.15 >= 5.12: dma-buf
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::pass);
  ib.host.kernel_release = "5.4.0-150-generic";
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::warn);
  ib.fabric.peermem_loaded = true;
  ib.fabric.peermem_evidence = "/sys/module/nvidia_peermem/version";
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::pass);

  HostFacts efa = hgx();
  efa.rdma.efa = {"rdmap16s27"};
  efa.fabric.efa_libfabric = true;
  const Finding& plugin = require_finding(evaluate(efa), "fabric.gpudirect");
  CHECK(plugin.status == Status::warn);
  CHECK(plugin.message.find("aws-ofi-nccl") != std::string::npos);
  efa.fabric.efa_nccl_plugin = true;
  CHECK(require_finding(evaluate(efa), "fabric.gpudirect").status == Status::pass);
}

TEST_CASE("fabric.affinity: NICs per GPU NUMA node, reported and never judged", "[doctor][fabric]") {
  HostFacts facts = hgx();
  gpuenv::probe::RdmaPort port;
  port.device = "mlx5_0";
  port.numa_node = 0;
  facts.rdma.ports.push_back(port);
  facts.fabric.gpu_numa = {{0, "0000:10:00.0", 0}, {4, "0000:14:00.0", 1}};
  const Finding& f = require_finding(evaluate(facts), "fabric.affinity");
  CHECK(f.status == Status::pass);
  CHECK(f.message.find("GPU 0 on NUMA 0: mlx5_0") != std::string::npos);
  CHECK(f.message.find("GPU 4 on NUMA 1: no RDMA NIC") != std::string::npos);
  CHECK(f.message.find("not judged") != std::string::npos);
}
