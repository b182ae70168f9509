#include "cli/boot_allreduce.hpp"

#include "doctor/actions.hpp"
#include "nccl/allreduce.hpp"
#include "system/abandon.hpp"

namespace gpuenv::cli {

util::Expected<util::Ok> add_boot_allreduce(system::System& system, const BootAllreduceOptions& options,
                                            doctor::DoctorReport& report) {
  // A hung GPU's thread is still in the driver: NCCL would hang behind it, and the sweep's unsetenv(NCCL_COMM_ID)
  // would race that thread's getenv (glibc before 2.40). Any abandoned work of this process counts, not only smoke's.
  // One GPU has nothing to all-reduce with.
  if (!report.smoke || report.smoke->abandoned_work || system::work_was_abandoned() || report.smoke->devices.size() < 2)
    return util::Ok{};
  nccl::SweepOptions sweep;
  sweep.cuda_library = options.cuda_library;
  sweep.nccl.library = options.nccl_library;
  if (!options.python.empty()) sweep.nccl.python = options.python;
  sweep.instance_type = !options.instance_type.empty() ? options.instance_type : report.facts.host.instance_type;
  auto ran = nccl::run_allreduce_sweep(system, sweep);
  if (!ran) {
    // A --python without the nvidia-nccl wheel, say: minutes of smoke tests must still end in a report.
    report.findings.push_back(report::Finding{"nccl.allreduce", report::Status::skip,
                                              "the all-reduce did not run: " + ran.error().message,
                                              "run `gpuenv smoke --nccl` to see why", ""});
    report.verdict = report::verdict_of(report.findings);
    return util::Ok{};
  }
  if (ran->abandoned_work) system::note_abandoned_work();  // cli leaves with _Exit, as after smoke's hangs
  GPUENV_TRY_ASSIGN(auto actions, doctor::builtin_actions());
  doctor::assign_actions(ran->findings, *actions);
  report.findings.insert(report.findings.end(), ran->findings.begin(), ran->findings.end());
  report.verdict = report::verdict_of(report.findings);
  return util::Ok{};
}

}  // namespace gpuenv::cli
