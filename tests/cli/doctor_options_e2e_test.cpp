// `gpuenv doctor` options end to end: --cloud-metadata refused under --root, --since, the smoke tests' own
// options (--memtest, --expect, --minimum) accepted and checked as `gpuenv smoke` checks them, the check tiers
// (--tier) and reading another run's report (--report, --from-report).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "util/strings.hpp"

using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

namespace {

std::string finding_message(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == id) return f.at("message").get<std::string>();
  }
  return "";
}

}  // namespace

TEST_CASE("doctor --cloud-metadata with --root is bad usage: the metadata service describes this machine",
          "[cli][e2e]") {
  const std::string tree = fixture_path("hosts/aws-p4d-missing-gpu");
  for (const auto& option :
       std::vector<std::vector<std::string>>{{"--cloud-metadata"}, {"--cloud-metadata-endpoint", "127.0.0.1:9"}}) {
    std::vector<std::string> args{"doctor", "--root", tree};
    args.insert(args.end(), option.begin(), option.end());
    const auto result = run_gpuenv(args);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("--cloud-metadata cannot be used with --root") != std::string::npos);
    CHECK(result.err.find("--instance-type") != std::string::npos);
    CHECK(result.out.empty());
  }
}

TEST_CASE("doctor --since: boot by default, a duration by the log's timestamps, anything else bad usage",
          "[cli][e2e]") {
  const std::string tree = fixture_path("hosts/xid79");
  const auto boot = run_gpuenv({"doctor", "--root", tree, "--json"});
  const auto boot_report = nlohmann::json::parse(boot.out, nullptr, false);
  REQUIRE_FALSE(boot_report.is_discarded());
  CHECK(finding_message(boot_report, "xid.events").find("Xid 79") != std::string::npos);
  CHECK(finding_message(boot_report, "xid.events").find("(since the last boot; ") != std::string::npos);

  // The fixture's log is from a past March: the last hour has nothing in it.
  const auto hour = run_gpuenv({"doctor", "--root", tree, "--since", "1h", "--json"});
  const auto hour_report = nlohmann::json::parse(hour.out, nullptr, false);
  REQUIRE_FALSE(hour_report.is_discarded());
  CHECK(finding_message(hour_report, "xid.events").find("no Xid events in /var/log/kern.log (since ") == 0);

  for (const char* bad : {"yesterday", "10", "5w", "0h"}) {
    const auto result = run_gpuenv({"doctor", "--root", tree, "--since", bad});
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("expected `boot` or a duration") != std::string::npos);
  }
}

