#pragma once
// What every child process of gpuenv gets (docs/security.md, "Child processes"): a program found in absolute,
// system directories only, and an environment reduced to a short allowlist. Pure functions; RealSystem::run uses
// them, tests check them directly.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuenv::system {

/// The directories searched after PATH's own, so that a tool is found under cron or slurmd, which start gpuenv
/// with no PATH or a short one.
inline constexpr std::string_view k_system_directories[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                                            "/usr/bin",        "/sbin",          "/bin"};

/// Whether programs may be taken from a directory (root's: only one no one else can add a program to); an empty
/// function accepts every directory.
using DirectoryCheck = std::function<bool(const std::string& directory)>;

/// The directories a program name is looked up in: the absolute entries of `path` (the variable named exactly
/// `PATH`; nullopt when unset) in order, empty and relative entries skipped (they name the working directory), then
/// each of k_system_directories not listed yet; of those, only the ones `searchable` accepts.
std::vector<std::string> program_search_path(const std::optional<std::string>& path,
                                             const DirectoryCheck& searchable = {});

/// An environment as NAME=value pairs, in order.
using EnvironmentList = std::vector<std::pair<std::string, std::string>>;

/// The environment of every child: PATH (the search path above), HOME (`home`, the running user's home from the
/// password database, so no dotfile of another user is read), and from `parent` only the proxies, the GPU selection
/// (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), SLURM_CONF, LANG and LC_* when they name a
/// locale (not a path to locale files), and LD_LIBRARY_PATH unless `root`. Everything else (PYTHONPATH, LD_PRELOAD,
/// APT_CONFIG, CURL_HOME, SSL_CERT_FILE, BASH_ENV, LOCPATH, ...) is dropped. PATH holds the directories
/// `searchable` accepts, so a child that looks up programs itself (env, a script) finds the same ones.
EnvironmentList child_environment(const EnvironmentList& parent, const std::string& home, bool root,
                                  const DirectoryCheck& searchable = {});

/// This process's environment, parsed from `environ` (names compared exactly, as execve passes them).
EnvironmentList process_environment();

}  // namespace gpuenv::system
