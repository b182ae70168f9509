#include "probe/nvidia_smi_xml.hpp"

#include <initializer_list>
#include <pugixml.hpp>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

using util::Error;
using util::Expected;

/// The element's text, trimmed; nullopt when missing or a placeholder nvidia-smi prints for "no value"
/// ("N/A", "Not Supported", "[N/A]", "Requested functionality has been deprecated", ...).
std::optional<std::string> value(const pugi::xml_node& node) {
  if (!node) return std::nullopt;
  const std::string_view text = util::trim(node.child_value());
  if (text.empty() || text == "N/A" || text == "Not Supported" || text == "Unknown Error" ||
      util::starts_with(text, "Requested functionality") || (text.front() == '[' && text.back() == ']')) {
    return std::nullopt;
  }
  return std::string(text);
}

/// The first word of the value ("66 C" -> "66", "16x" -> "16"), for numbers with units.
std::optional<std::string> number_word(const pugi::xml_node& node) {
  auto text = value(node);
  if (!text) return std::nullopt;
  std::string word = text->substr(0, text->find_first_of(" \t"));
  if (!word.empty() && (word.back() == 'x' || word.back() == 'X')) word.pop_back();
  return word;
}

std::optional<long long> integer(const pugi::xml_node& node) {
  const auto word = number_word(node);
  return word ? util::parse_int(*word) : std::nullopt;
}

std::optional<int> small_integer(const pugi::xml_node& node) {
  const auto parsed = integer(node);
  if (!parsed || *parsed < -100000 || *parsed > 100000000) return std::nullopt;
  return static_cast<int>(*parsed);
}

std::optional<double> real(const pugi::xml_node& node) {
  const auto word = number_word(node);
  return word ? util::parse_double(*word) : std::nullopt;
}

/// "Enabled"/"Yes" -> true, "Disabled"/"No" -> false, anything else -> nullopt.
std::optional<bool> flag(const pugi::xml_node& node) {
  const auto text = value(node);
  if (!text) return std::nullopt;
  if (*text == "Enabled" || *text == "Yes" || *text == "Active") return true;
  if (*text == "Disabled" || *text == "No" || *text == "Not Active") return false;
  return std::nullopt;
}

/// The first of `paths` (relative to `node`) that yields a value with `read`.
template <typename Read>
auto first_of(const pugi::xml_node& node, std::initializer_list<const char*> paths, Read read) -> decltype(read(node)) {
  for (const char* path : paths) {
    if (auto found = read(node.first_element_by_path(path))) return found;
  }
  return std::nullopt;
}

/// Sum of the counters that are reported; nullopt when none is.
std::optional<long long> sum(std::initializer_list<std::optional<long long>> parts) {
  std::optional<long long> total;
  for (const auto& part : parts) {
    if (part) total = total.value_or(0) + *part;
  }
  return total;
}

EccCounts ecc_counts(const pugi::xml_node& node, EccSchema schema) {
  EccCounts out;
  if (schema == EccSchema::single_double_bit) {
    out.correctable = integer(node.child("single_bit").child("total"));
    out.uncorrectable = integer(node.child("double_bit").child("total"));
    return out;
  }
  out.sram_correctable = integer(node.child("sram_correctable"));
  out.sram_uncorrectable =
      node.child("sram_uncorrectable")
          ? integer(node.child("sram_uncorrectable"))
          : sum({integer(node.child("sram_uncorrectable_parity")), integer(node.child("sram_uncorrectable_secded"))});
  out.dram_correctable = integer(node.child("dram_correctable"));
  out.dram_uncorrectable = integer(node.child("dram_uncorrectable"));
  out.correctable = sum({out.sram_correctable, out.dram_correctable});
  out.uncorrectable = sum({out.sram_uncorrectable, out.dram_uncorrectable});
  return out;
}

EccErrors ecc_errors(const pugi::xml_node& gpu) {
  EccErrors out;
  const pugi::xml_node node = gpu.child("ecc_errors");
  if (!node) return out;
  const bool legacy = node.child("volatile").child("single_bit") || node.child("aggregate").child("single_bit");
  out.schema = legacy ? EccSchema::single_double_bit : EccSchema::sram_dram;
  out.volatile_counts = ecc_counts(node.child("volatile"), out.schema);
  out.aggregate_counts = ecc_counts(node.child("aggregate"), out.schema);
  return out;
}

RetiredPages retired_pages(const pugi::xml_node& gpu) {
  RetiredPages out;
  const pugi::xml_node node = gpu.child("retired_pages");
  out.single_bit = integer(node.child("multiple_single_bit_retirement").child("retired_count"));
  out.double_bit = integer(node.child("double_bit_retirement").child("retired_count"));
  const auto retirement = flag(node.child("pending_retirement"));
  const auto blacklist = flag(node.child("pending_blacklist"));
  if (retirement || blacklist) out.pending = retirement.value_or(false) || blacklist.value_or(false);
  return out;
}

RemappedRows remapped_rows(const pugi::xml_node& gpu) {
  RemappedRows out;
  const pugi::xml_node node = gpu.child("remapped_rows");
  out.reported = node.first_child().type() == pugi::node_element;
  out.correctable = integer(node.child("remapped_row_corr"));
  out.uncorrectable = integer(node.child("remapped_row_unc"));
  out.pending = flag(node.child("remapped_row_pending"));
  out.failure = flag(node.child("remapped_row_failure"));
  return out;
}

