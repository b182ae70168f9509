// plan_install on node states and targets: fresh, converged facts, wrong branch with holds, nouveau, Secure Boot,
// distro source, open modules on a pre-Turing GPU, unsupported OS and architecture; and the pinning per era.

#include "install/planner.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "compat/knowledge_base.hpp"
#include "profile/parser.hpp"

using gpuenv::install::InstallPlan;
using gpuenv::install::NodeFacts;
using gpuenv::install::PlanRequest;
using gpuenv::install::Step;
using gpuenv::install::Target;

namespace {

gpuenv::profile::Profile profile_of(const std::string& extra, const std::string& os =
                                                                  "distro = \"ubuntu\"\n"
                                                                  "version = \"22.04\"\n") {
  const std::string text = "schema = 1\nname = \"t\"\n[os]\n" + os + "[cuda]\nversion = \"12.4.1\"\n" + extra;
  auto parsed = gpuenv::profile::parse_profile(text, "t.toml");
  REQUIRE(parsed.has_value());
  return parsed->base;
}

InstallPlan plan(const gpuenv::profile::Profile& profile, Target target, NodeFacts node = {}) {
  auto data = gpuenv::install::builtin_install_data();
  REQUIRE(data.has_value());
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE(kb.has_value());
  auto result = gpuenv::install::plan_install(profile, PlanRequest{target, node, "", ""}, **data, **kb);
  REQUIRE(result.has_value());
  return *result;
}

const Step* step(const InstallPlan& plan, const std::string& id) {
  const auto it = std::find_if(plan.steps.begin(), plan.steps.end(), [&id](const Step& s) { return s.id == id; });
  return it == plan.steps.end() ? nullptr : &*it;
}

std::vector<std::string> ids(const InstallPlan& plan) {
  std::vector<std::string> out;
  for (const Step& s : plan.steps) out.push_back(s.id);
  return out;
}

std::string refusal_ids(const InstallPlan& plan) {
  std::string out;
  for (const auto& f : plan.refusals) out += f.id + " ";
  return out;
}

}  // namespace

