// apply_plan through FakeSystem: fresh, converged (no install command, changed=false), a failing step (named,
// state kept, resumed), the reboot decision and the verify step.

#include "install/apply.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "compat/knowledge_base.hpp"
#include "install/planner.hpp"
#include "profile/parser.hpp"
#include "support/fake_system.hpp"
#include "util/strings.hpp"

using gpuenv::install::ApplyOptions;
using gpuenv::install::InstallPlan;
using gpuenv::install::Outcome;
using gpuenv::install::Step;
using gpuenv::install::StepResult;
using gpuenv::system::CommandResult;
using gpuenv::testing::FakeSystem;

namespace {

constexpr const char* k_state = "/state/install-state.json";

InstallPlan debian_plan() {
  auto parsed = gpuenv::profile::parse_profile(R"(schema = 1
name = "t"
[os]
distro = "debian"
version = "12"
[cuda]
version = "12.4.1"
[cudnn]
version = "9"
[driver]
branch = "550"
modules = "proprietary"
)",
                                               "t.toml");
  REQUIRE(parsed.has_value());
  auto data = gpuenv::install::builtin_install_data();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE((data && kb));
  gpuenv::install::NodeFacts node;
  node.kernel_release = "6.1.0-18-amd64";
  node.docker = false;
  node.containerd = false;
  auto plan = gpuenv::install::plan_install(
      parsed->base, {gpuenv::install::Target{"debian", "12", "x86_64"}, node, "", ""}, **data, **kb);
  REQUIRE(plan.has_value());
  return *plan;
}

CommandResult exited(int code, std::string out = "") {
  CommandResult result;
  result.exit_code = code;
  result.out = std::move(out);
  return result;
}

std::string joined(const std::vector<std::string>& argv) { return gpuenv::util::join(argv, " "); }

/// What a probe or check prints when it holds (its expected text, made to match as the step asks).
std::string holding_output(const std::optional<std::string>& text, gpuenv::install::OutputMatch match) {
  if (!text) return "";
  return match == gpuenv::install::OutputMatch::exact ? *text : *text + "\n";
}

/// A node where every step still has to run and every command succeeds: each probe says "to do" once, then done
/// (apply probes again after running a step).
FakeSystem fresh_node(const InstallPlan& plan) {
  FakeSystem fake;
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  for (const Step& step : plan.steps) {
    if (!step.done_if.empty()) {
      fake.command_queue[joined(step.done_if)] = {exited(1)};
      fake.commands[joined(step.done_if)] = exited(0, holding_output(step.done_if_stdout, step.done_if_match));
    }
    for (const auto& argv : step.commands) fake.commands[joined(argv)] = exited(0);
    for (const auto& check : step.checks)
      fake.commands[joined(check.argv)] = exited(0, holding_output(check.text, check.match));
  }
  fake.command_queue.erase("dpkg --audit");
  fake.commands["dpkg --audit"] = exited(0, "");  // dpkg is fine: the repair step is done
  return fake;
}

/// The same node after a successful install: every probe says done and every file is in place.
void converge(FakeSystem& fake, const InstallPlan& plan) {
  for (const Step& step : plan.steps) {
    if (!step.done_if.empty()) fake.command_queue.erase(joined(step.done_if));
    if (!step.done_if.empty())
      fake.commands[joined(step.done_if)] = exited(0, holding_output(step.done_if_stdout, step.done_if_match));
    for (const auto& file : step.files) fake.files[file.path] = file.content;
  }
}

ApplyOptions options() {
  ApplyOptions out;
  out.log_path = "/log/install.log";
  out.state_dir = "/state";
  out.clock = [] { return std::string("2026-01-01T00:00:00Z"); };
  return out;
}

/// Commands that change the node: everything but probes and directory creation.
std::vector<std::string> actions(const FakeSystem& fake, const InstallPlan& plan) {
  std::vector<std::string> probes;
  for (const Step& step : plan.steps) probes.push_back(joined(step.done_if));
  std::vector<std::string> out;
  for (const std::string& command : fake.commands_run) {
    if (command.rfind("mkdir -p", 0) == 0 || command == "modinfo -F version nvidia") continue;
    if (std::find(probes.begin(), probes.end(), command) == probes.end()) out.push_back(command);
  }
  return out;
}

