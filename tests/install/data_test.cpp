// The install data (data/install/targets.toml) and the state file: strict reading, target lookup, bad files named.

#include "install/data.hpp"

#include <catch2/catch.hpp>

#include "install/checkpoint.hpp"

using gpuenv::util::EmbeddedFile;

TEST_CASE("install data: every target has a source and a repository directory, EL versions match on the major",
          "[install][data]") {
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  CHECK((*data)->targets.size() == 11);
  for (const auto& target : (*data)->targets) {
    INFO(target.distro << " " << target.version);
    CHECK_FALSE(target.source.empty());
    CHECK_FALSE(target.repo_dir.empty());
  }
  REQUIRE((*data)->find_target("rhel", "9.4") != nullptr);
  CHECK((*data)->find_target("rhel", "9.4")->repo_dir == "rhel9");
  CHECK((*data)->find_target("ubuntu", "22.10") == nullptr);  // Ubuntu matches the exact release
  CHECK((*data)->find_target("ubuntu", "22.04")->repo_dir == "ubuntu2204");
}

TEST_CASE("install data: a malformed row is an internal error naming the file and the row", "[install][data]") {
  const std::string text = R"([[target]]
distro = "rhel"
version = "9"
manager = "dnf"
repo_dir = "rhel9"
arches = ["x86_64"]
key = "D42D0685"
headers = []
future_headers = []
cuda_first = "12.0"
branch_first = 525
cudnn = true
status = "verified"
source = "s"
)";
  const EmbeddedFile file{"targets.toml", text};
  auto parsed = gpuenv::install::parse_install_data(std::span<const EmbeddedFile>(&file, 1));
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().message.find("targets.toml: [[target]] #1") == 0);
  CHECK(parsed.error().message.find("`driver_lock` must be module-stream or versionlock for dnf targets") !=
        std::string::npos);
}

TEST_CASE("install data: every key a target names is pinned by a fingerprint or says why not", "[install][data]") {
  // data/install/keys.toml: NVIDIA/cuda-repo-management SIGNATURES.md gives the fingerprints of 3bf863cc and
  // D42D0685; none was found for the rhel10 key CDF6BA43, whose row is `unverified` and whose plan says so.
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  for (const auto& target : (*data)->targets) {
    INFO(target.distro << " " << target.version);
    const auto* key = (*data)->find_key(target.key);
    REQUIRE(key != nullptr);
    CHECK((key->fingerprint.size() == 40 || key->status == "unverified"));
  }
  CHECK((*data)->find_key("3bf863cc")->fingerprint == "EB693B3035CD5710E231E123A4B469963BF863CC");
  CHECK((*data)->find_target("rhel", "10")->key == "CDF6BA43");  // cuda-rhel10.repo names CDF6BA43.pub
  CHECK((*data)->find_target("rhel", "9")->key == "D42D0685");
  for (const auto& keyring : (*data)->keyrings) CHECK(keyring.sha256.size() == 64);
}

TEST_CASE("install data: the branch table knows every kind and dates", "[install][data]") {
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  const auto* lts = (*data)->find_branch(580);
  REQUIRE(lts != nullptr);
  CHECK(lts->kind == "lts");
  CHECK_FALSE((*data)->past_end_of_life(*lts));
  CHECK((*data)->past_end_of_life(*(*data)->find_branch(535)));  // June 2026, before as_of
  CHECK((*data)->find_branch(590)->kind == "feature");
  CHECK((*data)->find_gpu(0x2901)->open_only);        // B200
  CHECK((*data)->find_gpu(0x2342)->open_only);        // GH200
  CHECK_FALSE((*data)->find_gpu(0x27B8)->open_only);  // L4
}

TEST_CASE("install data: the production branches NVIDIA lists as ended are past their end of life", "[install][data]") {
  // https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html, Table 2:
  // R570 "Production Branch", "End of Life: February 2026"; "All other previous driver branches not listed in the
  // table above (such as R575, R565, R560, R550, R525, R515, ...) are end of life." (no month).
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  CHECK((*data)->find_branch(570)->end_of_life == "2026-02");
  for (const int branch : {515, 525, 550, 570}) {
    INFO(branch);
    const auto* row = (*data)->find_branch(branch);
    REQUIRE(row != nullptr);
    CHECK(row->kind == "production");
    CHECK((*data)->past_end_of_life(*row));
  }
}

TEST_CASE("install state: written and read back, a foreign file is named with the fix", "[install][data]") {
  gpuenv::install::InstallState state{"p", "debian:12/x86_64", {"install.preflight.lock"}, "install.driver", {"b1"},
                                      "t"};
  auto back = gpuenv::install::parse_state(gpuenv::install::state_json(state), "s.json");
  REQUIRE(back.has_value());
  CHECK(back->completed == state.completed);
  CHECK(back->failed == "install.driver");
  CHECK(back->is_completed("install.preflight.lock"));
  CHECK(back->reboots == std::vector<std::string>{"b1"});
  auto bad = gpuenv::install::parse_state("[1, 2]", "/var/lib/gpuenv/install-state.json");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message ==
        "/var/lib/gpuenv/install-state.json: not a gpuenv install state file (not a JSON object)");
  CHECK(bad.error().remedy == "remove it and run `gpuenv install` without --resume");
}
