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

std::string render_findings(const std::vector<Finding>& findings, const TextStyle& style, util::TextRepairs* repairs) {
  util::TextRepairs own;
  util::TextRepairs& changed = repairs != nullptr ? *repairs : own;
  const auto clean = [&changed](const std::string& text) {
    return util::clean_host_text(text, util::CleanOptions{}, changed);
  };
  std::size_t id_width = 0;
  for (const Finding& f : findings) id_width = std::max(id_width, f.id.size());
  std::string out;
  for (const Finding& f : findings) {
    // A fact from the user's data overlay is named in the text too (its source says "(from overlay PATH:LINE)").
    const std::size_t overlay = f.source.find("(from overlay ");
    out += "  " + status_label(f.status, style) + "  " + f.id + std::string(id_width - f.id.size() + 2, ' ') +
           clean(f.message) + (overlay == std::string::npos ? std::string() : " " + f.source.substr(overlay)) + "\n";
  }
  bool heading = false;
  for (const Finding& f : findings) {
    // Warnings and failures name their action (docs/doctor-json.md "Actions") even without a remedy text.
    const bool judged = f.status == Status::warn || f.status == Status::fail;
    if (!judged && (f.remedy.empty() || f.status == Status::pass)) continue;
    if (!heading) {
      out += "Remedies:\n";
      heading = true;
    }
    out += "  " + f.id + ":";
    if (judged) out += " [" + std::string(to_string(action_of(f))) + "]";
    if (!f.remedy.empty()) out += " " + clean(f.remedy);
    out += "\n";
  }
  if (repairs == nullptr) out += repairs_note(own);
  return out;
}

std::string repairs_note(const util::TextRepairs& repairs) {
  if (!repairs.any()) return {};
  return "note: host text was cleaned for display: " + repairs.describe() + "\n";
}

void clean_json_strings(nlohmann::json& json, util::TextRepairs& repairs) {
  const util::CleanOptions options{false, 4096};
  if (json.is_string()) {
    json = util::clean_host_text(json.get_ref<const std::string&>(), options, repairs);
  } else if (json.is_array()) {
    for (nlohmann::json& item : json) clean_json_strings(item, repairs);
  } else if (json.is_object()) {
    nlohmann::json cleaned = nlohmann::json::object();
    for (auto& [key, value] : json.items()) {
      clean_json_strings(value, repairs);
      cleaned[util::clean_host_text(key, options, repairs)] = std::move(value);
    }
    json = std::move(cleaned);
  }
}

std::string dump_host_json(nlohmann::json json) {
  util::TextRepairs repairs;
  clean_json_strings(json, repairs);
  if (repairs.any() && json.is_object()) json["host_text_cleaned"] = repairs.describe();
  // `replace` is a second line of defence: nothing invalid is left after the cleaning above.
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json to_json(const Finding& finding) {
  nlohmann::json out = {{"id", finding.id},
                        {"status", to_string(finding.status)},
                        {"message", finding.message},
                        {"remedy", finding.remedy}};
  if (!finding.source.empty()) out["source"] = finding.source;
  out["action"] = to_string(action_of(finding));
  return out;
}

nlohmann::json to_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings) out.push_back(to_json(f));
  return out;
}

}  // namespace gpuenv::report
