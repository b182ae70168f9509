// What apply observes on a node, from fixture files and scripted commands: root, os-release, GPUs on the PCI bus,
// the loaded and installed module, nouveau, Secure Boot, runtimes and held packages.

#include "install/node.hpp"

#include <catch2/catch.hpp>

#include "support/fake_system.hpp"

using gpuenv::testing::FakeSystem;

namespace {

gpuenv::system::CommandResult exit_result(int code, std::string out) {
  gpuenv::system::CommandResult result;
  result.exit_code = code;
  result.out = std::move(out);
  return result;
}

}  // namespace

TEST_CASE("install node: root is the effective uid in /proc/self/status", "[install][node]") {
  FakeSystem fake;
  CHECK_FALSE(gpuenv::install::effective_uid(fake).has_value());
  fake.files["/proc/self/status"] = "Name:\tgpuenv\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
  CHECK(gpuenv::install::effective_uid(fake) == 0L);
  fake.files["/proc/self/status"] = "Uid:\t1000\t1000\t1000\t1000\n";
  CHECK(gpuenv::install::effective_uid(fake) == 1000L);
}

TEST_CASE("install node: the node's os-release must be the profile's OS", "[install][node]") {
  FakeSystem fake;
  CHECK(gpuenv::install::check_node_os(fake, {"debian", "12", "x86_64"})->message == "cannot read /etc/os-release");
  fake.files["/etc/os-release"] = "ID=\"rocky\"\nVERSION_ID=\"9.4\"\n";  // Rocky's own ID; profiles say rockylinux
  CHECK_FALSE(gpuenv::install::check_node_os(fake, {"rockylinux", "9", "x86_64"}).has_value());
  CHECK(gpuenv::install::check_node_os(fake, {"rockylinux", "8", "x86_64"}).has_value());
  fake.files["/etc/os-release"] = "ID=debian\nVERSION_ID=\"12\"\n";
  const auto wrong = gpuenv::install::check_node_os(fake, {"ubuntu", "22.04", "x86_64"});
  REQUIRE(wrong.has_value());
  CHECK(wrong->message == "this node runs debian 12, the profile is for ubuntu 22.04");
}

TEST_CASE("install node: an NVIDIA display or 3D controller counts as a GPU, its audio function does not",
          "[install][node]") {
  FakeSystem fake;
  fake.files["/sys/bus/pci/devices/0000:3b:00.1/vendor"] = "0x10de\n";
  fake.files["/sys/bus/pci/devices/0000:3b:00.1/class"] = "0x040300\n";
  fake.files["/sys/bus/pci/devices/0000:00:02.0/vendor"] = "0x8086\n";
  fake.files["/sys/bus/pci/devices/0000:00:02.0/class"] = "0x030000\n";
  CHECK_FALSE(gpuenv::install::nvidia_gpu_present(fake));
  fake.files["/sys/bus/pci/devices/0000:3b:00.0/vendor"] = "0x10de\n";
  fake.files["/sys/bus/pci/devices/0000:3b:00.0/class"] = "0x030200\n";
  CHECK(gpuenv::install::nvidia_gpu_present(fake));
}

TEST_CASE("install node: facts for the planner", "[install][node]") {
  FakeSystem fake;
  fake.files["/proc/sys/kernel/osrelease"] = "6.8.0-1015-aws\n";
  fake.files["/proc/modules"] = "nouveau 2301952 0 - Live 0x0000000000000000\n";
  fake.files["/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"] =
      std::string("\x06\0\0\0\x01", 5);
  fake.files["/usr/bin/dockerd"] = "";
  fake.files["/proc/driver/nvidia/version"] =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)\n";
  fake.commands["modinfo -F version nvidia"] = exit_result(0, "580.95.05\n");
  fake.commands["nvidia-smi --query-gpu=compute_cap --format=csv,noheader"] = exit_result(0, "9.0\n9.0\n");
  fake.commands["apt-mark showhold"] = exit_result(0, "nvidia-open-570\n");
  const gpuenv::install::NodeFacts node = gpuenv::install::observe_node(fake, "apt");
  CHECK(node.kernel_release == "6.8.0-1015-aws");
  CHECK(node.nouveau_loaded);
  CHECK(node.secure_boot == true);
  CHECK(node.docker == true);
  CHECK(node.containerd == false);
  CHECK(node.loaded_driver_version == "570.133.20");
  CHECK(node.gpu_compute_capabilities == std::vector<std::string>{"9.0", "9.0"});
  CHECK(node.held_packages == std::vector<std::string>{"nvidia-open-570"});
  const auto versions = gpuenv::install::module_versions(fake);
  CHECK(versions.loaded == "570.133.20");
  CHECK(versions.installed == "580.95.05");

  FakeSystem bare;  // a container: no efivars, no /proc files, no commands
  const gpuenv::install::NodeFacts unknown = gpuenv::install::observe_node(bare, "dnf");
  CHECK(unknown.secure_boot == false);  // no EFI at all: legacy boot has no Secure Boot
  CHECK(unknown.kernel_release.empty());
  CHECK(unknown.gpu_compute_capabilities.empty());
  CHECK(bare.commands_run == std::vector<std::string>{"modinfo -F version nvidia"});
}

