#pragma once
// Shared helpers of the fleet tests: a temporary directory, doctor's arguments for a fixture host tree, and running
// a real tool (promtool, slurmctld, ansible-playbook, node) through the real System.

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/fake_system.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"

namespace gpuenv::testing::fleet {

using gpuenv::testing::read_text;

using gpuenv::testing::TempDir;

/// `doctor --root <tree> [--nvidia-smi-xml <tree>.nvidia-smi.xml] extra...` for a tree under tests/fixtures/hosts.
inline std::vector<std::string> doctor_on_tree(const std::string& tree, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"doctor", "--root", fixture_path("hosts/" + tree)};
  const std::string xml = fixture_path("hosts/" + tree + ".nvidia-smi.xml");
  if (std::filesystem::exists(xml)) {
    args.push_back("--nvidia-smi-xml");
    args.push_back(xml);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// Runs a tool on this machine (argv, no shell).
inline system::CommandResult run_tool(const std::vector<std::string>& argv,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  return system::make_real_system()->run(argv, timeout);
}

/// Whether `program` is on PATH.
inline bool have_tool(const std::string& program) {
  return !run_tool({"sh", "-c", "command -v \"$1\"", "sh", program}, std::chrono::seconds(10)).out.empty();
}

/// promtool's verdict on a metrics file: "" when it accepts it with no lint message, else what it said.
inline std::string promtool_problems(const std::filesystem::path& file) {
  // promtool reads the exposition from standard input only.
  const auto run = run_tool({"sh", "-c", "promtool check metrics < \"$1\"", "sh", file.string()});
  if (run.exit_code == 0 && run.out.empty() && run.err.empty()) return "";
  return "exit " + std::to_string(run.exit_code) + ": " + run.out + run.err;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  REQUIRE(gpuenv::testing::write_text(path, text));
}

/// The names of the files in `dir`, hidden ones included.
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace gpuenv::testing::fleet
