// Pure readers of node text: dpkg status with Depends, the kernel's flavour, and the conflicting installation
// methods of the CUDA installation guide (https://docs.nvidia.com/cuda/cuda-installation-guide-linux/, "Handle
// Conflicting Installation Methods": a runfile driver is removed with /usr/bin/nvidia-uninstall; "Remove Outdated
// Signing Key": sudo apt-key del 7fa2af80).

#include "install/node_text.hpp"

#include <regex>
#include <string_view>

#include "compat/mirrors.hpp"
#include "install/choice.hpp"
#include "install/planner.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_guide =
    "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ (Handle Conflicting "
    "Installation Methods)";
/// NVIDIA's CUDA repository without its scheme: an apt source may name it over http or https.
constexpr std::string_view k_cuda_repository = compat::upstream::cuda_repo.substr(std::string_view("https://").size());

bool is_kernel_image(const std::string& name) {
  static const std::regex versioned("linux-image-(unsigned-)?[0-9]+\\.[0-9]+\\.[0-9]+-[0-9].*");
  return std::regex_match(name, versioned);
}

bool hwe_capable(const std::string& flavour) {
  return flavour == "generic" || flavour == "generic-64k" || flavour == "lowlatency" || flavour == "lowlatency-64k";
}

}  // namespace

