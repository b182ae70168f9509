#include "dockerfile/sources.hpp"

#include <vector>

#include "compat/mirrors.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

std::string variable(const char* name) { return std::string("\"${") + name + "}\""; }

}  // namespace

std::string mirrors_note(const profile::Profile& profile, const std::string& torch_variant, bool uses_uv) {
  const profile::Mirrors& m = profile.mirrors;
  std::vector<std::string> used;
  std::vector<std::string> undo;
  if (!m.registry.empty()) {
    used.push_back("the base image and the Dockerfile frontend (the syntax line) from " + m.registry);
    undo.push_back(std::string("--build-arg ") + k_registry_arg + "=" + std::string(compat::upstream::registry));
    undo.push_back(std::string("--build-arg BUILDKIT_SYNTAX=") + k_syntax_image);
  }
  if (!m.pypi.empty() && !profile.framework_name.empty()) {
    used.push_back("Python packages from " + m.pypi);
    undo.push_back("--build-arg PIP_INDEX_URL=" + std::string(compat::upstream::pypi));
  }
  std::string torch_remark;
  if (!m.pytorch.empty() && !torch_variant.empty()) {
    const compat::WheelSource wheels = compat::torch_wheels(profile, torch_variant);
    const bool flat = wheels.style == compat::WheelStyle::find_links;
    used.push_back("the " + torch_variant + " wheels from " + wheels.url + (flat ? " (a flat listing)" : ""));
    if (flat) {
      torch_remark = std::string(" ") + k_torch_wheels_arg +
                     " must name another flat listing of wheel files (pip --find-links), or regenerate without "
                     "[mirrors] pytorch.";
    } else {
      undo.push_back(std::string("--build-arg ") + k_torch_wheels_arg + "=" +
                     compat::torch_wheels(profile::Profile{}, torch_variant).url);
    }
  }
  if (!m.distro_archive.empty() && profile.os_distro == "ubuntu") {
    used.push_back("apt packages from " + compat::distro_archive_mirror(profile));
    undo.push_back(std::string("--build-arg ") + k_distro_archive_arg + "=" +
                   std::string(compat::upstream::ubuntu_archive));
  }
  if (!m.cuda_repo.empty()) {
    used.push_back("NVIDIA's CUDA apt repository from " + compat::cuda_repo_base(profile));
    undo.push_back(std::string("--build-arg ") + k_cuda_repo_arg + "=" + std::string(compat::upstream::cuda_repo));
  }
  if (!m.python_downloads.empty() && uses_uv) {
    used.push_back("uv's Python builds from " + compat::python_downloads_mirror(profile));
    undo.push_back("--build-arg UV_PYTHON_INSTALL_MIRROR=" + std::string(compat::upstream::python_downloads));
  }
  if (used.empty()) return {};
  std::string out = "Mirrors ([mirrors], docs/mirrors.md): " + util::join(used, "; ") + ".";
  if (!undo.empty()) out += " Upstream instead: " + util::join(undo, " ") + ".";
  return out + torch_remark;
}

std::string registry_arg(const profile::Profile& profile) {
  if (profile.mirrors.registry.empty()) return {};
  return std::string("ARG ") + k_registry_arg + "=" + profile.mirrors.registry + "\n";
}

std::string from_reference(const profile::Profile& profile, const std::string& tag) {
  if (profile.mirrors.registry.empty()) return "nvidia/cuda:" + tag;
  return std::string("${") + k_registry_arg + "}/nvidia/cuda:" + tag;
}

std::string syntax_line(const profile::Profile& profile, const std::string& digest) {
  // The directive is read before any ARG: the mirror is written out (BUILDKIT_SYNTAX overrides it).
  const std::string registry = profile.mirrors.registry.empty() ? std::string() : profile.mirrors.registry + "/";
  return "# syntax=" + registry + k_syntax_image + digest_suffix(digest) + "\n";
}

std::string hub_image_reference(const profile::Profile& profile, const std::string& image, const std::string& digest) {
  const std::string registry =
      profile.mirrors.registry.empty() ? std::string() : std::string("${") + k_registry_arg + "}/";
  return registry + image + digest_suffix(digest);
}

std::string digest_suffix(const std::string& digest) { return digest.empty() ? std::string() : "@" + digest; }

