// `gpuenv install --dry-run`: the JSON plan of every shipped profile on every supported distribution and both
// architectures against golden files (made in-process as the CLI makes them, and through the built binary for one
// profile per target), the text plan, the repository override, and usage errors. Update the golden files with
// scripts/regen-install-golden (or GPUENV_UPDATE_GOLDEN=1).

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/install_output.hpp"
#include "compat/knowledge_base.hpp"
#include "install/data.hpp"
#include "install/planner.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "support/run_binary.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::read_text;
using gpuenv::testing::run_gpuenv;

const fs::path k_golden = fs::path(GPUENV_SOURCE_DIR) / "tests/fixtures/install/golden";

/// "<profile>@<distro>-<version>-<arch>.json", as scripts/regen-install-golden names them.
std::string golden_name(const std::string& profile, const std::string& distro, const std::string& version,
                        const std::string& arch) {
  return profile + "@" + distro + "-" + version + "-" + arch + ".json";
}

/// The plan the CLI makes for a shipped profile (a matrix: its first cell) on a target, as JSON.
std::string dry_run_json(const std::string& name, const gpuenv::install::Target& target) {
  auto system = gpuenv::system::make_real_system();
  auto document = gpuenv::profile::load_profile(name, *system);
  REQUIRE(document.has_value());
  const gpuenv::profile::Profile profile =
      document->matrix.empty() ? document->base : gpuenv::profile::expand_matrix(*document).front().profile;
  auto data = gpuenv::install::builtin_install_data();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE((data && kb));
  gpuenv::install::PlanRequest request{target, {}, "", ""};
  gpuenv::install::add_profile_mirrors(profile, request);
  auto plan = gpuenv::install::plan_install(profile, request, **data, **kb);
  REQUIRE(plan.has_value());
  return gpuenv::cli::install_json(*plan, std::nullopt);
}

}  // namespace

TEST_CASE("install --dry-run --json: every shipped profile on every supported target matches its golden plan",
          "[install][e2e]") {
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  const bool update = std::getenv("GPUENV_UPDATE_GOLDEN") != nullptr;
  std::size_t compared = 0;
  for (const auto& shipped : gpuenv::profile::shipped_profiles()) {
    for (const auto& target : (*data)->targets) {
      for (const std::string arch : {"x86_64", "arm64"}) {
        const std::string file = golden_name(shipped.name, target.distro, target.version, arch);
        INFO(file << " (regenerate with scripts/regen-install-golden)");
        const std::string json = dry_run_json(shipped.name, {target.distro, target.version, arch});
        if (update) {
          fs::create_directories(k_golden);
          std::ofstream(k_golden / file, std::ios::binary) << json;
        }
        REQUIRE(fs::exists(k_golden / file));
        CHECK(json == read_text(k_golden / file));
        ++compared;
      }
    }
  }
  CHECK(compared == gpuenv::profile::shipped_profiles().size() * (*data)->targets.size() * 2);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(k_golden)) files += entry.path().extension() == ".json" ? 1 : 0;
  CHECK(files == compared);  // no stale golden file for a profile or target that is gone
}

TEST_CASE("install --dry-run --json through the binary: one profile per target, both architectures, exit codes",
          "[install][e2e][system-test]") {
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  const auto& profiles = gpuenv::profile::shipped_profiles();
  std::size_t index = 0;
  for (const auto& target : (*data)->targets) {
    const std::string& name = profiles[index++ % profiles.size()].name;  // a different profile for each target
    for (const std::string arch : {"x86_64", "arm64"}) {
      const std::string file = golden_name(name, target.distro, target.version, arch);
      INFO(file);
      const auto result = run_gpuenv(
          {"install", name, "--dry-run", "--json", "--os", target.distro + ":" + target.version, "--arch", arch});
      REQUIRE((result.exit_code == 0 || result.exit_code == 1));
      CHECK((result.exit_code == 0) == nlohmann::json::parse(result.out)["refusals"].empty());
      CHECK(result.out == read_text(k_golden / file));
    }
  }
}

TEST_CASE("install --dry-run prints each step, why, and its exact argv", "[install][e2e]") {
  const auto result =
      run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--os", "debian:12", "--arch", "x86_64"});
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("gpuenv install plan: cuda-12.4-debian12-install on debian:12/x86_64 (apt, "
                        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/)") == 0);
  CHECK(result.out.find("   $ env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y "
                        "cudnn9-cuda-12\n") != std::string::npos);
  CHECK(result.out.find(
            "   skip when: dpkg-query -W '-f=${db:Status-Status}\\n' cuda-keyring prints \"installed\\n\"\n") !=
        std::string::npos);
}

TEST_CASE("install: the repository override comes from --repo-url or GPUENV_CUDA_REPO_URL", "[install][e2e]") {
  const auto by_env = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64"},
                                 {{"GPUENV_CUDA_REPO_URL", std::string("file:///srv/env")}});
  CHECK(nlohmann::json::parse(by_env.out)["target"]["repo_url"] == "file:///srv/env/debian12/x86_64/");
  const auto by_flag = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64",
                                   "--repo-url", "file:///srv/flag"},
                                  {{"GPUENV_CUDA_REPO_URL", std::string("file:///srv/env")}});
  CHECK(nlohmann::json::parse(by_flag.out)["target"]["repo_url"] == "file:///srv/flag/debian12/x86_64/");
}

TEST_CASE("install: usage errors exit 2, an unsupported OS is a refusal (exit 1)", "[install][e2e]") {
  CHECK(run_gpuenv({"install", "cuda-12.4-debian12-install", "--os", "rhel:9"}).exit_code == 2);
  CHECK(run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--os", "rhel"}).exit_code == 2);
  CHECK(run_gpuenv({"install", "no-such-profile", "--dry-run"}).exit_code == 2);
  const auto refused = run_gpuenv({"install", "cuda-13.0-ubi9-devel", "--dry-run"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.find("REFUSED install.os: gpuenv install does not support ubi 9") != std::string::npos);
}
