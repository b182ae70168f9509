#pragma once
// The toml++ types behind TomlRow and TomlFile, shared by toml_rows.cpp and toml_merge.cpp only (util-private).

#include <toml++/toml.h>

#include <set>
#include <string>

#include "util/toml_rows.hpp"

namespace gpuenv::util {

struct TomlRow::Table {
  const toml::table& toml;
};

struct TomlFile::Parsed {
  toml::table root;
  std::set<std::string, std::less<>> overlay_paths;  ///< the paths merged in with TomlFile::merge

  /// The overlay path `node` was read from, or "" for a node of the built-in text.
  std::string overlay_path_of(const toml::node& node) const {
    const auto& path = node.source().path;
    return path && overlay_paths.contains(*path) ? *path : std::string();
  }
};

}  // namespace gpuenv::util
