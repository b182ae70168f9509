#pragma once
// The data tables gpuenv ships (data/**/*.toml, compiled in) and the overlay files that extend them: one mechanism
// for every module's table, so a fleet team can add or replace rows between releases (docs/knowledge-base.md).

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "util/embedded_file.hpp"
#include "util/expected.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::util {

/// One table a module reads: its file name ("cuda.toml"), the embedded text and how its rows are keyed. A
/// top-level [table] (not an array) is keyed by itself: an overlay's keys replace the embedded ones one by one.
struct DataTable {
  std::string_view name;
  EmbeddedFile embedded;
  std::vector<RowKey> keys;
};

/// One overlay file: the table it extends (its file name), where it was read from, and its text.
struct OverlayFile {
  std::string table;
  std::string path;
  std::string text;
};

/// Overlay files in the order they apply, lowest precedence first (/etc, then $GPUENV_DATA_DIR, then --data-dir).
using Overlay = std::vector<OverlayFile>;

/// Sets the overlay every later read of a built-in table merges. cli calls it once, before any table is read
/// (builtin_table parses each table once): a call after a read is a bug, asserted.
void install_overlay(Overlay overlay);
/// The overlay install_overlay set (empty until then).
const Overlay& installed_overlay();

namespace detail {
/// Marks that a built-in table was read (install_overlay asserts none was).
void note_builtin_table_read();
}  // namespace detail

/// The built-in table `Load` makes of the installed overlay (`Load`: `Expected<T>(const Overlay&)`), parsed at the
/// first call and kept for the process. The one cache of every module's table; a table that does not parse keeps
/// its Error for every caller.
template <auto Load>
auto builtin_table() {
  using Table = typename std::invoke_result_t<decltype(Load), const Overlay&>::value_type;
  static const Expected<Table> table = [] {
    detail::note_builtin_table_read();
    return Load(installed_overlay());
  }();
  return table ? Expected<const Table*>(&table.value()) : Expected<const Table*>(table.error());
}

/// Parses `table`'s embedded text and merges each file of `overlay` named after it, in order. Rows from an
/// overlay keep their file and line (TomlRow::origin); an overlay that is not TOML is an input Error
/// "<path>:<line>: ...".
Expected<TomlFile> read_data_table(const DataTable& table, const Overlay& overlay);

/// The table named `name` among `tables`, or nullptr.
const DataTable* find_table(const std::vector<DataTable>& tables, std::string_view name);

}  // namespace gpuenv::util
