#include "cli/doctor_output.hpp"

#include <nlohmann/json.hpp>

#include "probe/cloud.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

using report::Status;

std::string driver_summary(const probe::HostFacts& facts) {
  if (!facts.kernel.module_version.empty()) {
    std::string text = facts.kernel.module_version;
    if (facts.kernel.open_module) text += *facts.kernel.open_module ? " (open)" : " (proprietary)";
    const std::string cuda = facts.cuda_driver.driver_cuda_version.empty() ? facts.gpus.cuda_driver_version
                                                                           : facts.cuda_driver.driver_cuda_version;
    if (!cuda.empty()) text += ", CUDA " + cuda;
    return text;
  }
  if (!facts.gpus.driver_version.empty())
    return facts.gpus.driver_version + " (from " + facts.gpus.availability.source + ")";
  return "none loaded";
}

/// The first finding of the worst status: what a one-line summary names.
const report::Finding* worst_finding(const std::vector<report::Finding>& findings) {
  const report::Finding* worst = nullptr;
  for (const report::Finding& f : findings) {
    if (f.status == Status::skip || f.status == Status::pass) continue;
    if (worst == nullptr || f.status > worst->status) worst = &f;
  }
  return worst;
}

}  // namespace

std::string doctor_text(const doctor::DoctorReport& r, const report::TextStyle& style) {
  const probe::HostFacts& facts = r.facts;
  util::TextRepairs repairs;
  const auto clean = [&repairs](const std::string& text) {
    return util::clean_host_text(text, util::CleanOptions{}, repairs);
  };
  std::string out = "gpuenv doctor\n";
  out += "  host:   " + clean(facts.host.os_pretty_name.empty() ? facts.host.os_id + " " + facts.host.os_version_id
                                                                : facts.host.os_pretty_name);
  if (facts.host.cpu_count) out += ", " + std::to_string(*facts.host.cpu_count) + " vCPUs";
  if (facts.host.memory_total_kib)
    out += ", " + std::to_string(*facts.host.memory_total_kib / (1024 * 1024)) + " GiB RAM";
  if (!facts.host.cloud.empty()) out += ", " + std::string(probe::cloud_display_name(facts.host.cloud));
  if (!facts.host.instance_type.empty()) out += " " + clean(facts.host.instance_type);
  out += "\n  driver: " + clean(driver_summary(facts)) + "\n";
  out += "  GPUs:   " + std::to_string(facts.gpus.gpus.size()) +
         (facts.gpus.availability.available ? " (" + clean(facts.gpus.availability.source) + ")" : "") + "\n\n";
  out += report::render_findings(r.findings, style, &repairs);
  std::string verdict(doctor::verdict_word(r.verdict));
  if (style.color) {
    const char* color = r.verdict == report::Verdict::ok         ? "\033[32m"
                        : r.verdict == report::Verdict::degraded ? "\033[33m"
                                                                 : "\033[31m";
    verdict = color + verdict + "\033[0m";
  }
  out += "\n" + verdict + ": " + std::to_string(report::count_status(r.findings, Status::fail)) + " failed, " +
         std::to_string(report::count_status(r.findings, Status::warn)) + " warnings, " +
         std::to_string(report::count_status(r.findings, Status::pass)) + " passed, " +
         std::to_string(report::count_status(r.findings, Status::skip)) + " skipped\n";
  if (const report::Action action = report::node_action(r.findings); action != report::Action::none)
    out += "Action: " + std::string(to_string(action)) + "\n";
  return out + report::repairs_note(repairs);
}

