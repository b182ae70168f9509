// Fuzz target: the strict reader of TOML data rows (util::TomlFile / TomlRow), which every data table and the data
// overlays go through, driven by a reader that asks each key for a type chosen from the key's name; and the Xid
// table parser built on it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"
#include "probe/xid.hpp"
#include "util/toml_rows.hpp"

namespace {

// Reads every key of `row` with one of TomlRow's typed reads (wrong types become the row's error, as in real data).
void read_every_key(gpuenv::util::TomlRow& row) {
  for (const std::string& key : row.unread_keys()) {
    switch (key.size() % 9) {
      case 0:
        (void)row.text(key);
        break;
      case 1:
        (void)row.optional_text(key);
        break;
      case 2:
        (void)row.one_of(key, {"verified", "unverified"});
        break;
      case 3:
        (void)row.texts(key);
        break;
      case 4:
        (void)row.version(key);
        break;
      case 5:
        (void)row.optional_version(key);
        break;
      case 6:
        (void)row.versions(key);
        break;
      case 7:
        (void)row.integer_in(key, -5, 1000, "within -5 to 1000");
        break;
      default:
        (void)row.boolean(key);
        (void)row.optional_number(key);
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  (void)gpuenv::probe::parse_xid_table(text);
  auto file = gpuenv::util::TomlFile::parse(text, "fuzz.toml");
  if (!file) return 0;
  // The first top-level key (none are allowed), read both as an array of rows and as a table.
  const auto name = file->unexpected_key({});
  if (!name) return 0;
  (void)file->read_rows(*name, read_every_key);
  (void)file->read_table(*name, read_every_key);
  return 0;
}
