// The plan against what the expert review of issue 22 found on real nodes: Ubuntu's static nvidia-persistenced unit,
// the Ubuntu archive's copies of NVIDIA's package names under the branch pin, CodeReady Builder on cloud
// pay-as-you-go RHEL (RHUI), RHEL's 64k-page aarch64 kernel, and a branch that is not a number. Each case quotes
// its source.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "install/choice.hpp"
#include "install/node_text.hpp"
#include "install/plan_support.hpp"

using gpuenv::install::InstallPlan;
using gpuenv::install::NodeFacts;
using gpuenv::install::OutputMatch;
using gpuenv::install::Step;
using gpuenv::install::Target;
using gpuenv::testing::file_of;
using gpuenv::testing::find_step;
using gpuenv::testing::install_profile;
using gpuenv::testing::make_plan;
using gpuenv::testing::refusal_ids;
using gpuenv::testing::runs;
using gpuenv::testing::step_ids;

namespace {

constexpr const char* k_branch_pin = "/etc/apt/preferences.d/gpuenv-nvidia-driver-branch";
constexpr const char* k_driver_names =
    "/^(nvidia-|libnvidia-|cuda-drivers|libcuda1|libnvcuvid1|libnvoptix1|libxnvctrl|xserver-xorg-video-nvidia|"
    "firmware-nvidia-gsp|libnvsdm)/";

}  // namespace

TEST_CASE("install plan: persistence is turned on by a drop-in and checked with nvidia-smi, not `systemctl enable`",
          "[install]") {
  // Canonical's unit (canonical/nvidia-graphics-drivers @9c04f0b debian/templates/
  // nvidia-compute-utils-flavour.nvidia-persistenced.service.in) reads, in full:
  //   [Unit] Description=NVIDIA Persistence Daemon / Wants=syslog.target / StopWhenUnneeded=true /
  //   Before=systemd-backlight@backlight:nvidia_0.service
  //   [Service] Type=forking / ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced
  //   --no-persistence-mode --verbose / ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced
  // No [Install]: `systemctl enable` leaves it static; debian/71-nvidia.rules starts it from udev
  // (ENV{SYSTEMD_WANTS}="nvidia-persistenced.service", PR #34), and --no-persistence-mode leaves persistence off.
  for (const std::string os : {"ubuntu", "rhel"}) {
    INFO(os);
    const std::string version = os == "ubuntu" ? "22.04" : "9";
    const InstallPlan p =
        make_plan(install_profile("[driver]\nbranch = \"580\"\n", os, version), Target{os, version, "x86_64"});
    REQUIRE(p.refusals.empty());
    for (const Step& step : p.steps) {
      for (const auto& argv : step.commands) {
        const std::string line = gpuenv::util::join(argv, " ");
        INFO(step.id << ": " << line);
        CHECK(line.find("enable nvidia-persistenced") == std::string::npos);
      }
    }
    const Step* persistence = find_step(p, "install.persistence");
    REQUIRE(persistence != nullptr);
    const auto ids = step_ids(p);
    CHECK(std::find(ids.begin(), ids.end(), "install.persistence") ==
          std::find(ids.begin(), ids.end(), "install.reboot") + 1);  // needs the installed module loaded
    CHECK(file_of(*persistence, "/etc/systemd/system/nvidia-persistenced.service.d/gpuenv-persistence.conf")
              .find("[Unit]\nStopWhenUnneeded=false\n\n[Service]\nExecStartPost=-/usr/bin/nvidia-smi "
                    "--persistence-mode=1\n") != std::string::npos);
    CHECK(persistence->commands == std::vector<std::vector<std::string>>{
                                       {"systemctl", "daemon-reload"},
                                       {"systemctl", "add-wants", "multi-user.target", "nvidia-persistenced.service"},
                                       {"systemctl", "restart", "nvidia-persistenced.service"}});
    CHECK(persistence->done_if ==
          std::vector<std::string>{"nvidia-smi", "--query-gpu=persistence_mode", "--format=csv,noheader"});
    CHECK(persistence->done_if_stdout == "Enabled");
    CHECK(persistence->done_if_match == OutputMatch::lines_prefixed);  // every GPU, one line each
    REQUIRE(persistence->checks.size() == 1);
    CHECK(persistence->checks[0].text == "multi-user.target");
    CHECK_FALSE(persistence->remedy.empty());
  }
}

