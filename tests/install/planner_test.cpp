// plan_install: the steps per distribution and era, each against the public source that defines it (quoted in
// data/install/*.toml and here): NVIDIA's CUDA and driver installation guides, NVIDIA/cuda-repo-management
// genmodules.py, the EPEL getting-started page, apt_preferences(5), dpkg(1).

#include "install/planner.hpp"

#include "install/plan_support.hpp"

using gpuenv::install::InstallPlan;
using gpuenv::install::NodeFacts;
using gpuenv::install::OutputMatch;
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
using gpuenv::testing::step_ids;

TEST_CASE("install plan: a fresh Ubuntu node gets every step in order, ending with reboot, services and verify",
          "[install]") {
  const InstallPlan p = make_plan(install_profile("[cudnn]\nversion = \"9\"\n[driver]\nbranch = \"580\"\n"),
                                  Target{"ubuntu", "22.04", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(step_ids(p) == std::vector<std::string>{
                           "install.preflight.lock", "install.preflight.dpkg", "install.preflight.tools",
                           "install.preflight.headers", "install.repo.cuda_keyring", "install.repo.cuda",
                           "install.driver", "install.cuda_toolkit", "install.cudnn", "install.container_toolkit",
                           "install.runtime_configure.docker", "install.runtime_configure.containerd",
                           "install.unattended_upgrades", "install.reboot", "install.persistence", "install.verify"});
  CHECK(p.repo_url == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/");
  CHECK(p.driver.modules == "open");  // NVIDIA's default from R560
  CHECK(find_step(p, "install.cuda_toolkit")->commands[0].back() == "cuda-toolkit-12-4");
  CHECK(find_step(p, "install.cudnn")->commands[0].back() == "cudnn9-cuda-12");
  CHECK(find_step(p, "install.nouveau") == nullptr);
  CHECK(find_step(p, "install.cuda_compat") == nullptr);
  CHECK_FALSE(p.fabric_manager);
}

TEST_CASE("install plan: every apt install answers configuration-file prompts and waits for the lock (item 13)",
          "[install]") {
  // dpkg(1): --force-confdef takes the default where there is one, --force-confold keeps the installed file; an
  // unattended install never stops at a prompt. The keyring package goes through apt-get, which waits for the dpkg
  // lock (DPkg::Lock::Timeout), unlike dpkg -i.
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  for (const Step& step : p.steps) {
    for (const auto& argv : step.commands) {
      const std::string line = gpuenv::util::join(argv, " ");
      if (line.find("apt-get") == std::string::npos || line.find(" install ") == std::string::npos) continue;
      INFO(step.id << ": " << line);
      CHECK(line.find("-o DPkg::Lock::Timeout=600") != std::string::npos);
      CHECK(line.find("-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold") != std::string::npos);
    }
    for (const auto& argv : step.commands) CHECK_FALSE((argv.size() > 1 && argv[0] == "dpkg" && argv[1] == "-i"));
  }
  const Step* keyring = find_step(p, "install.repo.cuda_keyring");
  REQUIRE(keyring != nullptr);
  CHECK(runs(*keyring, apt_install("/var/cache/gpuenv/cuda-keyring_1.1-1_all.deb")));
  // apt-get update has no timeout for the lists lock: the steps that refresh the lists retry (bounded).
  CHECK(find_step(p, "install.repo.cuda")->retries == 30);
  CHECK(find_step(p, "install.container_toolkit")->retries == 30);
}

TEST_CASE("install plan: the repository pin names NVIDIA's Release label, not a host (item 15)", "[install]") {
  // NVIDIA's cuda-ubuntu2204.pin: "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600". A pin by origin
  // host gave every package of a mirror that also serves the Ubuntu archive priority 600.
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"},
                                  {}, "https://mirrors.example.org/nvidia-cuda");
  CHECK(file_of(*find_step(p, "install.repo.cuda"), "/etc/apt/preferences.d/gpuenv-cuda-repository-pin-600") ==
        "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n");
}

TEST_CASE("install plan: apt keeps every driver package on the branch, not only the meta package (item 3)",
          "[install]") {
  // NVIDIA's Debian cuda-drivers-580 "Depends: nvidia-driver (>= 580.65.06), nvidia-driver-cuda (>= 580.65.06),
  // nvidia-kernel-dkms (>= 580.65.06), ..." and apt installed 590 components
  // (https://forums.developer.nvidia.com/t/debian-cuda-drivers-580-package-580-105-08-1-improperly-pulls-in-v590-
  // components/353805). apt_preferences(5): a pin of priority >= 1000 selects a matching version even over a newer
  // one, so the >= dependencies resolve within the branch. tests/install_integration shows it with the real apt.
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"580\"\nmodules = \"proprietary\"\n", "debian", "12"),
                Target{"debian", "12", "x86_64"});
  REQUIRE(p.refusals.empty());
  const Step* driver = find_step(p, "install.driver");
  REQUIRE(driver != nullptr);
  CHECK(
      file_of(*driver, "/etc/apt/preferences.d/gpuenv-nvidia-driver-branch")
          .find("Package: /^(nvidia-|libnvidia-|cuda-drivers|libcuda1|libnvcuvid1|libnvoptix1|libxnvctrl|"
                "xserver-xorg-video-nvidia|firmware-nvidia-gsp|libnvsdm)/\nPin: version 580.*\nPin-Priority: 1000\n") !=
      std::string::npos);
  CHECK(runs(*driver, apt_install("cuda-drivers-580 nvidia-kernel-dkms nvidia-driver-cuda")));
  for (const auto& argv : driver->commands) CHECK(argv.front() != "apt-mark");  // no hold of the meta package
  // Done when the driver itself is installed at the branch's version, not when the meta package is.
  CHECK(driver->done_if == std::vector<std::string>{"dpkg-query", "-W", "-f=${db:Status-Status}:${Version}\\n",
                                                    "nvidia-kernel-dkms", "nvidia-driver-cuda"});
  CHECK(driver->done_if_stdout == "installed:580.");
  CHECK(driver->done_if_match == OutputMatch::lines_prefixed);
  CHECK(p.driver.lock.find("versions 580.*") != std::string::npos);
}

