#include "cli/prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/strings.hpp"

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
  if (left_out_.count(name) != 0) {
    skipped_.insert(name);
    return;
  }
  const bool counter = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
  text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + (counter ? " counter\n" : " gauge\n");
}

void Exposition::sample(const std::string& name, const Labels& labels, double value) {
  if (!std::isfinite(value) || left_out_.count(name) != 0) return;
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

void Exposition::leave_to(const std::set<std::string>& names, const std::string& where) {
  left_out_.insert(names.begin(), names.end());
  if (!names.empty()) left_to_ = where;
}

std::string Exposition::text() const {
  std::string out = text_;
  if (!skipped_.empty()) {
    out += "# gpuenv: left to " + left_to_ + ", which exports them too:";
    for (const std::string& name : skipped_) out += " " + name;
    out += "\n";
  }
  if (!repairs_.any()) return out;
  return out + "# gpuenv: host text in label values was cleaned: " + repairs_.describe() + "\n";
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

WatchTextfile parse_watch_textfile(std::string_view text) {
  WatchTextfile out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    // A sample's family: its name up to the labels. A family watch declares without a sample (NVML not answering)
    // is not one doctor should leave out.
    const std::string_view series = line.substr(0, space);
    out.families.emplace(series.substr(0, series.find('{')));
    const std::string_view name = series;
    std::optional<double>* field = name == "gpuenv_watch_last_sample_timestamp_seconds" ? &out.last_sample_seconds
                                   : name == "gpuenv_watch_interval_seconds"            ? &out.interval_seconds
                                                                                        : nullptr;
    if (field != nullptr) *field = util::parse_double(line.substr(space + 1));
  }
  return out;
}

std::set<std::string> families_left_to_watch(const WatchTextfile& watch, double now) {
  if (!watch.last_sample_seconds || !watch.interval_seconds) return {};
  const double allowed = std::max(60.0, 3 * *watch.interval_seconds);
  const double age = now - *watch.last_sample_seconds;
  if (age < -allowed || age > allowed) return {};  // stale, or from a clock far ahead: doctor keeps its series
  return watch.families;
}

}  // namespace gpuenv::cli
