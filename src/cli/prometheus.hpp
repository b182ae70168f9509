#pragma once
// Prometheus text exposition (format 0.0.4) for node_exporter's textfile collector: families declared with HELP and
// TYPE, label values cleaned and escaped, and the families every gpuenv report shares (the findings by id and status).
// Used by `doctor --prometheus` and `nccl judge --prometheus`.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/finding.hpp"
#include "util/host_text.hpp"

namespace gpuenv::cli {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// Accumulates metric families in the order they are declared.
class Exposition {
 public:
  /// Declares a family: a counter (a cumulative count that only goes up, or restarts from 0) when `name` ends in
  /// `_total`, as Prometheus names them (https://prometheus.io/docs/practices/naming/: "an accumulating count has
  /// total as a suffix"), else a gauge (a value that can go up and down).
  void family(const std::string& name, const std::string& help);
  /// One sample; non-finite values are left out.
  void sample(const std::string& name, const Labels& labels, double value);
  /// The exposition, with a closing comment saying what host text was cleaned in label values, if any.
  std::string text() const;
  /// Families another textfile in the same directory exports: declared and sampled here, they would be the same
  /// series twice, which node_exporter drops from one file with an error at every scrape. Left out from now on;
  /// `where` names the other file in a closing comment.
  void leave_to(const std::set<std::string>& names, const std::string& where);

 private:
  std::string text_;
  util::TextRepairs repairs_;
  std::set<std::string> left_out_;
  std::set<std::string> skipped_;  ///< the families of left_out_ this exposition declared, and left out
  std::string left_to_;
};

/// What a `gpuenv watch --prometheus` textfile says about itself: the families it has samples of and its timing gauges.
struct WatchTextfile {
  std::set<std::string> families;             ///< the families it has samples of
  std::optional<double> last_sample_seconds;  ///< gpuenv_watch_last_sample_timestamp_seconds
  std::optional<double> interval_seconds;     ///< gpuenv_watch_interval_seconds
};
/// Reads a watch textfile (pure; lines it does not know are ignored).
WatchTextfile parse_watch_textfile(std::string_view text);
/// The families doctor leaves to `watch`'s textfile at Unix time `now`: all it has samples of when its last sample is
/// at most three intervals (and at least 60 s) old, so a stopped watch leaves them to doctor again; else none.
std::set<std::string> families_left_to_watch(const WatchTextfile& watch, double now);

/// 0 ok, 1 degraded, 2 not ok.
int verdict_number(report::Verdict verdict);
/// -1 skip, 0 pass, 1 warn, 2 fail.
int status_number(report::Status status);
/// gpuenv_finding_status{id} (the worst of each id) and gpuenv_findings{status}.
void add_findings(Exposition& e, const std::vector<report::Finding>& findings);

}  // namespace gpuenv::cli