void add_gpu(FakeSystem& fake) {
  fake.files["/sys/bus/pci/devices/0000:3b:00.0/vendor"] = "0x10de\n";
  fake.files["/sys/bus/pci/devices/0000:3b:00.0/class"] = "0x030200\n";
}

const std::string k_driver_install =
    "env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o "
    "Dpkg::Options::=--force-confold install -y cuda-drivers-550 nvidia-kernel-dkms nvidia-driver-cuda";

const char* k_banner =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";

}  // namespace

TEST_CASE("install apply: a fresh node without a GPU runs every step up to the reboot, then says no_gpu",
          "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK(report->outcome == Outcome::no_gpu);
  CHECK(report->changed);
  CHECK_FALSE(report->reboot_required);
  CHECK(report->message.find("no GPU to verify") == 0);
  const std::vector<std::string> ran = actions(fake, plan);
  REQUIRE(ran.size() >= 6);
  CHECK(ran[0] == "env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 check");
  CHECK(std::find(ran.begin(), ran.end(), k_driver_install) != ran.end());
  CHECK(std::find(ran.begin(), ran.end(), "dpkg --configure -a") == ran.end());  // dpkg --audit was clean
  CHECK(fake.written.contains("/etc/apt/apt.conf.d/51gpuenv-unattended-upgrades"));
  const auto state = nlohmann::json::parse(fake.written.at(k_state));
  CHECK(state["failed"].is_null());
  CHECK(state["completed"].size() == plan.steps.size() - 3);  // all but reboot, starting the services, verify
  const std::string& log = fake.written.at("/log/install.log");
  CHECK(log.find("2026-01-01T00:00:00Z install.driver $ env DEBIAN_FRONTEND=noninteractive apt-get") !=
        std::string::npos);
  CHECK(log.find("install.driver exit 0") != std::string::npos);
}

TEST_CASE("install apply: a converged node runs no install command and reports changed=false", "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  converge(fake, plan);
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK_FALSE(report->changed);
  CHECK(report->outcome == Outcome::no_gpu);
  CHECK(actions(fake, plan) ==
        std::vector<std::string>{"env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 check",
                                 "env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update"});
  CHECK(fake.written.size() == 2);  // the log and the state: every other file already had its content
}

TEST_CASE("install apply: an interrupted dpkg is configured first, a failing script there does not stop the run",
          "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  fake.command_queue["dpkg --audit"] = {
      exited(0, "The following packages are only half configured:\n cudnn9-cuda-12\n")};  // then clean
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  const std::vector<std::string> ran = actions(fake, plan);
  REQUIRE(ran.size() >= 2);
  CHECK(ran[1] == "dpkg --configure -a");
  CHECK(report->steps[1].result == StepResult::ran);

  // The half-configured package's own postinst fails: the cuDNN step installs the fixed version later.
  FakeSystem broken = fresh_node(plan);
  broken.commands["dpkg --audit"] = exited(0, "The following packages are only half configured:\n cudnn9-cuda-12\n");
  broken.commands["dpkg --configure -a"] = exited(1);
  auto going_on = gpuenv::install::apply_plan(broken, plan, options());
  REQUIRE(going_on.has_value());
  CHECK(going_on->steps[1].result == StepResult::failed);
  CHECK(going_on->outcome == Outcome::no_gpu);
  CHECK(nlohmann::json::parse(broken.written.at(k_state))["failed"].is_null());
  CHECK(broken.written.at("/log/install.log").find("install.preflight.dpkg failed; going on") != std::string::npos);
}

