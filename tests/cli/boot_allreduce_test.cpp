// `doctor --tier boot` runs NCCL's all-reduce over every GPU after its smoke tests (issue 27 item 4: "gpuenv smoke
// --nccl (and in the boot tier)"), through the real dlopen path against the fake libcuda and libnccl: its findings
// join the report and the verdict, and it is left out where it cannot tell anything (one GPU, or a GPU that hung).

#include "cli/boot_allreduce.hpp"

#include <catch2/catch.hpp>

#include "nccl/fake_nccl_fixture.hpp"
#include "smoke/fake_cuda_fixture.hpp"
#include "support/findings.hpp"

namespace {

using gpuenv::report::Status;
using gpuenv::report::Verdict;
using gpuenv::testing::require_finding;

/// A report whose smoke tests ran on `gpus` GPUs and passed.
gpuenv::doctor::DoctorReport after_smoke(int gpus) {
  gpuenv::doctor::DoctorReport report;
  report.findings = {{"gpu.count", Status::pass, "ok", "", ""}};
  gpuenv::smoke::SmokeReport smoke;
  smoke.devices.resize(static_cast<std::size_t>(gpus));
  report.smoke = smoke;
  return report;
}

gpuenv::cli::BootAllreduceOptions fakes() { return {GPUENV_FAKE_CUDA_LIBRARY, GPUENV_FAKE_NCCL_LIBRARY, "", ""}; }

/// The report after the boot tier's all-reduce, with the fakes configured as given (40 MiB free per GPU: the sweep's
/// 8 MiB size fits, the larger ones do not).
gpuenv::doctor::DoctorReport boot(gpuenv::doctor::DoctorReport report, const std::string& nccl) {
  const gpuenv::smoke::testing::FakeCuda cuda("device_count = 2\nfree_memory = 41943040\n");
  const gpuenv::nccl::testing::FakeNccl fake_nccl(nccl);
  auto system = gpuenv::system::make_real_system();
  REQUIRE(gpuenv::cli::add_boot_allreduce(*system, fakes(), report));
  return report;
}

}  // namespace

TEST_CASE("doctor --tier boot: the all-reduce's findings join the report", "[cli][nccl]") {
  const auto healthy = boot(after_smoke(2), "version = 22703\n");
  CHECK(require_finding(healthy.findings, "nccl.allreduce").status == Status::pass);
  CHECK(require_finding(healthy.findings, "nccl.allreduce").message == "2 GPUs, 8 MiB: every sum verified");
  CHECK(require_finding(healthy.findings, "nccl.library").status == Status::pass);
  CHECK(healthy.verdict == Verdict::ok);

  const auto wrong = boot(after_smoke(2), "wrong_rank = 1\nwrong_element = 3\n");
  const auto& sum = require_finding(wrong.findings, "nccl.allreduce");
  CHECK(sum.status == Status::fail);
  CHECK(sum.action != gpuenv::report::Action::none);  // doctor's actions table names what a failure calls for
  CHECK(wrong.verdict == Verdict::not_ok);
}

TEST_CASE("doctor --tier boot: no all-reduce for one GPU or after a hang", "[cli][nccl]") {
  CHECK(boot(after_smoke(1), "").findings.size() == 1);
  auto hung = after_smoke(2);
  hung.smoke->abandoned_work = true;
  CHECK(boot(hung, "").findings.size() == 1);
  gpuenv::doctor::DoctorReport no_smoke;
  CHECK(boot(no_smoke, "").findings.empty());
}

TEST_CASE("doctor --tier boot: an all-reduce that cannot start is a skip, and the report still comes", "[cli][nccl]") {
  const gpuenv::smoke::testing::FakeCuda cuda("device_count = 2\nfree_memory = 41943040\n");
  auto options = fakes();
  options.nccl_library.clear();
  options.python = "/nonexistent/bin/python3";  // a --python that cannot run: no wheel to find
  auto report = after_smoke(2);
  auto system = gpuenv::system::make_real_system();
  REQUIRE(gpuenv::cli::add_boot_allreduce(*system, options, report));
  const auto& skipped = require_finding(report.findings, "nccl.allreduce");
  CHECK(skipped.status == Status::skip);
  CHECK(skipped.message.find("the all-reduce did not run: ") == 0);
  CHECK(report.verdict == Verdict::ok);
}
