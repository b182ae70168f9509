// `gpuenv install --dry-run`: the properties every plan must have, over every shipped profile x every supported
// target x both architectures (in-process, as the CLI makes plans); a dozen plans kept for review against golden
// files through the built binary (tests/fixtures/install/golden/PLANS; scripts/regen-install-golden); captured
// nodes under --root; repository URLs checked whatever their source; usage errors.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compat/knowledge_base.hpp"
#include "install/data.hpp"
#include "install/planner.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "support/run_binary.hpp"
#include "support/text_files.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::install::InstallPlan;
using gpuenv::install::Step;
using gpuenv::testing::read_text;
using gpuenv::testing::run_gpuenv;

const fs::path k_golden = fs::path(GPUENV_SOURCE_DIR) / "tests/fixtures/install/golden";
const fs::path k_nodes = fs::path(GPUENV_SOURCE_DIR) / "tests/fixtures/install/nodes";

gpuenv::profile::Profile shipped(const std::string& name) {
  auto system = gpuenv::system::make_real_system();
  auto document = gpuenv::profile::load_profile(name, *system);
  REQUIRE(document.has_value());
  return document->matrix.empty() ? document->base : gpuenv::profile::expand_matrix(*document).front().profile;
}

const Step* find(const InstallPlan& plan, const std::string& id) {
  for (const Step& step : plan.steps) {
    if (step.id == id) return &step;
  }
  return nullptr;
}

std::string all_commands(const Step& step) {
  std::string out;
  for (const auto& argv : step.commands) out += gpuenv::util::join(argv, " ") + "\n";
  return out;
}

/// The properties of one plan (the list): a key per repository, a pin naming the branch, no feature branch
/// chosen, headers for future kernels, nothing the target's repository lacks.
void check_plan_properties(const gpuenv::profile::Profile& profile, const InstallPlan& plan,
                           const gpuenv::install::InstallData& data) {
  const auto* target = data.find_target(plan.target.distro, plan.target.version);
  REQUIRE(target != nullptr);
  const std::string& branch = plan.driver.branch;
  // A key for the repository, from NVIDIA's host over https only.
  const Step* key = find(plan, "install.repo.cuda_keyring");
  if (key == nullptr) key = find(plan, "install.repo.cuda_key");
  REQUIRE(key != nullptr);
  const std::string fetch = all_commands(*key);
  CHECK(fetch.find("curl --proto =https --proto-redir =https") != std::string::npos);
  CHECK(fetch.find(" https://developer.download.nvidia.com/compute/cuda/repos/" + target->repo_dir + "/" +
                   plan.target.repo_arch + "/") != std::string::npos);
  // A lock that names the branch.
  const Step* driver = find(plan, "install.driver");
  REQUIRE(driver != nullptr);
  if (target->manager == "apt") {
    bool pinned = false;
    for (const auto& file : driver->files)
      pinned |= file.content.find("Pin: version " + branch + ".*\n") != std::string::npos;
    CHECK(pinned);
  } else {
    const std::string commands = all_commands(*driver);
    CHECK((commands.find("nvidia-driver:" + branch + "-") != std::string::npos ||
           commands.find("versionlock add *nvidia*" + branch + "*") != std::string::npos));
  }
  CHECK(driver->done_if_stdout.value_or("").find(branch + ".") != std::string::npos);
  // No feature branch unless the profile names it.
  if (profile.driver_branch.empty()) {
    const auto* row = data.find_branch(std::stoi(branch));
    REQUIRE(row != nullptr);
    CHECK(row->kind != "feature");
  }
  // Headers for the kernels installed later.
  const Step* headers = find(plan, "install.preflight.headers");
  REQUIRE(headers != nullptr);
  const std::string installed = all_commands(*headers);
  for (std::string future : target->future_headers) {
    // Planned without a node, the placeholders stay visible (as --dry-run prints them).
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"{flavour}", "<kernel-flavour>"},
                                   {"{kernel_package}", "<kernel-package>"}}) {
      if (const auto at = future.find(from); at != std::string::npos) future.replace(at, from.size(), to);
    }
    CHECK(installed.find(" " + future) != std::string::npos);
  }
  if (target->future_headers.empty()) CHECK(installed.find("kernel-devel-matched") != std::string::npos);
  // Nothing the repository lacks.
  const auto cuda = gpuenv::util::Version::parse(profile.cuda_version);
  REQUIRE(cuda.has_value());
  CHECK_FALSE(gpuenv::util::Version({cuda->major(), cuda->minor()}) < target->cuda_first);
  if (target->cuda_last) CHECK_FALSE(*target->cuda_last < gpuenv::util::Version({cuda->major(), cuda->minor()}));
  if (!target->cudnn) CHECK(find(plan, "install.cudnn") == nullptr);
  CHECK(std::stoi(branch) >= target->branch_first);
  if (target->branch_last != 0) CHECK(std::stoi(branch) <= target->branch_last);
}

}  // namespace