std::optional<std::vector<std::string>> clocks_event_reasons(const pugi::xml_node& gpu) {
  for (const char* group : {"clocks_event_reasons", "clocks_throttle_reasons"}) {
    const pugi::xml_node node = gpu.child(group);
    if (!node) continue;
    std::vector<std::string> active;
    for (const pugi::xml_node& reason : node.children()) {
      if (reason.type() != pugi::node_element || flag(reason) != true) continue;
      // "clocks_event_reason_hw_slowdown" / "clocks_throttle_reason_hw_slowdown" -> "hw_slowdown"
      std::string_view name = reason.name();
      const std::size_t marker = name.find("reason_");
      if (marker != std::string_view::npos) name = name.substr(marker + std::string_view("reason_").size());
      active.emplace_back(name);
    }
    return active;
  }
  return std::nullopt;
}

NvidiaSmiFabric fabric_registration(const pugi::xml_node& gpu) {
  NvidiaSmiFabric out;
  const pugi::xml_node node = gpu.child("fabric");
  out.reported = static_cast<bool>(node);
  out.state = value(node.child("state"));
  out.status = value(node.child("status"));
  out.clique_id = integer(node.child("cliqueId"));
  out.cluster_uuid = value(node.child("clusterUuid"));
  out.health_summary = value(node.child("health").child("summary"));
  return out;
}

NvidiaSmiGpu gpu_from(const pugi::xml_node& node, int index) {
  NvidiaSmiGpu out;
  out.index = index;
  out.name = value(node.child("product_name")).value_or("");
  out.uuid = value(node.child("uuid")).value_or("");
  out.pci_bus_id = value(node.child("pci").child("pci_bus_id")).value_or(node.attribute("id").as_string());
  out.serial = value(node.child("serial"));
  out.memory_total_mib = integer(node.child("fb_memory_usage").child("total"));
  out.memory_used_mib = integer(node.child("fb_memory_usage").child("used"));
  out.compute_capability = value(node.child("compute_cap"));
  out.persistence_mode = flag(node.child("persistence_mode"));
  out.mig_mode_current = flag(node.child("mig_mode").child("current_mig"));
  for (const pugi::xml_node& device : node.child("mig_devices").children("mig_device")) {
    (void)device;
    ++out.mig_device_count;
  }
  out.ecc_mode_current = flag(node.child("ecc_mode").child("current_ecc"));
  out.ecc_errors = ecc_errors(node);
  out.retired_pages = retired_pages(node);
  out.remapped_rows = remapped_rows(node);
  const pugi::xml_node temperature = node.child("temperature");
  out.temperature_c = small_integer(temperature.child("gpu_temp"));
  out.temperature_slowdown_c = small_integer(temperature.child("gpu_temp_slow_threshold"));
  out.temperature_shutdown_c = small_integer(temperature.child("gpu_temp_max_threshold"));
  out.power_draw_w = first_of(node,
                              {"power_readings/power_draw", "gpu_power_readings/power_draw",
                               "gpu_power_readings/instant_power_draw", "gpu_power_readings/average_power_draw"},
                              real);
  out.power_limit_w = first_of(
      node,
      {"power_readings/power_limit", "power_readings/enforced_power_limit", "gpu_power_readings/current_power_limit"},
      real);
  out.clocks_event_reasons = clocks_event_reasons(node);
  const pugi::xml_node link = node.child("pci").child("pci_gpu_link_info");
  out.pcie.gen_current = small_integer(link.child("pcie_gen").child("current_link_gen"));
  out.pcie.gen_max = small_integer(link.child("pcie_gen").child("max_link_gen"));
  out.pcie.width_current = small_integer(link.child("link_widths").child("current_link_width"));
  out.pcie.width_max = small_integer(link.child("link_widths").child("max_link_width"));
  out.utilization_gpu_percent = small_integer(node.child("utilization").child("gpu_util"));
  if (const pugi::xml_node processes = node.child("processes")) {
    int count = 0;
    int compute = 0;
    for (const pugi::xml_node& process : processes.children("process_info")) {
      ++count;
      const auto type = value(process.child("type"));
      if (type && type->find('C') != std::string::npos) ++compute;
    }
    out.process_count = count;
    out.compute_process_count = compute;
  }
  out.fabric = fabric_registration(node);
  return out;
}

}  // namespace

Expected<NvidiaSmiReport> parse_nvidia_smi_xml(std::string_view xml) {
  if (util::trim(xml).empty()) return Error::input("nvidia-smi -q -x output is empty");
  pugi::xml_document document;
  const pugi::xml_parse_result parsed =
      document.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return Error::input("nvidia-smi -q -x output is not well-formed XML (" + std::string(parsed.description()) +
                            " at byte " + std::to_string(parsed.offset) + ")",
                        "the output may be truncated: rerun nvidia-smi -q -x and check its exit code");
  }
  const pugi::xml_node root = document.child("nvidia_smi_log");
  if (!root) return Error::input("nvidia-smi -q -x output has no <nvidia_smi_log> element");
  NvidiaSmiReport out;
  out.driver_version = value(root.child("driver_version"));
  out.cuda_version = value(root.child("cuda_version"));
  out.attached_gpus = small_integer(root.child("attached_gpus"));
  int index = 0;
  for (const pugi::xml_node& gpu : root.children("gpu")) out.gpus.push_back(gpu_from(gpu, index++));
  return out;
}

}  // namespace gpuenv::probe
