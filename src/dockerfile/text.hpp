#pragma once
// Text helpers shared by the generator's sections: comments, quoting, RUN chains and the package-manager
// discipline (docs/dockerfile.md). Pure.

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// Where the framework goes inside the image.
inline constexpr const char* k_venv = "/opt/venv";
/// Where uv puts the Python it installs.
inline constexpr const char* k_python_dir = "/opt/python";

/// "12.8" of 12.8.1.
std::string major_minor(const util::Version& version);

/// "ubuntu22.04" -> "Ubuntu 22.04", "ubi9" -> "UBI 9", ...
std::string os_display(const std::string& image_os);

/// Text safe inside a one-line comment (line breaks become spaces).
std::string one_line(std::string_view text);

/// `text` as comment lines of at most 112 characters, broken at spaces.
std::string comment(std::string_view text);

/// A double-quoted LABEL value: backslash, quote and `$` (variable substitution) escaped, one line.
std::string quoted(std::string_view text);

/// Continuation lines for a RUN: " \\\n && " between commands.
std::string chain(const std::vector<std::string>& commands);

enum class PackageManager { apt, dnf, yum };

/// The package manager of the profile's image OS.
PackageManager package_manager(const profile::Profile& profile);

/// The commands (for chain()) that install `packages` and clean the manager's caches in the same layer:
/// apt without recommends, dnf without weak dependencies or docs, yum without docs.
std::vector<std::string> install_commands(PackageManager manager, const std::vector<std::string>& packages);

/// How logical_lines() treats `#` and blank lines.
enum class CommentRule {
  dockerfile,  ///< a line whose first non-blank character is `#` is dropped, also inside a continuation; so is a
               ///< blank line (Docker's parser skips both without ending the continuation)
  pip,         ///< `#` at the start or after whitespace ends the line (pip's requirement files); a blank line ends a
               ///< continuation
};

/// One logical line: its `\` continuations joined by single spaces, and the number of the line it starts on.
struct LogicalLine {
  std::string text;
  std::size_t line = 0;
};

/// The logical lines of a Dockerfile or a pip requirement file, comments removed per `rule`; never empty ones.
std::vector<LogicalLine> logical_lines(std::string_view text, CommentRule rule);

}  // namespace gpuenv::dockerfile