TEST_CASE(
    "install --dry-run: every plan of every shipped profile on every target and architecture has the "
    "properties a working node needs",
    "[install][e2e]") {
  auto data = gpuenv::install::builtin_install_data();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE((data && kb));
  std::size_t planned = 0;
  std::size_t refused = 0;
  for (const auto& entry : gpuenv::profile::shipped_profiles()) {
    const gpuenv::profile::Profile profile = shipped(entry.name);
    for (const auto& target : (*data)->targets) {
      for (const std::string arch : {"x86_64", "arm64"}) {
        INFO(entry.name << " on " << target.distro << " " << target.version << " " << arch);
        gpuenv::install::PlanRequest request{{target.distro, target.version, arch}, {}, "", ""};
        gpuenv::install::add_profile_mirrors(profile, request);
        auto plan = gpuenv::install::plan_install(profile, request, **data, **kb);
        REQUIRE(plan.has_value());
        if (!plan->refusals.empty()) {
          ++refused;
          CHECK(plan->steps.empty());
          for (const auto& refusal : plan->refusals) CHECK_FALSE(refusal.remedy.empty());
          continue;
        }
        ++planned;
        check_plan_properties(profile, *plan, **data);
      }
    }
  }
  CHECK(planned > 100);  // most of the grid plans; the rest is refused with a way out
  CHECK(refused > 0);
}

TEST_CASE("install --dry-run --json through the binary: the plans kept for review match their golden files",
          "[install][e2e][system-test]") {
  std::ifstream list(k_golden / "PLANS");
  std::string line;
  std::size_t compared = 0;
  while (std::getline(list, line)) {
    if (line.empty() || line.front() == '#') continue;
    std::istringstream words(line);
    std::string name;
    words >> name;
    std::vector<std::string> argv = {"install"};
    for (std::string word; words >> word;) {
      argv.push_back(word.rfind("tests/", 0) == 0 ? (fs::path(GPUENV_SOURCE_DIR) / word).string() : word);
    }
    argv.insert(argv.end(), {"--dry-run", "--json"});
    INFO(name << " (regenerate with scripts/regen-install-golden)");
    const auto result = run_gpuenv(argv);
    REQUIRE((result.exit_code == 0 || result.exit_code == 1));
    CHECK((result.exit_code == 0) == nlohmann::json::parse(result.out)["refusals"].empty());
    REQUIRE(fs::exists(k_golden / (name + ".json")));
    CHECK(result.out == read_text(k_golden / (name + ".json")));
    ++compared;
  }
  CHECK(compared >= 12);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(k_golden)) files += entry.path().extension() == ".json" ? 1 : 0;
  CHECK(files == compared);  // no stale golden file
}

