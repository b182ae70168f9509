// data/doctor/instances.toml and the rules that hold a node to its instance type.

#include "doctor/instances.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "support/findings.hpp"

namespace {

using gpuenv::doctor::InstanceExpectation;
using gpuenv::probe::GpuFacts;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::testing::find_finding;
using gpuenv::testing::doctor_rules::kb;

const std::vector<InstanceExpectation>& instance_table() {
  static const auto* loaded = [] {
    auto t = gpuenv::doctor::builtin_instances();
    REQUIRE(t);
    return *t;
  }();
  return *loaded;
}

HostFacts node(unsigned count, const std::string& name, std::uint64_t mib) {
  HostFacts facts;
  facts.live = false;
  facts.gpus.availability.available = true;
  facts.gpus.availability.source = "nvidia-smi -q -x";
  for (unsigned i = 0; i < count; ++i) {
    GpuFacts gpu;
    gpu.index = i;
    gpu.name = name;
    gpu.memory_total_mib = mib;
    facts.gpus.gpus.push_back(gpu);
  }
  return facts;
}

}  // namespace

TEST_CASE("instances.toml: the shipped table parses, every row has a source, the common types are there", "[doctor]") {
  const auto& rows = instance_table();
  CHECK(rows.size() >= 60);
  for (const InstanceExpectation& row : rows) {
    INFO(row.instance_type);
    CHECK_FALSE(row.source.empty());
    CHECK(row.gpus >= 1);
  }
  for (const char* type : {"p3.16xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge",
                           "p5en.48xlarge", "p6-b200.48xlarge", "g4dn.xlarge", "g5.48xlarge", "g6.xlarge",
                           "g6e.48xlarge", "a2-highgpu-8g", "a3-megagpu-8g", "a4-highgpu-8g", "g2-standard-96",
                           "Standard_ND96isr_H100_v5", "Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"}) {
    INFO(type);
    CHECK(gpuenv::doctor::find_instance(rows, type) != nullptr);
  }
  const auto* p4d = gpuenv::doctor::find_instance(rows, "p4d.24xlarge");
  REQUIRE(p4d != nullptr);
  CHECK(p4d->describe() == "8x A100 40960 MiB (nvlink)");
  CHECK(gpuenv::doctor::find_instance(rows, "p4d.24XLARGE") == nullptr);
}

TEST_CASE("instances.toml: bad rows are internal errors naming the row", "[doctor]") {
  const std::string row =
      "[[instance]]\ncloud = \"aws\"\ninstance_type = \"x.large\"\ngpu = \"T4\"\ngpus = 1\n"
      "status = \"verified\"\nsource = \"s\"\n";
  CHECK(gpuenv::doctor::parse_instances(row));
  const auto twice = gpuenv::doctor::parse_instances(row + row);
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("x.large appears twice") != std::string::npos);
  const auto bad_cloud = gpuenv::doctor::parse_instances(
      "[[instance]]\ncloud = \"moon\"\ninstance_type = \"a\"\ngpu = \"T4\"\ngpus = 1\nstatus = \"verified\"\n"
      "source = \"s\"\n");
  REQUIRE_FALSE(bad_cloud);
  CHECK(bad_cloud.error().message.find("cloud") != std::string::npos);
  const auto no_source = gpuenv::doctor::parse_instances(
      "[[instance]]\ncloud = \"aws\"\ninstance_type = \"a\"\ngpu = \"T4\"\ngpus = 1\nstatus = \"verified\"\n");
  REQUIRE_FALSE(no_source);
  CHECK(no_source.error().message.find("source") != std::string::npos);
  const auto no_efa = gpuenv::doctor::parse_instances(
      "[[instance]]\ncloud = \"aws\"\ninstance_type = \"a\"\ngpu = \"T4\"\ngpus = 1\nefa_devices = 0\n"
      "status = \"verified\"\nsource = \"s\"\n");
  REQUIRE_FALSE(no_efa);
  CHECK(no_efa.error().message.find("`efa_devices` must be between 1 and 64") != std::string::npos);
}

