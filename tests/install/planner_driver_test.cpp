// plan_install's decisions: the branch when the profile names none (NVIDIA's driver lifecycle), what a target's
// repository carries, the module flavour per GPU generation, fabric manager on NVSwitch systems, Ubuntu's archive
// (ubuntu-drivers' way), and conflicting installs. Each row quotes the source it comes from.

#include "install/plan_support.hpp"
#include "install/planner.hpp"

using gpuenv::install::InstallPlan;
using gpuenv::install::NodeFacts;
using gpuenv::install::NodePackage;
using gpuenv::install::Step;
using gpuenv::install::Target;
using gpuenv::testing::apt_install;
using gpuenv::testing::file_of;
using gpuenv::testing::find_step;
using gpuenv::testing::install_profile;
using gpuenv::testing::make_plan;
using gpuenv::testing::note_ids;
using gpuenv::testing::refusal_ids;
using gpuenv::testing::runs;

TEST_CASE(
    "install plan: without a branch, the newest LTS or production branch that fits, never a feature branch "
    "(item 4)",
    "[install]") {
  // docs.nvidia.com/datacenter/tesla/drivers/620/...: R580 LTSB (June 2028), R595 PB (March 2027), R620 LTSB
  // (September 2029); 590 and 610 are new feature branches. The old planner chose the floor's branch (520, 555).
  struct Row {
    std::string what, distro, version, cuda, extra, expected;
  };
  const std::vector<Row> rows = {
      {"CUDA 12.4 on Ubuntu 22.04: the newest LTS", "ubuntu", "22.04", "12.4.1", "", "620"},
      {"CUDA 11.8 (floor 520) on Rocky 8", "rockylinux", "8", "11.8.0", "", "620"},
      {"pre-Turing GPUs end at 580", "ubuntu", "22.04", "12.4.1", "[gpu]\ncompute_capabilities = [\"7.0\"]\n", "580"},
      {"Ubuntu 20.04's repository ends at 575: the newest production branch below", "ubuntu", "20.04", "12.4.1", "",
       "570"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const InstallPlan p = make_plan(install_profile(row.extra, row.distro, row.version, row.cuda),
                                    Target{row.distro, row.version, "x86_64"});
    CHECK(p.driver.branch == row.expected);
    CHECK(p.driver.how.find("the newest") == 0);
    CHECK(p.refusals.empty());
  }
  const InstallPlan named =
      make_plan(install_profile("[driver]\nbranch = \"550\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  CHECK(named.driver.branch == "550");
  CHECK(named.driver.how == "the profile's [driver] branch");
}

TEST_CASE("install plan: what the target's repository does not carry is refused with the nearest it does (item 4)",
          "[install]") {
  // nvidia/cuda images: ubuntu24.04 first with CUDA 12.5.1; NVIDIA's ansible role PR #65: 22.04's repository starts
  // at R515; amzn2023 images never had a cuDNN variant.
  const InstallPlan cuda =
      make_plan(install_profile("", "ubuntu", "24.04", "12.4.1"), Target{"ubuntu", "24.04", "x86_64"});
  REQUIRE(cuda.refusals.size() == 1);
  CHECK(cuda.refusals[0].id == "install.repository");
  CHECK(cuda.refusals[0].message == "NVIDIA's ubuntu2404 repository carries CUDA 12.5 on, not CUDA 12.4.1");
  CHECK(cuda.refusals[0].remedy.find("use CUDA 12.5") == 0);
  // (driver.min lowers the CUDA floor, so only the repository's range speaks.)
  const InstallPlan branch =
      make_plan(install_profile("[driver]\nmin = \"535.0\"\nbranch = \"550\"\n", "ubuntu", "24.04", "12.5.1"),
                Target{"ubuntu", "24.04", "x86_64"});
  CHECK(refusal_ids(branch) == "install.repository ");
  CHECK(branch.refusals[0].message == "NVIDIA's ubuntu2404 repository carries driver branches 555 on, not 550");
  CHECK(branch.refusals[0].remedy.find("use branch 570") == 0);  // the nearest LTS or production branch it carries
  const InstallPlan cudnn = make_plan(install_profile("[cudnn]\nversion = \"9\"\n", "amzn", "2023", "12.8.0"),
                                      Target{"amzn", "2023", "x86_64"});
  CHECK(refusal_ids(cudnn) == "install.repository ");
  CHECK(cudnn.refusals[0].message == "NVIDIA's amzn2023 repository carries no cuDNN packages");
  const InstallPlan old =
      make_plan(install_profile("", "ubuntu", "20.04", "13.0.0"), Target{"ubuntu", "20.04", "x86_64"});
  CHECK(refusal_ids(old) == "install.driver.branch ");
  CHECK(old.refusals[0].message.find("NVIDIA's ubuntu2004 repository ends at 575") != std::string::npos);
}

TEST_CASE("install plan: Blackwell and Grace Hopper get the open modules, proprietary is refused (item 9)",
          "[install]") {
  // https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/: "For
  // cutting-edge platforms such as NVIDIA Grace Hopper or NVIDIA Blackwell, you must use the open-source GPU kernel
  // modules". PCI ids from NVIDIA/gpu-admin-tools devid_names.py: 0x2901 B200, 0x2342 GH200.
  for (const std::uint16_t device : {std::uint16_t{0x2901}, std::uint16_t{0x2342}}) {
    INFO(std::hex << device);
    NodeFacts node;
    node.gpu_devices = {device};
    const InstallPlan unset = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "ubuntu", "24.04", "12.8.0"),
                                        Target{"ubuntu", "24.04", "x86_64"}, node);
    CHECK(unset.refusals.empty());
    CHECK(unset.driver.modules == "open");
    const InstallPlan proprietary = make_plan(
        install_profile("[driver]\nbranch = \"580\"\nmodules = \"proprietary\"\n", "ubuntu", "24.04", "12.8.0"),
        Target{"ubuntu", "24.04", "x86_64"}, node);
    CHECK(refusal_ids(proprietary) == "install.driver.modules ");
  }
  // A B200 also lifts the floor: Blackwell needs >= 570.26 (data/compat/cuda.toml [[arch]] 10.0).
  NodeFacts b200;
  b200.gpu_devices = {0x2901};
  const InstallPlan old =
      make_plan(install_profile("[driver]\nbranch = \"550\"\n"), Target{"ubuntu", "22.04", "x86_64"}, b200);
  CHECK(refusal_ids(old).find("install.driver.gpu") != std::string::npos);
}

TEST_CASE("install plan: branches from 590 are refused with pre-Turing GPUs (item 9)", "[install]") {
  // NVIDIA/ansible-role-nvidia-driver PR #89: R580 is the last branch for Maxwell, Pascal and Volta.
  NodeFacts v100;
  v100.gpu_devices = {0x1DB1};  // pci.ids: GV100GL [Tesla V100 SXM2 16GB]
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"590\"\nmodules = \"proprietary\"\n", "ubuntu", "24.04", "12.8.0"),
                Target{"ubuntu", "24.04", "x86_64"}, v100);
  CHECK(refusal_ids(p) == "install.driver.gpu ");
  CHECK(p.refusals[0].remedy.find("use branch 580") == 0);
  const InstallPlan unset =
      make_plan(install_profile("", "ubuntu", "24.04", "12.8.0"), Target{"ubuntu", "24.04", "x86_64"}, v100);
  CHECK(unset.driver.branch == "580");
  CHECK(unset.driver.modules == "proprietary");
}

