// deploy/ansible with the real ansible-playbook (Debian's ansible-core) against localhost over a local connection,
// with a stand-in gpuenv (tests/fleet/ansible/gpuenv-standin.sh) that answers per docs/install.md: the syntax check;
// a check-mode run that plans (`install --dry-run`) and runs doctor but never applies, and one on a fresh node with
// no gpuenv yet; changed/ok taken from gpuenv's JSON "changed" (never always-changed); a NOT READY doctor fails the
// host and names the failing findings; the Slurm rollout drains first and resumes through `doctor --slurm` only
// after doctor passed (a stand-in scontrol, tests/fleet/ansible/scontrol-standin.sh).

#include <catch2/catch.hpp>
#include <regex>

#include "fleet/fleet_support.hpp"
#include "support/skip.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::fleet;

const std::string k_playbook = std::string(GPUENV_SOURCE_DIR) + "/deploy/ansible/playbook.yml";
const std::string k_standin = std::string(GPUENV_SOURCE_DIR) + "/tests/fleet/ansible/gpuenv-standin.sh";
const std::string k_scontrol = std::string(GPUENV_SOURCE_DIR) + "/tests/fleet/ansible/scontrol-standin.sh";

struct Play {
  gpuenv::system::CommandResult run;
  int changed = -1;
  int failed = -1;
};

/// ansible-playbook on localhost with `environment` (VAR=value) for the stand-in and `options` before the playbook.
Play play(const fs::path& scratch, const std::vector<std::string>& environment,
          const std::vector<std::string>& options) {
  std::vector<std::string> argv{"env", "ANSIBLE_LOCALHOST_WARNING=false", "ANSIBLE_NOCOLOR=1",
                                "ANSIBLE_LOCAL_TEMP=" + (scratch / "ansible-tmp").string(),
                                "STANDIN_LOG=" + (scratch / "standin.log").string()};
  argv.insert(argv.end(), environment.begin(), environment.end());
  argv.insert(argv.end(), {"ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "gpuenv_hosts=localhost", "-e",
                           "gpuenv_binary=" + k_standin, "-e", "gpuenv_profile=pytorch-2.4-cu124", "-e",
                           "gpuenv_scontrol=" + k_scontrol, "-e", "gpuenv_slurm_node=localhost"});
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(k_playbook);
  Play result{run_tool(argv, std::chrono::seconds(120))};
  std::smatch recap;
  if (std::regex_search(result.run.out, recap, std::regex(R"(localhost\s+: ok=\d+\s+changed=(\d+).*failed=(\d+))"))) {
    result.changed = std::stoi(recap[1]);
    result.failed = std::stoi(recap[2]);
  }
  return result;
}

}  // namespace

TEST_CASE(
    "ansible: the playbook passes the syntax check, plans in check mode, reports gpuenv's changed, fails NOT READY",
    "[fleet][ansible][system-test][engine]") {
  GPUENV_SKIP_UNLESS(have_tool("ansible-playbook"),
                     "ansible-playbook not installed (Debian ansible-core; scripts/bootstrap installs it)");
  TempDir scratch;
  const auto syntax = run_tool({"ansible-playbook", "--syntax-check", "-i", "localhost,", k_playbook});
  INFO(syntax.out << syntax.err);
  REQUIRE(syntax.exit_code == 0);

  // Check mode: the package copy would change the node (reported, not done); gpuenv only plans; doctor runs.
  write_text(scratch.path() / "gpuenv_0.1.0_amd64.deb", "not really a package");
  const auto check = play(scratch.path(), {},
                          {"--check", "-e", "gpuenv_package=" + (scratch.path() / "gpuenv_0.1.0_amd64.deb").string(),
                           "-e", "gpuenv_package_dir=" + (scratch.path() / "cache").string()});
  INFO(check.run.out << check.run.err);
  CHECK(check.run.exit_code == 0);
  CHECK(check.failed == 0);
  CHECK(check.changed == 2);
  CHECK_FALSE(fs::exists(scratch.path() / "cache"));
  CHECK(read_text(scratch.path() / "standin.log") ==
        "install pytorch-2.4-cu124 --dry-run --json\ndoctor --tier health --json --profile pytorch-2.4-cu124\n");

  const auto changed = play(scratch.path(), {"STANDIN_CHANGED=true"}, {});
  INFO(changed.run.out);
  CHECK(changed.run.exit_code == 0);
  CHECK(changed.changed == 1);

  const auto converged = play(scratch.path(), {"STANDIN_CHANGED=false"}, {});
  INFO(converged.run.out);
  CHECK(converged.run.exit_code == 0);
  CHECK(converged.changed == 0);

  // NOT READY: the host fails (ansible-playbook exits 2, "one or more hosts failed") and the message names why.
  const auto not_ready = play(scratch.path(), {"STANDIN_VERDICT=NOT READY"}, {});
  INFO(not_ready.run.out);
  CHECK(not_ready.run.exit_code == 2);
  CHECK(not_ready.failed == 1);
  CHECK(gpuenv::util::contains(not_ready.run.out, "gpuenv doctor: NOT READY: gpu.ecc, xid.events"));
}

