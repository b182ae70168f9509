#pragma once
// The install plan as plain data: what gpuenv intends to do to a node, step by step. Made by plan_install (pure),
// printed by --dry-run, run by apply_plan. Includes nothing from system/ so any consumer can link it without the OS.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/finding.hpp"

namespace gpuenv::install {

/// A file a step writes (atomically), after its commands.
struct FileToWrite {
  std::string path;
  std::string content;
  std::string mode = "0644";
};

/// How a probe's standard output must look (besides exit 0).
enum class OutputMatch {
  exact,          ///< exactly the text ("" for `dpkg --audit`, which exits 0 when it finds problems)
  has_line,       ///< some line contains the text
  lines_prefixed  ///< there is a line, and every line starts with the text ("580." for installed versions)
};
std::string_view to_string(OutputMatch match);

/// A command run after a step's commands whose output must show that the step achieved what it is for.
struct Check {
  std::vector<std::string> argv;
  OutputMatch match = OutputMatch::has_line;
  std::string text;
  std::string meaning;  ///< what a failure means: "the keyring is not NVIDIA's key EB69...63CC"
};

/// One step of the plan. Steps run in order; a step whose done_if probe succeeds is already done.
struct Step {
  std::string id;                                    ///< stable: "install.driver", "install.repo.cuda", ...
  std::string why;                                   ///< one sentence shown by the plan and logged
  std::vector<std::vector<std::string>> commands{};  ///< argv vectors, never shell strings
  std::vector<FileToWrite> files{};
  std::vector<std::string> done_if{};  ///< probe argv: exit 0 = done; empty: the step always runs
  /// When set, done_if must also print this, compared as done_if_match says.
  std::optional<std::string> done_if_stdout{};
  OutputMatch done_if_match = OutputMatch::exact;
  std::chrono::seconds timeout{600};  ///< per command
  bool reboots = false;               ///< the step is a reboot (only with --reboot)
  bool failure_stops = true;          ///< false: a failure is logged and the run goes on (later steps can repair it)
  /// Run when a command fails; its output lines are named in the failure ("the repository has: ...").
  std::vector<std::string> explain_failure{};
  bool changes_node = true;  ///< false for read-only steps (the lock wait): never "changed"
  /// Commands whose exit code 100 means "another process holds the lock": retried this many more times
  /// (`apt-get update` has no lock timeout for the lists lock), retry_delay apart.
  int retries = 0;
  std::chrono::seconds retry_delay{10};
  std::vector<Check> checks{};  ///< after the commands: a failing check fails the step
  /// What to do when the step ran but its done_if probe still fails (apply probes again after running it).
  std::string remedy{};
};

/// The machine the plan is for.
struct Target {
  std::string distro;       ///< os-release ID as the profile spells it: ubuntu, debian, rockylinux, rhel, amzn
  std::string version;      ///< "22.04", "9", "2023"
  std::string arch;         ///< "x86_64" | "arm64"
  std::string manager{};    ///< apt | dnf (filled by the planner)
  std::string repo_dir{};   ///< NVIDIA's repository directory: ubuntu2204, rhel9, ... (filled by the planner)
  std::string repo_arch{};  ///< x86_64 | sbsa (filled by the planner)
  /// "debian:12/x86_64"
  std::string label() const { return distro + ":" + version + "/" + arch; }
};

/// An installed distribution package (dpkg status), with the packages it depends on.
struct NodePackage {
  std::string name;
  std::string version;
  std::string depends;  ///< the Depends field as written
  bool held = false;    ///< dpkg's selection is "hold" (what `apt-mark showhold` lists)
};

/// What the planner knows about the node. Unknown facts (planning for another machine) leave the defaults, and
/// the plan then relies on each step's done_if at apply time.
struct NodeFacts {
  bool observed = false;            ///< read from the node itself (apply), or from a captured node (--root)
  bool captured = false;            ///< read from a captured tree under --root: no command ran
  std::string kernel_release;       ///< empty: unknown (the plan shows <running-kernel>)
  std::string kernel_package;       ///< the RPM owning the running kernel's modules; empty: unknown
  std::optional<bool> secure_boot;  ///< nullopt: unknown
  bool nouveau_loaded = false;
  std::string loaded_driver_version;                  ///< the loaded nvidia module's version; empty: none loaded
  std::vector<std::string> gpu_compute_capabilities;  ///< of the NVIDIA GPUs present ("6.0", "9.0")
  std::vector<std::uint16_t> gpu_devices;             ///< PCI device ids of the NVIDIA GPUs on the bus
  int nvswitches = 0;                                 ///< NVSwitch PCI functions (vendor 0x10de, class 0x0680)
  bool nvlink5 = false;        ///< an InfiniBand management device of NVLink5 switches (VPD "SW_MNG")
  std::optional<bool> docker;  ///< Docker installed; nullopt: unknown (plan for both runtimes)
  std::optional<bool> containerd;
  std::vector<std::string> held_packages;             ///< apt-mark showhold
  std::optional<std::vector<NodePackage>> installed;  ///< dpkg status; nullopt: unknown
  /// apt: package names starting "linux-modules-nvidia-" the node's lists know; nullopt: unknown
  std::optional<std::vector<std::string>> signed_module_packages;
  /// dnf: the repository ids defined under /etc/yum.repos.d (what `dnf repolist --all` lists); nullopt: unknown
  std::optional<std::vector<std::string>> dnf_repositories;
  // Conflicting installation methods (the CUDA installation guide's "Handle Conflicting Installation Methods").
  bool runfile_driver = false;                    ///< /usr/bin/nvidia-uninstall exists
  bool retired_key = false;                       ///< `apt-key list` shows NVIDIA's retired key 7fa2af80
  std::vector<std::string> foreign_cuda_sources;  ///< apt source files naming NVIDIA's CUDA repository
  std::vector<std::string> graphics_drivers_ppa;  ///< apt source files of ppa:graphics-drivers
};

/// The driver the plan installs and how it is kept there.
struct DriverChoice {
  std::string branch;   ///< "580"
  std::string modules;  ///< open | proprietary
  std::string source;   ///< nvidia | distro
  std::string lock;     ///< "apt preferences (580.*)", "dnf module nvidia-driver:580-open", ...
  std::string how;      ///< why this branch: "the profile's [driver] branch", "the newest LTS ... branch"
};

/// A plan: its steps, or the refusals that stop it before anything changes.
struct InstallPlan {
  std::string profile;
  Target target;
  std::string repo_url;  ///< the CUDA repository directory the plan uses ("<base>/<repo_dir>/<repo_arch>/")
  DriverChoice driver;
  bool fabric_manager = false;  ///< an NVSwitch system: fabric manager is installed and started
  std::vector<Step> steps;
  std::vector<report::Finding> refusals;  ///< failing findings: nothing may run while there is one
  std::vector<report::Finding> notes;     ///< warnings and information about the plan
};

/// The target machine's architecture named as NVIDIA's repositories name it: x86_64 -> x86_64, arm64 -> sbsa.
std::string repository_arch(const std::string& arch);

}  // namespace gpuenv::install