TEST_CASE("install apply: a failing step stops the run, is named with the log, and a re-run resumes there",
          "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  const std::string driver_install = k_driver_install;
  CommandResult failed = exited(100);
  failed.err = "E: Sub-process /usr/bin/dpkg returned an error code (1)";
  fake.commands[driver_install] = failed;
  fake.commands["apt-cache pkgnames cuda-drivers-"] = exited(0, "cuda-drivers-570\ncuda-drivers-535\n");
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK(report->outcome == Outcome::failed);
  CHECK(report->failed_step == "install.driver");
  CHECK(report->message.find("step install.driver failed (`" + driver_install +
                             "` exited 100; the repositories have: cuda-drivers-535, cuda-drivers-570)") == 0);
  CHECK(report->message.find("/log/install.log") != std::string::npos);
  const auto state = nlohmann::json::parse(fake.written.at(k_state));
  CHECK(state["failed"] == "install.driver");
  CHECK(fake.written.at("/log/install.log").find("  E: Sub-process /usr/bin/dpkg returned an error code (1)") !=
        std::string::npos);

  // The fix: the package installs now. --resume skips what completed (the lock wait) and starts at the driver.
  fake.files[k_state] = fake.written.at(k_state);
  fake.commands[driver_install] = exited(0);
  for (const Step& step : plan.steps) {
    if (step.id == "install.driver") {
      fake.command_queue[joined(step.done_if)] = {exited(1)};  // still to do, done once it has run
      break;
    }
    if (!step.done_if.empty())
      fake.commands[joined(step.done_if)] = exited(0, holding_output(step.done_if_stdout, step.done_if_match));
  }
  fake.commands_run.clear();
  ApplyOptions resume = options();
  resume.resume = true;
  auto resumed = gpuenv::install::apply_plan(fake, plan, resume);
  REQUIRE(resumed.has_value());
  CHECK(resumed->outcome == Outcome::no_gpu);
  const std::vector<std::string> ran = actions(fake, plan);
  REQUIRE_FALSE(ran.empty());
  CHECK(ran.front() == driver_install);
  CHECK(resumed->steps.front().detail == "completed in an earlier run");
}

TEST_CASE("install apply: a state file of another profile is refused on --resume", "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  fake.files[k_state] = R"({"profile": "other", "target": "ubuntu:22.04/x86_64", "completed": [], "failed": null})";
  ApplyOptions resume = options();
  resume.resume = true;
  auto report = gpuenv::install::apply_plan(fake, plan, resume);
  REQUIRE_FALSE(report.has_value());
  CHECK(report.error().message ==
        "/state/install-state.json is for other on ubuntu:22.04/x86_64, not t on "
        "debian:12/x86_64");
}

TEST_CASE("install apply: the reboot is due only when the loaded module is not the installed one", "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  converge(fake, plan);
  add_gpu(fake);
  fake.commands["modinfo -F version nvidia"] = exited(0, "550.54.15\n");
  int verified = 0;
  ApplyOptions opts = options();
  opts.verify = [&verified] {
    ++verified;
    return gpuenv::install::Verification{gpuenv::report::Verdict::degraded, "DEGRADED"};
  };

  SECTION("no module loaded, no --reboot: reboot_required, nothing rebooted") {
    auto report = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(report.has_value());
    CHECK(report->outcome == Outcome::reboot_required);
    CHECK(report->reboot_required);
    CHECK(report->message.find("loaded module none, installed 550.54.15") != std::string::npos);
    CHECK(std::find(fake.commands_run.begin(), fake.commands_run.end(), "systemctl reboot") == fake.commands_run.end());
    CHECK(verified == 0);
  }
  SECTION("with --reboot the node reboots") {
    opts.allow_reboot = true;
    auto report = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(report.has_value());
    CHECK(report->reboot_required);
    CHECK(fake.commands_run.back() == "systemctl reboot");
  }
  SECTION("after the reboot the module is still not loaded: a failure, not another reboot, with or without --resume") {
    // Item 12: a per-boot hook that runs `gpuenv install` without --resume must not reboot the node forever.
    fake.files["/proc/sys/kernel/random/boot_id"] = "11111111-1111-1111-1111-111111111111\n";
    opts.allow_reboot = true;
    auto rebooted = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(rebooted.has_value());
    CHECK(nlohmann::json::parse(fake.written.at(k_state))["reboots"] ==
          nlohmann::json::array({"11111111-1111-1111-1111-111111111111"}));
    fake.files[k_state] = fake.written.at(k_state);
    fake.files["/proc/sys/kernel/random/boot_id"] = "22222222-2222-2222-2222-222222222222\n";
    fake.commands_run.clear();
    for (const bool resume : {false, true}) {
      INFO("--resume " << resume);
      opts.resume = resume;
      auto again = gpuenv::install::apply_plan(fake, plan, opts);
      REQUIRE(again.has_value());
      CHECK(again->outcome == Outcome::failed);
      CHECK(again->failed_step == "install.reboot");
      CHECK(again->message.find("still not loaded after 1 reboot(s) by gpuenv") != std::string::npos);
      CHECK(std::find(fake.commands_run.begin(), fake.commands_run.end(), "systemctl reboot") ==
            fake.commands_run.end());
      fake.files[k_state] = fake.written.at(k_state);
    }
  }
  SECTION("a reboot that loaded the module clears the count: a later change gets its own reboot") {
    fake.files["/proc/sys/kernel/random/boot_id"] = "11111111-1111-1111-1111-111111111111\n";
    opts.allow_reboot = true;
    REQUIRE(gpuenv::install::apply_plan(fake, plan, opts).has_value());
    fake.files[k_state] = fake.written.at(k_state);
    fake.files["/proc/sys/kernel/random/boot_id"] = "22222222-2222-2222-2222-222222222222\n";
    fake.files["/proc/driver/nvidia/version"] = k_banner;
    REQUIRE(gpuenv::install::apply_plan(fake, plan, opts).has_value());
    CHECK(nlohmann::json::parse(fake.written.at(k_state))["reboots"] == nlohmann::json::array());
  }
  SECTION("a run in the boot gpuenv asked to end waits for that reboot instead of asking again") {
    fake.files["/proc/sys/kernel/random/boot_id"] = "11111111-1111-1111-1111-111111111111\n";
    opts.allow_reboot = true;
    REQUIRE(gpuenv::install::apply_plan(fake, plan, opts).has_value());
    fake.files[k_state] = fake.written.at(k_state);
    fake.commands_run.clear();
    auto pending = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(pending.has_value());
    CHECK(pending->outcome == Outcome::reboot_required);
    CHECK(pending->message.find("still pending") != std::string::npos);
    CHECK(std::find(fake.commands_run.begin(), fake.commands_run.end(), "systemctl reboot") == fake.commands_run.end());
  }
  SECTION("the installed module is loaded: doctor verifies; DEGRADED passes, NOT READY fails") {
    fake.files["/proc/driver/nvidia/version"] = k_banner;
    auto report = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(report.has_value());
    CHECK(report->outcome == Outcome::verified);
    CHECK_FALSE(report->reboot_required);
    CHECK_FALSE(report->changed);
    CHECK(report->steps.back().result == StepResult::ran);
    CHECK(verified == 1);
    opts.verify = [] { return gpuenv::install::Verification{gpuenv::report::Verdict::not_ok, "NOT READY; x"}; };
    auto failed = gpuenv::install::apply_plan(fake, plan, opts);
    REQUIRE(failed.has_value());
    CHECK(failed->outcome == Outcome::not_ready);
    CHECK(failed->steps.back().result == StepResult::failed);
  }
}