TEST_CASE("install plan: from 590 NVIDIA's pinning package is installed first, with the same pin", "[install]") {
  // recent-updates.html: "Starting with branch 590, the Ubuntu packages will be renamed by removing the branch
  // designation"; "we suggest to install the pinning package prior to installing the driver".
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"590\"\n", "ubuntu", "24.04", "13.0.0"),
                                  Target{"ubuntu", "24.04", "x86_64"});
  REQUIRE(p.refusals.empty());
  const auto ids = step_ids(p);
  const auto pinning = std::find(ids.begin(), ids.end(), "install.driver.pinning");
  const auto driver = std::find(ids.begin(), ids.end(), "install.driver");
  REQUIRE(pinning != ids.end());
  CHECK(pinning < driver);
  CHECK(runs(*find_step(p, "install.driver.pinning"), apt_install("nvidia-driver-pinning-590")));
  CHECK(runs(*find_step(p, "install.driver"), apt_install("nvidia-open nvidia-dkms-open libnvidia-compute")));
  CHECK(find_step(p, "install.driver")->done_if.back() == "libnvidia-compute");
  CHECK(gpuenv::testing::note_ids(p).find("install.driver.branch_kind") != std::string::npos);  // 590: a feature branch
}

TEST_CASE("install plan: dnf module streams switch to the branch and check the installed branch (item 5)",
          "[install]") {
  // advanced-options.html: `dnf module switch-to nvidia-driver:<stream> --allowerasing`; genmodules.py: streams
  // <major>-open and <major>-dkms. compute-only-and-desktop-installation.html (from 560): nvidia-driver-cuda and the
  // kmod package.
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"580\"\nmodules = \"open\"\n", "rockylinux", "9"),
                Target{"rockylinux", "9", "x86_64"});
  REQUIRE(p.refusals.empty());
  const Step* driver = find_step(p, "install.driver");
  CHECK(driver->commands == std::vector<std::vector<std::string>>{
                                {"dnf", "-y", "module", "switch-to", "--allowerasing", "nvidia-driver:580-open"},
                                {"dnf", "-y", "install", "nvidia-driver-cuda", "kmod-nvidia-open-dkms"}});
  CHECK(driver->done_if ==
        std::vector<std::string>{"rpm", "-q", "--qf", "%{VERSION}\\n", "kmod-nvidia-open-dkms", "nvidia-driver-cuda"});
  CHECK(driver->done_if_stdout == "580.");
  CHECK(driver->done_if_match == OutputMatch::lines_prefixed);
  const InstallPlan old =
      make_plan(install_profile("[driver]\nbranch = \"550\"\n", "rhel", "8"), Target{"rhel", "8", "x86_64"});
  REQUIRE(old.refusals.empty());
  CHECK(find_step(old, "install.driver")->commands ==
        std::vector<std::vector<std::string>>{
            {"dnf", "-y", "module", "switch-to", "--allowerasing", "nvidia-driver:550-dkms"},
            {"dnf", "-y", "install", "cuda-drivers"}});  // before 560: the full driver
}