TEST_CASE("doctor takes smoke's --memtest, --expect and --minimum, checked as smoke checks them", "[cli][e2e]") {
  const std::string tree = fixture_path("hosts/no-driver");
  const auto bad_id = run_gpuenv({"doctor", "--root", tree, "--expect", "warp_speed=9"});
  CHECK(bad_id.exit_code == 2);
  CHECK(bad_id.err.find("--expect warp_speed=9: expected ID=VALUE") != std::string::npos);
  const auto bad_value = run_gpuenv({"doctor", "--root", tree, "--minimum", "h2d_pinned=fast"});
  CHECK(bad_value.exit_code == 2);
  CHECK(bad_value.err.find("--minimum h2d_pinned=fast") != std::string::npos);
  const auto out_of_range = run_gpuenv({"doctor", "--root", tree, "--memtest", "2"});
  CHECK(out_of_range.exit_code == 2);
  const auto with_quick = run_gpuenv({"doctor", "--root", tree, "--quick", "--memtest", "0.5"});
  CHECK(with_quick.exit_code == 2);
  CHECK(with_quick.err.find("which --quick, --slurm and --tier prolog|health skip") != std::string::npos);

  // Accepted: the tree has no GPU, so the smoke tests skip, and the run is judged as without them.
  const auto accepted = run_gpuenv(
      {"doctor", "--root", tree, "--memtest", "0.5", "--expect", "h2d_pinned=24", "--minimum", "d2d=100", "--json"});
  CHECK(accepted.exit_code == 1);  // no-driver is NOT READY either way
  const auto report = nlohmann::json::parse(accepted.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(finding_message(report, "smoke.run") == "smoke tests do not run under --root");
}

TEST_CASE("doctor --tier: prolog caps the collection at 5 s and loads no libcuda, bad combinations are bad usage",
          "[cli][e2e][tier]") {
  // A live run whose NVML hangs for 20 s: the prolog tier's budget cuts it, whatever --timeout asks for.
  gpuenv::testing::fleet::TempDir dir;
  const std::string library = (dir.path() / "libnvidia-ml-fake.so").string();
  std::filesystem::copy_file(GPUENV_FAKE_NVML_LIBRARY, library);
  const auto run =
      run_gpuenv({"doctor", "--tier", "prolog", "--timeout", "30", "--json"},
                 {{"GPUENV_NVML_LIBRARY", library}, {"GPUENV_FAKE_NVML", fixture_path("nvml/hang-long.conf")}});
  INFO(run.err);
  const auto report = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  // Each wait is cut to the tier's 2 s (the collection to 5 s): NVML is given up on long before its 20 s.
  CHECK(finding_message(report, "gpu.count").find("NVML did not answer within 2000 ms") != std::string::npos);
  CHECK(finding_message(report, "cuda.driver") == "libcuda is not loaded in the prolog tier (NVML only)");

  struct Row {
    std::vector<std::string> args;
    const char* message;
  };
  const Row rows[] = {
      {{"--tier", "health", "--memtest", "0.5"}, "--tier prolog|health skip"},
      {{"--tier", "prolog", "--expect", "h2d_pinned=20"}, "--tier prolog|health skip"},
      {{"--tier", "boot", "--quick"}, "--tier boot runs the smoke tests"},
      {{"--tier", "nightly"}, "--tier"},
  };
  for (const Row& row : rows) {
    std::vector<std::string> args{"doctor", "--root", fixture_path("hosts/no-driver")};
    args.insert(args.end(), row.args.begin(), row.args.end());
    const auto bad = run_gpuenv(args);
    INFO(gpuenv::util::join(row.args, " ") << ": " << bad.err);
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find(row.message) != std::string::npos);
  }
}

TEST_CASE("doctor --from-report: the line and exit of a report another run wrote, exit 2 when too old or missing",
          "[cli][e2e]") {
  gpuenv::testing::fleet::TempDir dir;
  const std::string report = (dir.path() / "doctor.json").string();
  const std::vector<std::string> tree{
      "doctor", "--root", fixture_path("hosts/xid79"), "--nvidia-smi-xml", fixture_path("hosts/xid79.nvidia-smi.xml"),
      "--quick"};
  std::vector<std::string> write = tree;
  write.insert(write.end(), {"--report", report, "--oneline"});
  const auto direct = run_gpuenv(write);
  REQUIRE(direct.exit_code == 1);
  CHECK(std::filesystem::status(report).permissions() == std::filesystem::perms(0644));

  const auto read = run_gpuenv({"doctor", "--from-report", report, "--oneline"});
  INFO(read.err);
  CHECK(read.exit_code == 1);
  CHECK(read.out == direct.out);  // the same line, the node's action at its end

  // Older than --max-age: the writer stopped; exit 2, which node-problem-detector shows as Unknown.
  auto json = nlohmann::json::parse(gpuenv::testing::read_text(report));
  json["time"] = json["time"].get<long long>() - 3600;
  REQUIRE(gpuenv::testing::write_text(report, json.dump()));
  const auto stale = run_gpuenv({"doctor", "--from-report", report, "--max-age", "900"});
  CHECK(stale.exit_code == 2);
  CHECK(stale.err.find("s old (more than --max-age 900)") != std::string::npos);
  CHECK(stale.out.empty());

  CHECK(run_gpuenv({"doctor", "--from-report", (dir.path() / "none.json").string()}).exit_code == 2);
  REQUIRE(gpuenv::testing::write_text(report, "{\"schema\": 1}"));
  const auto broken = run_gpuenv({"doctor", "--from-report", report});
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("not a `gpuenv doctor --json` report") != std::string::npos);
  CHECK(run_gpuenv({"doctor", "--from-report", report, "--slurm"}).exit_code == 2);  // excluded
}

