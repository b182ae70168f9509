#include "doctor/doctor.hpp"

#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"

namespace gpuenv::doctor {

std::string_view verdict_word(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::ok: return "READY";
    case report::Verdict::degraded: return "DEGRADED";
    case report::Verdict::not_ok: return "NOT READY";
  }
  return "UNKNOWN";
}

util::Expected<DoctorReport> run_doctor(system::System& system, const DoctorRequest& request) {
  // Load gpuenv's own data first: a broken build should say so before touching the machine.
  auto thresholds = builtin_thresholds();
  if (!thresholds) return thresholds.error();
  auto kb = compat::builtin_knowledge_base();
  if (!kb) return kb.error();

  DoctorReport report;
  // Gather every fact through the System seam; from here on, facts are immutable.
  report.facts = probe::collect_host_facts(system, request.collect);

  // Judge them: thresholds, compatibility rules, and the profile when one was given.
  const Expectations expectations{request.expect_gpus, request.profile ? &*request.profile : nullptr};
  report.findings = evaluate(report.facts, **thresholds, **kb, expectations);

  // Smoke tests (issue 4) will run here unless --quick.
  report.verdict = report::verdict_of(report.findings);
  return report;
}

}  // namespace gpuenv::doctor
