// `doctor --tier boot` runs NCCL's all-reduce over every GPU after its smoke tests (issue 27 item 4: "gpuenv smoke
// --nccl (and in the boot tier)"), through the real dlopen path against the fake libcuda and libnccl: its findings
// join the report and the verdict, and it is left out where it cannot tell anything (one GPU, or a GPU that hung).

#include "cli/boot_allreduce.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "cli/nccl_output.hpp"
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
/// 8 MiB size fits, the larger ones do not) and the NCCL_* variables of `env` (none of the test machine's).
gpuenv::doctor::DoctorReport boot(gpuenv::doctor::DoctorReport report, const std::string& nccl,
                                  const std::map<std::string, std::string>& env = {}) {
  const gpuenv::smoke::testing::FakeCuda cuda("device_count = 2\nfree_memory = 41943040\n");
  const gpuenv::nccl::testing::FakeNccl fake_nccl(nccl);
  gpuenv::testing::FakeSystem system;
  system.env = env;
  gpuenv::nccl::testing::open_fake_libraries(system);
  REQUIRE(gpuenv::cli::add_boot_allreduce(system, fakes(), report));
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

  // Review of issue 27, finding 1: the other ways a --python given for the framework check cannot name an NCCL (an
  // environment without the nvidia-nccl wheel, a wheel someone other than root could change) end the same way, with
  // a report and a verdict, not an error.
  const std::string probe =
      "/opt/tf/bin/python -I -c import importlib.util\ns = importlib.util.find_spec('nvidia.nccl')\nprint(list(s."
      "submodule_search_locations)[0] if s and s.submodule_search_locations else '')\n";
  options.python = "/opt/tf/bin/python";
  gpuenv::testing::FakeSystem fake;
  fake.commands[probe] = {0, false, false, "\n", ""};
  auto no_wheel = after_smoke(2);
  REQUIRE(gpuenv::cli::add_boot_allreduce(fake, options, no_wheel));
  CHECK(require_finding(no_wheel.findings, "nccl.allreduce").status == Status::skip);
  CHECK(require_finding(no_wheel.findings, "nccl.allreduce").message.find("no nvidia-nccl wheel") != std::string::npos);
  CHECK(no_wheel.verdict == Verdict::ok);
  fake.commands[probe] = {0, false, false, "/home/u/venv/lib/python3.11/site-packages/nvidia/nccl\n", ""};
  fake.untrusted["/home/u/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"] =
      "/home/u is owned by uid 1000";
  auto untrusted = after_smoke(2);
  REQUIRE(gpuenv::cli::add_boot_allreduce(fake, options, untrusted));
  CHECK(require_finding(untrusted.findings, "nccl.allreduce").message.find("is not trusted") != std::string::npos);
  CHECK(untrusted.verdict == Verdict::ok);
}

TEST_CASE("doctor --tier boot: an initialisation failure is NOT READY whatever NCCL settings are in effect",
          "[cli][nccl]") {
  // NCCL_SOCKET_IFNAME "specifies which IP interfaces to use for communication"
  // (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname): at boot it can name
  // an interface that is not up yet, and even ncclCommInitAll's bootstrap then fails (NVIDIA/nccl@5067397
  // src/bootstrap.cc:126, "Bootstrap : no socket interface found").
  const auto tuned = boot(after_smoke(2), "init_result = 5\n", {{"NCCL_SOCKET_IFNAME", "=ens9"}});
  const auto& init = require_finding(tuned.findings, "nccl.allreduce");
  // The setting is named, and the remedy says to rerun without it; but a dead GPU fails initialisation just the same,
  // and /etc/nccl.conf or root's environment applies to every NCCL job on the node: the node is not ready.
  CHECK(init.status == Status::fail);
  CHECK(init.message.find("NCCL_SOCKET_IFNAME==ens9 (environment: ") != std::string::npos);
  CHECK(init.remedy.find("rerun without it (unset NCCL_SOCKET_IFNAME in the environment)") != std::string::npos);
  CHECK(tuned.verdict == Verdict::not_ok);

  const auto plain = boot(after_smoke(2), "init_result = 5\n");
  CHECK(require_finding(plain.findings, "nccl.allreduce").status == Status::fail);
  CHECK(plain.verdict == Verdict::not_ok);
}

// The smoke JSON's "nccl" member (cli/nccl_output.cpp) carries the NCCL settings the sweep ran with and what gpuenv
// unset (docs/fabric.md, "NCCL's own settings").
TEST_CASE("smoke --json: the nccl member lists the settings in effect and what was unset", "[cli][nccl]") {
  gpuenv::nccl::SweepReport sweep;
  sweep.library = "libnccl.so.2";
  sweep.nccl_version = "2.27.3";
  sweep.settings = gpuenv::nccl::nccl_settings({{"NCCL_ALGO", "Ring"}, {"NCCL_IB_HCA", "mlx5_0"}},
                                               {{"/etc/nccl.conf", "NCCL_NET_PLUGIN=aws-ofi\n"}});
  sweep.unset.push_back({"NCCL_COMM_ID", "10.0.0.1:29500", "environment", {}});
  const nlohmann::json json = gpuenv::cli::nccl_sweep_json(sweep);
  REQUIRE(json["settings"].size() == 3);
  CHECK(json["settings"][0] == nlohmann::json{{"name", "NCCL_ALGO"},
                                              {"value", "Ring"},
                                              {"origin", "environment"},
                                              {"effects", nlohmann::json::array({"lowers_bandwidth", "breaks_init"})}});
  CHECK(json["settings"][1]["effects"].empty());
  CHECK(json["settings"][2]["origin"] == "/etc/nccl.conf");
  CHECK(json["settings"][2]["effects"] == nlohmann::json::array({"loads_code"}));
  REQUIRE(json["unset"].size() == 1);
  CHECK(json["unset"][0]["name"] == "NCCL_COMM_ID");
  CHECK(json["unset"][0]["value"] == "10.0.0.1:29500");

  const nlohmann::json none = gpuenv::cli::nccl_sweep_json(gpuenv::nccl::SweepReport{});
  CHECK(none["settings"].empty());
  CHECK(none["unset"].empty());
}