TEST_CASE("install apply: persistence is turned on after the reboot step, before verify", "[install][apply]") {
  const InstallPlan plan = debian_plan();
  FakeSystem fake = fresh_node(plan);
  converge(fake, plan);
  add_gpu(fake);
  fake.files["/proc/driver/nvidia/version"] = k_banner;
  fake.commands["modinfo -F version nvidia"] = exited(0, "550.54.15\n");
  const std::string query = "nvidia-smi --query-gpu=persistence_mode --format=csv,noheader";
  fake.command_queue[query] = {exited(0, "Disabled\nDisabled\n")};
  fake.commands[query] = exited(0, "Enabled\nEnabled\n");
  fake.commands["systemctl show --property=WantedBy --value nvidia-persistenced.service"] =
      exited(0, "sys-bus-pci-drivers-nvidia.device multi-user.target\n");
  ApplyOptions opts = options();
  opts.verify = [] { return gpuenv::install::Verification{gpuenv::report::Verdict::ok, "READY"}; };
  auto report = gpuenv::install::apply_plan(fake, plan, opts);
  REQUIRE(report.has_value());
  CHECK(report->outcome == Outcome::verified);
  const auto restart =
      std::find(fake.commands_run.begin(), fake.commands_run.end(), "systemctl restart nvidia-persistenced.service");
  CHECK(restart != fake.commands_run.end());
}

TEST_CASE("install apply: a command that finds the lock held is retried, bounded, with a pause", "[install][apply]") {
  // apt-get exits 100 with "Could not get lock /var/lib/apt/lists/lock"; DPkg::Lock::Timeout does not cover it.
  InstallPlan plan;
  plan.profile = "t";
  plan.target = {"debian", "12", "x86_64"};
  Step update{"install.repo.cuda", "refresh"};
  update.commands = {{"apt-get", "update"}};
  update.retries = 2;
  update.retry_delay = std::chrono::seconds(10);
  plan.steps = {update};
  FakeSystem fake;
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  fake.command_queue["apt-get update"] = {exited(100), exited(100), exited(0)};
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK(report->steps[0].result == StepResult::ran);
  CHECK(fake.sleeps == std::vector<std::chrono::milliseconds>{std::chrono::seconds(10), std::chrono::seconds(10)});
  fake.command_queue["apt-get update"] = {exited(100), exited(100), exited(100), exited(0)};
  auto exhausted = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(exhausted.has_value());
  CHECK(exhausted->outcome == Outcome::failed);  // three attempts, then the failure
}

