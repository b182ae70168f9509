#pragma once
// The numbers doctor judges by (data/doctor/thresholds.toml, compiled in), each with its source.

#include <map>
#include <optional>
#include <span>
#include <string>

#include "report/finding.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"

namespace gpuenv::doctor {

struct Threshold {
  std::optional<double> warn_below;
  std::optional<double> warn_at;
  std::optional<double> fail_at;
  std::string source;
};

struct ThrottleReason {
  report::Status status_on = report::Status::warn;
  std::string meaning;
  std::string source;
};

struct Thresholds {
  std::map<std::string, Threshold> values;                 ///< by id, e.g. "gpu.temperature_c"
  std::map<std::string, ThrottleReason> throttle_reasons;  ///< by NVML reason name

  /// The threshold with that id; an internal error in the shipped data if missing (tests guard it).
  const Threshold& at(const std::string& id) const;
};

/// Parses thresholds.toml text; an internal Error naming the row on bad data.
util::Expected<Thresholds> parse_thresholds(std::string_view text, const util::Overlay& overlay = {});

/// Doctor's tables (thresholds.toml, instances.toml, actions.toml, compiled in) and how overlay rows replace theirs.
std::vector<util::DataTable> data_tables();
/// Parses every compiled-in table with `overlay` merged (for `gpuenv data check`).
util::Expected<util::Ok> check_data(const util::Overlay& overlay);
/// The thresholds compiled into this binary.
/// The embedded thresholds.toml with `overlay` merged (parsed at each call).
util::Expected<Thresholds> load_thresholds(const util::Overlay& overlay);
util::Expected<const Thresholds*> builtin_thresholds();

}  // namespace gpuenv::doctor