TEST_CASE("install plan: an NVSwitch system gets fabric manager at the driver's version (item 1)", "[install]") {
  // NVIDIA/gpu-driver-container ubuntu22.04/install.sh (feb891d): nvidia-fabricmanager-<branch> and
  // libnvidia-nscq-<branch> below 580, nvidia-fabricmanager and libnvidia-nscq from 580; genmodules.py: the
  // module stream's `fm` profile; rhel9/precompiled/Dockerfile: nvidia-fabric-manager below 580.
  NodeFacts hgx;
  hgx.nvswitches = 4;
  hgx.gpu_devices = std::vector<std::uint16_t>(8, 0x2330);
  const InstallPlan new_branch =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"}, hgx);
  REQUIRE(new_branch.refusals.empty());
  CHECK(new_branch.fabric_manager);
  // In the driver's own transaction: apt takes one candidate of the branch for the module package and fabric
  // manager, whose versions must be equal (Fabric Manager user guide: it refuses to start on a mismatch).
  const Step* driver_580 = find_step(new_branch, "install.driver");
  REQUIRE(driver_580 != nullptr);
  CHECK(runs(*driver_580, apt_install("nvidia-open-580 nvidia-fabricmanager libnvidia-nscq")));
  CHECK(driver_580->done_if.back() == "libnvidia-nscq");
  CHECK(driver_580->done_if_stdout == "installed:580.");  // the same pin keeps it on the driver's branch
  CHECK(find_step(new_branch, "install.fabric_manager") == nullptr);
  CHECK(find_step(new_branch, "install.services")->commands.at(0) ==
        std::vector<std::string>{"systemctl", "enable", "nvidia-fabricmanager"});
  CHECK(find_step(new_branch, "install.services.start")->commands.at(0) ==
        std::vector<std::string>{"systemctl", "start", "nvidia-fabricmanager"});
  CHECK(find_step(new_branch, "install.verify")->why.find("fabric.state") != std::string::npos);

  const InstallPlan old_branch =
      make_plan(install_profile("[driver]\nbranch = \"570\"\n"), Target{"ubuntu", "22.04", "x86_64"}, hgx);
  CHECK(runs(*find_step(old_branch, "install.driver"),
             apt_install("nvidia-open-570 nvidia-fabricmanager-570 libnvidia-nscq-570")));

  const InstallPlan rocky = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rockylinux", "9"),
                                      Target{"rockylinux", "9", "x86_64"}, hgx);
  const Step* driver = find_step(rocky, "install.driver");
  CHECK(runs(*driver, "dnf -y module switch-to --allowerasing nvidia-driver:580-open/fm"));
  CHECK(runs(*driver, "dnf -y install nvidia-driver-cuda kmod-nvidia-open-dkms nvidia-fabricmanager libnvidia-nscq"));
  CHECK(driver->done_if.back() == "libnvidia-nscq");

  const InstallPlan plain =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  CHECK_FALSE(plain.fabric_manager);
  CHECK(find_step(plain, "install.driver")->done_if.back() == "nvidia-open-580");
}

