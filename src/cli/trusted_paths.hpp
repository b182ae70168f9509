#pragma once
// Files gpuenv loads or trusts because a variable or a flag named them (docs/security.md, "Named files"): a library
// (GPUENV_NVML_LIBRARY, GPUENV_CUDA_LIBRARY, GPUENV_CUBLAS_LIBRARY), a data overlay directory ($GPUENV_DATA_DIR,
// --data-dir, /etc/gpuenv/data.d) or the profile file that install and doctor act on. As root, such a file must be
// one that only root can change.

#include <string>

#include "profile/profile.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::cli {

/// Ok when only root and the user running gpuenv can change `path` (System::trust_problem); else an input Error
/// "<named_by>: <why>" with the fix. `named_by` says where the path came from: "GPUENV_NVML_LIBRARY=/x/lib.so".
util::Expected<util::Ok> require_trusted(system::System& system, const std::string& path, const std::string& named_by);

/// The library the variable `name` names, or `fallback` when it is unset or empty. A value with a slash is a path
/// that must pass require_trusted; a bare soname is left to the dynamic loader's own search.
util::Expected<std::string> library_from_environment(system::System& system, const std::string& name,
                                                     const std::string& fallback);

/// The profile `name_or_path` names (profile::load_profile); a file must pass require_trusted first, for install
/// and doctor: its fields choose root's package sources and the verdict that drains the node. `named_by` is the
/// argument's name for a refusal ("--profile").
util::Expected<profile::ProfileDocument> load_trusted_profile(system::System& system, const std::string& name_or_path,
                                                              const std::string& named_by);

}  // namespace gpuenv::cli
