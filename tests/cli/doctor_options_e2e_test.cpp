// `gpuenv doctor` options end to end: --cloud-metadata refused under --root, --since, and the smoke tests' own
// options (--memtest, --expect, --minimum) accepted and checked as `gpuenv smoke` checks them.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

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
  CHECK(with_quick.err.find("--quick and --slurm skip") != std::string::npos);

  // Accepted: the tree has no GPU, so the smoke tests skip, and the run is judged as without them.
  const auto accepted = run_gpuenv(
      {"doctor", "--root", tree, "--memtest", "0.5", "--expect", "h2d_pinned=24", "--minimum", "d2d=100", "--json"});
  CHECK(accepted.exit_code == 1);  // no-driver is NOT READY either way
  const auto report = nlohmann::json::parse(accepted.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(finding_message(report, "smoke.run") == "smoke tests do not run under --root");
}
