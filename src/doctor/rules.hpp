#pragma once
// Doctor's rules: HostFacts (and an optional profile) in, findings out. Pure: no I/O.

#include <optional>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/instances.hpp"
#include "doctor/thresholds.hpp"
#include "probe/facts.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::doctor {

/// What the node is judged against, besides the thresholds.
struct Expectations {
  std::optional<unsigned> gpu_count;          ///< --expect-gpus
  const profile::Profile* profile = nullptr;  ///< --profile
  /// The row of the node's instance type (data/doctor/instances.toml); --expect-gpus overrides its GPU count.
  const InstanceExpectation* instance = nullptr;
};

/// All findings for a node, grouped host, driver, GPUs, kernel log, CUDA, libraries, containers, profile.
std::vector<report::Finding> evaluate(const probe::HostFacts& facts, const Thresholds& thresholds,
                                      const compat::KnowledgeBase& kb, const Expectations& expectations);

/// The link-rate findings alone (nvlink.errors, pcie.replay, ib.errors), for a run whose end reading of the counters
/// is taken after evaluate() (doctor reads it after the smoke tests); none when either reading is missing.
std::vector<report::Finding> evaluate_link_counters(const probe::HostFacts& facts, const Thresholds& thresholds);

/// The status of one SXid headline (probe::judge_sxid: the driver's Fatal fails, a secondary row warns at most), for
/// doctor's fabric.sxid and watch.sxid alike.
report::Status sxid_status(const std::optional<probe::SxidInfo>& info, bool driver_fatal);

}  // namespace gpuenv::doctor