TEST_CASE("install plan: an NVLink5 system adds NVLSM and loads ib_umad at boot (item 1)", "[install]") {
  // NVIDIA/gpu-driver-container ubuntu24.04: _assert_nvlink5_system (VPD "SW_MNG"), _ensure_nvlink5_prerequisites
  // (mlx5_core and ib_umad), nvlink5_pkgs_install (nvlsm infiniband-diags).
  NodeFacts b200;
  b200.nvlink5 = true;
  b200.gpu_devices = std::vector<std::uint16_t>(8, 0x2901);
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "ubuntu", "24.04", "12.8.0"),
                                  Target{"ubuntu", "24.04", "x86_64"}, b200);
  REQUIRE(p.refusals.empty());
  CHECK(p.fabric_manager);
  const Step* nvlink5 = find_step(p, "install.fabric_manager.nvlink5");
  REQUIRE(nvlink5 != nullptr);
  CHECK(runs(*nvlink5, apt_install("nvlsm infiniband-diags")));
  CHECK(file_of(*nvlink5, "/etc/modules-load.d/gpuenv-nvlink5.conf") == "ib_umad\n");
}

TEST_CASE("install plan: Ubuntu's archive as ubuntu-drivers does it (item 8)", "[install]") {
  // canonical/ubuntu-drivers-common detect.py get_linux_modules_metapackage: linux-modules-nvidia-<flavour>-<the
  // installed linux-image meta's suffix> when linux-modules-nvidia-<flavour>-<uname -r> exists, else
  // nvidia-dkms-<flavour>; kerneldetection.py finds the meta from the installed image it depends on.
  const auto profile = install_profile("[driver]\nbranch = \"580\"\nsource = \"distro\"\n");
  NodeFacts hwe;
  hwe.kernel_release = "6.8.0-45-generic";
  SECTION("the HWE kernel of 22.04 from its installed meta package; never held") {
    hwe.installed = std::vector<NodePackage>{
        {"linux-image-generic-hwe-22.04", "6.8.0.45.45~22.04.1", "linux-image-6.8.0-45-generic, linux-firmware"},
        {"linux-image-6.8.0-45-generic", "6.8.0-45.45~22.04.1", "linux-modules-6.8.0-45-generic"}};
    hwe.signed_module_packages = std::vector<std::string>{"linux-modules-nvidia-580-server-open-6.8.0-45-generic",
                                                          "linux-modules-nvidia-580-server-open-generic-hwe-22.04"};
    const InstallPlan p = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, hwe);
    REQUIRE(p.refusals.empty());
    const Step* driver = find_step(p, "install.driver");
    CHECK(runs(*driver, apt_install("nvidia-headless-no-dkms-580-server-open nvidia-utils-580-server "
                                    "linux-modules-nvidia-580-server-open-generic-hwe-22.04")));
    for (const Step& step : p.steps) {
      for (const auto& argv : step.commands) CHECK(argv.front() != "apt-mark");
    }
    CHECK(find_step(p, "install.preflight.headers") == nullptr);  // signed modules: no DKMS
  }
  SECTION("without the package list, a kernel newer than the release's GA kernel is HWE") {
    const InstallPlan p = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, hwe);
    CHECK(runs(*find_step(p, "install.driver"),
               apt_install("nvidia-headless-no-dkms-580-server-open nvidia-utils-580-server "
                           "linux-modules-nvidia-580-server-open-generic-hwe-22.04")));
    CHECK(note_ids(p).find("install.driver.signed_modules") != std::string::npos);
  }
  SECTION("flavours of their own: 64k, nvidia-64k, aws") {
    for (const auto& [kernel, flavour] :
         std::vector<std::pair<std::string, std::string>>{{"6.8.0-1015-aws", "aws"},
                                                          {"6.8.0-45-generic-64k", "generic-64k"},
                                                          {"6.8.0-1012-nvidia-64k", "nvidia-64k"}}) {
      NodeFacts node;
      node.kernel_release = kernel;
      INFO(kernel);
      const InstallPlan p =
          make_plan(install_profile("[driver]\nbranch = \"580\"\nsource = \"distro\"\n", "ubuntu", "24.04", "12.8.0"),
                    Target{"ubuntu", "24.04", "arm64"}, node);
      CHECK(find_step(p, "install.driver")->commands.at(0).back() == "linux-modules-nvidia-580-server-open-" + flavour);
    }
  }
  SECTION("no signed modules for the running kernel: DKMS, its headers, and Secure Boot then refuses") {
    hwe.signed_module_packages = std::vector<std::string>{"linux-modules-nvidia-580-server-open-generic-hwe-22.04"};
    const InstallPlan p = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, hwe);
    CHECK(find_step(p, "install.driver")->commands.at(0).back() == "nvidia-dkms-580-server-open");
    CHECK(find_step(p, "install.preflight.headers") != nullptr);
    hwe.secure_boot = true;
    CHECK(refusal_ids(make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, hwe)) == "install.secure_boot ");
  }
  SECTION("an end-of-life branch is refused: its packages are transitional to another branch") {
    const InstallPlan p =
        make_plan(install_profile("[driver]\nbranch = \"535\"\nsource = \"distro\"\n", "ubuntu", "22.04", "12.2.0"),
                  Target{"ubuntu", "22.04", "x86_64"});
    CHECK(refusal_ids(p) == "install.driver.branch ");
  }
  SECTION("the archive's CUDA toolkit is not the profile's: a warning") {
    const InstallPlan p = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"});
    CHECK(note_ids(p).find("install.cuda_toolkit.version") != std::string::npos);
  }
}

