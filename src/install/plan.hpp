#pragma once
// The install plan as plain data: what gpuenv intends to do to a node, step by step. Made by plan_install (pure),
// printed by --dry-run, run by apply_plan. Includes nothing from system/ so any consumer can link it without the OS.

#include <chrono>
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

/// One step of the plan. Steps run in order; a step whose done_if probe exits 0 is already done.
struct Step {
  std::string id;                                    ///< stable: "install.driver", "install.repo.cuda", ...
  std::string why;                                   ///< one sentence shown by the plan and logged
  std::vector<std::vector<std::string>> commands{};  ///< argv vectors, never shell strings
  std::vector<FileToWrite> files{};
  std::vector<std::string> done_if{};  ///< probe argv: exit 0 = done; empty: the step always runs
  /// When set, done_if must also print exactly this ("" for dpkg --audit, which exits 0 when it finds problems).
  std::optional<std::string> done_if_stdout{};
  std::chrono::seconds timeout{600};  ///< per command
  bool reboots = false;               ///< the step is a reboot (only with --reboot)
  bool failure_stops = true;          ///< false: a failure is logged and the run goes on (later steps can repair it)
  /// Run when a command fails; its output lines are named in the failure ("the repository has: ...").
  std::vector<std::string> explain_failure{};
  bool changes_node = true;  ///< false for read-only steps (the lock wait): never "changed"
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

/// What the planner knows about the node. Unknown facts (planning for another machine) leave the defaults, and
/// the plan then relies on each step's done_if at apply time.
struct NodeFacts {
  bool observed = false;            ///< read from the node itself (apply), not assumed (a plan for elsewhere)
  std::string kernel_release;       ///< empty: unknown (the plan shows <running-kernel>)
  std::optional<bool> secure_boot;  ///< nullopt: unknown
  bool nouveau_loaded = false;
  std::string loaded_driver_version;                  ///< the loaded nvidia module's version; empty: none loaded
  std::vector<std::string> gpu_compute_capabilities;  ///< of the NVIDIA GPUs present ("6.0", "9.0")
  std::optional<bool> docker;                         ///< Docker installed; nullopt: unknown (plan for both runtimes)
  std::optional<bool> containerd;
  std::vector<std::string> held_packages;  ///< apt-mark showhold
};

/// The driver the plan installs and how it is kept there.
struct DriverChoice {
  std::string branch;   ///< "580"
  std::string modules;  ///< open | proprietary
  std::string source;   ///< nvidia | distro
  std::string lock;     ///< "apt-mark hold", "nvidia-driver-pinning-590", "dnf module nvidia-driver:580-open", ...
};

/// A plan: its steps, or the refusals that stop it before anything changes.
struct InstallPlan {
  std::string profile;
  Target target;
  std::string repo_url;  ///< the CUDA repository directory the plan uses ("<base>/<repo_dir>/<repo_arch>/")
  DriverChoice driver;
  std::vector<Step> steps;
  std::vector<report::Finding> refusals;  ///< failing findings: nothing may run while there is one
  std::vector<report::Finding> notes;     ///< warnings and information about the plan
};

/// The target machine's architecture named as NVIDIA's repositories name it: x86_64 -> x86_64, arm64 -> sbsa.
std::string repository_arch(const std::string& arch);

}  // namespace gpuenv::install
