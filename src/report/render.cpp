#include "report/render.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpuenv::report {
namespace {

std::string_view color_of(Status status) {
  switch (status) {
    case Status::pass:
      return "\033[32m";
    case Status::warn:
      return "\033[33m";
    case Status::fail:
      return "\033[31m";
    case Status::skip:
      return "\033[2m";
  }
  return "";
}

}  // namespace

std::string status_label(Status status, const TextStyle& style) {
  std::string label(to_string(status));
  std::transform(label.begin(), label.end(), label.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (!style.color) return label;
  return std::string(color_of(status)) + label + "\033[0m";
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok:
      return "OK";
    case Verdict::degraded:
      return "DEGRADED";
    case Verdict::not_ok:
      return "NOT OK";
  }
  return "UNKNOWN";
}

std::string render_findings(const std::vector<Finding>& findings, const TextStyle& style) {
  std::size_t id_width = 0;
  for (const Finding& f : findings) id_width = std::max(id_width, f.id.size());
  std::string out;
  for (const Finding& f : findings) {
    // A fact from the user's data overlay is named in the text too (its source says "(from overlay PATH:LINE)").
    const std::size_t overlay = f.source.find("(from overlay ");
    out += "  " + status_label(f.status, style) + "  " + f.id + std::string(id_width - f.id.size() + 2, ' ') +
           f.message + (overlay == std::string::npos ? std::string() : " " + f.source.substr(overlay)) + "\n";
  }
  bool heading = false;
  for (const Finding& f : findings) {
    if (f.remedy.empty() || f.status == Status::pass) continue;
    if (!heading) {
      out += "Remedies:\n";
      heading = true;
    }
    out += "  " + f.id + ": " + f.remedy + "\n";
  }
  return out;
}

nlohmann::json to_json(const Finding& finding) {
  nlohmann::json out = {{"id", finding.id},
                        {"status", to_string(finding.status)},
                        {"message", finding.message},
                        {"remedy", finding.remedy}};
  if (!finding.source.empty()) out["source"] = finding.source;
  return out;
}

nlohmann::json to_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings) out.push_back(to_json(f));
  return out;
}

}  // namespace gpuenv::report
