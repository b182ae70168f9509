// deploy/nhc/gpuenv.nhc inside LBNL NHC's real failure path: the check file sourced as nhc sources it, run with
// `eval $CHECK`, failing through NHC's die(), whose `eval $OFFLINE_NODE "'$HOSTNAME'" "'$*'"` calls
// node-mark-offline, whose Slurm branch runs `scontrol update State=DRAIN NodeName=H Reason="NHC: <message>"`
// (tests/fleet/nhc_die_path.sh and nhc_node_mark_offline.sh quote those lines from mej/nhc 9c4a38c, nhc:48-66 and
// helpers/node-mark-offline:15-88; NHC is not packaged in Debian 12). sinfo and scontrol are stand-ins: scontrol
// records the argv it was given, which is what Slurm would receive. Hostile text (quotes, $(...), backticks) must mark
// the node offline with a readable reason, and nothing in it may run.

#include <catch2/catch.hpp>
#include <filesystem>

#include "fleet/fleet_support.hpp"
#include "support/source_tree.hpp"
#include "util/host_text.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::fleet;

using gpuenv::testing::k_source;

/// One NHC run in its own directory: the stand-ins, the record of scontrol's argv, a canary that hostile text
/// would create if any of it ran.
class NhcRun {
 public:
  NhcRun() {
    write_text(dir_.path() / "sinfo", "#!/bin/sh\necho 'idle none'\n");
    write_text(dir_.path() / "scontrol", "#!/bin/sh\nprintf '%s\\n' \"$@\" >\"$NHC_TEST_RECORD\"\n");
    for (const char* tool : {"sinfo", "scontrol"}) fs::permissions(dir_.path() / tool, fs::perms(0755));
  }
  const fs::path& dir() const { return dir_.path(); }
  std::string canary() const { return (dir_.path() / "canary").string(); }
  bool canary_exists() const { return fs::exists(canary()); }
  /// scontrol's argv, one argument per line; "" when node-mark-offline never called it.
  std::string scontrol_argv() const { return fs::exists(record()) ? read_text(record()) : std::string(); }

  /// Runs nhc_die_path.sh with `check_file` and the nhc.conf check `check_line`, gpuenv being `binary`.
  gpuenv::system::CommandResult run(const std::string& check_file, const std::string& check_line,
                                    const std::string& binary = GPUENV_BINARY) const {
    return run_tool({"env", "HOSTNAME=gpu07", "NHC_RM=slurm", "MARK_OFFLINE=1",
                     "OFFLINE_NODE=" + (k_source / "tests/fleet/nhc_node_mark_offline.sh").string(),
                     "SLURM_SINFO=" + (dir_.path() / "sinfo").string(),
                     "SLURM_SCONTROL=" + (dir_.path() / "scontrol").string(), "NHC_TEST_RECORD=" + record().string(),
                     "GPUENV_BINARY=" + binary, "bash", (k_source / "tests/fleet/nhc_die_path.sh").string(), check_file,
                     check_line});
  }

 private:
  fs::path record() const { return dir_.path() / "scontrol.argv"; }
  TempDir dir_;
};

const std::string k_check_file = (k_source / "deploy/nhc/gpuenv.nhc").string();

/// "check_gpuenv <doctor arguments for the tree>", as an nhc.conf line would name it.
std::string check_line(const std::string& tree, const std::vector<std::string>& extra = {}) {
  const auto doctor = doctor_on_tree(tree, extra);
  return "check_gpuenv " + gpuenv::util::join({doctor.begin() + 1, doctor.end()}, " ");  // the check adds `doctor`
}

/// The reason scontrol got, "" when none.
std::string drained_reason(const NhcRun& nhc) {
  const std::string argv = nhc.scontrol_argv();  // split_lines returns views into it
  for (std::string_view line : gpuenv::util::split_lines(argv))
    if (gpuenv::util::starts_with(line, "Reason=")) return std::string(line.substr(7));
  return "";
}

bool has_shell_quote_breakers(const std::string& text) {
  return text.find_first_of(gpuenv::util::k_shell_quote_breakers) != std::string::npos;
}

}  // namespace

TEST_CASE("nhc: NHC's die path drains a node that is not ready with gpuenv's reason, and passes a ready one",
          "[fleet][nhc]") {
  NhcRun nhc;
  const auto bad = nhc.run(k_check_file, check_line("no-driver"));
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(gpuenv::util::starts_with(bad.out,
                                  "ERROR:  nhc:  Health check failed:  gpuenv: NOT READY: driver.kernel_module"));
  CHECK(gpuenv::util::starts_with(nhc.scontrol_argv(),
                                  "update\nState=DRAIN\nNodeName=gpu07\nReason=NHC: gpuenv: NOT "
                                  "READY: driver.kernel_module"));
  CHECK(gpuenv::util::ends_with(drained_reason(nhc), "[drain_and_inspect]"));

  NhcRun ready;
  const auto good = ready.run(k_check_file, check_line("healthy-8xh100"));
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  CHECK(good.out == "nhc: all checks passed\n");
  CHECK(ready.scontrol_argv().empty());
}