TEST_CASE("install plan: the branch pin keeps the distribution archive's copies of NVIDIA's names low (item 3)",
          "[install]") {
  // apt_preferences(5) (apt 2.6 doc/apt_preferences.5.xml, "How APT Interprets Priorities"): "If any specific-form
  // records match an available package version then the first such record determines the priority of the package
  // version." Ubuntu's archive has nvidia-dkms-580-open 580.x-0ubuntu1, which "Pin: version 580.*" also matches:
  // at 1000 it competed with NVIDIA's package of the branch and the newer of the two won. The archive record comes
  // first; tests/install_integration (case archive_copies) shows it with the real apt.
  struct Row {
    std::string distro, version, origin;
  };
  for (const Row& row :
       {Row{"ubuntu", "22.04", "Ubuntu"}, Row{"ubuntu", "24.04", "Ubuntu"}, Row{"debian", "12", "Debian"}}) {
    INFO(row.distro << " " << row.version);
    const std::string cuda = row.distro == "debian" ? "12.4.1" : "12.8.0";
    const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", row.distro, row.version, cuda),
                                    Target{row.distro, row.version, "x86_64"});
    REQUIRE(p.refusals.empty());
    const std::string pin = file_of(*find_step(p, "install.driver"), k_branch_pin);
    const std::string archive =
        std::string("Package: ") + k_driver_names + "\nPin: release o=" + row.origin + "\nPin-Priority: 100\n";
    const std::string branch = std::string("Package: ") + k_driver_names + "\nPin: version 580.*\nPin-Priority: 1000\n";
    const auto archive_at = pin.find(archive);
    const auto branch_at = pin.find(branch);
    REQUIRE(archive_at != std::string::npos);
    REQUIRE(branch_at != std::string::npos);
    CHECK(archive_at < branch_at);
  }
  // From Ubuntu's own archive (source = "distro") the archive's packages are the ones wanted: no low record.
  const InstallPlan distro = make_plan(install_profile("[driver]\nbranch = \"580\"\nsource = \"distro\"\n"),
                                       Target{"ubuntu", "22.04", "x86_64"});
  REQUIRE(distro.refusals.empty());
  CHECK(file_of(*find_step(distro, "install.driver"), k_branch_pin).find("o=Ubuntu") == std::string::npos);
}

TEST_CASE("install plan: CodeReady Builder on cloud pay-as-you-go RHEL is the node's RHUI repository (item 4)",
          "[install]") {
  // On a RHUI node (not registered) `subscription-manager repos --enable` fails; the cloud's RHUI client package
  // defines the CRB repository: AWS codeready-builder-for-rhel-9-rhui-rpms, Azure
  // rhui-codeready-builder-for-rhel-9-x86_64-rhui-rpms (ids as a Red Hat leapp report lists them; Red Hat's RHUI 4
  // guide, "Available channels": "Red Hat CodeReady Linux Builder for RHEL 8 x86_64 (RPMs) from RHUI").
  struct Row {
    std::string version;
    std::vector<std::string> repositories;
    std::string command;  ///< how CRB is enabled
    std::string repo;     ///< the id the done-check lists
  };
  const std::vector<Row> rows = {
      {"9",
       {"rhel-9-baseos-rhui-rpms", "rhel-9-appstream-rhui-rpms", "codeready-builder-for-rhel-9-rhui-rpms"},
       "dnf config-manager --set-enabled codeready-builder-for-rhel-9-rhui-rpms",
       "codeready-builder-for-rhel-9-rhui-rpms"},
      {"9",
       {"rhui-rhel-9-for-x86_64-baseos-rhui-rpms", "rhui-codeready-builder-for-rhel-9-x86_64-rhui-rpms"},
       "dnf config-manager --set-enabled rhui-codeready-builder-for-rhel-9-x86_64-rhui-rpms",
       "rhui-codeready-builder-for-rhel-9-x86_64-rhui-rpms"},
      {"8",
       {"rhel-8-baseos-rhui-rpms", "codeready-builder-for-rhel-8-rhui-rpms"},
       "dnf config-manager --set-enabled codeready-builder-for-rhel-8-rhui-rpms",
       "codeready-builder-for-rhel-8-rhui-rpms"},
      // A registered node (subscription-manager's redhat.repo): the subscription's repository.
      {"9",
       {"rhel-9-for-x86_64-baseos-rpms", "codeready-builder-for-rhel-9-x86_64-rpms"},
       "subscription-manager repos --enable codeready-builder-for-rhel-9-x86_64-rpms",
       "codeready-builder-for-rhel-9-x86_64-rpms"},
      // Another major's RHUI repository is not this one; an id that dnf would read as an option is never used.
      {"9",
       {"codeready-builder-for-rhel-8-rhui-rpms", "--setopt=x-codeready-builder-for-rhel-9-x-rhui-rpms"},
       "subscription-manager repos --enable codeready-builder-for-rhel-9-x86_64-rpms",
       "codeready-builder-for-rhel-9-x86_64-rpms"},
  };
  for (const Row& row : rows) {
    INFO(row.command);
    NodeFacts node;
    node.dnf_repositories = row.repositories;
    const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", row.version),
                                    Target{"rhel", row.version, "x86_64"}, node);
    REQUIRE(p.refusals.empty());
    const Step* crb = find_step(p, "install.preflight.crb");
    REQUIRE(crb != nullptr);
    CHECK(gpuenv::testing::commands_of(*crb) == std::vector<std::string>{row.command});
    CHECK(crb->done_if == std::vector<std::string>{"dnf", "-q", "repolist", "--enabled", row.repo});
    CHECK(gpuenv::testing::note_ids(p).find("install.preflight.crb") == std::string::npos);
  }
  // Planned without the node: the subscription command, and a note that a RHUI node gets its own repository.
  const InstallPlan unknown =
      make_plan(install_profile("[driver]\nbranch = \"580\"\n", "rhel", "9"), Target{"rhel", "9", "x86_64"});
  CHECK(runs(*find_step(unknown, "install.preflight.crb"),
             "subscription-manager repos --enable codeready-builder-for-rhel-9-x86_64-rpms"));
  CHECK(gpuenv::testing::note_ids(unknown).find("install.preflight.crb") != std::string::npos);
}

