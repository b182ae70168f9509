#include "cli/nccl_output.hpp"

#include <cstdio>
#include <sstream>

#include "cli/prometheus.hpp"

namespace gpuenv::cli {
namespace {

std::string fixed(double value, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace

std::string nccl_judge_text(const nccl::NcclTestsOutput& output, const nccl::JudgeReport& judged,
                            const report::TextStyle& style) {
  std::ostringstream out;
  out << "gpuenv nccl judge: " << report::to_string(judged.verdict) << "\n";
  out << "  " << (output.test.empty() ? std::string("nccl-tests") : output.test) << ", " << output.rows.size()
      << " sizes, " << output.ranks.size() << " ranks";
  if (output.nccl_library) out << ", NCCL " << nccl::nccl_version_text(*output.nccl_library);
  if (output.avg_busbw_gbps)
    out << "; nccl-tests' average over every size: " << fixed(*output.avg_busbw_gbps, 2) << " GB/s";
  out << "\n\n" << report::render_findings(judged.findings, style);
  return out.str();
}

std::string nccl_judge_json(const nccl::NcclTestsOutput& output, const nccl::JudgeReport& judged,
                            const std::string& version) {
  nlohmann::json rows = nlohmann::json::array();
  for (const nccl::NcclTestsRow& row : output.rows) {
    rows.push_back({{"bytes", row.bytes},
                    {"type", row.type},
                    {"redop", row.redop},
                    {"out_of_place",
                     {{"time_us", row.out_of_place.time_us},
                      {"algbw_gbps", row.out_of_place.algbw_gbps},
                      {"busbw_gbps", row.out_of_place.busbw_gbps},
                      {"wrong", optional_number(row.out_of_place.wrong)}}},
                    {"in_place",
                     {{"time_us", row.in_place.time_us},
                      {"algbw_gbps", row.in_place.algbw_gbps},
                      {"busbw_gbps", row.in_place.busbw_gbps},
                      {"wrong", optional_number(row.in_place.wrong)}}}});
  }
  nlohmann::json out = {
      {"gpuenv_version", version},
      {"command", "nccl judge"},
      {"verdict", report::to_string(judged.verdict)},
      {"test", output.test},
      {"ranks", output.ranks.size()},
      {"hosts", output.hosts()},
      {"nodes", judged.nodes},
      {"wrong_counts", output.wrong_counts},
      {"out_of_bounds", output.out_of_bounds ? nlohmann::json(*output.out_of_bounds) : nlohmann::json()},
      {"avg_busbw_gbps", optional_number(output.avg_busbw_gbps)},
      {"judged_bytes", judged.judged_row ? nlohmann::json(judged.judged_row->bytes) : nlohmann::json()},
      {"judged_busbw_gbps", judged.judged_row ? nlohmann::json(judged.judged_busbw_gbps) : nlohmann::json()},
      {"floor", judged.floor == nullptr ? nlohmann::json()
                                        : nlohmann::json{{"busbw_gbps", judged.floor->busbw_gbps},
                                                         {"bytes", judged.floor->message_bytes},
                                                         {"judged", judged.floor->judged},
                                                         {"source", judged.floor->source}}},
      {"rows", rows},
      {"findings", report::to_json(judged.findings)}};
  return report::dump_host_json(std::move(out));  // host names come from the nodes
}

std::string nccl_judge_prometheus(const nccl::JudgeReport& judged, const std::string& version) {
  Exposition e;
  e.family("gpuenv_nccl_info", "The judged nccl-tests run; the value is always 1.");
  e.sample("gpuenv_nccl_info", {{"gpuenv_version", version}, {"nodes", std::to_string(judged.nodes)}}, 1);
  e.family("gpuenv_nccl_verdict", "The judgement: 0 ok, 1 degraded, 2 not ok.");
  e.sample("gpuenv_nccl_verdict", {}, verdict_number(judged.verdict));
  // Base units in the names (bytes per second), as promtool's lint and the Prometheus conventions ask.
  e.family("gpuenv_nccl_bus_bandwidth_bytes_per_second",
           "All-reduce bus bandwidth at the judged size (nccl-tests' busbw, the mean of out-of-place and in-place).");
  if (judged.judged_row)
    e.sample("gpuenv_nccl_bus_bandwidth_bytes_per_second",
             {{"message_bytes", std::to_string(judged.judged_row->bytes)}}, judged.judged_busbw_gbps * 1e9);
  e.family("gpuenv_nccl_floor_bytes_per_second", "The floor the bus bandwidth is held to, when one applies.");
  if (judged.floor != nullptr)
    e.sample("gpuenv_nccl_floor_bytes_per_second",
             {{"message_bytes", std::to_string(judged.floor->message_bytes)},
              {"judged", judged.floor->judged ? "true" : "false"}},
             judged.floor->busbw_gbps * 1e9);
  add_findings(e, judged.findings);
  return e.text();
}

std::string nccl_sweep_text(const nccl::SweepReport& sweep, const report::TextStyle& style) {
  std::ostringstream out;
  out << "\nNCCL all-reduce";
  if (sweep.ranks > 0) out << " over " << sweep.ranks << " GPUs";
  if (!sweep.nccl_version.empty()) out << " (NCCL " << sweep.nccl_version << ")";
  out << ":\n";
  if (!sweep.sizes.empty()) {
    out << "        size     time (us)   algbw (GB/s)   busbw (GB/s)\n";
    for (const nccl::SweepSize& size : sweep.sizes) {
      char line[128];
      std::snprintf(line, sizeof line, "  %10s  %12.1f  %13.1f  %13.1f\n", nccl::size_text(size.bytes).c_str(),
                    size.seconds * 1e6, size.algbw_gbps, size.busbw_gbps);
      out << line;
    }
  }
  out << report::render_findings(sweep.findings, style);
  return out.str();
}

namespace {

/// A setting NCCL ran with: name, value, where it came from and what it can do ("breaks_init", "lowers_bandwidth",
/// "loads_code", "writes_file").
nlohmann::json nccl_setting_json(const nccl::NcclSetting& setting) {
  nlohmann::json effects = nlohmann::json::array();
  for (const nccl::SettingNote& note : setting.notes) {
    const char* name = "";
    switch (note.effect) {
      case nccl::SettingEffect::breaks_init:
        name = "breaks_init";
        break;
      case nccl::SettingEffect::lowers_bandwidth:
        name = "lowers_bandwidth";
        break;
      case nccl::SettingEffect::loads_code:
        name = "loads_code";
        break;
      case nccl::SettingEffect::writes_file:
        name = "writes_file";
        break;
    }
    effects.push_back(name);
  }
  return {{"name", setting.name}, {"value", setting.value}, {"origin", setting.origin}, {"effects", effects}};
}

}  // namespace

nlohmann::json nccl_sweep_json(const nccl::SweepReport& sweep) {
  nlohmann::json settings = nlohmann::json::array();
  for (const nccl::NcclSetting& setting : sweep.settings) settings.push_back(nccl_setting_json(setting));
  nlohmann::json unset = nlohmann::json::array();
  for (const nccl::NcclSetting& setting : sweep.unset) unset.push_back(nccl_setting_json(setting));
  nlohmann::json sizes = nlohmann::json::array();
  for (const nccl::SweepSize& size : sweep.sizes) {
    sizes.push_back({{"bytes", size.bytes},
                     {"seconds", size.seconds},
                     {"algbw_gbps", size.algbw_gbps},
                     {"busbw_gbps", size.busbw_gbps},
                     {"verified", size.verified}});
  }
  return {{"library", sweep.library.empty() ? nlohmann::json() : nlohmann::json(sweep.library)},
          {"version", sweep.nccl_version.empty() ? nlohmann::json() : nlohmann::json(sweep.nccl_version)},
          {"ranks", sweep.ranks},
          {"verdict", report::to_string(sweep.verdict)},
          {"sizes", sizes},
          {"settings", settings},
          {"unset", unset},
          {"findings", report::to_json(sweep.findings)}};
}

}  // namespace gpuenv::cli