TEST_CASE("install plan: the kernel flavour and its meta package", "[install]") {
  gpuenv::install::TargetRow jammy;
  jammy.distro = "ubuntu";
  jammy.version = "22.04";
  jammy.manager = "apt";
  jammy.ga_kernel = "5.15";
  CHECK(gpuenv::install::kernel_flavour("6.8.0-1015-aws") == "aws");
  CHECK(gpuenv::install::kernel_flavour("6.1.0-18-cloud-amd64") == "cloud-amd64");
  CHECK(gpuenv::install::kernel_flavour("5.14.0-427.el9.x86_64").empty());
  NodeFacts node;
  node.kernel_release = "5.15.0-91-generic";
  CHECK(gpuenv::install::kernel_meta_flavour(node, jammy) == "generic");
  node.kernel_release = "6.8.0-45-generic";
  CHECK(gpuenv::install::kernel_meta_flavour(node, jammy) == "generic-hwe-22.04");
  node.installed = std::vector<NodePackage>{{"linux-image-virtual", "5.15.0.91.88", "linux-image-generic (= 5.15)"},
                                            {"linux-image-generic", "5.15.0.91.88", "linux-image-6.8.0-45-generic"}};
  CHECK(gpuenv::install::kernel_meta_flavour(node, jammy) == "generic");  // the meta that depends on the image
}

