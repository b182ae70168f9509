#include "doctor/doctor.hpp"

#include "doctor/instances.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"

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

/// Runs `gpuenv smoke` on a live node with visible GPUs and folds its findings (all GPUs) into the report.
void add_smoke_findings(system::System& system, const DoctorRequest& request, DoctorReport& report) {
  const probe::HostFacts& facts = report.facts;
  if (!facts.live || !facts.gpus.availability.available || facts.gpus.gpus.empty()) {
    report.findings.push_back({"smoke.run", report::Status::skip,
                               facts.live ? "smoke tests need visible GPUs" : "smoke tests do not run under --root", "",
                               ""});
    return;
  }
  auto smoke = smoke::run_smoke(system, request.smoke);
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
  report.smoke = std::move(*smoke);
}

}  // namespace

util::Expected<DoctorReport> run_doctor(system::System& system, const DoctorRequest& request) {
  // Load gpuenv's own data first: a broken build should say so before touching the machine.
  auto thresholds = builtin_thresholds();
  if (!thresholds) return thresholds.error();
  auto kb = compat::builtin_knowledge_base();
  if (!kb) return kb.error();
  auto instances = builtin_instances();
  if (!instances) return instances.error();

  DoctorReport report;
  // Gather every fact through the System seam; from here on, facts are immutable.
  report.facts = probe::collect_host_facts(system, request.collect);
  if (request.instance_type) {
    report.facts.host.instance_type = *request.instance_type;
    report.facts.host.cloud_source +=
        (report.facts.host.cloud_source.empty() ? "" : "; ") + std::string("instance type from --instance-type");
  }

  // Judge them: thresholds, compatibility rules, and the profile when one was given.
  const InstanceExpectation* instance = find_instance(**instances, report.facts.host.instance_type);
  const Expectations expectations{request.expect_gpus, request.profile ? &*request.profile : nullptr, instance};
  report.findings = evaluate(report.facts, **thresholds, **kb, expectations);

  // Prove the GPUs work: smoke tests, unless --quick or there is nothing to run them on.
  if (request.run_smoke) add_smoke_findings(system, request, report);
  report.verdict = report::verdict_of(report.findings);
  return report;
}

}  // namespace gpuenv::doctor
