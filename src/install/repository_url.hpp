#pragma once
// One validation for every source of a repository URL: install's --repo-url and --toolkit-repo-url, the
// GPUENV_CUDA_REPO_URL and GPUENV_TOOLKIT_REPO_URL variables, and the profile's [mirrors] (already checked by the
// same rule when the profile was read). A URL becomes a line of an apt source or a .repo file that root trusts.

#include <optional>
#include <string>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::install {

/// `url` as a repository base: an https URL gpuenv accepts for a mirror (profile::https_url_problem), or a local
/// file:/// directory (absolute, no `..`, plain characters only); a trailing `/` is dropped. A usage Error naming
/// `origin` ("--repo-url", "GPUENV_CUDA_REPO_URL") and the problem otherwise: nothing it rejects reaches a file.
util::Expected<std::string> checked_repository_url(const std::string& url, const std::string& origin);

/// For a local file: repository, which apt and dnf then trust as it is: the directory and every directory above
/// it must be owned by root, not writable by group or others, and not a symlink; an input Error naming the first
/// that is not. No check for other URLs.
std::optional<util::Error> check_local_repository(system::System& system, const std::string& url);

}  // namespace gpuenv::install