TEST_CASE("install node: NVSwitches by PCI class 0x0680, NVLink5 by the management device's VPD", "[install][node]") {
  FakeSystem fake;
  for (int i = 0; i < 2; ++i) {
    const std::string gpu = "/sys/bus/pci/devices/0000:1" + std::to_string(i) + ":00.0/";
    fake.files[gpu + "vendor"] = "0x10de\n";
    fake.files[gpu + "class"] = "0x030200\n";
    fake.files[gpu + "device"] = "0x2330\n";
  }
  // lspci on an HGX H100 baseboard: "Bridge [0680]: NVIDIA Corporation Device [10de:22a3]".
  fake.files["/sys/bus/pci/devices/0000:05:00.0/vendor"] = "0x10de\n";
  fake.files["/sys/bus/pci/devices/0000:05:00.0/class"] = "0x068000\n";
  fake.files["/sys/bus/pci/devices/0000:05:00.0/device"] = "0x22a3\n";
  const gpuenv::install::NodeFacts hgx = gpuenv::install::observe_node(fake, "apt", true);
  CHECK(hgx.gpu_devices == std::vector<std::uint16_t>{0x2330, 0x2330});
  CHECK(hgx.nvswitches == 1);
  CHECK_FALSE(hgx.nvlink5);
  // NVIDIA/gpu-driver-container _assert_nvlink5_system: `grep -q "SW_MNG" /sys/class/infiniband/*/device/vpd`.
  std::string vpd = "\x82";
  vpd += std::string(1, '\x10') + "ConnectX-7" + std::string(1, '\x90') + std::string(1, '\0') + "SW_MNG";
  fake.files["/sys/class/infiniband/mlx5_0/device/vpd"] = vpd;
  CHECK(gpuenv::install::observe_node(fake, "apt", true).nvlink5);
}

TEST_CASE("install node: packages, flavour and conflicting installs from a captured tree", "[install][node]") {
  FakeSystem fake;
  fake.files["/var/lib/dpkg/status"] =
      "Package: linux-image-generic-hwe-22.04\nStatus: install ok installed\nVersion: 6.8.0.45.45~22.04.1\n"
      "Depends: linux-image-6.8.0-45-generic,\n linux-firmware\n\n"
      "Package: removed\nStatus: deinstall ok config-files\nVersion: 1\n\n"
      "Package: cuda-drivers-550\nStatus: hold ok installed\nVersion: 550.54.15-1\n";
  fake.files["/etc/apt/sources.list"] = "deb http://archive.ubuntu.com/ubuntu jammy main\n";
  fake.files["/etc/apt/sources.list.d/cuda.list"] =
      "deb https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n";
  fake.files["/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list"] =
      "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
      "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n";
  fake.files["/etc/apt/sources.list.d/graphics-drivers-ubuntu-ppa-jammy.list"] =
      "deb https://ppa.launchpadcontent.net/graphics-drivers/ppa/ubuntu/ jammy main\n";
  fake.files["/usr/bin/nvidia-uninstall"] = "";
  const gpuenv::install::NodeFacts node = gpuenv::install::observe_node(fake, "apt", true);
  REQUIRE(node.installed.has_value());
  REQUIRE(node.installed->size() == 2);
  CHECK(node.installed->at(0).depends == "linux-image-6.8.0-45-generic, linux-firmware");
  CHECK(node.foreign_cuda_sources == std::vector<std::string>{"/etc/apt/sources.list.d/cuda.list"});
  CHECK(node.graphics_drivers_ppa ==
        std::vector<std::string>{"/etc/apt/sources.list.d/graphics-drivers-ubuntu-ppa-jammy.list"});
  CHECK(node.runfile_driver);
  CHECK_FALSE(node.signed_module_packages.has_value());                       // no command ran in a captured tree
  CHECK(node.held_packages == std::vector<std::string>{"cuda-drivers-550"});  // dpkg's selection, as apt-mark reads
  CHECK(node.captured);
}

TEST_CASE("install node: apt-key's listing of the retired key, the kernel's RPM package", "[install][node]") {
  FakeSystem fake;
  fake.files["/proc/sys/kernel/osrelease"] = "6.12.37-61.105.amzn2023.x86_64\n";
  fake.commands["rpm -q --qf %{NAME}\\n -f /lib/modules/6.12.37-61.105.amzn2023.x86_64"] =
      exit_result(0, "kernel6.12\n");
  CHECK(gpuenv::install::observe_node(fake, "dnf").kernel_package == "kernel6.12");
  // apt-key list prints the fingerprint in groups of four.
  fake.commands["apt-key list"] = exit_result(
      0,
      "/etc/apt/trusted.gpg\n--------------------\npub   rsa4096 2017-09-28 [SCE]\n      AE09 FE4B BD22 3A84 B2CC  "
      "FCE3 F60F 4B3D 7FA2 AF80\nuid           [ unknown] cudatools <cudatools@nvidia.com>\n");
  CHECK(gpuenv::install::observe_node(fake, "apt").retired_key);
}

TEST_CASE("install node: the dnf repository ids the node defines, from /etc/yum.repos.d", "[install][node]") {
  // What `dnf repolist --all` lists: every section of every .repo file in reposdir. A RHUI node's client package
  // defines the CodeReady Builder repository there (disabled), which the plan then enables (targets.toml crb_rhui).
  FakeSystem fake;
  fake.files["/etc/yum.repos.d/redhat-rhui.repo"] =
      "[rhel-9-baseos-rhui-rpms]\nname=BaseOS\nenabled=1\n\n[codeready-builder-for-rhel-9-rhui-rpms]\nenabled=0\n";
  fake.files["/etc/yum.repos.d/notes.txt"] = "[not-a-repo]\n";
  const gpuenv::install::NodeFacts node = gpuenv::install::observe_node(fake, "dnf", true);
  REQUIRE(node.dnf_repositories.has_value());
  CHECK(*node.dnf_repositories ==
        std::vector<std::string>{"rhel-9-baseos-rhui-rpms", "codeready-builder-for-rhel-9-rhui-rpms"});
  CHECK_FALSE(gpuenv::install::observe_node(fake, "apt", true).dnf_repositories.has_value());
}