TEST_CASE("install plan: a fresh Ubuntu node gets every step in order, ending with reboot and verify", "[install]") {
  const InstallPlan p =
      plan(profile_of("[cudnn]\nversion = \"9\"\n[driver]\nbranch = \"570\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(ids(p) == std::vector<std::string>{"install.preflight.lock", "install.preflight.dpkg",
                                           "install.preflight.headers", "install.repo.cuda_keyring",
                                           "install.repo.cuda", "install.driver", "install.cuda_toolkit",
                                           "install.cudnn", "install.container_toolkit",
                                           "install.runtime_configure.docker", "install.runtime_configure.containerd",
                                           "install.unattended_upgrades", "install.reboot", "install.verify"});
  CHECK(p.repo_url == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/");
  CHECK(p.driver.modules == "open");  // NVIDIA's default from R560
  const Step* driver = step(p, "install.driver");
  REQUIRE(driver != nullptr);
  CHECK(driver->commands.back() == std::vector<std::string>{"apt-mark", "hold", "nvidia-open-570"});
  const InstallPlan old = plan(profile_of("[driver]\nbranch = \"550\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  CHECK(old.driver.modules == "proprietary");  // below R560 the default stays proprietary
  CHECK(step(old, "install.driver")->commands.back() ==
        std::vector<std::string>{"apt-mark", "hold", "cuda-drivers-550"});
  CHECK(step(p, "install.cuda_toolkit")->commands[0].back() == "cuda-toolkit-12-4");
  CHECK(step(p, "install.cudnn")->commands[0].back() == "cudnn9-cuda-12");
  CHECK(step(p, "install.preflight.headers")->commands[0].back() == "linux-headers-<running-kernel>");
  CHECK(step(p, "install.nouveau") == nullptr);
  CHECK(step(p, "install.cuda_compat") == nullptr);
}

TEST_CASE("install plan: driver pinning follows the era and the distribution", "[install]") {
  struct Row {
    std::string os;
    std::string driver;
    std::string target_distro;
    std::string target_version;
    std::vector<std::vector<std::string>> commands;
  };
  const std::vector<Row> rows = {
      {"ubuntu 24.04 / 580 open",
       "branch = \"580\"\nmodules = \"open\"\n",
       "ubuntu",
       "24.04",
       {{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y",
         "nvidia-open-580"},
        {"apt-mark", "hold", "nvidia-open-580"}}},
      {"ubuntu 24.04 / 590 open",
       "branch = \"590\"\n",
       "ubuntu",
       "24.04",
       {{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y",
         "nvidia-driver-pinning-590"},
        {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y",
         "nvidia-open"}}},
      {"rocky 9 / 580 open",
       "branch = \"580\"\nmodules = \"open\"\n",
       "rockylinux",
       "9",
       {{"dnf", "-y", "module", "enable", "nvidia-driver:580-open"}, {"dnf", "-y", "install", "nvidia-open"}}},
      {"rhel 8 / 550 proprietary",
       "branch = \"550\"\n",
       "rhel",
       "8",
       {{"dnf", "-y", "module", "enable", "nvidia-driver:550-dkms"}, {"dnf", "-y", "install", "cuda-drivers"}}},
      {"rhel 10 / 580 open: versionlock",
       "branch = \"580\"\nmodules = \"open\"\n",
       "rhel",
       "10",
       {{"dnf", "-y", "install", "python3-dnf-plugin-versionlock"},
        {"dnf", "versionlock", "add", "*nvidia*580*"},
        {"dnf", "-y", "install", "nvidia-open"}}},
      {"amazon linux 2023 / 570 open",
       "branch = \"570\"\nmodules = \"open\"\n",
       "amzn",
       "2023",
       {{"dnf", "-y", "module", "enable", "nvidia-driver:570-open"}, {"dnf", "-y", "install", "nvidia-open"}}},
  };
  for (const Row& row : rows) {
    INFO(row.os);
    const InstallPlan p =
        plan(profile_of("[driver]\n" + row.driver), Target{row.target_distro, row.target_version, "x86_64"});
    REQUIRE(p.refusals.empty());
    const Step* driver = step(p, "install.driver");
    REQUIRE(driver != nullptr);
    CHECK(driver->commands == row.commands);
  }
}

TEST_CASE("install plan: arm64 uses the sbsa repository, a target without it is refused", "[install]") {
  const InstallPlan arm = plan(profile_of("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "24.04", "arm64"});
  CHECK(arm.repo_url == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/");
  const InstallPlan debian = plan(profile_of("[driver]\nbranch = \"580\"\n"), Target{"debian", "12", "arm64"});
  CHECK(refusal_ids(debian) == "install.arch ");
  CHECK(debian.steps.empty());
}

TEST_CASE("install plan: an unsupported OS is refused with the supported list", "[install]") {
  const InstallPlan p = plan(profile_of(""), Target{"ubi", "9", "x86_64"});
  REQUIRE(p.refusals.size() == 1);
  CHECK(p.refusals[0].id == "install.os");
  CHECK(p.refusals[0].remedy.find("ubuntu 22.04") != std::string::npos);
  CHECK(p.refusals[0].remedy.find("amzn 2023") != std::string::npos);
  CHECK(p.steps.empty());
}

TEST_CASE("install plan: node states change the plan", "[install]") {
  const auto profile = profile_of("[driver]\nbranch = \"580\"\nmodules = \"open\"\n");
  const Target ubuntu{"ubuntu", "22.04", "x86_64"};

  SECTION("nouveau loaded: blacklist and rebuild the initramfs") {
    NodeFacts node;
    node.nouveau_loaded = true;
    const InstallPlan p = plan(profile, ubuntu, node);
    const Step* nouveau = step(p, "install.nouveau");
    REQUIRE(nouveau != nullptr);
    CHECK(nouveau->files.at(0).path == "/etc/modprobe.d/blacklist-nouveau.conf");
    CHECK(nouveau->commands == std::vector<std::vector<std::string>>{{"update-initramfs", "-u"}});
  }
  SECTION("Secure Boot with a DKMS driver is refused, naming the ways out") {
    NodeFacts node;
    node.secure_boot = true;
    const InstallPlan p = plan(profile, ubuntu, node);
    CHECK(refusal_ids(p) == "install.secure_boot ");
    CHECK(p.refusals[0].remedy.find("source = \"distro\"") != std::string::npos);
    CHECK(p.steps.empty());
  }
  SECTION("Secure Boot with the distro source takes Canonical-signed modules") {
    NodeFacts node;
    node.secure_boot = true;
    node.kernel_release = "6.8.0-1015-aws";
    const InstallPlan p =
        plan(profile_of("[driver]\nbranch = \"580\"\nmodules = \"open\"\nsource = \"distro\"\n"), ubuntu, node);
    REQUIRE(p.refusals.empty());
    CHECK(step(p, "install.repo.cuda") == nullptr);
    CHECK(step(p, "install.preflight.headers") == nullptr);
    CHECK(step(p, "install.driver")->commands[0] ==
          std::vector<std::string>{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=600",
                                   "install", "-y", "nvidia-headless-no-dkms-580-server-open",
                                   "linux-modules-nvidia-580-server-open-aws", "nvidia-utils-580-server"});
    CHECK(step(p, "install.cuda_toolkit")->commands[0].back() == "nvidia-cuda-toolkit");
  }
  SECTION("open modules with a pre-Turing GPU present are refused; unset modules fall back to proprietary") {
    NodeFacts node;
    node.gpu_compute_capabilities = {"7.0", "8.0"};
    CHECK(refusal_ids(plan(profile, ubuntu, node)) == "install.driver.modules ");
    const InstallPlan fallback = plan(profile_of("[driver]\nbranch = \"580\"\n"), ubuntu, node);
    REQUIRE(fallback.refusals.empty());
    CHECK(fallback.driver.modules == "proprietary");
  }
  SECTION("a held package of another branch blocks the change and is named with the release command") {
    NodeFacts node;
    node.loaded_driver_version = "570.133.20";
    node.held_packages = {"nvidia-open-570", "openssl"};
    const InstallPlan p = plan(profile, ubuntu, node);
    REQUIRE(refusal_ids(p) == "install.driver.held ");
    CHECK(p.refusals[0].remedy == "release them with `apt-mark unhold nvidia-open-570`, then re-run");
  }
  SECTION("a loaded driver of another branch without holds: a note, and the plan installs the profile's branch") {
    NodeFacts node;
    node.loaded_driver_version = "570.133.20";
    const InstallPlan p = plan(profile, ubuntu, node);
    REQUIRE(p.refusals.empty());
    REQUIRE(p.notes.size() == 1);
    CHECK(p.notes[0].id == "install.driver.branch_change");
    CHECK(p.notes[0].message.find("branch 570); the plan installs branch 580") != std::string::npos);
  }
  SECTION("an observed node whose Secure Boot state is unknown gets a warning, not a refusal") {
    NodeFacts node;
    node.observed = true;
    const InstallPlan p = plan(profile, ubuntu, node);
    REQUIRE(p.refusals.empty());
    REQUIRE(p.notes.size() == 1);
    CHECK(p.notes[0].id == "install.secure_boot");
    CHECK(p.notes[0].status == gpuenv::report::Status::warn);
    node.secure_boot = false;
    CHECK(plan(profile, ubuntu, node).notes.empty());
  }
  SECTION("a converged node's own holds do not block") {
    NodeFacts node;
    node.held_packages = {"nvidia-open-580"};
    CHECK(plan(profile, ubuntu, node).refusals.empty());
  }
  SECTION("known runtimes: only the installed one is configured") {
    NodeFacts node;
    node.docker = true;
    node.containerd = false;
    const InstallPlan p = plan(profile, ubuntu, node);
    CHECK(step(p, "install.runtime_configure.docker") != nullptr);
    CHECK(step(p, "install.runtime_configure.containerd") == nullptr);
  }
  SECTION("the running kernel names the headers") {
    NodeFacts node;
    node.kernel_release = "5.15.0-91-generic";
    const InstallPlan p = plan(profile, ubuntu, node);
    CHECK(step(p, "install.preflight.headers")->commands[0].back() == "linux-headers-5.15.0-91-generic");
  }
}

TEST_CASE("install plan: profile switches for compat and the container toolkit", "[install]") {
  const InstallPlan p = plan(profile_of("[driver]\nbranch = \"580\"\n[install]\ncontainer_toolkit = false\n"
                                        "cuda_compat = true\n"),
                             Target{"rockylinux", "9", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(step(p, "install.container_toolkit") == nullptr);
  CHECK(step(p, "install.runtime_configure.docker") == nullptr);
  CHECK(step(p, "install.cuda_compat")->commands[0].back() == "cuda-compat-12-4");
  CHECK(step(p, "install.unattended_upgrades") == nullptr);  // dnf: the module stream holds the branch
  CHECK(step(p, "install.preflight.prerequisites")->commands[0].back() == "epel-release");
}

TEST_CASE("install plan: a local file: repository is trusted as it is and needs no key", "[install]") {
  auto data = gpuenv::install::builtin_install_data();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE((data && kb));
  const PlanRequest request{Target{"debian", "12", "x86_64"}, {}, "file:///srv/repo", "file:///srv/nct"};
  auto p = gpuenv::install::plan_install(profile_of("[driver]\nbranch = \"550\"\n"), request, **data, **kb);
  REQUIRE(p.has_value());
  CHECK(p->repo_url == "file:///srv/repo/debian12/x86_64/");
  const Step* repo = step(*p, "install.repo.cuda");
  CHECK(repo->files.at(0).path == "/etc/apt/sources.list.d/cuda-debian12-x86_64.list");
  CHECK(repo->files.at(0).content == "deb [trusted=yes] file:///srv/repo/debian12/x86_64/ /\n");
  CHECK(repo->files.at(1).content == "Package: *\nPin: origin \"\"\nPin-Priority: 600\n");
  CHECK(step(*p, "install.repo.cuda_keyring")->commands.at(0).back() ==
        "file:///srv/repo/debian12/x86_64/cuda-keyring_1.1-1_all.deb");
  // NVIDIA's own repository: the keyring package writes the source; gpuenv adds only its pin.
  const PlanRequest official{Target{"debian", "12", "x86_64"}, {}, "", ""};
  auto nvidia = gpuenv::install::plan_install(profile_of("[driver]\nbranch = \"550\"\n"), official, **data, **kb);
  REQUIRE(nvidia.has_value());
  const Step* nvidia_repo = step(*nvidia, "install.repo.cuda");
  REQUIRE(nvidia_repo->files.size() == 1);
  CHECK(nvidia_repo->files[0].content ==
        "Package: *\nPin: origin \"developer.download.nvidia.com\"\nPin-Priority: 600\n");
  const Step* toolkit = step(*p, "install.container_toolkit");
  CHECK(toolkit->files.at(0).content == "deb [trusted=yes] file:///srv/nct/stable/deb/$(ARCH) /\n");
  CHECK(toolkit->commands.front().at(2) == "apt-get");  // no key download
}

TEST_CASE("install plan: the kernel flavour comes from the release", "[install]") {
  CHECK(gpuenv::install::kernel_flavour("6.8.0-1015-aws") == "aws");
  CHECK(gpuenv::install::kernel_flavour("5.15.0-91-generic") == "generic");
  CHECK(gpuenv::install::kernel_flavour("5.14.0-427.el9.x86_64").empty());
}

TEST_CASE("install plan: the profile's [mirrors] replace the repositories unless a flag already did", "[install]") {
  const auto profile = profile_of(
      "[driver]\nbranch = \"580\"\n[mirrors]\n"
      "cuda_repo = \"https://mirrors.example.org/nvidia-cuda\"\n"
      "container_toolkit = \"https://mirrors.example.org/libnvidia-container\"\n");
  PlanRequest mirrored{Target{"ubuntu", "22.04", "x86_64"}, {}, "", ""};
  gpuenv::install::add_profile_mirrors(profile, mirrored);
  CHECK(mirrored.cuda_repo_url == "https://mirrors.example.org/nvidia-cuda");
  CHECK(mirrored.toolkit_repo_url == "https://mirrors.example.org/libnvidia-container");
  PlanRequest flagged{Target{"ubuntu", "22.04", "x86_64"}, {}, "file:///srv/repo", ""};
  gpuenv::install::add_profile_mirrors(profile, flagged);
  CHECK(flagged.cuda_repo_url == "file:///srv/repo");
  PlanRequest upstream{Target{"ubuntu", "22.04", "x86_64"}, {}, "", ""};
  gpuenv::install::add_profile_mirrors(profile_of(""), upstream);
  CHECK(upstream.cuda_repo_url.empty());
  CHECK(upstream.toolkit_repo_url.empty());

  auto data = gpuenv::install::builtin_install_data();
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE((data && kb));
  auto p = gpuenv::install::plan_install(profile, mirrored, **data, **kb);
  REQUIRE(p.has_value());
  CHECK(p->repo_url == "https://mirrors.example.org/nvidia-cuda/ubuntu2204/x86_64/");
  const Step* toolkit = step(*p, "install.container_toolkit");
  CHECK(toolkit->files.at(0).content ==
        "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.asc] "
        "https://mirrors.example.org/libnvidia-container/stable/deb/$(ARCH) /\n");
  CHECK(toolkit->commands.at(0).back() == "https://nvidia.github.io/libnvidia-container/gpgkey");  // upstream's key
}