TEST_CASE("install apply: a step's checks decide whether it achieved what it is for", "[install][apply]") {
  InstallPlan plan;
  plan.profile = "t";
  plan.target = {"debian", "12", "x86_64"};
  Step key{"install.repo.cuda_key", "the key"};
  key.commands = {{"fetch"}};
  key.checks = {
      {{"gpg", "--show-keys", "k"}, gpuenv::install::OutputMatch::has_line, "fpr:::::::::ABCD:", "not NVIDIA's key"}};
  plan.steps = {key};
  FakeSystem fake;
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  fake.commands["fetch"] = exited(0);
  fake.commands["gpg --show-keys k"] = exited(0, "pub:-:255:22:1234:::\nfpr:::::::::EEEE:\n");
  auto rogue = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(rogue.has_value());
  CHECK(rogue->outcome == Outcome::failed);
  CHECK(rogue->steps[0].detail == "not NVIDIA's key");
  fake.commands["gpg --show-keys k"] = exited(0, "pub:-:255:22:1234:::\nfpr:::::::::ABCD:\n");
  auto good = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(good.has_value());
  CHECK(good->steps[0].result == StepResult::ran);
}

TEST_CASE("install apply: a step whose done-check still fails after it ran is a failure with its remedy",
          "[install][apply]") {
  // The expert review's case: on Ubuntu `systemctl enable nvidia-persistenced` exits 0 and leaves the unit static
  // (Canonical's unit has no [Install]; canonical/nvidia-graphics-drivers PR #34), so a step judged by its commands
  // alone was "ran" on every run and never converged. Apply probes again after the commands.
  InstallPlan plan;
  plan.profile = "t";
  plan.target = {"ubuntu", "22.04", "x86_64"};
  Step enable{"install.services", "enable"};
  enable.commands = {{"systemctl", "enable", "nvidia-persistenced"}};
  enable.done_if = {"systemctl", "is-enabled", "nvidia-persistenced"};
  enable.done_if_stdout = "enabled\n";
  enable.remedy = "the unit has no [Install] section";
  Step later{"install.later", "after it"};
  later.commands = {{"later"}};
  plan.steps = {enable, later};
  FakeSystem fake;
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  fake.commands["systemctl enable nvidia-persistenced"] = exited(0);
  fake.commands["systemctl is-enabled nvidia-persistenced"] = exited(0, "static\n");
  fake.commands["later"] = exited(0);
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK(report->outcome == Outcome::failed);
  CHECK(report->failed_step == "install.services");
  CHECK(report->steps[0].detail ==
        "it ran, but `systemctl is-enabled nvidia-persistenced` still does not show it done: the unit has no "
        "[Install] section");
  CHECK(std::find(fake.commands_run.begin(), fake.commands_run.end(), "later") == fake.commands_run.end());
  CHECK(nlohmann::json::parse(fake.written.at(k_state))["failed"] == "install.services");

  // The same step on a node where the command achieves it: ran, and the run goes on.
  fake.command_queue["systemctl is-enabled nvidia-persistenced"] = {exited(1, "disabled\n")};
  fake.commands["systemctl is-enabled nvidia-persistenced"] = exited(0, "enabled\n");
  auto good = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(good.has_value());
  CHECK(good->steps[0].result == StepResult::ran);
  CHECK(good->outcome == Outcome::changed);
}