TEST_CASE("install plan: conflicting installs are refused with the command, a retired key is removed (item 14)",
          "[install]") {
  // https://docs.nvidia.com/cuda/cuda-installation-guide-linux/: "Handle Conflicting Installation Methods" (a runfile
  // driver is removed with /usr/bin/nvidia-uninstall) and "Remove Outdated Signing Key: sudo apt-key del 7fa2af80".
  const auto profile = install_profile("[driver]\nbranch = \"580\"\n");
  NodeFacts runfile;
  runfile.runfile_driver = true;
  const InstallPlan r = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, runfile);
  CHECK(refusal_ids(r) == "install.conflict.runfile ");
  CHECK(r.refusals[0].remedy.find("/usr/bin/nvidia-uninstall --silent") != std::string::npos);
  NodeFacts sources;
  sources.foreign_cuda_sources = {"/etc/apt/sources.list.d/cuda.list"};
  sources.graphics_drivers_ppa = {"/etc/apt/sources.list.d/graphics-drivers-ubuntu-ppa-jammy.list"};
  const InstallPlan s = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, sources);
  CHECK(refusal_ids(s) == "install.conflict.apt_source install.conflict.ppa ");
  CHECK(s.refusals[0].remedy.find("rm /etc/apt/sources.list.d/cuda.list") != std::string::npos);
  NodeFacts key;
  key.retired_key = true;
  const InstallPlan k = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"}, key);
  REQUIRE(k.refusals.empty());
  CHECK(note_ids(k).find("install.conflict.retired_key") != std::string::npos);
  CHECK(runs(*find_step(k, "install.conflict.retired_key"), "apt-key del 7fa2af80"));
}

TEST_CASE("install plan: node states change the plan", "[install]") {
  const auto profile = install_profile("[driver]\nbranch = \"580\"\nmodules = \"open\"\n");
  const Target ubuntu{"ubuntu", "22.04", "x86_64"};
  SECTION("Secure Boot with a DKMS driver is refused, naming the ways out") {
    NodeFacts node;
    node.secure_boot = true;
    const InstallPlan p = make_plan(profile, ubuntu, node);
    CHECK(refusal_ids(p) == "install.secure_boot ");
    CHECK(p.steps.empty());
  }
  SECTION("a held package of another branch blocks the change and is named with the release command") {
    NodeFacts node;
    node.loaded_driver_version = "570.133.20";
    node.held_packages = {"nvidia-open-570", "openssl"};
    const InstallPlan p = make_plan(profile, ubuntu, node);
    REQUIRE(refusal_ids(p) == "install.driver.held ");
    CHECK(p.refusals[0].remedy == "release them with `apt-mark unhold nvidia-open-570`, then re-run");
  }
  SECTION("a loaded driver of another branch: a note, and the plan installs the profile's branch") {
    NodeFacts node;
    node.loaded_driver_version = "570.133.20";
    const InstallPlan p = make_plan(profile, ubuntu, node);
    REQUIRE(p.refusals.empty());
    CHECK(note_ids(p) == "install.driver.branch_change ");
  }
  SECTION("an observed node whose Secure Boot state is unknown gets a warning, not a refusal") {
    NodeFacts node;
    node.observed = true;
    const InstallPlan p = make_plan(profile, ubuntu, node);
    REQUIRE(p.refusals.empty());
    CHECK(note_ids(p) == "install.secure_boot ");
  }
  SECTION("known runtimes: only the installed one is configured") {
    NodeFacts node;
    node.docker = true;
    node.containerd = false;
    const InstallPlan p = make_plan(profile, ubuntu, node);
    CHECK(find_step(p, "install.runtime_configure.docker") != nullptr);
    CHECK(find_step(p, "install.runtime_configure.containerd") == nullptr);
  }
}
