#pragma once
// nccl's tables (compiled in): all-reduce bus-bandwidth floors per instance type and node count
// (data/nccl/floors.toml) and the environment a multi-node job needs per GPU network (data/nccl/networks.toml).

#include <optional>
#include <string>
#include <vector>

#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::nccl {

/// One row of floors.toml.
struct Floor {
  std::string instance_type;
  unsigned min_nodes = 1;
  unsigned max_nodes = 1;  ///< 0: no upper bound
  std::uint64_t message_bytes = 0;
  double busbw_gbps = 0;
  bool judged = false;  ///< status "verified": below it fails; otherwise reported only
  std::string status;
  std::string source;
};

/// One row of networks.toml.
struct Network {
  std::string name;  ///< "efa", "infiniband", "default"
  std::vector<std::string> env;
  std::string kubernetes_resource;
  /// Further worker limits the network needs, "NAME=value" ("hugepages-2Mi=5120Mi" for EFA)
  std::vector<std::string> kubernetes_limits;
  std::string source;
};

struct NcclData {
  std::vector<Floor> floors;
  std::vector<Network> networks;

  /// The floor for `instance_type` at `nodes` nodes, or nullptr.
  const Floor* floor_for(const std::string& instance_type, unsigned nodes) const;
  /// The network named `name` (falling back to "default"); nullptr only when the data lacks both.
  const Network* network(const std::string& name) const;
};

/// nccl's tables and how overlay rows replace theirs (floors by instance type and node range, networks by name).
std::vector<util::DataTable> data_tables();
/// Parses both tables with `overlay` merged; an internal Error naming the row on bad data.
util::Expected<NcclData> load_data(const util::Overlay& overlay);
/// The tables compiled into this binary (with the installed overlay), parsed once.
util::Expected<const NcclData*> builtin_data();

}  // namespace gpuenv::nccl
