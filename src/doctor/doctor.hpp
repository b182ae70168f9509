#pragma once
// gpuenv doctor: is this node ready for GPU work, and if not, exactly why.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "probe/collect.hpp"
#include "probe/facts.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"
#include "smoke/smoke.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::doctor {

struct DoctorRequest {
  probe::CollectOptions collect;
  std::optional<unsigned> expect_gpus;
  /// --instance-type: judge the node as this instance type whatever DMI or the metadata service say.
  std::optional<std::string> instance_type;
  std::optional<profile::Profile> profile;  ///< judge the node against this environment
  bool run_smoke = false;                   ///< run the on-device smoke tests (doctor without --quick)
  smoke::SmokeOptions smoke;
  /// The whole collection's limit (--timeout): every wait is cut to the time left, and what the deadline cut short
  /// becomes a `doctor.deadline` finding. The smoke tests keep their own per-step limits (docs/reliability.md).
  std::optional<std::chrono::milliseconds> deadline;
};

struct DoctorReport {
  probe::HostFacts facts;
  std::vector<report::Finding> findings;
  report::Verdict verdict = report::Verdict::ok;
  std::optional<smoke::SmokeReport> smoke;  ///< the smoke run's measurements, when it ran (metrics per GPU)
};

/// Collects the facts, judges them, and returns the report; an internal Error only when gpuenv's own
/// embedded data is broken.
util::Expected<DoctorReport> run_doctor(system::System& system, const DoctorRequest& request);

/// "READY", "DEGRADED" or "NOT READY".
std::string_view verdict_word(report::Verdict verdict);

}  // namespace gpuenv::doctor