TEST_CASE("install plan: the repository ids of a node are its .repo files' sections", "[install]") {
  // dnf.conf(5): each section of a .repo file in reposdir (/etc/yum.repos.d) defines a repository named by it.
  CHECK(gpuenv::install::repo_file_ids("[rhui-client-config-server-9]\nname=x\nenabled=1\n\n"
                                       "[codeready-builder-for-rhel-9-rhui-rpms]\r\nname=CRB\nenabled=0\n# [not]\n") ==
        std::vector<std::string>{"rhui-client-config-server-9", "codeready-builder-for-rhel-9-rhui-rpms"});
}

TEST_CASE("install plan: RHEL's 64k-page aarch64 kernel takes kernel-64k-devel-matched (item 4)", "[install]") {
  // A 64k-page kernel's release ends "+64k" and its packages are kernel-64k-* (openshift/driver-toolkit commit
  // 7a448c2: "5.14.0-284.41.1.el9_2.aarch64 becomes 5.14.0-284.41.1.el9_2.aarch64+64k ... provided by the
  // kernel-64k packages"); kernel-devel-matched would bring the 4k kernel's headers and the 4k kernel itself.
  struct Row {
    std::string distro, version, kernel, headers;
  };
  for (const Row& row : {Row{"rhel", "9", "5.14.0-427.13.1.el9_4.aarch64+64k", "kernel-64k-devel-matched"},
                         Row{"rockylinux", "9", "5.14.0-427.13.1.el9_4.aarch64+64k", "kernel-64k-devel-matched"},
                         Row{"rhel", "9", "5.14.0-427.13.1.el9_4.aarch64", "kernel-devel-matched"},
                         Row{"rhel", "10", "6.12.0-55.9.1.el10_0.aarch64+64k", "kernel-64k-devel-matched"}}) {
    INFO(row.distro << " " << row.version << " " << row.kernel);
    NodeFacts node;
    node.kernel_release = row.kernel;
    const std::string cuda = row.version == "10" ? "13.0.0" : "12.8.0";
    const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n", row.distro, row.version, cuda),
                                    Target{row.distro, row.version, "arm64"}, node);
    REQUIRE(p.refusals.empty());
    CHECK(find_step(p, "install.preflight.headers")->commands.at(0) ==
          std::vector<std::string>{"dnf", "-y", "install", row.headers, "kernel-headers"});
  }
}

TEST_CASE("install plan: a driver branch that is not a number is refused, not thrown on", "[install]") {
  // The profile parser admits three digits only; a Profile made in code is not parsed. std::stoi("5x0") gave 5 and
  // std::stoi("abc") threw std::invalid_argument out of plan_install.
  for (const std::string branch : {"abc", "5x0", "-580", ""}) {
    INFO(branch);
    gpuenv::profile::Profile profile = install_profile("");
    profile.driver_branch = branch;
    const InstallPlan p = make_plan(profile, Target{"ubuntu", "22.04", "x86_64"});
    if (branch.empty()) {
      CHECK(p.refusals.empty());  // no branch named: chosen from the data
      continue;
    }
    CHECK(refusal_ids(p) == "install.driver.branch ");
    CHECK(p.steps.empty());
  }
  CHECK(gpuenv::install::branch_number("580") == 580);
  CHECK(gpuenv::install::branch_number("58O") == 0);
  CHECK(gpuenv::install::branch_number("99999999999999999999999") == 0);
}

TEST_CASE("install plan: where every branch a target carries has ended, the newest is chosen with a warning",
          "[install]") {
  // Ubuntu 20.04's repository ends at 575 (targets.toml); R535 ended June 2026, R570 February 2026, R550 earlier
  // (NVIDIA's supported-drivers page, data/install/drivers.toml). Without the dates R550/R570 counted as supported.
  const InstallPlan p = make_plan(install_profile("", "ubuntu", "20.04"), Target{"ubuntu", "20.04", "x86_64"});
  REQUIRE(p.refusals.empty());
  CHECK(p.driver.branch == "570");
  CHECK(gpuenv::testing::note_ids(p).find("install.driver.branch_end_of_life") != std::string::npos);
}
