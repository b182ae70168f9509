#pragma once
// The [mirrors] parts of a generated Dockerfile (docs/mirrors.md). Every location becomes a build argument whose
// default is the profile's mirror, so one file builds inside mainland China and, with --build-arg, outside it.
// Each function returns "" (or nullopt) for a profile without the mirror it renders, which keeps the output of a
// profile without [mirrors] byte-identical to what it was before mirrors existed.

#include <optional>
#include <string>

#include "profile/profile.hpp"

namespace gpuenv::dockerfile {

/// Build argument holding the registry (and path) the base image is pulled from.
inline constexpr const char* k_registry_arg = "GPUENV_REGISTRY";
/// Build argument holding the PyTorch wheel location.
inline constexpr const char* k_torch_wheels_arg = "GPUENV_TORCH_WHEELS";
/// Build arguments holding the apt mirrors an Ubuntu image's sources are rewritten to.
inline constexpr const char* k_distro_archive_arg = "GPUENV_DISTRO_ARCHIVE";
inline constexpr const char* k_cuda_repo_arg = "GPUENV_CUDA_REPO";
/// The Dockerfile frontend image the `# syntax=` line names (BuildKit pulls it before anything else).
inline constexpr const char* k_syntax_image = "docker/dockerfile:1";

/// One paragraph (no comment markers) naming the mirrors the file uses and the build arguments that undo them;
/// "" without [mirrors]. `torch_variant` is "" without PyTorch; `uses_uv` when uv installs Python.
std::string mirrors_note(const profile::Profile& profile, const std::string& torch_variant, bool uses_uv);

/// The global `ARG GPUENV_REGISTRY=<registry>` line before the first FROM; "" without [mirrors] registry.
std::string registry_arg(const profile::Profile& profile);
/// The base image as FROM names it: "${GPUENV_REGISTRY}/nvidia/cuda:<tag>" with a registry mirror,
/// "nvidia/cuda:<tag>" without.
std::string from_reference(const profile::Profile& profile, const std::string& tag);

/// The first line: `# syntax=docker/dockerfile:1`, behind [mirrors] registry (it comes from Docker Hub too) and
/// pinned by `digest` ("sha256:...") when given.
std::string syntax_line(const profile::Profile& profile, const std::string& digest);
/// How FROM names a helper image from Docker Hub (the curl image): behind [mirrors] registry
/// (`${GPUENV_REGISTRY}/<image>`) and pinned by `digest` when given. Images from other registries
/// (ghcr.io/astral-sh/uv) take only the digest: use digest_suffix().
std::string hub_image_reference(const profile::Profile& profile, const std::string& image, const std::string& digest);
/// "@<digest>", or "" for no digest.
std::string digest_suffix(const std::string& digest);

/// For an apt image with [mirrors] distro_archive or cuda_repo: the ARG lines holding them and the command (for
/// chain(), before apt-get update) that rewrites the image's apt sources to them; {"", ""} otherwise. The rewrite
/// stays in the image, so derived images use the mirrors too.
struct AptMirrors {
  std::string arg_lines;
  std::string command;
};
AptMirrors apt_mirrors(const profile::Profile& profile);

/// ARG lines pointing pip (PIP_INDEX_URL) and, when `uses_uv`, uv (UV_DEFAULT_INDEX, UV_PYTHON_INSTALL_MIRROR) at
/// the mirrors, with a comment; "" when neither [mirrors] pypi nor (with uv) python_downloads is set.
std::string python_source_args(const profile::Profile& profile, bool uses_uv);

/// How the PyTorch wheels come from [mirrors] pytorch.
struct TorchMirror {
  std::string arg_line;  ///< "ARG GPUENV_TORCH_WHEELS=<url>\n"
  std::string options;   ///< pip options: --find-links "${GPUENV_TORCH_WHEELS}", --index-url ..., ...
  std::string how;       ///< a phrase for the comment: "from the mirror's flat listing ... (--find-links ...)"
};

/// The mirror source of `variant`'s wheels given the release's upstream install style (the knowledge base's
/// `install`: index-url, extra-index-url or find-links); nullopt without [mirrors] pytorch.
std::optional<TorchMirror> torch_mirror(const profile::Profile& profile, const std::string& variant,
                                        const std::string& upstream_install);

}  // namespace gpuenv::dockerfile
