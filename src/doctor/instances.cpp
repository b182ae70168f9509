#include "doctor/instances.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <span>

#include "probe/cloud.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::doctor {

std::span<const util::EmbeddedFile> embedded_doctor_data();  // generated from data/doctor/*.toml

namespace {

using report::Finding;
using report::Status;

/// Memory reported by the driver may differ from the published size by ECC and reservations (T4: 15,360 of
/// 16,384 MiB); a policy margin, not a sourced number.
constexpr double k_memory_tolerance = 0.10;

std::string type_label(const InstanceExpectation& expected) {
  return expected.instance_type + " (" + std::string(probe::cloud_display_name(expected.cloud)) + ")";
}

void check_model(const probe::HostFacts& facts, const compat::KnowledgeBase& kb, const InstanceExpectation& expected,
                 std::vector<Finding>& out) {
  std::vector<std::string> wrong;
  bool unlisted = false;
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.name.empty() || is_gpu_model(kb, gpu.name, expected.gpu)) continue;
    wrong.push_back("GPU " + std::to_string(gpu.index) + " is " + gpu.name);
    unlisted = unlisted || kb.gpu(gpu.name) == nullptr;
  }
  if (wrong.empty()) {
    out.push_back({"gpu.model", Status::pass,
                   "every GPU is an " + expected.gpu + " as " + type_label(expected) + " should have", "",
                   expected.source});
    return;
  }
  std::string remedy =
      "the node is not the hardware its instance type promises: replace it (stop/start moves it to other "
      "hardware) or open a ticket with the provider";
  if (unlisted)
    remedy += "; if the name is one the driver gives a " + expected.gpu +
              ", add it to that model's aliases (data/compat/gpus.toml, or a data overlay)";
  out.push_back({"gpu.model", Status::fail,
                 util::join(wrong, "; ") + "; " + type_label(expected) + " should have " + expected.describe(), remedy,
                 expected.source});
}

void check_memory(const probe::HostFacts& facts, const InstanceExpectation& expected, std::vector<Finding>& out) {
  if (!expected.gpu_memory_mib) return;
  const double want = static_cast<double>(*expected.gpu_memory_mib);
  std::vector<std::string> wrong;
  unsigned checked = 0;
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.memory_total_mib) continue;
    ++checked;
    const double have = static_cast<double>(*gpu.memory_total_mib);
    if (have < want * (1.0 - k_memory_tolerance) || have > want * (1.0 + k_memory_tolerance))
      wrong.push_back("GPU " + std::to_string(gpu.index) + " has " + std::to_string(*gpu.memory_total_mib) + " MiB");
  }
  if (checked == 0) {
    out.push_back({"gpu.memory_size", Status::skip, "no GPU reports its memory size", "", ""});
  } else if (wrong.empty()) {
    out.push_back({"gpu.memory_size", Status::pass,
                   std::to_string(checked) + " GPUs within 10% of " + std::to_string(*expected.gpu_memory_mib) +
                       " MiB, as " + type_label(expected) + " should have",
                   "", expected.source});
  } else {
    out.push_back({"gpu.memory_size", Status::fail,
                   util::join(wrong, "; ") + "; " + type_label(expected) + " should have " +
                       std::to_string(*expected.gpu_memory_mib) + " MiB per GPU",
                   "the GPUs are a different memory variant than the instance type promises: replace the node or "
                   "open a ticket with the provider",
                   expected.source});
  }
}

void check_interconnect(const probe::HostFacts& facts, const InstanceExpectation& expected, std::vector<Finding>& out) {
  if (expected.interconnect != "nvlink" && expected.interconnect != "nvswitch") return;
  if (facts.gpus.gpus.size() < 2) return;
  std::vector<std::string> down;
  unsigned reported = 0;
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.nvlink) continue;
    ++reported;
    if (gpu.nvlink->active.empty()) down.push_back("GPU " + std::to_string(gpu.index));
  }
  if (reported == 0) {
    out.push_back({"gpu.interconnect", Status::skip,
                   type_label(expected) + " should have NVLink; " + facts.gpus.availability.source +
                       " does not report NVLink state",
                   "", ""});
  } else if (down.empty()) {
    out.push_back({"gpu.interconnect", Status::pass,
                   std::to_string(reported) + " GPUs have active NVLinks, as " + type_label(expected) + " should", "",
                   expected.source});
  } else {
    out.push_back({"gpu.interconnect", Status::fail,
                   util::join(down, ", ") + " report no active NVLink; " + type_label(expected) + " should have " +
                       expected.interconnect,
                   "check `nvidia-smi nvlink -s` and `nvidia-smi topo -m`; on NVSwitch systems the fabric manager "
                   "must be running; otherwise open a hardware ticket",
                   expected.source});
  }
}