std::string doctor_json(const doctor::DoctorReport& r, const std::string& version, std::optional<long long> time) {
  const probe::HostFacts& facts = r.facts;
  nlohmann::json gpus = nlohmann::json::array();
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    nlohmann::json g = {{"index", gpu.index},
                        {"name", gpu.name},
                        {"uuid", gpu.uuid},
                        {"pci_bus_id", gpu.pci_bus_id},
                        {"memory_mib", gpu.memory_total_mib ? nlohmann::json(*gpu.memory_total_mib) : nlohmann::json()},
                        {"compute_capability",
                         gpu.compute_capability.empty() ? nlohmann::json() : nlohmann::json(gpu.compute_capability)}};
    const auto optional = [&g](const char* key, const auto& value) {
      if (value) g[key] = *value;
    };
    optional("temperature_c", gpu.temperature_c);
    optional("power_draw_w", gpu.power_draw_w);
    optional("ecc_enabled", gpu.ecc_enabled);
    optional("ecc_uncorrected_volatile", gpu.ecc_uncorrected_volatile);
    optional("persistence_mode", gpu.persistence_mode);
    optional("mig_enabled", gpu.mig_enabled);
    optional("pcie_gen_current", gpu.pcie_gen_current);
    optional("pcie_gen_max", gpu.pcie_gen_max);
    optional("pcie_width_current", gpu.pcie_width_current);
    optional("pcie_width_max", gpu.pcie_width_max);
    if (!gpu.throttle_reasons.empty()) g["throttle_reasons"] = gpu.throttle_reasons;
    if (gpu.nvlink) {
      nlohmann::json links = {{"active", gpu.nvlink->active.size()}, {"inactive", gpu.nvlink->inactive}};
      const auto counter = [&links](const char* key, const auto& value) {
        if (value) links[key] = *value;
      };
      counter("replay_errors", gpu.nvlink->replay_errors);
      counter("recovery_errors", gpu.nvlink->recovery_errors);
      counter("crc_errors", gpu.nvlink->crc_errors);
      g["nvlink"] = links;
    }
    gpus.push_back(g);
  }
  nlohmann::json driver = {
      {"version",
       facts.kernel.module_version.empty()
           ? (facts.gpus.driver_version.empty() ? nlohmann::json() : nlohmann::json(facts.gpus.driver_version))
           : nlohmann::json(facts.kernel.module_version)},
      {"kernel_module_loaded", facts.kernel.module_loaded},
      {"cuda_version", facts.cuda_driver.driver_cuda_version.empty() ? facts.gpus.cuda_driver_version
                                                                     : facts.cuda_driver.driver_cuda_version}};
  if (facts.kernel.open_module) driver["open_module"] = *facts.kernel.open_module;
  nlohmann::json toolkits = nlohmann::json::array();
  for (const auto& tk : facts.toolkits)
    toolkits.push_back({{"version", tk.version}, {"root", tk.root}, {"nvcc", tk.has_nvcc}});
  nlohmann::json out = {
      {"schema", 1},
      {"gpuenv_version", version},
      {"verdict", std::string(doctor::verdict_word(r.verdict))},
      {"host",
       {{"os", facts.host.os_id},
        {"os_version", facts.host.os_version_id},
        {"kernel", facts.host.kernel_release},
        {"architecture", facts.host.architecture},
        {"cpus", facts.host.cpu_count ? nlohmann::json(*facts.host.cpu_count) : nlohmann::json()},
        {"memory_kib", facts.host.memory_total_kib ? nlohmann::json(*facts.host.memory_total_kib) : nlohmann::json()},
        {"cloud", facts.host.cloud.empty() ? nlohmann::json() : nlohmann::json(facts.host.cloud)},
        {"instance_type",
         facts.host.instance_type.empty() ? nlohmann::json() : nlohmann::json(facts.host.instance_type)}}},
      {"driver", driver},
      {"gpus", gpus},
      {"gpu_source",
       facts.gpus.availability.available ? nlohmann::json(facts.gpus.availability.source) : nlohmann::json()},
      {"cuda_toolkits", toolkits},
      {"findings", report::to_json(r.findings)},
      {"action", std::string(to_string(report::node_action(r.findings)))},
      {"summary",
       {{"pass", report::count_status(r.findings, Status::pass)},
        {"warn", report::count_status(r.findings, Status::warn)},
        {"fail", report::count_status(r.findings, Status::fail)},
        {"skip", report::count_status(r.findings, Status::skip)}}}};
  if (time) out["time"] = *time;
  return report::dump_host_json(std::move(out));
}