TEST_CASE("is_gpu_model: the driver's GPU name against the type's model, exact names and aliases only", "[doctor]") {
  struct Case {
    const char* device_name;
    const char* model;
    bool same;
  };
  const Case cases[] = {
      {"NVIDIA A100-SXM4-40GB", "A100", true},
      {"NVIDIA A100-SXM4-80GB", "A100", true},
      {"Tesla V100-SXM2-16GB", "V100", true},
      {"NVIDIA H100 80GB HBM3", "h100", true},
      {"NVIDIA L4", "L4", true},
      {"Tesla T4", "T4", true},
      {"NVIDIA H200", "H200", true},
      {"NVIDIA B200", "B200", true},
      {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100", true},
      {"NVIDIA L40S", "L4", false},
      {"NVIDIA A10G", "A10", false},
      {"NVIDIA H200", "H100", false},
      {"NVIDIA T400", "T4", false},
      {"NVIDIA T400 4GB", "T4", false},
      {"NVIDIA GH200 480GB", "H200", false},
      {"NVIDIA GB200", "B200", false},
      {"NVIDIA Future GPU", "B300", false},
  };
  for (const Case& c : cases) {
    INFO(c.device_name << " vs " << c.model);
    CHECK(gpuenv::doctor::is_gpu_model(kb(), c.device_name, c.model) == c.same);
  }
}

TEST_CASE("check_instance: model, memory size and NVLink against the type, naming it when they fail", "[doctor]") {
  const auto* p4de = gpuenv::doctor::find_instance(instance_table(), "p4de.24xlarge");
  const auto* p4d = gpuenv::doctor::find_instance(instance_table(), "p4d.24xlarge");
  REQUIRE(p4de != nullptr);
  REQUIRE(p4d != nullptr);

  std::vector<Finding> out;
  gpuenv::doctor::check_instance(node(8, "NVIDIA A100-SXM4-80GB", 81920), kb(), *p4de, out);
  REQUIRE(find_finding(out, "gpu.model") != nullptr);
  CHECK(find_finding(out, "gpu.model")->status == Status::pass);
  CHECK(find_finding(out, "gpu.memory_size")->status == Status::pass);
  CHECK(find_finding(out, "gpu.interconnect") == nullptr);  // p4de's interconnect is not sourced

  out.clear();  // a p4de that got 40 GB boards
  gpuenv::doctor::check_instance(node(8, "NVIDIA A100-SXM4-40GB", 40960), kb(), *p4de, out);
  REQUIRE(find_finding(out, "gpu.memory_size") != nullptr);
  CHECK(find_finding(out, "gpu.memory_size")->status == Status::fail);
  CHECK(find_finding(out, "gpu.memory_size")->message.find("p4de.24xlarge (AWS) should have 81920 MiB per GPU") !=
        std::string::npos);

  out.clear();  // the wrong GPU altogether
  gpuenv::doctor::check_instance(node(8, "NVIDIA H100 80GB HBM3", 81559), kb(), *p4de, out);
  CHECK(find_finding(out, "gpu.model")->status == Status::fail);
  CHECK(find_finding(out, "gpu.model")->message.find("GPU 0 is NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(find_finding(out, "gpu.model")->message.find("p4de.24xlarge (AWS) should have 8x A100") != std::string::npos);

  // NVLink: p4d's is sourced; a GPU with all links down fails, NVML-less reports skip.
  HostFacts linked = node(2, "NVIDIA A100-SXM4-40GB", 40960);
  out.clear();
  gpuenv::doctor::check_instance(linked, kb(), *p4d, out);
  CHECK(find_finding(out, "gpu.interconnect")->status == Status::skip);
  linked.gpus.gpus[0].nvlink = gpuenv::probe::NvLinkFacts{{0, 1, 2}, {}, {}, {}, {}};
  linked.gpus.gpus[1].nvlink = gpuenv::probe::NvLinkFacts{{}, {0, 1, 2}, {}, {}, {}};
  out.clear();
  gpuenv::doctor::check_instance(linked, kb(), *p4d, out);
  CHECK(find_finding(out, "gpu.interconnect")->status == Status::fail);
  CHECK(find_finding(out, "gpu.interconnect")->message.find("GPU 1 report no active NVLink") != std::string::npos);

  out.clear();  // no GPUs: no GPU to hold (gpu.count says why); only the type's EFA devices are judged
  HostFacts none;
  gpuenv::doctor::check_instance(none, kb(), *p4d, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "fabric.efa");
}

TEST_CASE("gpu.count: the instance type's count unless --expect-gpus overrides it", "[doctor]") {
  const auto* p4d = gpuenv::doctor::find_instance(instance_table(), "p4d.24xlarge");
  REQUIRE(p4d != nullptr);
  auto thresholds = gpuenv::doctor::builtin_thresholds();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE(thresholds);
  REQUIRE(kb);
  HostFacts facts = node(7, "NVIDIA A100-SXM4-40GB", 40960);
  facts.host.cloud = "aws";
  facts.host.instance_type = "p4d.24xlarge";
  facts.host.cloud_source = "DMI sys_vendor=Amazon EC2";

  gpuenv::doctor::Expectations by_type;
  by_type.instance = p4d;
  auto findings = gpuenv::doctor::evaluate(facts, **thresholds, **kb, by_type);
  REQUIRE(find_finding(findings, "gpu.count") != nullptr);
  CHECK(find_finding(findings, "gpu.count")->status == Status::fail);
  CHECK(find_finding(findings, "gpu.count")->message ==
        "7 GPUs: 7x NVIDIA A100-SXM4-40GB; p4d.24xlarge should have 8x A100 "
        "40960 MiB (nvlink)");
  CHECK(find_finding(findings, "host.cloud")->status == Status::pass);
  CHECK(find_finding(findings, "host.cloud")->message.find("AWS, instance type p4d.24xlarge") == 0);

  gpuenv::doctor::Expectations overridden = by_type;
  overridden.gpu_count = 7;
  findings = gpuenv::doctor::evaluate(facts, **thresholds, **kb, overridden);
  CHECK(find_finding(findings, "gpu.count")->status == Status::pass);

  facts = node(8, "NVIDIA A100-SXM4-40GB", 40960);
  findings = gpuenv::doctor::evaluate(facts, **thresholds, **kb, by_type);
  CHECK(find_finding(findings, "gpu.count")->status == Status::pass);
}

TEST_CASE("fabric.efa / fabric.infiniband: RDMA devices against the type, failing below it and naming it", "[doctor]") {
  const auto* p5 = gpuenv::doctor::find_instance(instance_table(), "p5.48xlarge");
  const auto* nd = gpuenv::doctor::find_instance(instance_table(), "Standard_ND96isr_H100_v5");
  const auto* g5 = gpuenv::doctor::find_instance(instance_table(), "g5.xlarge");
  REQUIRE(p5 != nullptr);
  REQUIRE(nd != nullptr);
  REQUIRE(g5 != nullptr);
  CHECK(p5->efa_devices == 32u);
  CHECK(nd->infiniband_devices == 8u);
  CHECK_FALSE(g5->efa_devices);  // EFA is optional on the g families: not judged

  HostFacts facts = node(8, "NVIDIA H100 80GB HBM3", 81559);
  facts.rdma.availability = {true, "/sys/class/infiniband", ""};
  for (unsigned i = 0; i < 16; ++i) facts.rdma.efa.push_back("rdmap" + std::to_string(i) + "s0");
  std::vector<Finding> out;
  gpuenv::doctor::check_instance(facts, kb(), *p5, out);
  REQUIRE(find_finding(out, "fabric.efa") != nullptr);
  CHECK(find_finding(out, "fabric.efa")->status == Status::fail);
  CHECK(find_finding(out, "fabric.efa")->message.find("16 EFA devices in /sys/class/infiniband (rdmap0s0, ") == 0);
  CHECK(find_finding(out, "fabric.efa")->message.find("; p5.48xlarge (AWS) should have 32") != std::string::npos);
  CHECK(find_finding(out, "fabric.efa")->source == p5->source);
  CHECK(find_finding(out, "fabric.infiniband") == nullptr);

  facts.rdma.efa.clear();  // none at all: launched without EFA interfaces, or no driver
  out.clear();
  gpuenv::doctor::check_instance(facts, kb(), *p5, out);
  CHECK(find_finding(out, "fabric.efa")->status == Status::fail);
  CHECK(find_finding(out, "fabric.efa")->message ==
        "0 EFA devices in /sys/class/infiniband; p5.48xlarge (AWS) should have 32");

  for (unsigned i = 0; i < 32; ++i) facts.rdma.efa.push_back("rdmap" + std::to_string(i) + "s0");
  out.clear();
  gpuenv::doctor::check_instance(facts, kb(), *p5, out);
  CHECK(find_finding(out, "fabric.efa")->status == Status::pass);

  // Azure ND H100 v5: eight ConnectX-7 InfiniBand NICs; EFA devices do not count for it.
  facts.rdma.infiniband = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6"};
  out.clear();
  gpuenv::doctor::check_instance(facts, kb(), *nd, out);
  CHECK(find_finding(out, "fabric.efa") == nullptr);
  CHECK(find_finding(out, "fabric.infiniband")->status == Status::fail);
  CHECK(find_finding(out, "fabric.infiniband")->message.find("7 InfiniBand/RDMA devices") == 0);
  CHECK(find_finding(out, "fabric.infiniband")->message.find("Standard_ND96isr_H100_v5 (Azure) should have 8") !=
        std::string::npos);

  // A captured tree without /sys/class/infiniband: a skip with the reason, even with no GPUs visible.
  HostFacts rooted;
  rooted.rdma.availability.reason = "/sys/class/infiniband is not in the inspected tree";
  out.clear();
  gpuenv::doctor::check_instance(rooted, kb(), *p5, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "fabric.efa");
  CHECK(out[0].status == Status::skip);
  CHECK(out[0].message ==
        "p5.48xlarge (AWS) should have 32 EFA devices; /sys/class/infiniband is not in the inspected "
        "tree");
}
