#pragma once
// Helpers shared by the Dockerfile tests (header-only; tests/dockerfile/*_test.cpp include it).

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "dockerfile/doctor_stage.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile/lint.hpp"
#include "profile/fields.hpp"
#include "profile/profile.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "util/strings.hpp"

namespace gpuenv::testing::dockerfile_tests {

using gpuenv::testing::read_text;

inline const compat::KnowledgeBase& kb() {
  auto loaded = compat::builtin_knowledge_base();
  REQUIRE(loaded.has_value());
  return **loaded;
}

inline const gpuenv::dockerfile::Data& data() {
  auto loaded = gpuenv::dockerfile::builtin_data();
  INFO((loaded ? std::string() : loaded.error().message));
  REQUIRE(loaded.has_value());
  return **loaded;
}

/// A profile built field by field (through the schema's own setter, so values are validated).
inline profile::Profile make_profile(const std::vector<std::pair<std::string, std::string>>& fields) {
  profile::Profile p;
  p.name = "test-profile";
  for (const auto& [key, value] : fields) {
    auto set = profile::set_field(p, key, value);
    INFO(key << "=" << value);
    REQUIRE(set.has_value());
  }
  return p;
}

/// `text` with its comment lines joined: a wrapped comment's words ("# a b\n# c") read as one line ("# a b c").
inline std::string unwrapped(const std::string& text) {
  std::string out = text;
  for (std::size_t at = out.find("\n# "); at != std::string::npos; at = out.find("\n# ", at)) out.replace(at, 3, " ");
  return out;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  REQUIRE(gpuenv::testing::write_text(path, text));
}

/// Runs the binary from the source tree, so relative profile paths (and the "Regenerate with" line that
/// repeats them) are the same as when scripts/regen-dockerfiles runs from the repository root.
inline system::CommandResult run_in_source(const std::vector<std::string>& args) {
  char previous[4096];
  REQUIRE(::getcwd(previous, sizeof previous) != nullptr);
  REQUIRE(::chdir(GPUENV_SOURCE_DIR) == 0);
  system::CommandResult result = run_gpuenv(args);
  REQUIRE(::chdir(previous) == 0);
  return result;
}

using gpuenv::testing::TempDir;

/// Sorted names of regular files in `dir` ending in `suffix`.
inline std::vector<std::string> files_in(const std::filesystem::path& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && util::ends_with(name, suffix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Every nvidia/cuda tag the knowledge base says NVIDIA published.
inline std::set<std::string> published_tags() {
  std::set<std::string> out;
  for (const compat::CudaImage& image : kb().images) {
    for (const std::string& os : image.os) {
      for (const char* flavor : {"base", "runtime", "devel"}) out.insert(image.cuda.str() + "-" + flavor + "-" + os);
    }
    if (image.cudnn_token.empty()) continue;
    for (const std::string& os : image.cudnn_os) {
      for (const char* flavor : {"runtime", "devel"})
        out.insert(image.cuda.str() + "-" + image.cudnn_token + "-" + flavor + "-" + os);
    }
  }
  return out;
}

/// The checks dockerfile-utils cannot make: structure (lint.hpp) and every FROM nvidia/cuda tag published.
inline std::vector<std::string> own_problems(const std::string& text) {
  // A final `USER root` is allowed only where the profile asked for it (the generator says so in a comment).
  const bool root_asked = util::contains(text, "# [image] user = \"root\"");
  std::vector<std::string> problems =
      gpuenv::dockerfile::structural_problems(text, {data().uv.image, data().curl.image}, root_asked);
  static const std::set<std::string> tags = published_tags();
  for (const gpuenv::dockerfile::Instruction& in : gpuenv::dockerfile::parse_instructions(text)) {
    if (in.keyword != "FROM" || !util::starts_with(in.arguments, "nvidia/cuda:")) continue;
    // The tag ends at " AS name" or at "@sha256:..." (a base pinned by digest).
    const std::string tag = in.arguments.substr(12, in.arguments.find_first_of(" @") == std::string::npos
                                                        ? std::string::npos
                                                        : in.arguments.find_first_of(" @") - 12);
    if (!tags.contains(tag))
      problems.push_back("line " + std::to_string(in.line) + ": nvidia/cuda:" + tag + " is not a published tag");
  }
  if (!gpuenv::dockerfile::is_syntax_directive(text.substr(0, text.find('\n'))))
    problems.push_back("line 1: no `# syntax=docker/dockerfile:1` directive");
  return problems;
}

}  // namespace gpuenv::testing::dockerfile_tests
