#include "cli/prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuenv::cli {
namespace {

using report::Status;

/// A label value as the exposition format wants it: host text cleaned (Prometheus rejects the whole file for one
/// invalid UTF-8 label value; control characters escaped; at most 256 bytes), then backslash, double quote and
/// newline escaped. What cleaning changed is added to `repairs`.
std::string escape_label(const std::string& value, util::TextRepairs& repairs) {
  std::string out;
  for (char c : util::clean_host_text(value, util::CleanOptions{true, 256}, repairs)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_value(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);
  return buffer;
}

}  // namespace

void Exposition::family(const std::string& name, const std::string& help) {
  const bool counter = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
  text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + (counter ? " counter\n" : " gauge\n");
}

void Exposition::sample(const std::string& name, const Labels& labels, double value) {
  if (!std::isfinite(value)) return;
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      text_ += labels[i].first + "=\"" + escape_label(labels[i].second, repairs_) + "\"";
    }
    text_ += '}';
  }
  text_ += " " + format_value(value) + "\n";
}

std::string Exposition::text() const {
  if (!repairs_.any()) return text_;
  return text_ + "# gpuenv: host text in label values was cleaned: " + repairs_.describe() + "\n";
}

int verdict_number(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::ok:
      return 0;
    case report::Verdict::degraded:
      return 1;
    case report::Verdict::not_ok:
      return 2;
  }
  return 2;
}

int status_number(Status status) {
  switch (status) {
    case Status::skip:
      return -1;
    case Status::pass:
      return 0;
    case Status::warn:
      return 1;
    case Status::fail:
      return 2;
  }
  return 2;
}

void add_findings(Exposition& e, const std::vector<report::Finding>& findings) {
  e.family("gpuenv_finding_status", "One series per finding id: -1 skip, 0 pass, 1 warn, 2 fail (the worst wins).");
  // Several findings can share an id (one per toolkit or GPU): the series carries the worst of them.
  std::vector<std::pair<std::string, Status>> worst;
  for (const report::Finding& f : findings) {
    auto it = std::find_if(worst.begin(), worst.end(), [&](const auto& entry) { return entry.first == f.id; });
    if (it == worst.end()) {
      worst.emplace_back(f.id, f.status);
    } else if (f.status > it->second) {
      it->second = f.status;
    }
  }
  for (const auto& [id, status] : worst) e.sample("gpuenv_finding_status", {{"id", id}}, status_number(status));
  e.family("gpuenv_findings", "Number of findings by status.");
  for (Status status : {Status::pass, Status::warn, Status::fail, Status::skip})
    e.sample("gpuenv_findings", {{"status", std::string(report::to_string(status))}},
             static_cast<double>(report::count_status(findings, status)));
}

}  // namespace gpuenv::cli
