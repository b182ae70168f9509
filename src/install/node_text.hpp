#pragma once
// Pure readers of node text the planner needs (internal to the install module): the kernel's flavour, installed
// packages with their Depends, and apt source files that conflict with NVIDIA's repository.

#include <string>
#include <string_view>
#include <vector>

#include "install/plan.hpp"
#include "report/finding.hpp"

namespace gpuenv::install {

/// The installed packages of a dpkg status file, with their Depends.
std::vector<NodePackage> parse_dpkg_packages(std::string_view status);

/// True when an apt source file names NVIDIA's CUDA repository without the keyring the keyring package installs:
/// apt then stops with "Conflicting values set for option Signed-By" (the CUDA installation guide, "Handle
/// Conflicting Installation Methods"; NVIDIA container toolkit troubleshooting).
bool conflicting_cuda_source(std::string_view text, const std::string& keyring_path);
/// True when an apt source file is the graphics-drivers PPA.
bool graphics_drivers_ppa(std::string_view name, std::string_view text);
/// True when `apt-key list` shows NVIDIA's retired repository key 7fa2af80.
bool retired_nvidia_key(std::string_view apt_key_list);

/// The repository ids a dnf .repo file defines (its "[id]" section names), as `dnf repolist --all` lists them.
std::vector<std::string> repo_file_ids(std::string_view text);

/// What conflicting installation methods mean for the plan: refusals with the command that clears them, and the
/// fixes gpuenv makes itself (with a note each).
struct Conflicts {
  std::vector<report::Finding> refusals;
  std::vector<report::Finding> notes;
  std::vector<Step> fixes;
};
Conflicts conflicting_installs(const NodeFacts& node);

}  // namespace gpuenv::install