std::vector<NodePackage> parse_dpkg_packages(std::string_view status) {
  std::vector<NodePackage> out;
  NodePackage current;
  bool installed = false;
  std::string* continued = nullptr;
  const auto flush = [&] {
    if (!current.name.empty() && installed) out.push_back(current);
    current = {};
    installed = false;
    continued = nullptr;
  };
  for (std::string_view line : util::split_lines(status)) {
    if (util::trim(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (continued != nullptr) *continued += " " + std::string(util::trim(line));
      continue;
    }
    continued = nullptr;
    if (util::starts_with(line, "Package:")) current.name = std::string(util::trim(line.substr(8)));
    if (util::starts_with(line, "Version:")) current.version = std::string(util::trim(line.substr(8)));
    if (util::starts_with(line, "Status:")) {
      installed = util::ends_with(util::trim(line), " installed");
      current.held = util::starts_with(util::trim(line.substr(7)), "hold ");
    }
    if (util::starts_with(line, "Depends:")) {
      current.depends = std::string(util::trim(line.substr(8)));
      continued = &current.depends;
    }
  }
  flush();
  return out;
}

std::string kernel_flavour(const std::string& kernel_release) {
  static const std::regex debian_style("[0-9]+\\.[0-9]+\\.[0-9]+-[0-9]+-([a-z0-9][a-z0-9+-]*)");
  std::smatch match;
  return std::regex_match(kernel_release, match, debian_style) ? match[1].str() : "";
}

std::string kernel_meta_flavour(const NodeFacts& node, const TargetRow& target) {
  if (node.kernel_release.empty() || target.manager != "apt") return "";
  if (node.installed) {
    // ubuntu-drivers' kerneldetection: the installed linux-image-<meta> whose Depends names the running image.
    for (const NodePackage& package : *node.installed) {
      if (!util::starts_with(package.name, "linux-image-") || is_kernel_image(package.name) ||
          package.name.find("extra") != std::string::npos)
        continue;
      const std::string depends = " " + package.depends + ",";
      for (const std::string prefix : {"linux-image-", "linux-image-unsigned-"}) {
        const std::string image = prefix + node.kernel_release;
        if (depends.find(" " + image + " ") != std::string::npos ||
            depends.find(" " + image + ",") != std::string::npos) {
          const std::string meta = package.name.substr(12);
          return meta == "virtual" ? "generic" : meta;  // ubuntu-drivers: candidate_suffix "virtual" -> "generic"
        }
      }
    }
  }
  const std::string flavour = kernel_flavour(node.kernel_release);
  if (flavour.empty() || target.distro != "ubuntu" || target.ga_kernel.empty() || !hwe_capable(flavour)) return flavour;
  const auto running = util::Version::parse(node.kernel_release.substr(0, node.kernel_release.find('-')));
  const auto ga = util::Version::parse(target.ga_kernel);
  const bool newer =
      running && ga && util::Version({running->major(), running->minor()}) > util::Version({ga->major(), ga->minor()});
  return newer ? flavour + "-hwe-" + target.version : flavour;
}

bool conflicting_cuda_source(std::string_view text, const std::string& keyring_path) {
  for (std::string_view line : util::split_lines(text)) {
    const std::string_view trimmed = util::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (trimmed.find(k_cuda_repository) == std::string_view::npos) continue;
    // One-line form: deb [signed-by=...] URL /; deb822 form: a Signed-By: field in the same stanza is not
    // checked line by line, so a stanza naming the repository counts unless the file names the keyring.
    if (text.find("signed-by=" + keyring_path) == std::string_view::npos &&
        text.find("Signed-By: " + keyring_path) == std::string_view::npos)
      return true;
  }
  return false;
}

bool graphics_drivers_ppa(std::string_view name, std::string_view text) {
  if (name.find("graphics-drivers") != std::string_view::npos) return true;
  for (std::string_view line : util::split_lines(text)) {
    const std::string_view trimmed = util::trim(line);
    if (!trimmed.empty() && trimmed.front() != '#' && trimmed.find("/graphics-drivers/") != std::string_view::npos)
      return true;
  }
  return false;
}

bool retired_nvidia_key(std::string_view apt_key_list) {
  // apt-key list prints fingerprints in groups of four: "... F60F 4B3D 7FA2 AF80".
  return apt_key_list.find("7FA2 AF80") != std::string_view::npos ||
         apt_key_list.find("7fa2af80") != std::string_view::npos;
}

Conflicts conflicting_installs(const NodeFacts& node) {
  Conflicts out;
  if (node.runfile_driver) {
    out.refusals.push_back(refusal("install.conflict.runfile",
                                   "a driver installed by NVIDIA's runfile is on the node (/usr/bin/nvidia-uninstall "
                                   "exists): a packaged driver would be installed over it",
                                   "run `/usr/bin/nvidia-uninstall --silent`, reboot, then re-run", k_guide));
  }
  for (const std::string& file : node.foreign_cuda_sources) {
    out.refusals.push_back(refusal("install.conflict.apt_source",
                                   file + " names NVIDIA's CUDA repository without the cuda-keyring key: apt stops "
                                          "with \"Conflicting values set for option Signed-By\"",
                                   "`rm " + file + "` (gpuenv writes the repository's source itself), then re-run",
                                   k_guide));
  }
  for (const std::string& file : node.graphics_drivers_ppa) {
    out.refusals.push_back(
        refusal("install.conflict.ppa",
                file + " is the graphics-drivers PPA: its driver packages replace the branch the "
                       "plan installs",
                "`add-apt-repository --remove ppa:graphics-drivers/ppa` (or `rm " + file + "`), then re-run", k_guide));
  }
  if (node.retired_key) {
    out.notes.push_back(warning("install.conflict.retired_key",
                                "NVIDIA's retired repository key 7fa2af80 is trusted by apt: gpuenv removes it "
                                "(`apt-key del 7fa2af80`)",
                                "",
                                "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ (Remove Outdated "
                                "Signing Key)"));
    Step step{"install.conflict.retired_key",
              "NVIDIA rotated its repository key in 2022: the retired key 7fa2af80 must not be trusted any more"};
    step.commands = {{"apt-key", "del", "7fa2af80"}};
    out.fixes.push_back(step);
  }
  return out;
}

std::vector<std::string> repo_file_ids(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : util::split_lines(text)) {
    line = util::trim(line);
    if (line.size() > 2 && line.front() == '[' && line.back() == ']') out.emplace_back(line.substr(1, line.size() - 2));
  }
  return out;
}

}  // namespace gpuenv::install