TEST_CASE("install plan: RHEL 10 replaces the versionlock and uses the rhel10 key (items 2, 5)", "[install]") {
  // version-locking.html: `dnf versionlock *nvidia*<branch>*` with python3-dnf-plugin-versionlock; cuda-rhel10.repo:
  // gpgkey=https://developer.download.nvidia.com/compute/cuda/repos/rhel10/x86_64/CDF6BA43.pub.
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", "10", "13.0.0"),
                                  Target{"rhel", "10", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(find_step(p, "install.driver")->commands ==
        std::vector<std::vector<std::string>>{
            {"dnf", "-y", "install", "python3-dnf-plugin-versionlock"},
            {"dnf", "versionlock", "delete", "*nvidia*"},
            {"dnf", "versionlock", "add", "*nvidia*580*"},
            // Named with the branch's version: a bare name is "already installed" on a node of another branch
            // (the real dnf 4.14 left 590 in place under 580's lock; tests/install_integration el10_versionlock).
            {"dnf", "-y", "--allowerasing", "install", "nvidia-driver-cuda-580.*", "kmod-nvidia-open-dkms-580.*"}});
  const Step* key = find_step(p, "install.repo.cuda_key");
  REQUIRE(key != nullptr);
  CHECK(key->commands.front().back() ==
        "https://developer.download.nvidia.com/compute/cuda/repos/rhel10/x86_64/CDF6BA43.pub");
  CHECK(file_of(*find_step(p, "install.repo.cuda"), "/etc/yum.repos.d/cuda-rhel10.repo")
            .find("gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA-CDF6BA43\n") != std::string::npos);
  CHECK(gpuenv::testing::note_ids(p).find("install.repo.key_fingerprint") != std::string::npos);
  const InstallPlan nine =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", "9"), Target{"rhel", "9", "x86_64"});
  CHECK(find_step(nine, "install.repo.cuda_key")->checks.at(0).text ==
        "fpr:::::::::610C7B14E068A878070DA4E99CD0A493D42D0685:");
}

TEST_CASE("install plan: EL gets CodeReady Builder and EPEL as each distribution enables them (item 6)", "[install]") {
  // https://docs.fedoraproject.org/en-US/epel/getting-started/: RHEL 9 `subscription-manager repos --enable
  // codeready-builder-for-rhel-9-$(arch)-rpms` + the epel-release-latest-9 RPM; Rocky 9 `dnf config-manager
  // --set-enabled crb` + epel-release; Rocky 8 powertools.
  struct Row {
    std::string distro, version, crb, epel;
  };
  const std::vector<Row> rows = {
      {"rhel", "9", "subscription-manager repos --enable codeready-builder-for-rhel-9-x86_64-rpms",
       "dnf -y install https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"},
      {"rhel", "8", "subscription-manager repos --enable codeready-builder-for-rhel-8-x86_64-rpms",
       "dnf -y install https://dl.fedoraproject.org/pub/epel/epel-release-latest-8.noarch.rpm"},
      {"rockylinux", "9", "dnf config-manager --set-enabled crb", "dnf -y install epel-release"},
      {"rockylinux", "8", "dnf config-manager --set-enabled powertools", "dnf -y install epel-release"},
  };
  for (const Row& row : rows) {
    INFO(row.distro << " " << row.version);
    const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", row.distro, row.version),
                                    Target{row.distro, row.version, "x86_64"});
    REQUIRE(p.refusals.empty());
    CHECK(runs(*find_step(p, "install.preflight.crb"), row.crb));
    CHECK(runs(*find_step(p, "install.preflight.epel"), row.epel));
  }
  const InstallPlan arm =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", "9"), Target{"rhel", "9", "arm64"});
  CHECK(runs(*find_step(arm, "install.preflight.crb"),
             "subscription-manager repos --enable codeready-builder-for-rhel-9-aarch64-rpms"));
  const InstallPlan al = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "amzn", "2023", "12.8.0"),
                                   Target{"amzn", "2023", "x86_64"});
  CHECK(find_step(al, "install.preflight.crb") == nullptr);  // Amazon Linux 2023 has no EPEL
}