TEST_CASE("ansible: a reboot gpuenv asks for goes through Ansible, which the role refuses on the control node",
          "[fleet][ansible][system-test][engine]") {
  GPUENV_SKIP_UNLESS(have_tool("ansible-playbook"),
                     "ansible-playbook not installed (Debian ansible-core; scripts/bootstrap installs it)");
  TempDir scratch;
  const auto reboot = play(scratch.path(), {"STANDIN_CHANGED=true", "STANDIN_REBOOT=true"}, {});
  INFO(reboot.run.out);
  CHECK(reboot.run.exit_code == 2);
  CHECK(reboot.failed == 1);
  CHECK(gpuenv::util::contains(reboot.run.out, "gpuenv needs a reboot of localhost"));
  // The play stopped before doctor: the node is not judged until it runs the new driver.
  CHECK(read_text(scratch.path() / "standin.log") == "install pytorch-2.4-cu124 --json\n");
}

TEST_CASE("ansible: check mode on a fresh node, before the package put gpuenv there, says so and passes",
          "[fleet][ansible][system-test]") {
  GPUENV_SKIP_UNLESS(have_tool("ansible-playbook"),
                     "ansible-playbook not installed (Debian ansible-core; scripts/bootstrap installs it)");
  TempDir scratch;
  const auto check = play(scratch.path(), {}, {"--check", "-e", "gpuenv_binary=" + (scratch.path() / "none").string()});
  INFO(check.run.out << check.run.err);
  CHECK(check.run.exit_code == 0);
  CHECK(check.failed == 0);
  CHECK(gpuenv::util::contains(check.run.out, "gpuenv is not on localhost yet"));
  CHECK_FALSE(fs::exists(scratch.path() / "standin.log"));
}

TEST_CASE("ansible: the Slurm rollout drains first and resumes through doctor --slurm only after doctor passed",
          "[fleet][ansible][system-test]") {
  GPUENV_SKIP_UNLESS(have_tool("ansible-playbook"),
                     "ansible-playbook not installed (Debian ansible-core; scripts/bootstrap installs it)");
  TempDir scratch;
  const auto good = play(scratch.path(), {"STANDIN_CHANGED=true"}, {"-e", "gpuenv_slurm_drain=true"});
  INFO(good.run.out << good.run.err);
  CHECK(good.run.exit_code == 0);
  CHECK(read_text(scratch.path() / "standin.log") ==
        "scontrol show node localhost\n"
        "scontrol update NodeName=localhost State=DRAIN Reason=gpuenv: rollout by ansible\n"
        "scontrol show node localhost\n"
        "install pytorch-2.4-cu124 --json\n"
        "doctor --tier health --json --profile pytorch-2.4-cu124\n"
        "doctor --slurm --slurm-node localhost --tier health\n");

  // NOT READY: the host fails in the role, so the post_tasks never run: the node stays drained.
  TempDir again;
  const auto bad = play(again.path(), {"STANDIN_VERDICT=NOT READY"}, {"-e", "gpuenv_slurm_drain=true"});
  INFO(bad.run.out);
  CHECK(bad.run.exit_code == 2);
  CHECK_FALSE(gpuenv::util::contains(read_text(again.path() / "standin.log"), "--slurm"));
}