void check_pcie_generation(const probe::HostFacts& facts, const InstanceExpectation& expected,
                           std::vector<Finding>& out) {
  if (!expected.pcie_gen) return;
  std::vector<std::string> wrong;
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.pcie_gen_max && *gpu.pcie_gen_max < *expected.pcie_gen)
      wrong.push_back("GPU " + std::to_string(gpu.index) + " links at most Gen" + std::to_string(*gpu.pcie_gen_max));
  }
  const std::string want = "PCIe Gen" + std::to_string(*expected.pcie_gen);
  if (wrong.empty()) {
    out.push_back({"gpu.pcie_generation", Status::pass, "no GPU's link is below " + want, "", expected.source});
  } else {
    out.push_back({"gpu.pcie_generation", Status::fail,
                   util::join(wrong, "; ") + "; " + type_label(expected) + " should have " + want,
                   "check the slot and riser (`lspci -vv`), or replace the node", expected.source});
  }
}

/// One RDMA expectation: fewer devices than the type has is a missing network card, or the interfaces were not
/// attached at launch, or the driver is not loaded; all three leave multi-node jobs slow or failing.
void check_rdma(const probe::HostFacts& facts, const InstanceExpectation& expected, const std::string& id,
                const std::string& kind, unsigned want, const std::vector<std::string>& have, const std::string& remedy,
                std::vector<Finding>& out) {
  const probe::RdmaDevices& rdma = facts.rdma;
  const std::string should = type_label(expected) + " should have " + std::to_string(want);
  if (!rdma.availability.available) {
    out.push_back({id, Status::skip, should + " " + kind + " devices; " + rdma.availability.reason, "", ""});
  } else if (have.size() >= want) {
    out.push_back({id, Status::pass,
                   std::to_string(have.size()) + " " + kind + " devices, as " + type_label(expected) + " should have",
                   "", expected.source});
  } else {
    out.push_back({id, Status::fail,
                   std::to_string(have.size()) + " " + kind + " devices in " + rdma.availability.source +
                       (have.empty() ? "" : " (" + util::join(have, ", ") + ")") + "; " + should,
                   remedy, expected.source});
  }
}

void check_fabric(const probe::HostFacts& facts, const InstanceExpectation& expected, std::vector<Finding>& out) {
  if (expected.efa_devices) {
    check_rdma(facts, expected, "fabric.efa", "EFA", *expected.efa_devices, facts.rdma.efa,
               "launch the instance with an EFA network interface on every network card (InterfaceType efa) and "
               "load the efa driver (the aws-efa-installer); if they were, the node is missing a card: replace it",
               out);
  }
  if (expected.infiniband_devices) {
    check_rdma(facts, expected, "fabric.infiniband", "InfiniBand/RDMA", *expected.infiniband_devices,
               facts.rdma.infiniband,
               "load the ConnectX driver stack (mlx5_ib: the provider's HPC image or DOCA/MLNX_OFED) and check "
               "`ibstat`; if it is loaded, the node is missing a NIC: replace it or open a ticket with the provider",
               out);
  }
}

}  // namespace

std::string InstanceExpectation::describe() const {
  std::string text = std::to_string(gpus) + "x " + gpu;
  if (gpu_memory_mib) text += " " + std::to_string(*gpu_memory_mib) + " MiB";
  if (!interconnect.empty()) text += " (" + interconnect + ")";
  return text;
}

std::vector<util::RowKey> instance_row_keys() { return {{"instance", {"instance_type"}}}; }

