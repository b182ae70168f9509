#pragma once
// Prometheus text exposition (format 0.0.4) for node_exporter's textfile collector: families declared with HELP and
// TYPE, label values cleaned and escaped, and the families every gpuenv report shares (the findings by id and status).
// Used by `doctor --prometheus` and `nccl judge --prometheus`.

#include <string>
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

 private:
  std::string text_;
  util::TextRepairs repairs_;
};

/// 0 ok, 1 degraded, 2 not ok.
int verdict_number(report::Verdict verdict);
/// -1 skip, 0 pass, 1 warn, 2 fail.
int status_number(report::Status status);
/// gpuenv_finding_status{id} (the worst of each id) and gpuenv_findings{status}.
void add_findings(Exposition& e, const std::vector<report::Finding>& findings);

}  // namespace gpuenv::cli