TEST_CASE("install plan: Amazon Linux 2023 takes the headers from the running kernel's own package (item 7)",
          "[install]") {
  // amazonlinux/amazon-linux-2023#989: "No match for argument: kernel-devel-6.12.37-61.105.amzn2023.x86_64": the
  // 6.12 kernel's packages are kernel6.12-devel and kernel6.12-modules-extra (awslabs/amazon-eks-ami#2207).
  NodeFacts node;
  node.kernel_release = "6.12.37-61.105.amzn2023.x86_64";
  node.kernel_package = "kernel6.12";
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "amzn", "2023", "12.8.0"),
                                  Target{"amzn", "2023", "x86_64"}, node);
  REQUIRE(p.refusals.empty());
  CHECK(find_step(p, "install.preflight.headers")->commands.at(0) ==
        std::vector<std::string>{"dnf", "-y", "install", "kernel6.12-devel-6.12.37-61.105.amzn2023.x86_64",
                                 "kernel-headers-6.12.37-61.105.amzn2023.x86_64",
                                 "kernel6.12-modules-extra-6.12.37-61.105.amzn2023.x86_64", "kernel6.12-devel",
                                 "kernel6.12-modules-extra"});
}

TEST_CASE("install plan: headers for the kernels installed later too, and the optional kernel hold (item 10)",
          "[install]") {
  NodeFacts node;
  node.kernel_release = "6.1.0-18-cloud-amd64";
  const InstallPlan debian =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n[install]\nhold_kernel = true\n", "debian", "12"),
                Target{"debian", "12", "x86_64"}, node);
  REQUIRE(debian.refusals.empty());
  CHECK(runs(*find_step(debian, "install.preflight.headers"),
             apt_install("linux-headers-6.1.0-18-cloud-amd64 linux-headers-cloud-amd64")));
  // GoogleCloudPlatform/compute-gpu-installation ubuntu.py lock_kernel_updates: apt-mark hold of the image and
  // headers, meta and versioned.
  CHECK(runs(*find_step(debian, "install.hold_kernel"),
             "apt-mark hold linux-image-cloud-amd64 linux-headers-cloud-amd64 linux-image-6.1.0-18-cloud-amd64 "
             "linux-headers-6.1.0-18-cloud-amd64"));
  const InstallPlan rocky8 = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rockylinux", "8"),
                                       Target{"rockylinux", "8", "x86_64"});
  CHECK(find_step(rocky8, "install.preflight.headers")->commands.at(0).back() == "kernel-devel");
  CHECK(find_step(rocky8, "install.hold_kernel") == nullptr);
  // A kernel of no Debian-style flavour (a custom build): its own headers, and a note that the next kernel's are
  // the operator's to install.
  NodeFacts custom;
  custom.observed = true;
  custom.secure_boot = false;
  custom.kernel_release = "6.18.44-custom";
  const InstallPlan own = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "debian", "12"),
                                    Target{"debian", "12", "x86_64"}, custom);
  CHECK(runs(*find_step(own, "install.preflight.headers"), apt_install("linux-headers-6.18.44-custom")));
  CHECK(note_ids(own) == "install.headers.future ");
}