AptMirrors apt_mirrors(const profile::Profile& profile) {
  const profile::Mirrors& m = profile.mirrors;
  const bool archive = !m.distro_archive.empty() && profile.os_distro == "ubuntu";
  if (!archive && m.cuda_repo.empty()) return {};
  AptMirrors out;
  std::string expressions;
  if (archive) {
    out.arg_lines += std::string("ARG ") + k_distro_archive_arg + "=" + compat::distro_archive_mirror(profile) + "\n";
    const std::string to = std::string("${") + k_distro_archive_arg + "}";
    for (std::string_view from : {compat::upstream::ubuntu_archive, compat::upstream::ubuntu_security})
      expressions += " -e \"s|" + std::string(from) + "|" + to + "|g\"";
    // arm64 images name ports.ubuntu.com; mirrors serve it beside the archive as <mirror>-ports.
    expressions += " -e \"s|" + std::string(compat::upstream::ubuntu_ports) + "|" + to + "-ports|g\"";
  }
  if (!m.cuda_repo.empty()) {
    out.arg_lines += std::string("ARG ") + k_cuda_repo_arg + "=" + compat::cuda_repo_base(profile) + "\n";
    expressions += " -e \"s|" + std::string(compat::upstream::cuda_repo) + "|${" + k_cuda_repo_arg + "}|g\"";
  }
  // sources.list and deb822 .sources (Ubuntu 24.04), and the cuda-keyring's cuda-<os>-<arch>.list.
  out.command = "find /etc/apt \\( -name sources.list -o -name '*.sources' -o -name 'cuda*.list' \\) -exec sed -i" +
                expressions + " {} +";
  return out;
}

std::string python_source_args(const profile::Profile& profile, bool uses_uv) {
  const profile::Mirrors& m = profile.mirrors;
  const bool python_downloads = uses_uv && !m.python_downloads.empty();
  if (m.pypi.empty() && !python_downloads) return {};
  std::string out;
  if (!m.pypi.empty()) {
    out += std::string("# PyPI mirror for every package but PyTorch's wheels: pip reads PIP_INDEX_URL") +
           (uses_uv ? ", uv UV_DEFAULT_INDEX" : "") + ".\n";
    out += "ARG PIP_INDEX_URL=" + m.pypi + "\n";
    if (uses_uv) out += "ARG UV_DEFAULT_INDEX=${PIP_INDEX_URL}\n";
  }
  if (python_downloads) {
    out += "# uv downloads python-build-standalone from this mirror.\n";
    out += "ARG UV_PYTHON_INSTALL_MIRROR=" + compat::python_downloads_mirror(profile) + "\n";
  }
  return out;
}

std::optional<TorchMirror> torch_mirror(const profile::Profile& profile, const std::string& variant,
                                        const std::string& upstream_install) {
  const compat::WheelSource wheels = compat::torch_wheels(profile, variant);
  if (!wheels.mirrored) return std::nullopt;
  TorchMirror out;
  out.arg_line = std::string("ARG ") + k_torch_wheels_arg + "=" + wheels.url + "\n";
  const std::string location = variable(k_torch_wheels_arg);
  const std::string rest = compat::pypi_mirrored(profile) ? "the PyPI mirror" : "PyPI";
  if (wheels.style == compat::WheelStyle::find_links) {
    out.options = "--find-links " + location;
    out.how = "from the mirror's flat listing of " + variant + " wheel files (--find-links " + k_torch_wheels_arg +
              "; a +" + variant + " build outranks PyPI's plain release), dependencies from " + rest;
  } else if (upstream_install == "index-url") {
    out.options = "--index-url " + location;
    if (compat::pypi_mirrored(profile)) out.options += " --extra-index-url " + variable("PIP_INDEX_URL");
    out.how = "from the mirror's " + variant + " wheel index (--index-url " + k_torch_wheels_arg + ")" +
              (compat::pypi_mirrored(profile) ? ", with the PyPI mirror for what it lacks (--extra-index-url)" : "");
  } else {
    out.options = "--extra-index-url " + location;
    out.how = "+" + variant + " wheels from the mirror's " + variant + " index (--extra-index-url " +
              k_torch_wheels_arg + ") added to " + rest;
  }
  return out;
}

}  // namespace gpuenv::dockerfile