TEST_CASE("doctor --boot-retry: a NOT READY node is tried again every 10 s while the machine is still booting",
          "[cli][e2e][system-test]") {
  // The limit is this machine's uptime plus 15 s: the first try (well under 5 s), 10 s of wait, a second try, then the
  // next would start past the limit. Both tries are NOT READY (no driver in the tree); the wait is logged; the exit
  // code and the line are the last try's.
  const auto uptime =
      gpuenv::util::parse_double(gpuenv::util::split(gpuenv::testing::fleet::read_text("/proc/uptime"), ' ').front());
  GPUENV_SKIP_UNLESS(uptime, "/proc/uptime is unreadable");
  const std::string limit = std::to_string(static_cast<long long>(*uptime) + 15);
  const auto run = run_gpuenv(
      {"doctor", "--root", fixture_path("hosts/no-driver"), "--oneline", "--watch-db", "none", "--boot-retry", limit});
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(gpuenv::util::contains(run.err, "gpuenv doctor: try 1, again in 10 s: NOT READY: driver.kernel_module"));
  CHECK_FALSE(gpuenv::util::contains(run.err, "try 2,"));  // the second try is the last: no wait after it
  CHECK(gpuenv::util::contains(run.err, "gpuenv doctor: NOT READY after 2 tries"));
  CHECK(gpuenv::util::starts_with(run.out, "NOT READY: driver.kernel_module"));
  // Refused with --from-report (it collects nothing), ignored under --slurm (slurmd kills the program at 60 s).
  CHECK(run_gpuenv({"doctor", "--from-report", "/nonexistent", "--boot-retry", "10"}).exit_code == 2);
}

TEST_CASE("doctor --profile --set: fields the matrix sets pick the one cell, other fields override it",
          "[cli][doctor][matrix]") {
  // profile::resolve_cell, the rule cloud-init shares. Before it, doctor compared every --set value with the cells
  // and refused an override ("0 matrix cells match"), though --help says --set picks a cell or overrides a field.
  const std::string tree = fixture_path("hosts/healthy-8xh100");
  const std::vector<std::string> one_cell{"--set", "cuda.version=12.8.1", "--set", "framework.python=3.12",
                                          "--set", "os.arch=x86_64"};
  std::vector<std::string> args{"doctor", "--root", tree, "--profile", "pytorch-matrix", "--json"};
  args.insert(args.end(), one_cell.begin(), one_cell.end());
  args.insert(args.end(), {"--set", "framework.version=2.8.0"});
  const auto overridden = run_gpuenv(args);
  INFO(overridden.err);
  CHECK(overridden.exit_code == 1);  // a verdict (this tree lacks the profile's CUDA), not bad usage
  const auto report = nlohmann::json::parse(overridden.out);
  CHECK(report.at("verdict") == "NOT READY");

  const auto several =
      run_gpuenv({"doctor", "--root", tree, "--profile", "pytorch-matrix", "--set", "cuda.version=12.8.1"});
  CHECK(several.exit_code == 2);
  CHECK(gpuenv::util::contains(several.err, "pytorch-matrix: 6 matrix cells match; a node is one"));
  const auto none =
      run_gpuenv({"doctor", "--root", tree, "--profile", "pytorch-matrix", "--set", "cuda.version=11.8.0"});
  CHECK(none.exit_code == 2);
  CHECK(gpuenv::util::contains(none.err, "0 matrix cells match"));
  // --set without --profile was ignored: a check the user meant to constrain ran unconstrained.
  const auto no_profile = run_gpuenv({"doctor", "--root", tree, "--set", "cuda.version=12.8.1"});
  CHECK(no_profile.exit_code == 2);
  CHECK(gpuenv::util::contains(no_profile.err, "no --profile was given"));
}
