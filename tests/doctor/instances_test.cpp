// data/doctor/instances.toml and the rules that hold a node to its instance type.

#include "doctor/instances.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "doctor/rules.hpp"

namespace {

using gpuenv::doctor::InstanceExpectation;
using gpuenv::probe::GpuFacts;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;

const std::vector<InstanceExpectation>& table() {
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

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.id == id; });
  return it == findings.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("instances.toml: the shipped table parses, every row has a source, the common types are there", "[doctor]") {
  const auto& rows = table();
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
}

TEST_CASE("gpu_name_has_token: whole words of the driver's GPU name", "[doctor]") {
  using gpuenv::doctor::gpu_name_has_token;
  CHECK(gpu_name_has_token("NVIDIA A100-SXM4-40GB", "A100"));
  CHECK(gpu_name_has_token("Tesla V100-SXM2-16GB", "V100"));
  CHECK(gpu_name_has_token("NVIDIA H100 80GB HBM3", "h100"));
  CHECK(gpu_name_has_token("NVIDIA L4", "L4"));
  CHECK_FALSE(gpu_name_has_token("NVIDIA L40S", "L4"));
  CHECK_FALSE(gpu_name_has_token("NVIDIA A10G", "A10"));
  CHECK_FALSE(gpu_name_has_token("NVIDIA H200", "H100"));
}

TEST_CASE("check_instance: model, memory size and NVLink against the type, naming it when they fail", "[doctor]") {
  const auto* p4de = gpuenv::doctor::find_instance(table(), "p4de.24xlarge");
  const auto* p4d = gpuenv::doctor::find_instance(table(), "p4d.24xlarge");
  REQUIRE(p4de != nullptr);
  REQUIRE(p4d != nullptr);

  std::vector<Finding> out;
  gpuenv::doctor::check_instance(node(8, "NVIDIA A100-SXM4-80GB", 81920), *p4de, out);
  REQUIRE(find(out, "gpu.model") != nullptr);
  CHECK(find(out, "gpu.model")->status == Status::pass);
  CHECK(find(out, "gpu.memory_size")->status == Status::pass);
  CHECK(find(out, "gpu.interconnect") == nullptr);  // p4de's interconnect is not sourced

  out.clear();  // a p4de that got 40 GB boards
  gpuenv::doctor::check_instance(node(8, "NVIDIA A100-SXM4-40GB", 40960), *p4de, out);
  REQUIRE(find(out, "gpu.memory_size") != nullptr);
  CHECK(find(out, "gpu.memory_size")->status == Status::fail);
  CHECK(find(out, "gpu.memory_size")->message.find("p4de.24xlarge (AWS) should have 81920 MiB per GPU") !=
        std::string::npos);

  out.clear();  // the wrong GPU altogether
  gpuenv::doctor::check_instance(node(8, "NVIDIA H100 80GB HBM3", 81559), *p4de, out);
  CHECK(find(out, "gpu.model")->status == Status::fail);
  CHECK(find(out, "gpu.model")->message.find("GPU 0 is NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(find(out, "gpu.model")->message.find("p4de.24xlarge (AWS) should have 8x A100") != std::string::npos);

  // NVLink: p4d's is sourced; a GPU with all links down fails, NVML-less reports skip.
  HostFacts linked = node(2, "NVIDIA A100-SXM4-40GB", 40960);
  out.clear();
  gpuenv::doctor::check_instance(linked, *p4d, out);
  CHECK(find(out, "gpu.interconnect")->status == Status::skip);
  linked.gpus.gpus[0].nvlink = gpuenv::probe::NvLinkFacts{{0, 1, 2}, {}, {}, {}, {}};
  linked.gpus.gpus[1].nvlink = gpuenv::probe::NvLinkFacts{{}, {0, 1, 2}, {}, {}, {}};
  out.clear();
  gpuenv::doctor::check_instance(linked, *p4d, out);
  CHECK(find(out, "gpu.interconnect")->status == Status::fail);
  CHECK(find(out, "gpu.interconnect")->message.find("GPU 1 report no active NVLink") != std::string::npos);

  out.clear();  // no GPUs: nothing to hold (gpu.count says why)
  HostFacts none;
  gpuenv::doctor::check_instance(none, *p4d, out);
  CHECK(out.empty());
}

TEST_CASE("gpu.count: the instance type's count unless --expect-gpus overrides it", "[doctor]") {
  const auto* p4d = gpuenv::doctor::find_instance(table(), "p4d.24xlarge");
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
  REQUIRE(find(findings, "gpu.count") != nullptr);
  CHECK(find(findings, "gpu.count")->status == Status::fail);
  CHECK(find(findings, "gpu.count")->message ==
        "7 GPUs: 7x NVIDIA A100-SXM4-40GB; p4d.24xlarge should have 8x A100 "
        "40960 MiB (nvlink)");
  CHECK(find(findings, "host.cloud")->status == Status::pass);
  CHECK(find(findings, "host.cloud")->message.find("AWS, instance type p4d.24xlarge") == 0);

  gpuenv::doctor::Expectations overridden = by_type;
  overridden.gpu_count = 7;
  findings = gpuenv::doctor::evaluate(facts, **thresholds, **kb, overridden);
  CHECK(find(findings, "gpu.count")->status == Status::pass);

  facts = node(8, "NVIDIA A100-SXM4-40GB", 40960);
  findings = gpuenv::doctor::evaluate(facts, **thresholds, **kb, by_type);
  CHECK(find(findings, "gpu.count")->status == Status::pass);
}