TEST_CASE("install --dry-run --root plans for a captured node as apply would on it", "[install][e2e]") {
  const auto plan_for = [](const std::string& profile, const std::string& node) {
    const auto result = run_gpuenv({"install", profile, "--dry-run", "--json", "--root", (k_nodes / node).string()});
    INFO(result.err);
    REQUIRE((result.exit_code == 0 || result.exit_code == 1));
    return nlohmann::json::parse(result.out);
  };
  const auto steps_of = [](const nlohmann::json& plan) {
    std::map<std::string, nlohmann::json> out;
    for (const auto& step : plan["steps"]) out[step["id"].get<std::string>()] = step;
    return out;
  };
  SECTION("HGX H100 with NVSwitches: fabric manager at the driver's version, started after the reboot") {
    const auto plan = plan_for("pytorch-2.9-cu128-h100", "hgx-h100-ubuntu2204");
    CHECK(plan["fabric_manager"] == true);
    const auto steps = steps_of(plan);
    const auto install = steps.at("install.driver")["commands"][0];
    CHECK(std::find(install.begin(), install.end(), "nvidia-fabricmanager") != install.end());
    CHECK(steps.at("install.services.start")["commands"][0].back() == "nvidia-fabricmanager");
    CHECK(steps.at("install.preflight.headers")["commands"][0].back() == "linux-headers-generic");
  }
  SECTION("a single L4 on Debian 12's cloud kernel: its headers and the flavour's") {
    const auto plan = plan_for("cuda-12.4-debian12-install", "l4-debian12");
    CHECK(plan["fabric_manager"] == false);
    const auto headers = steps_of(plan).at("install.preflight.headers")["commands"][0];
    CHECK(headers[headers.size() - 2] == "linux-headers-6.1.0-18-cloud-amd64");
    CHECK(headers.back() == "linux-headers-cloud-amd64");
  }
  SECTION("GH200: arm64 from the captured dpkg, the sbsa repository, open modules, the nvidia-64k flavour") {
    const auto plan = plan_for("pytorch-2.9-cu128-h100", "gh200-ubuntu2204-arm64-64k");
    CHECK(plan["target"]["arch"] == "arm64");
    CHECK(plan["target"]["repo_url"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/sbsa/");
    CHECK(plan["driver"]["modules"] == "open");
    CHECK(steps_of(plan).at("install.preflight.headers")["commands"][0].back() == "linux-headers-nvidia-64k-hwe-22.04");
    CHECK(steps_of(plan).contains("install.repo.cuda_key"));  // no published keyring SHA-256 for sbsa: the key itself
  }
  SECTION("Ubuntu 22.04 on the HWE kernel: the HWE headers follow the kernel") {
    const auto plan = plan_for("pytorch-2.9-cu128-h100", "ubuntu2204-hwe-t4");
    CHECK(steps_of(plan).at("install.preflight.headers")["commands"][0].back() == "linux-headers-generic-hwe-22.04");
  }
  SECTION("a runfile driver and an old cuda.list: refused with the commands that clear them") {
    const auto result = run_gpuenv(
        {"install", "pytorch-2.9-cu128-h100", "--dry-run", "--root", (k_nodes / "runfile-a100-ubuntu2204").string()});
    CHECK(result.exit_code == 1);
    CHECK(result.out.find("REFUSED install.conflict.runfile") != std::string::npos);
    CHECK(result.out.find("/usr/bin/nvidia-uninstall --silent") != std::string::npos);
    CHECK(result.out.find("REFUSED install.conflict.apt_source") != std::string::npos);
  }
  SECTION("a captured node of another OS than the profile's is a usage error, as on the node itself") {
    const auto result = run_gpuenv(
        {"install", "cuda-12.4-debian12-install", "--dry-run", "--root", (k_nodes / "hgx-h100-ubuntu2204").string()});
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("this node runs ubuntu 22.04, the profile is for debian 12") != std::string::npos);
  }
}

TEST_CASE("install: --arch sets os.arch, a profile's os.arch must agree with the node planned for", "[install][e2e]") {
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-install-arch-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto profile_for = [&dir](const std::string& arch) {
    const fs::path path = dir / ("arch-" + arch + ".toml");
    REQUIRE(gpuenv::testing::write_text(path, "schema = 1\nname = \"arch-" + arch +
                                                  "\"\n[os]\ndistro = \"ubuntu\"\nversion = \"22.04\"\narch = \"" +
                                                  arch + "\"\n[cuda]\nversion = \"12.8.1\"\n"));
    return path.string();
  };
  const std::string arm = profile_for("arm64");
  const std::string x86 = profile_for("x86_64");
  SECTION("a plain dry run plans for the profile's architecture; --arch overrides it") {
    const auto plain = run_gpuenv({"install", arm, "--dry-run", "--json"});
    REQUIRE(plain.exit_code == 0);
    CHECK(nlohmann::json::parse(plain.out)["target"]["arch"] == "arm64");
    const auto flag = run_gpuenv({"install", arm, "--dry-run", "--json", "--arch", "x86_64"});
    REQUIRE(flag.exit_code == 0);
    CHECK(nlohmann::json::parse(flag.out)["target"]["arch"] == "x86_64");
  }
  SECTION("a captured node of the profile's architecture is planned; another one is a usage error") {
    const std::string gh200 = (k_nodes / "gh200-ubuntu2204-arm64-64k").string();
    CHECK(run_gpuenv({"install", arm, "--dry-run", "--root", gh200}).exit_code == 0);
    const auto wrong = run_gpuenv({"install", x86, "--dry-run", "--root", gh200});
    CHECK(wrong.exit_code == 2);
    CHECK(wrong.err.find("os.arch is x86_64; the node is arm64") != std::string::npos);
    const auto flag = run_gpuenv({"install", x86, "--dry-run", "--root", gh200, "--arch", "x86_64"});
    CHECK(flag.exit_code == 2);
    CHECK(flag.err.find("--arch x86_64: the node is arm64") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("install: one check for every repository URL source, a newline cannot add a trusted source (issue 30 #5)",
          "[install][e2e]") {
  // The attack: GPUENV_CUDA_REPO_URL="file:///srv/x /\ndeb [trusted=yes] http://evil/ ./" made the apt source
  // file carry a second, trusted line. Every source of a URL now goes through checked_repository_url.
  const std::string injected = "https://mirror.example/cuda /\ndeb [trusted=yes] http://evil.example/ ./";
  const auto by_env = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64"},
                                 {{"GPUENV_CUDA_REPO_URL", injected}});
  CHECK(by_env.exit_code == 2);
  CHECK(by_env.out.find("trusted=yes") == std::string::npos);
  CHECK(by_env.err.find("GPUENV_CUDA_REPO_URL") != std::string::npos);
  const auto by_flag = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64",
                                   "--toolkit-repo-url", "http://mirror.example/nct"});
  CHECK(by_flag.exit_code == 2);
  CHECK(by_flag.err.find("plain http") != std::string::npos);
  const auto good = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64",
                                "--repo-url", "file:///srv/flag/"},
                               {{"GPUENV_CUDA_REPO_URL", std::string("file:///srv/env")}});
  CHECK(good.exit_code == 0);
  CHECK(nlohmann::json::parse(good.out)["target"]["repo_url"] == "file:///srv/flag/debian12/x86_64/");
  const auto mirror = run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--json", "--arch", "x86_64",
                                  "--repo-url", "https://mirror.example/nvidia-cuda"});
  REQUIRE(mirror.exit_code == 0);
  // A mirror serves the packages; the keyring still comes from NVIDIA's own host.
  const auto plan = nlohmann::json::parse(mirror.out);  // the loop below reads into it
  for (const auto& step : plan["steps"]) {
    for (const auto& argv : step["commands"]) {
      for (const auto& word : argv) {
        const std::string text = word.get<std::string>();
        if (text.find("cuda-keyring") != std::string::npos && text.rfind("https://", 0) == 0)
          CHECK(text.rfind("https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/", 0) == 0);
      }
    }
  }
}

