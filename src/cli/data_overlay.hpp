#pragma once
// The data overlay as cli finds it: every table gpuenv reads, the directories overlay files come from, and the
// reading of those files through System (docs/knowledge-base.md "Data overlay").

#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::cli {

/// The system-wide overlay directory. It is read from the machine gpuenv runs on, also under `doctor --root`: an
/// overlay configures gpuenv, not the tree it inspects.
inline constexpr const char* k_system_overlay_dir = "/etc/gpuenv/data.d";
/// The environment variable naming an overlay directory.
inline constexpr const char* k_overlay_env = "GPUENV_DATA_DIR";

/// Every data table of every module, in a stable order.
std::vector<util::DataTable> all_data_tables();

/// Reads the *.toml files of `directory` (by name, through `system`) as overlay files. A file not named after a
/// table in `tables`, or an unreadable file, is an input Error naming it and the fix.
util::Expected<util::Overlay> read_overlay_directory(system::System& system, const std::string& directory,
                                                     const std::vector<util::DataTable>& tables);

/// The overlay of this run, lowest precedence first: /etc/gpuenv/data.d (when it exists), then $GPUENV_DATA_DIR,
/// then `data_dir` (--data-dir; "" for none). A named directory that does not exist is an input Error.
util::Expected<util::Overlay> find_overlay(system::System& system, const std::string& data_dir);

/// Parses every table with `overlay` merged, under each table's strict schema; the first problem as an Error
/// naming the overlay file and line.
util::Expected<util::Ok> check_overlay(const util::Overlay& overlay);

}  // namespace gpuenv::cli
