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
  const std::string text = R"([repository]
cuda_base_url = "u"
apt_keyring_file = "k"
apt_keyring_path = "p"
rpm_key_file = "r"
toolkit_base_url = "t"
toolkit_deb_path = "d"
toolkit_key_path = "g"
toolkit_rpm_path = "m"
source = "s"
[packages]
cuda_toolkit = "a"
cuda_compat = "b"
cudnn = "c"
distro_cuda_toolkit = "d"
container_toolkit = "e"
source = "s"
[[target]]
distro = "rhel"
version = "9"
manager = "dnf"
repo_dir = "rhel9"
arches = ["x86_64"]
headers = []
source = "s"
)";
  const EmbeddedFile file{"targets.toml", text};
  auto parsed = gpuenv::install::parse_install_data(std::span<const EmbeddedFile>(&file, 1));
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().message.find("targets.toml: [[target]] #1") == 0);
  CHECK(parsed.error().message.find("`driver_lock` must be module-stream or versionlock for dnf targets") !=
        std::string::npos);
}

TEST_CASE("install state: written and read back, a foreign file is named with the fix", "[install][data]") {
  gpuenv::install::InstallState state{"p", "debian:12/x86_64", {"install.preflight.lock"}, "install.driver", "t"};
  auto back = gpuenv::install::parse_state(gpuenv::install::state_json(state), "s.json");
  REQUIRE(back.has_value());
  CHECK(back->completed == state.completed);
  CHECK(back->failed == "install.driver");
  CHECK(back->is_completed("install.preflight.lock"));
  auto bad = gpuenv::install::parse_state("[1, 2]", "/var/lib/gpuenv/install-state.json");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message ==
        "/var/lib/gpuenv/install-state.json: not a gpuenv install state file (not a JSON object)");
  CHECK(bad.error().remedy == "remove it and run `gpuenv install` without --resume");
}