TEST_CASE("install apply: a branch probe is done only when every line is the branch's", "[install][apply]") {
  InstallPlan plan;
  plan.profile = "t";
  plan.target = {"debian", "12", "x86_64"};
  Step driver{"install.driver", "the driver"};
  driver.commands = {{"install"}};
  driver.done_if = {"dpkg-query", "versions"};
  driver.done_if_stdout = "installed:580.";
  driver.done_if_match = gpuenv::install::OutputMatch::lines_prefixed;
  plan.steps = {driver};
  FakeSystem fake;
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  fake.commands["install"] = exited(0);
  struct Row {
    std::string out;
    bool done;
  };
  for (const Row& row : {Row{"installed:580.95.05-1\ninstalled:580.95.05-1\n", true},
                         Row{"installed:580.95.05-1\ninstalled:590.48.01-1\n", false},  // a dependency moved on
                         Row{"installed:580.95.05-1\nconfig-files:580.95.05-1\n", false}, Row{"", false}}) {
    INFO(row.out);
    fake.commands["dpkg-query versions"] = exited(0, row.out);
    auto report = gpuenv::install::apply_plan(fake, plan, options());
    REQUIRE(report.has_value());
    CHECK((report->steps[0].result == StepResult::done) == row.done);
  }
}

TEST_CASE("install apply: a refused plan runs nothing", "[install][apply]") {
  InstallPlan plan = debian_plan();
  plan.refusals.push_back({"install.secure_boot", gpuenv::report::Status::fail, "Secure Boot", "fix", ""});
  FakeSystem fake = fresh_node(plan);
  auto report = gpuenv::install::apply_plan(fake, plan, options());
  REQUIRE(report.has_value());
  CHECK(report->outcome == Outcome::refused);
  CHECK(fake.commands_run.empty());
}

TEST_CASE("install verify: an NVSwitch node is verified only when doctor confirms the fabric manager (item 1)",
          "[install][apply]") {
  // NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): on
  // NVSwitch systems CUDA initialisation fails (cudaErrorSystemNotReady, cuInit 802) until the fabric manager,
  // whose version must equal the driver's, has initialised the fabric. Doctor's fabric.manager finding says it runs
  // at the driver's version, fabric.state that each GPU's registration is Completed (nvml.h
  // nvmlGpuFabricInfo_v3_t): a report without them cannot verify an NVSwitch install.
  using gpuenv::install::judge_doctor;
  using gpuenv::report::Finding;
  using gpuenv::report::Status;
  using gpuenv::report::Verdict;
  const Finding driver{"driver.loaded", Status::pass, "580.105.08 loaded", "", ""};
  const Finding manager{"fabric.manager", Status::pass, "6 NVSwitches: nvidia-fabricmanager 580.105.08 matches", "",
                        ""};
  const Finding state{"fabric.state", Status::pass, "8 GPUs registered (State Completed, Status Success)", "", ""};

  SECTION("a PCIe node needs no fabric finding") {
    const auto result = judge_doctor(Verdict::ok, "READY", {driver}, false);
    CHECK(result.verdict == Verdict::ok);
    CHECK(result.summary == "READY");
  }
  SECTION("an NVSwitch node whose doctor confirms the fabric manager") {
    const auto result = judge_doctor(Verdict::ok, "READY", {driver, manager, state}, true);
    CHECK(result.verdict == Verdict::ok);
    CHECK(result.summary == "READY");
  }
  SECTION("an NVSwitch node whose doctor has no fabric check is unverified: a warning naming what is missing") {
    // Not a failure: the node may well be healthy, and a broken fabric shows as CUDA failing to start (cuInit 802).
    const auto result = judge_doctor(Verdict::ok, "READY", {driver}, true);
    CHECK(result.verdict == Verdict::degraded);
    CHECK(result.summary.find("unverified") != std::string::npos);
    CHECK(result.summary.find("fabric.manager") != std::string::npos);
    CHECK(judge_doctor(Verdict::not_ok, "NOT READY", {driver}, true).verdict == Verdict::not_ok);
  }
  SECTION("a fabric manager at another version (doctor fails it) fails the install with doctor's message") {
    const Finding mismatch{"fabric.manager", Status::fail,
                           "nvidia-fabricmanager 580.95.05 does not match the driver 580.105.08", "", ""};
    const auto result = judge_doctor(Verdict::not_ok, "NOT READY", {driver, mismatch, state}, true);
    CHECK(result.verdict == Verdict::not_ok);
    CHECK(result.summary.find("fabric.manager: nvidia-fabricmanager 580.95.05 does not match") != std::string::npos);
  }
  SECTION("a skipped fabric manager check (no NVSwitch seen by doctor) does not confirm it") {
    const Finding skipped{"fabric.manager", Status::skip, "the PCI devices could not be read", "", ""};
    CHECK(judge_doctor(Verdict::ok, "READY", {driver, skipped}, true).verdict == Verdict::not_ok);
  }
}
