#include "util/data_table.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>

namespace gpuenv::util {

namespace {

Overlay& overlay_slot() {
  static Overlay overlay;
  return overlay;
}

std::atomic<bool> g_table_read{false};

}  // namespace

void detail::note_builtin_table_read() { g_table_read = true; }

void install_overlay(Overlay overlay) {
  // A table read before this kept the overlay of its first read: this one would be ignored for it.
  assert(!g_table_read && "install_overlay after a built-in table was read");
  overlay_slot() = std::move(overlay);
}

const Overlay& installed_overlay() { return overlay_slot(); }

Expected<TomlFile> read_data_table(const DataTable& table, const Overlay& overlay) {
  auto file = TomlFile::parse(table.embedded.contents, std::string(table.embedded.name));
  if (!file) return file;
  for (const OverlayFile& extra : overlay) {
    if (extra.table != table.name) continue;
    GPUENV_TRY(file->merge(extra.text, extra.path, table.keys));
  }
  return file;
}

const DataTable* find_table(const std::vector<DataTable>& tables, std::string_view name) {
  const auto found = std::find_if(tables.begin(), tables.end(), [name](const DataTable& t) { return t.name == name; });
  return found == tables.end() ? nullptr : &*found;
}

}  // namespace gpuenv::util
