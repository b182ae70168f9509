#pragma once
// What each cloud instance type should have (data/doctor/instances.toml, compiled in), and the rules that hold a
// node to its type: gpu.model, gpu.memory_size, gpu.interconnect, fabric.* (gpu.count is judged in gpu_rules.cpp).

#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "probe/facts.hpp"
#include "report/finding.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::doctor {

/// One row of instances.toml.
struct InstanceExpectation {
  std::string cloud;          ///< "aws", "gcp", ...
  std::string instance_type;  ///< "p4d.24xlarge"
  std::string gpu;            ///< a model of data/compat/gpus.toml, "A100"
  unsigned gpus = 0;
  std::optional<std::uint64_t> gpu_memory_mib;
  std::string interconnect;  ///< "nvlink", "nvswitch", "pcie"; empty when not judged
  std::optional<unsigned> pcie_gen;
  std::optional<unsigned> efa_devices;         ///< AWS EFA devices the type should show
  std::optional<unsigned> infiniband_devices;  ///< other RDMA NICs (ConnectX InfiniBand/RoCE) it should show
  std::optional<double> nic_rate_gbps;         ///< the line rate of each of those NICs
  std::string source;

  /// "8x A100 40960 MiB" — what the type should have, for messages.
  std::string describe() const;
};

/// Parses instances.toml text; an internal Error naming the row on bad data (duplicates included).
/// How an overlay's [[instance]] rows replace built-in ones: by `instance_type`.
std::vector<util::RowKey> instance_row_keys();

util::Expected<std::vector<InstanceExpectation>> parse_instances(std::string_view text,
                                                                 const util::Overlay& overlay = {});
/// The table compiled into this binary.
/// The embedded instances.toml with `overlay` merged (parsed at each call).
util::Expected<std::vector<InstanceExpectation>> load_instances(const util::Overlay& overlay);
util::Expected<const std::vector<InstanceExpectation>*> builtin_instances();
/// The row for `instance_type` (exact match), or nullptr.
const InstanceExpectation* find_instance(const std::vector<InstanceExpectation>& table,
                                         const std::string& instance_type);

/// True when the driver's `device_name` ("NVIDIA A100-SXM4-40GB") is the product `model` ("A100") names: both are
/// the same row of the knowledge base's GPU table (model or alias, whole names only: "NVIDIA T400" is not a "T4",
/// "NVIDIA GH200 480GB" is not an "H200"). A model the table lacks matches only its own name.
bool is_gpu_model(const compat::KnowledgeBase& kb, const std::string& device_name, const std::string& model);

/// The node against its instance type: fabric.efa and fabric.infiniband (RDMA devices, where the row has them),
/// then gpu.model, gpu.memory_size, gpu.interconnect and gpu.pcie_generation (none of these when the node has no
/// visible GPUs; gpu.count says why).
void check_instance(const probe::HostFacts& facts, const compat::KnowledgeBase& kb, const InstanceExpectation& expected,
                    std::vector<report::Finding>& out);

/// The host.cloud finding: pass naming the cloud and instance type and how they were found; skip when unknown.
report::Finding cloud_finding(const probe::HostFacts& facts, const InstanceExpectation* expected);

}  // namespace gpuenv::doctor