std::string doctor_oneline(const doctor::DoctorReport& r) {
  // One line of at most 80 bytes, whatever the host text in it: it becomes a Slurm reason, an NHC `die` message that
  // NHC passes through `eval`, an NPD condition message. So nothing in it can end a shell quote or start an
  // expansion (util::shell_inert: a newline would split it, ' " ` $ \ would break out of NHC's quotes), invalid
  // UTF-8 is replaced, and the cut is made on a character boundary. The node's action ends the line.
  constexpr std::size_t k_limit = 80;
  util::TextRepairs repairs;
  const auto clean = [&repairs](const std::string& text) {
    return util::clean_host_text(util::shell_inert(text), util::CleanOptions{true, 4 * k_limit}, repairs);
  };
  std::string line(doctor::verdict_word(r.verdict));
  if (const report::Finding* worst = worst_finding(r.findings)) {
    line += ": " + worst->id + ": " + clean(worst->message);
    const std::size_t others =
        report::count_status(r.findings, Status::fail) + report::count_status(r.findings, Status::warn) - 1;
    const report::Action action = report::node_action(r.findings);
    const std::string suffix = (others > 0 ? " (+" + std::to_string(others) + ")" : "") +
                               (action == report::Action::none ? "" : " [" + std::string(to_string(action)) + "]");
    if (line.size() + suffix.size() > k_limit)
      line = std::string(util::utf8_prefix(line, k_limit - suffix.size() - 3)) + "...";
    line += suffix;
  } else {
    const std::size_t gpus = r.facts.gpus.gpus.size();
    line += ": " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
    if (!r.facts.kernel.module_version.empty()) line += ", driver " + clean(r.facts.kernel.module_version);
    line = std::string(util::utf8_prefix(line, k_limit));
  }
  return line + "\n";
}

}  // namespace gpuenv::cli

namespace gpuenv::cli {

util::Expected<ReadReport> read_doctor_json(std::string_view text) {
  const auto bad = [](const std::string& why) {
    return util::Error::input("not a `gpuenv doctor --json` report (schema 1): " + why,
                              "point it at the file `gpuenv doctor --report FILE` writes");
  };
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return bad("not a JSON object");
  if (json.value("schema", 0) != 1) return bad("no \"schema\": 1");
  if (!json.contains("time") || !json["time"].is_number_integer()) return bad("no \"time\" (written before 0.2?)");
  ReadReport out;
  out.time = json["time"].get<long long>();
  const std::string verdict = json.value("verdict", "");
  if (verdict == "READY") {
    out.report.verdict = report::Verdict::ok;
  } else if (verdict == "DEGRADED") {
    out.report.verdict = report::Verdict::degraded;
  } else if (verdict == "NOT READY") {
    out.report.verdict = report::Verdict::not_ok;
  } else {
    return bad("unknown verdict \"" + verdict + "\"");
  }
  if (!json.contains("findings") || !json["findings"].is_array()) return bad("no \"findings\" array");
  for (const nlohmann::json& item : json["findings"]) {
    if (!item.is_object()) return bad("a finding that is not an object");
    report::Finding finding;
    finding.id = item.value("id", "");
    finding.message = item.value("message", "");
    const std::string status = item.value("status", "");
    finding.status = status == "fail"   ? Status::fail
                     : status == "warn" ? Status::warn
                     : status == "skip" ? Status::skip
                                        : Status::pass;
    finding.action = report::parse_action(item.value("action", ""));
    out.report.findings.push_back(std::move(finding));
  }
  if (json.contains("gpus") && json["gpus"].is_array()) out.report.facts.gpus.gpus.resize(json["gpus"].size());
  if (json.contains("driver") && json["driver"].is_object() && json["driver"].contains("version") &&
      json["driver"]["version"].is_string())
    out.report.facts.kernel.module_version = json["driver"]["version"].get<std::string>();
  return out;
}

}  // namespace gpuenv::cli