TEST_CASE("install plan: nouveau is done when the initramfs carries the blacklist (item 11)", "[install]") {
  // initramfs-tools 0.142 mkinitramfs copies /etc/modprobe.d/*.conf into the image; lsinitramfs lists it.
  NodeFacts node;
  node.nouveau_loaded = true;
  node.kernel_release = "5.15.0-91-generic";
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"}, node);
  const Step* nouveau = find_step(p, "install.nouveau");
  REQUIRE(nouveau != nullptr);
  CHECK(nouveau->commands == std::vector<std::vector<std::string>>{{"update-initramfs", "-u", "-k", "all"}});
  CHECK(nouveau->done_if == std::vector<std::string>{"lsinitramfs", "/boot/initrd.img-5.15.0-91-generic"});
  CHECK(nouveau->done_if_stdout == "modprobe.d/blacklist-nouveau.conf");
  CHECK(nouveau->done_if_match == OutputMatch::has_line);
  const InstallPlan el =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", "9"), Target{"rhel", "9", "x86_64"}, node);
  CHECK(find_step(el, "install.nouveau")->commands.at(0) ==
        std::vector<std::string>{"dracut", "-f", "--regenerate-all"});
}

TEST_CASE("install plan: a container runtime is done when it lists the nvidia runtime (item 11)", "[install]") {
  NodeFacts node;
  node.docker = true;
  node.containerd = true;
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"}, node);
  const Step* docker = find_step(p, "install.runtime_configure.docker");
  CHECK(docker->done_if == std::vector<std::string>{"docker", "info", "--format", "{{json .Runtimes}}"});
  CHECK(docker->done_if_stdout == "\"nvidia\":");
  const Step* containerd = find_step(p, "install.runtime_configure.containerd");
  CHECK(containerd->done_if == std::vector<std::string>{"containerd", "config", "dump"});
  CHECK(containerd->done_if_stdout == ".runtimes.nvidia]");
}

TEST_CASE("install plan: DCGM is enabled when asked and started after the reboot (item 16)", "[install]") {
  const InstallPlan p =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n[install]\ndcgm = true\n", "ubuntu", "22.04", "12.8.0"),
                Target{"ubuntu", "22.04", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(find_step(p, "install.dcgm")->commands.at(0).back() == "datacenter-gpu-manager-4-cuda12");
  const Step* enable = find_step(p, "install.services");
  CHECK(enable->commands.at(0) == std::vector<std::string>{"systemctl", "enable", "nvidia-dcgm"});
  CHECK(enable->done_if_stdout == "enabled\n");
  const auto ids = step_ids(p);
  CHECK(std::find(ids.begin(), ids.end(), "install.services.start") >
        std::find(ids.begin(), ids.end(), "install.reboot"));
  // The distribution's archive has no DCGM.
  const InstallPlan distro =
      make_plan(install_profile("[driver]\nbranch = \"580\"\nsource = \"distro\"\n[install]\ndcgm = true\n"),
                Target{"ubuntu", "22.04", "x86_64"});
  CHECK(refusal_ids(distro).find("install.dcgm") != std::string::npos);
}

TEST_CASE("install plan: arm64 uses the sbsa repository, a target without it is refused", "[install]") {
  const InstallPlan arm = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "ubuntu", "24.04", "12.8.0"),
                                    Target{"ubuntu", "24.04", "arm64"});
  CHECK(arm.repo_url == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/");
  const InstallPlan debian =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n", "debian", "12"), Target{"debian", "12", "arm64"});
  CHECK(refusal_ids(debian) == "install.arch ");
  CHECK(debian.steps.empty());
}