util::Expected<std::vector<InstanceExpectation>> parse_instances(std::string_view text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"instances.toml", {"instances.toml", text}, instance_row_keys()}, overlay));
  if (const auto key = parsed.unexpected_key({"instance"}))
    return util::Error::internal("instances.toml: unknown top-level key `" + *key + "`");
  std::vector<InstanceExpectation> out;
  std::set<std::string> seen;
  GPUENV_TRY(parsed.read_rows("instance", [&](util::TomlRow& row) {
    InstanceExpectation e;
    e.cloud = row.one_of("cloud", {"aws", "gcp", "azure", "alibaba", "tencent", "huawei", "oracle", "openstack"});
    e.instance_type = row.text("instance_type");
    e.gpu = row.text("gpu");
    e.gpus = static_cast<unsigned>(row.integer_in("gpus", 1, 64, "between 1 and 64"));
    if (auto mib = row.optional_number("gpu_memory_mib")) {
      if (*mib <= 0) row.fail("`gpu_memory_mib` must be positive");
      e.gpu_memory_mib = static_cast<std::uint64_t>(*mib);
    }
    if (!row.optional_text("interconnect").empty())
      e.interconnect = row.one_of("interconnect", {"nvlink", "nvswitch", "pcie"});
    if (auto gen = row.optional_number("pcie_gen")) e.pcie_gen = static_cast<unsigned>(*gen);
    if (auto efa = row.optional_number("efa_devices")) {
      if (*efa < 1 || *efa > 64) row.fail("`efa_devices` must be between 1 and 64");
      e.efa_devices = static_cast<unsigned>(*efa);
    }
    if (auto ib = row.optional_number("infiniband_devices")) {
      if (*ib < 1 || *ib > 64) row.fail("`infiniband_devices` must be between 1 and 64");
      e.infiniband_devices = static_cast<unsigned>(*ib);
    }
    if (auto rate = row.optional_number("nic_rate_gbps")) {
      if (*rate <= 0 || *rate > 3200) row.fail("`nic_rate_gbps` must be between 0 and 3200 Gb/s");
      if (!e.efa_devices && !e.infiniband_devices)
        row.fail("`nic_rate_gbps` needs `efa_devices` or `infiniband_devices`");
      e.nic_rate_gbps = rate;
    }
    row.one_of("status", {"verified", "secondary", "unverified"});
    e.source = row.text("source");
    if (!seen.insert(e.instance_type).second) row.fail(e.instance_type + " appears twice");
    out.push_back(std::move(e));
  }));
  return out;
}

util::Expected<std::vector<InstanceExpectation>> load_instances(const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto text, util::embedded_text(embedded_doctor_data(), "instances.toml"));
  return parse_instances(text, overlay);
}

util::Expected<const std::vector<InstanceExpectation>*> builtin_instances() {
  return util::builtin_table<&load_instances>();
}

const InstanceExpectation* find_instance(const std::vector<InstanceExpectation>& table,
                                         const std::string& instance_type) {
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const InstanceExpectation& e) { return e.instance_type == instance_type; });
  return it == table.end() ? nullptr : &*it;
}

bool is_gpu_model(const compat::KnowledgeBase& kb, const std::string& device_name, const std::string& model) {
  const compat::GpuModel* wanted = kb.gpu(model);
  if (wanted == nullptr) return util::gpu_name_matches(device_name, std::span<const std::string>(&model, 1));
  return kb.gpu(device_name) == wanted;
}

void check_instance(const probe::HostFacts& facts, const compat::KnowledgeBase& kb, const InstanceExpectation& expected,
                    std::vector<report::Finding>& out) {
  check_fabric(facts, expected, out);
  if (!facts.gpus.availability.available || facts.gpus.gpus.empty()) return;
  check_model(facts, kb, expected, out);
  check_memory(facts, expected, out);
  check_interconnect(facts, expected, out);
  check_pcie_generation(facts, expected, out);
}

report::Finding cloud_finding(const probe::HostFacts& facts, const InstanceExpectation* expected) {
  const probe::HostInfo& host = facts.host;
  if (host.cloud.empty() && host.instance_type.empty())
    return {"host.cloud", Status::skip, host.cloud_source.empty() ? "no cloud recognised" : host.cloud_source, "", ""};
  const std::string cloud = host.cloud.empty() && expected ? expected->cloud : host.cloud;
  std::string message = cloud.empty() ? std::string("an unknown cloud") : std::string(probe::cloud_display_name(cloud));
  if (!host.instance_type.empty()) {
    message += ", instance type " + host.instance_type;
    message += expected ? " (should have " + expected->describe() + ")" : " (no GPU expectations known for it)";
  }
  message += " (" + host.cloud_source + ")";
  return {"host.cloud", Status::pass, message, "", expected ? expected->source : ""};
}

}  // namespace gpuenv::doctor
