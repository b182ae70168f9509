#include "doctor/doctor.hpp"

#include <algorithm>

#include "doctor/actions.hpp"
#include "doctor/instances.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "system/abandon.hpp"
#include "system/deadline.hpp"
#include "util/strings.hpp"

namespace gpuenv::doctor {

std::string_view verdict_word(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::ok:
      return "READY";
    case report::Verdict::degraded:
      return "DEGRADED";
    case report::Verdict::not_ok:
      return "NOT READY";
  }
  return "UNKNOWN";
}

namespace {

/// Runs `gpuenv smoke` on a live node with visible GPUs and folds its findings (all GPUs) into the report; not once
/// the run's deadline (when one holds) has passed.
void add_smoke_findings(system::System& system, system::DeadlineSystem* deadline, const DoctorRequest& request,
                        const InstanceExpectation* instance, DoctorReport& report) {
  const probe::HostFacts& facts = report.facts;
  if (!facts.live || !facts.gpus.availability.available || facts.gpus.gpus.empty()) {
    report.findings.push_back({"smoke.run", report::Status::skip,
                               facts.live ? "smoke tests need visible GPUs" : "smoke tests do not run under --root", "",
                               ""});
    return;
  }
  if (deadline != nullptr && deadline->time_left() <= std::chrono::milliseconds(0)) {
    deadline->note_cut_short("smoke tests");
    report.findings.push_back({"smoke.run", report::Status::skip,
                               "smoke tests were not run: the run's deadline (--timeout) had passed", "", ""});
    return;
  }
  // The GPUs the node should have (--expect-gpus, else the instance type's): a missing one keeps the peer floors of
  // the whole board in force. The run's own deadline bounds smoke's budget too.
  smoke::SmokeOptions options = request.smoke;
  if (!options.expect_gpus && request.expect_gpus) options.expect_gpus = static_cast<int>(*request.expect_gpus);
  if (!options.expect_gpus && instance != nullptr && instance->gpus > 0)
    options.expect_gpus = static_cast<int>(instance->gpus);
  if (deadline != nullptr) options.run_timeout = std::min(options.run_timeout, deadline->time_left());
  auto smoke = smoke::run_smoke(system, options);
  if (!smoke) {
    report.findings.push_back(
        {"smoke.run", report::Status::fail, "smoke tests could not run: " + smoke.error().message, "", ""});
    return;
  }
  for (const report::Finding& finding : smoke->findings) report.findings.push_back(finding);
  for (const smoke::DeviceResult& device : smoke->devices) {
    for (report::Finding finding : device.findings) {
      finding.message = "GPU " + std::to_string(device.index) + ": " + finding.message;
      report.findings.push_back(std::move(finding));
    }
  }
  // Peer-copy findings already name both GPUs ("GPU 0 -> GPU 1: ...").
  for (const report::Finding& finding : smoke->peer_findings) report.findings.push_back(finding);
  for (const report::Finding& finding : smoke->bidirectional_findings) report.findings.push_back(finding);
  // A hung step's thread is still inside libcuda: cli must leave without running exit()'s teardown under it.
  if (smoke->abandoned_work) system::note_abandoned_work();
  report.smoke = std::move(*smoke);
}

/// FAIL when the deadline cut anything short: facts that were not collected cannot vouch for the node.
void add_deadline_finding(const system::DeadlineSystem& deadline, std::chrono::milliseconds limit,
                          DoctorReport& report) {
  if (deadline.cut_short().empty()) return;
  const auto seconds = static_cast<double>(limit.count()) / 1000;
  std::string limit_text = std::to_string(seconds);
  limit_text.erase(limit_text.find_last_not_of('0') + 1);
  if (!limit_text.empty() && limit_text.back() == '.') limit_text.pop_back();
  report.findings.push_back({"doctor.deadline", report::Status::fail,
                             "the run's deadline (--timeout " + limit_text + " s) passed before these finished: " +
                                 util::join(deadline.cut_short(), ", ") + "; their facts are missing",
                             "a probe that hangs points at a hung GPU or driver: check the kernel log for Xid errors "
                             "(sudo dmesg | grep -i xid); on a node that is only slow, raise --timeout",
                             ""});
}

}  // namespace

util::Expected<DoctorReport> run_doctor(system::System& system, const DoctorRequest& request) {
  // Load gpuenv's own data first: a broken build should say so before touching the machine.
  GPUENV_TRY_ASSIGN(auto thresholds, builtin_thresholds());
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  GPUENV_TRY_ASSIGN(auto instances, builtin_instances());
  GPUENV_TRY_ASSIGN(auto actions, builtin_actions());

  DoctorReport report;
  // One deadline over every wait, when one is asked for: commands go through it, NVML and libcuda ask it.
  std::optional<system::DeadlineSystem> bounded;
  if (request.deadline) bounded.emplace(system, system.now() + *request.deadline);
  system::System& target = bounded ? static_cast<system::System&>(*bounded) : system;
  probe::CollectOptions collect = request.collect;
  collect.deadline = bounded ? &*bounded : nullptr;
  // Gather every fact through the System seam; from here on, facts are immutable.
  report.facts = probe::collect_host_facts(target, collect);
  if (request.instance_type) {
    report.facts.host.instance_type = *request.instance_type;
    report.facts.host.cloud_source +=
        (report.facts.host.cloud_source.empty() ? "" : "; ") + std::string("instance type from --instance-type");
  }

  // Judge them: thresholds, compatibility rules, and the profile when one was given.
  const InstanceExpectation* instance = find_instance(*instances, report.facts.host.instance_type);
  const Expectations expectations{request.expect_gpus, request.profile ? &*request.profile : nullptr, instance};
  report.findings = evaluate(report.facts, *thresholds, *kb, expectations);

  // Prove the GPUs work: smoke tests, unless --quick or there is nothing to run them on.
  if (request.run_smoke) add_smoke_findings(target, bounded ? &*bounded : nullptr, request, instance, report);
  // The link counters' second reading, after any load the smoke tests put on the links: their growth is a rate.
  probe::collect_link_counters_end(target, collect, report.facts);
  for (report::Finding& finding : evaluate_link_counters(report.facts, *thresholds))
    report.findings.push_back(std::move(finding));
  if (bounded) add_deadline_finding(*bounded, *request.deadline, report);
  assign_actions(report.findings, *actions);
  report.verdict = report::verdict_of(report.findings);
  return report;
}

}  // namespace gpuenv::doctor
