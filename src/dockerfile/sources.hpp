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

/// One paragraph (no comment markers) naming the mirrors the file uses and the build arguments that undo them;
/// "" without [mirrors]. `torch_variant` is "" without PyTorch; `uses_uv` when uv installs Python.
std::string mirrors_note(const profile::Profile& profile, const std::string& torch_variant, bool uses_uv);

/// The global `ARG GPUENV_REGISTRY=<registry>` line before the first FROM; "" without [mirrors] registry.
std::string registry_arg(const profile::Profile& profile);
/// The base image as FROM names it: "${GPUENV_REGISTRY}/nvidia/cuda:<tag>" with a registry mirror,
/// "nvidia/cuda:<tag>" without.
std::string from_reference(const profile::Profile& profile, const std::string& tag);

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