TEST_CASE("nhc: the harness is NHC's: a die message with two apostrophes runs what stands between them",
          "[fleet][nhc]") {
  // The hazard the check guards against, shown on the reproduced die(): without gpuenv.nhc's cleaning, text that
  // reaches die runs as NHC's user (root).
  // The text comes from a file, as a program's output would, so only NHC's eval can run what is in it.
  NhcRun nhc;
  const fs::path text = nhc.dir() / "message.txt";
  write_text(text, "the GPU is named '$(touch " + nhc.canary() + ")' here\n");
  const fs::path raw_check = nhc.dir() / "raw.nhc";
  write_text(raw_check, "function check_raw() { local m; m=$(cat " + text.string() + "); die 1 \"gpuenv: $m\"; }\n");
  const auto run = nhc.run(raw_check.string(), "check_raw");
  INFO(run.out << run.err);
  CHECK(nhc.canary_exists());
  // And node-mark-offline got a reason with the command's output (nothing) in place of the command.
  CHECK(drained_reason(nhc) == "NHC: gpuenv: the GPU is named  here");
}

TEST_CASE("nhc: hostile text from doctor (a GPU named with quotes, $(...) and backticks) runs nothing",
          "[fleet][nhc]") {
  NhcRun nhc;
  // The healthy tree's nvidia-smi report with every GPU renamed by someone hostile, and one GPU too few expected:
  // gpu.count fails and its message names the GPUs.
  std::string xml = read_text(gpuenv::testing::fixture_path("hosts/healthy-8xh100.nvidia-smi.xml"));
  const std::string hostile = "H100 '$(touch " + nhc.canary() + ")' `touch " + nhc.canary() + "` \"q\" \\";
  for (std::size_t at = xml.find("NVIDIA H100 80GB HBM3"); at != std::string::npos;
       at = xml.find("NVIDIA H100 80GB HBM3", at + hostile.size()))
    xml.replace(at, std::string("NVIDIA H100 80GB HBM3").size(), hostile);
  const fs::path report = nhc.dir() / "hostile.xml";
  write_text(report, xml);
  const std::string line = "check_gpuenv --root " + gpuenv::testing::fixture_path("hosts/healthy-8xh100") +
                           " --nvidia-smi-xml " + report.string() + " --expect-gpus 9";
  const auto run = nhc.run(k_check_file, line);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK_FALSE(nhc.canary_exists());
  const std::string reason = drained_reason(nhc);
  CHECK(gpuenv::util::starts_with(reason, "NHC: gpuenv: NOT READY: gpu.count: 8 GPUs: 8x H100 (touch "));
  CHECK_FALSE(has_shell_quote_breakers(reason));

  // doctor --oneline itself carries none of them, whatever NHC does with it.
  const auto oneline =
      run_tool({GPUENV_BINARY, "doctor", "--root", gpuenv::testing::fixture_path("hosts/healthy-8xh100"),
                "--nvidia-smi-xml", report.string(), "--expect-gpus", "9", "--quick", "--oneline"});
  CHECK(oneline.exit_code == 1);
  CHECK_FALSE(has_shell_quote_breakers(oneline.out));
  CHECK_FALSE(nhc.canary_exists());
}

TEST_CASE("nhc: text the check did not make (a message with quotes, an apostrophe) is cleaned before die",
          "[fleet][nhc]") {
  // A stand-in gpuenv prints what no gpuenv of this version prints on its one line (an error naming a user's path,
  // an older release): the check's own cleaning must hold.
  struct Row {
    const char* name;
    std::string printed;
    const char* reason;
  };
  NhcRun nhc;
  const std::string canary = nhc.canary();
  const Row rows[] = {
      {"one apostrophe (NHC's eval fails: the node would never be marked offline)",
       "NOT READY: doctor.deadline: the run's deadline (--timeout 25 s) passed",
       "NHC: gpuenv: NOT READY: doctor.deadline: the runs deadline (--timeout 25 s) passed"},
      {"two apostrophes around a command substitution",
       "gpuenv: --profile /home/u/x'$(touch " + canary + ")'.toml: cannot read",
       "NHC: gpuenv: gpuenv: --profile /home/u/x(touch CANARY).toml: cannot read"},
      {"backticks, double quotes, a backslash and a second line",
       "NOT READY: x `touch " + canary + "` \"$(touch " + canary + ")\" a\\b\nrm -rf /",
       "NHC: gpuenv: NOT READY: x touch CANARY (touch CANARY) ab"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const fs::path standin = nhc.dir() / "gpuenv-standin";
    write_text(standin, "#!/bin/sh\ncat <<'TEXT'\n" + row.printed + "\nTEXT\nexit 1\n");
    fs::permissions(standin, fs::perms(0755));
    fs::remove(nhc.dir() / "scontrol.argv");
    const auto run = nhc.run(k_check_file, "check_gpuenv", standin.string());
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK_FALSE(nhc.canary_exists());
    std::string expected = row.reason;
    for (std::size_t at = expected.find("CANARY"); at != std::string::npos; at = expected.find("CANARY"))
      expected.replace(at, 6, canary);
    CHECK(drained_reason(nhc) == expected);
  }
}