TEST_CASE("install plan: an unsupported OS is refused with the supported list", "[install]") {
  const InstallPlan p = make_plan(install_profile(""), Target{"ubi", "9", "x86_64"});
  REQUIRE(p.refusals.size() == 1);
  CHECK(p.refusals[0].id == "install.os");
  CHECK(p.refusals[0].remedy.find("amzn 2023") != std::string::npos);
  CHECK(p.steps.empty());
}

TEST_CASE("install plan: profile switches for compat and the container toolkit", "[install]") {
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n[install]\ncontainer_toolkit = false\n"
                                                  "cuda_compat = true\n",
                                                  "rockylinux", "9"),
                                  Target{"rockylinux", "9", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(find_step(p, "install.container_toolkit") == nullptr);
  CHECK(find_step(p, "install.runtime_configure.docker") == nullptr);
  CHECK(find_step(p, "install.cuda_compat")->commands[0].back() == "cuda-compat-12-4");
  CHECK(find_step(p, "install.unattended_upgrades") == nullptr);  // dnf: the module stream holds the branch
}

TEST_CASE("install plan: the profile's [mirrors] replace the repositories unless a flag already did", "[install]") {
  const auto profile = install_profile(
      "[driver]\nbranch = \"580\"\n[mirrors]\n"
      "cuda_repo = \"https://mirrors.example.org/nvidia-cuda\"\n"
      "container_toolkit = \"https://mirrors.example.org/libnvidia-container\"\n");
  gpuenv::install::PlanRequest mirrored{Target{"ubuntu", "22.04", "x86_64"}, {}, "", ""};
  gpuenv::install::add_profile_mirrors(profile, mirrored);
  CHECK(mirrored.cuda_repo_url == "https://mirrors.example.org/nvidia-cuda");
  CHECK(mirrored.toolkit_repo_url == "https://mirrors.example.org/libnvidia-container");
  gpuenv::install::PlanRequest flagged{Target{"ubuntu", "22.04", "x86_64"}, {}, "file:///srv/repo", ""};
  gpuenv::install::add_profile_mirrors(profile, flagged);
  CHECK(flagged.cuda_repo_url == "file:///srv/repo");

  const InstallPlan p = make_plan(profile, mirrored.target, {}, mirrored.cuda_repo_url, mirrored.toolkit_repo_url);
  CHECK(p.repo_url == "https://mirrors.example.org/nvidia-cuda/ubuntu2204/x86_64/");
  const Step* toolkit = find_step(p, "install.container_toolkit");
  CHECK(toolkit->files.at(0).content ==
        "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.asc] "
        "https://mirrors.example.org/libnvidia-container/stable/deb/$(ARCH) /\n");
  CHECK(toolkit->commands.at(0).back() == "https://nvidia.github.io/libnvidia-container/gpgkey");  // upstream's key
}

TEST_CASE("install plan: a local file: repository is trusted as it is and fetches no key", "[install]") {
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "debian", "12"),
                                  Target{"debian", "12", "x86_64"}, {}, "file:///srv/repo", "file:///srv/nct");
  CHECK(p.repo_url == "file:///srv/repo/debian12/x86_64/");
  CHECK(find_step(p, "install.repo.cuda_keyring") == nullptr);
  CHECK(find_step(p, "install.preflight.tools") == nullptr);
  const Step* repo = find_step(p, "install.repo.cuda");
  CHECK(file_of(*repo, "/etc/apt/sources.list.d/cuda-debian12-x86_64.list") ==
        "deb [trusted=yes] file:///srv/repo/debian12/x86_64/ /\n");
  const Step* toolkit = find_step(p, "install.container_toolkit");
  CHECK(toolkit->files.at(0).content == "deb [trusted=yes] file:///srv/nct/stable/deb/$(ARCH) /\n");
  CHECK(toolkit->commands.front().at(2) == "apt-get");  // no key download
}
