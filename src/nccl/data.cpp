#include "nccl/data.hpp"

#include <algorithm>
#include <span>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::nccl {

std::span<const util::EmbeddedFile> embedded_nccl_data();  // generated from data/nccl/*.toml

namespace {

const std::vector<util::RowKey> k_floor_keys = {{"floor", {"instance_type", "min_nodes", "max_nodes"}}};
const std::vector<util::RowKey> k_network_keys = {{"network", {"name"}}};

Floor read_floor(util::TomlRow& row) {
  Floor floor;
  floor.instance_type = row.text("instance_type");
  floor.min_nodes = static_cast<unsigned>(row.integer_in("min_nodes", 1, 100000, "at least 1"));
  floor.max_nodes = static_cast<unsigned>(row.integer_in("max_nodes", 0, 100000, "0 (no bound) or a node count"));
  if (floor.max_nodes != 0 && floor.max_nodes < floor.min_nodes) row.fail("`max_nodes` is below `min_nodes`");
  floor.message_bytes =
      static_cast<std::uint64_t>(row.integer_in("message_bytes", 1, 1LL << 40, "a size in bytes up to 1 TiB"));
  const auto busbw = row.optional_number("busbw_gbps");
  if (!busbw || *busbw <= 0) row.fail("`busbw_gbps` must be a positive number");
  floor.busbw_gbps = busbw.value_or(0);
  floor.status = row.one_of("status", {"verified", "secondary", "unverified"});
  floor.judged = floor.status == "verified";
  floor.source = row.text("source");
  return floor;
}

/// Fails the row when `field`'s text holds a control character: the name and source are written into the job's
/// comments, where a newline would start a shell line of the Slurm script (or a YAML line of the manifest).
void require_one_line(util::TomlRow& row, std::string_view field, const std::string& text) {
  if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    row.fail("`" + std::string(field) + "` must not contain control characters (a newline, tab or escape)");
}

Network read_network(util::TomlRow& row) {
  Network network;
  network.name = row.text("name");
  require_one_line(row, "name", network.name);
  network.env = row.optional_texts("env");
  for (const std::string& entry : network.env) {
    const std::size_t equals = entry.find('=');
    if (equals == 0 || equals == std::string::npos) row.fail("`env` entries must be NAME=value, not `" + entry + "`");
  }
  network.kubernetes_resource = row.optional_text("kubernetes_resource");
  require_one_line(row, "kubernetes_resource", network.kubernetes_resource);
  network.kubernetes_limits = row.optional_texts("kubernetes_limits");
  for (const std::string& entry : network.kubernetes_limits) {
    const std::size_t equals = entry.find('=');
    if (equals == 0 || equals == std::string::npos || entry.find_first_of(" :\n\"'") != std::string::npos)
      row.fail("`kubernetes_limits` entries must be NAME=quantity, not `" + entry + "`");
  }
  row.one_of("status", {"verified", "secondary", "unverified", "policy"});
  network.source = row.text("source");
  require_one_line(row, "source", network.source);
  return network;
}

util::Expected<std::string_view> embedded(std::string_view name) {
  for (const util::EmbeddedFile& file : embedded_nccl_data()) {
    if (file.name == name) return file.contents;
  }
  return util::Error::internal(std::string(name) + " is not compiled in");
}

}  // namespace

const Floor* NcclData::floor_for(const std::string& instance_type, unsigned nodes) const {
  for (const Floor& floor : floors) {
    if (floor.instance_type == instance_type && nodes >= floor.min_nodes &&
        (floor.max_nodes == 0 || nodes <= floor.max_nodes))
      return &floor;
  }
  return nullptr;
}

const Network* NcclData::network(const std::string& name) const {
  for (const std::string& wanted : {name, std::string("default")}) {
    for (const Network& network : networks) {
      if (network.name == wanted) return &network;
    }
  }
  return nullptr;
}

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_nccl_data()) {
    if (file.name == "floors.toml") tables.push_back({"floors.toml", file, k_floor_keys});
    if (file.name == "networks.toml") tables.push_back({"networks.toml", file, k_network_keys});
  }
  return tables;
}

util::Expected<NcclData> load_data(const util::Overlay& overlay) {
  NcclData data;
  GPUENV_TRY_ASSIGN(auto floors_text, embedded("floors.toml"));
  GPUENV_TRY_ASSIGN(auto floors,
                    util::read_data_table({"floors.toml", {"floors.toml", floors_text}, k_floor_keys}, overlay));
  if (const auto key = floors.unexpected_key({"floor"}))
    return util::Error::internal("floors.toml: unknown top-level key `" + *key + "`");
  GPUENV_TRY(floors.append_rows("floor", data.floors, read_floor));
  GPUENV_TRY_ASSIGN(auto networks_text, embedded("networks.toml"));
  GPUENV_TRY_ASSIGN(auto networks, util::read_data_table(
                                       {"networks.toml", {"networks.toml", networks_text}, k_network_keys}, overlay));
  if (const auto key = networks.unexpected_key({"network"}))
    return util::Error::internal("networks.toml: unknown top-level key `" + *key + "`");
  GPUENV_TRY(networks.append_rows("network", data.networks, read_network));
  if (data.network("default") == nullptr) return util::Error::internal("networks.toml: no `default` network");
  return data;
}

util::Expected<const NcclData*> builtin_data() { return util::builtin_table<&load_data>(); }

}  // namespace gpuenv::nccl