TEST_CASE("install --dry-run prints each step, why, and its exact argv", "[install][e2e]") {
  const auto result =
      run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--os", "debian:12", "--arch", "x86_64"});
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("gpuenv install plan: cuda-12.4-debian12-install on debian:12/x86_64 (apt, "
                        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/)") == 0);
  CHECK(result.out.find("  chosen: the profile's [driver] branch\n") != std::string::npos);
  CHECK(result.out.find("install -y cudnn9-cuda-12\n") != std::string::npos);
  const auto chosen = run_gpuenv({"install", "pytorch-2.9-cu128-h100", "--dry-run", "--arch", "x86_64"});
  CHECK(chosen.out.find("  chosen: the newest ") != std::string::npos);
  CHECK(result.out.find("prints only lines starting \"installed:") != std::string::npos);
}

TEST_CASE("install: usage errors exit 2, an unsupported OS is a refusal (exit 1)", "[install][e2e]") {
  CHECK(run_gpuenv({"install", "cuda-12.4-debian12-install", "--os", "rhel:9"}).exit_code == 2);
  CHECK(run_gpuenv({"install", "cuda-12.4-debian12-install", "--root", "/"}).exit_code == 2);
  CHECK(run_gpuenv({"install", "cuda-12.4-debian12-install", "--dry-run", "--os", "rhel"}).exit_code == 2);
  CHECK(run_gpuenv({"install", "no-such-profile", "--dry-run"}).exit_code == 2);
  const auto refused = run_gpuenv({"install", "cuda-13.0-ubi9-devel", "--dry-run"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.find("REFUSED install.os: gpuenv install does not support ubi 9") != std::string::npos);
}

TEST_CASE("install --set picks a matrix cell as doctor and cloud-init do, without it the first cell is said",
          "[install][matrix]") {
  // cloud-init's per-boot script passes its --set to `gpuenv install` (data/cloudinit/per-boot.sh run_install);
  // install refused the option before, so a node given a matrix profile never installed.
  const auto picked =
      gpuenv::testing::run_gpuenv({"install", "pytorch-matrix", "--dry-run", "--json", "--set", "cuda.version=13.0.2",
                                   "--set", "framework.python=3.12", "--set", "os.arch=x86_64"});
  INFO(picked.err);
  REQUIRE(picked.exit_code == 0);
  CHECK(gpuenv::util::contains(nlohmann::json::parse(picked.out).at("driver").at("how").get<std::string>(),
                               "CUDA 13.0.2"));
  CHECK_FALSE(gpuenv::util::contains(picked.err, "first cell"));

  const auto several =
      gpuenv::testing::run_gpuenv({"install", "pytorch-matrix", "--dry-run", "--set", "cuda.version=13.0.2"});
  CHECK(several.exit_code == 2);
  CHECK(gpuenv::util::contains(several.err, "matrix cells match; a node is one"));

  const auto disagree =
      gpuenv::testing::run_gpuenv({"install", "pytorch-matrix", "--dry-run", "--set", "cuda.version=13.0.2", "--set",
                                   "framework.python=3.12", "--set", "os.arch=x86_64", "--arch", "arm64"});
  CHECK(disagree.exit_code == 2);
  CHECK(gpuenv::util::contains(disagree.err, "--arch arm64 and --set os.arch=x86_64 disagree"));

  const auto first = gpuenv::testing::run_gpuenv({"install", "pytorch-matrix", "--dry-run"});
  CHECK(first.exit_code == 0);
  CHECK(gpuenv::util::contains(first.err, "is a matrix; installing its first cell"));
}
