#pragma once
// The parts of a generated Dockerfile that make it shippable rather than merely buildable: the compiler
// torch.compile needs, the OpenShift-friendly numeric user, the loader path that lets the wheels' libraries win,
// the check that proves it, and torch.compile for any uid (docs/dockerfile.md). Pure text builders.

#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "dockerfile/dockerfile.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::dockerfile {

/// The numeric uid of the default user; its primary group is 0 (root), as OpenShift's arbitrary uids expect.
inline constexpr const char* k_user_id = "10001";
inline constexpr const char* k_home = "/home/gpuenv";
/// The uid the build-time torch.compile check runs as: it has no /etc/passwd entry and group 0, like the uids
/// OpenShift's restricted SCCs assign (each namespace gets a block such as 1000650000/10000).
inline constexpr const char* k_unlisted_uid = "1000650000";
/// torch.compile's caches, group-writable directories in the home (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR).
inline constexpr const char* k_inductor_cache = "/home/gpuenv/.cache/torchinductor";
inline constexpr const char* k_triton_cache = "/home/gpuenv/.cache/triton";

/// `dockerfile.duplicate_libraries` (warn): a framework that brings its own CUDA libraries on an image that carries
/// them too (runtime, or a cuDNN image); nothing otherwise.
std::optional<report::Finding> duplicate_libraries(const profile::Profile& profile, const compat::KnowledgeBase& kb);

/// Whether the profile's framework has torch.compile: PyTorch >= 2.0.
bool has_torch_compile(const profile::Profile& profile);
/// The data row saying this PyTorch's torch.compile refuses the profile's Python (torch 2.9 on 3.14), or null.
const TorchCompileGap* compile_gap(const profile::Profile& profile, const Data& data);
/// `dockerfile.compile` (warn) when compile_gap() applies: the image gets no compiler; nothing otherwise.
std::optional<report::Finding> compile_finding(const profile::Profile& profile, const Data& data);

/// Whether the image gets a C and C++ compiler and Python headers: PyTorch >= 2.0 whose torch.compile runs on the
/// profile's Python (Inductor compiles C++ kernels on the CPU, Triton a C launcher), unless `[image] compiler =
/// false`.
bool wants_compiler(const profile::Profile& profile, const Data& data);

/// OS packages for wants_compiler(): gcc, g++, the C library headers and, for the OS Python, its headers (uv's
/// python-build-standalone builds carry their own include/). `apt`: Debian-family names, else RHEL-family names.
std::vector<std::string> compiler_packages(const PythonPlan& plan, bool apt);

/// Whether `[image] rdma = true`.
bool wants_rdma(const profile::Profile& profile);
/// The InfiniBand/RoCE user-space libraries NCCL opens for its IB transport (libibverbs with its providers,
/// librdmacm); without them NCCL falls back to TCP sockets.
std::vector<std::string> rdma_packages(bool apt);

/// Whether the final image runs as root (`[image] user = "root"`, for images meant as bases).
bool stays_root(const profile::Profile& profile);

/// The comment explaining the non-root user; empty for stays_root().
std::string user_comment(const profile::Profile& profile);
/// The commands (for chain()) that create the non-root user (uid 10001, gid 0) with a group-writable home and, with
/// torch.compile, its cache directories; empty for stays_root(). They join the system-packages RUN: the user never
/// changes, so it costs no cache.
std::vector<std::string> user_commands(const profile::Profile& profile);

/// The venv's permissions, set in the install layer: read-only to the runtime uid (`chmod -R g=rX`), or
/// group-writable (`chmod -R g=u`) with `[image] writable_venv = true`.
std::string venv_permissions(const profile::Profile& profile);

/// The ENV that lets any uid in group 0 run the image (HOME, USER, LOGNAME and, with torch.compile, its cache
/// directories) with its comment; empty for stays_root().
std::string runtime_identity(const profile::Profile& profile);
/// The build-time torch.compile check, run as k_unlisted_uid (USER and RUN); empty when the image has no compiler or
/// stays root.
std::string compile_check(const profile::Profile& profile, const Data& data);

/// The final USER and WORKDIR lines.
std::string final_user(const profile::Profile& profile);

/// For a framework that brings its own CUDA libraries: an ENV that keeps only the driver directories on
/// LD_LIBRARY_PATH, so no /usr/local/cuda/lib64 copy is searched before the wheels' RUNPATH. Empty otherwise.
std::string loader_path(bool framework_brings_libraries);

/// A python -c statement list (no quotes) asserting that the process loaded cuBLAS and cuDNN, and only from
/// `venv` (the wheels): it fails on a CPU-only build and on a library shadowed from elsewhere.
std::string wheel_library_assert(const std::string& venv);

}  // namespace gpuenv::dockerfile
