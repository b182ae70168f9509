#pragma once
// The real file readers behind RealSystem (bounded_read.cpp, root_path.cpp): internal to the system module.

#include <string>

#include "system/system.hpp"

namespace gpuenv::system {

/// Reads `full_path` (shown to the user as `shown_path`) within `limit`: opened non-blocking, refused unless a
/// regular file, never more than the cap read into memory. `no_follow`: refuse a symlink as the last component
/// (the caller resolved the path itself).
util::Expected<std::string> read_bounded(const std::string& full_path, const std::string& shown_path,
                                         const ReadLimit& limit, bool no_follow);

/// True for paths of the kernel's pseudo file systems (/proc, /sys), whose sizes stat does not report.
bool is_pseudo_file(const std::string& path);

/// `path` resolved inside `root` the way the kernel would resolve it with `root` as "/": each symlink followed with
/// absolute targets re-rooted, `..` stopping at the root, at most 40 links (ELOOP, as the kernel). The result is
/// `root` + a path free of symlinks, `.` and `..`, or the path up to the first missing component (which does not
/// exist either); an input Error on a loop.
util::Expected<std::string> resolve_in_root(const std::string& root, const std::string& path);

}  // namespace gpuenv::system
