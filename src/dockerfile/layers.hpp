#pragma once
// The parts of a generated Dockerfile that make it shippable rather than merely buildable: the compiler
// torch.compile needs, the OpenShift-friendly numeric user, the loader path that lets the wheels' libraries win,
// the check that proves it, and the --with-doctor stages (docs/dockerfile.md). Pure text builders.

#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "dockerfile/dockerfile.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::dockerfile {

/// The numeric uid of the default user; its primary group is 0 (root), as OpenShift's arbitrary uids expect.
inline constexpr const char* k_user_id = "10001";
inline constexpr const char* k_home = "/home/gpuenv";

/// `dockerfile.duplicate_libraries` (warn): a framework that brings its own CUDA libraries on an image that carries
/// them too (runtime, or a cuDNN image); nothing otherwise.
std::optional<report::Finding> duplicate_libraries(const profile::Profile& profile, const compat::KnowledgeBase& kb);

/// Whether the image gets gcc and Python headers: PyTorch >= 2.0 (torch.compile/Triton compile C at run time),
/// unless `[image] compiler = false`.
bool wants_compiler(const profile::Profile& profile);

/// OS packages for wants_compiler(): gcc, the C library headers and, for the OS Python, its headers (uv's
/// python-build-standalone builds carry their own include/). `apt`: Debian-family names, else RHEL-family names.
std::vector<std::string> compiler_packages(const PythonPlan& plan, bool apt);

/// Whether the final image runs as root (`[image] user = "root"`, for images meant as bases).
bool stays_root(const profile::Profile& profile);

/// The comment explaining the non-root user; empty for stays_root().
std::string user_comment(const profile::Profile& profile);
/// The commands (for chain()) that create the non-root user (uid 10001, gid 0) with a group-writable home;
/// empty for stays_root(). They join the system-packages RUN: the user never changes, so it costs no cache.
std::vector<std::string> user_commands(const profile::Profile& profile);

/// The final USER and WORKDIR lines.
std::string final_user(const profile::Profile& profile);

/// For a framework that brings its own CUDA libraries: an ENV that keeps only the driver directories on
/// LD_LIBRARY_PATH, so no /usr/local/cuda/lib64 copy is searched before the wheels' RUNPATH. Empty otherwise.
std::string loader_path(bool framework_brings_libraries);

/// A python -c statement list (no quotes) asserting that the process loaded cuBLAS and cuDNN, and only from
/// `venv` (the wheels): it fails on a CPU-only build and on a library shadowed from elsewhere.
std::string wheel_library_assert(const std::string& venv);

/// The global ARG (before the first FROM) that picks the --with-doctor binary's stage.
std::string doctor_global_arg();
/// The stages that provide the gpuenv binary for --with-doctor (before the image's FROM).
std::string doctor_stages();
/// The image of the download stage (an image the structural check must allow).
std::string doctor_download_image();
/// The final-stage lines that install the binary, prove it runs, and declare the HEALTHCHECK.
std::string doctor_install();

}  // namespace gpuenv::dockerfile
