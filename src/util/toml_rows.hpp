#pragma once
// Strict reading of TOML data files: a file's [[array]] rows and [tables] are read key by key, and any key a
// reader did not ask for is an error, so a typo in shipped data fails the tests instead of dropping a fact.
// toml++ stays behind this interface (linked privately into util).

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::util {

/// The fields that identify a row of one top-level array: an overlay row whose key fields equal an existing row's
/// replaces it; any other overlay row is appended. Fields are compared as written ("13.0" is not "13.0.0").
struct RowKey {
  std::string_view array;
  std::vector<std::string_view> fields;
};

/// One TOML table being read: each read declares its key; the first problem becomes the row's Error, prefixed
/// with where the row is ("<file>: [[name]] #2 (line 7)"). A failed read returns an empty value (0, "", false).
class TomlRow {
 public:
  TomlRow(const TomlRow&) = delete;
  TomlRow& operator=(const TomlRow&) = delete;

  /// The string at `key`; "missing `key`" when absent, "`key` must be a string" when not a string.
  std::string text(std::string_view key);
  /// The string at `key`, or empty when absent.
  std::string optional_text(std::string_view key);
  /// The string at `key`, which must be one of `allowed` ("`key` must be a, b or c" otherwise).
  std::string one_of(std::string_view key, std::initializer_list<std::string_view> allowed);
  /// The array of strings at `key`; "missing `key`" when absent.
  std::vector<std::string> texts(std::string_view key);
  /// The array of strings at `key`, or empty when absent.
  std::vector<std::string> optional_texts(std::string_view key);
  /// The array of strings at `key`, or nullopt when absent (where an empty array means "none", not "not known").
  std::optional<std::vector<std::string>> texts_if_present(std::string_view key) { return strings(key); }
  /// The version string at `key` ("`key` = \"x\" is not a version" when it does not parse).
  Version version(std::string_view key);
  /// The version at `key`, or nullopt when absent or "".
  std::optional<Version> optional_version(std::string_view key);
  /// The array of version strings at `key`.
  std::vector<Version> versions(std::string_view key);
  /// The integer at `key`; "`key` must be an integer" when absent or of another type.
  long long integer(std::string_view key);
  /// The integer at `key` within [min, max]; "`key` must be <requirement>" when absent, of another type or out.
  long long integer_in(std::string_view key, long long min, long long max, std::string_view requirement);
  /// The boolean at `key`; "`key` must be true or false" when absent or of another type.
  bool boolean(std::string_view key);
  /// The boolean at `key`, or nullopt when absent; "`key` must be true or false" on other types.
  std::optional<bool> optional_boolean(std::string_view key);
  /// The integer or float at `key` as a double, or nullopt when absent; "`key` must be a number" on other types.
  std::optional<double> optional_number(std::string_view key);

  /// Records `message` as the row's problem unless it already has one (for checks only the caller can make).
  void fail(std::string_view message);
  /// The row's keys that no read has asked for yet, in file order.
  std::vector<std::string> unread_keys() const;
  /// "overlay <path>:<line>" for a row merged in from an overlay file, "" for a built-in row.
  const std::string& origin() const { return m_origin; }

 private:
  friend class TomlFile;
  struct Table;  // the toml++ table, defined in toml_rows.cpp

  TomlRow(const Table& table, std::string where, std::string origin);
  /// The row's first problem, after "unexpected key `k`" for any key no read asked for.
  std::optional<Error> finish();
  /// Where several reads start: declares `key` and returns whether it is present.
  bool declare(std::string_view key);
  std::optional<std::vector<std::string>> strings(std::string_view key);

  const Table& m_table;
  std::string m_where;
  std::string m_origin;
  std::set<std::string, std::less<>> m_known;
  std::optional<Error> m_error;
};

/// A parsed TOML data file whose top-level arrays of tables and tables are read with TomlRow.
class TomlFile {
 public:
  /// Parses `text`; an internal Error "<file>:<line>: <description>" when it is not valid TOML.
  static Expected<TomlFile> parse(std::string_view text, std::string file);

  TomlFile(TomlFile&&) noexcept;
  TomlFile& operator=(TomlFile&&) noexcept;
  ~TomlFile();

  /// Merges an overlay file's text (read from `path`): rows of a top-level array replace the row with the same
  /// RowKey or are appended; keys of a top-level [table] replace the same keys; `as_of` keeps the later date. An
  /// input Error "<path>:<line>: ..." when it is not TOML, names a key the file does not have, or is of another shape.
  Expected<Ok> merge(std::string_view text, const std::string& path, const std::vector<RowKey>& keys);
  /// The top-level string `key` ("" when absent); an Error when it is not a string.
  Expected<std::string> top_level_text(std::string_view key) const;
  /// The file as TOML text, each overlay row preceded by a "# from overlay <path>:<line>" comment.
  std::string to_toml() const;
  /// The file as JSON text; overlay rows carry an extra "overlay": "<path>:<line>" member.
  std::string to_json() const;

  /// Whether the file has a top-level key `key`.
  bool contains(std::string_view key) const;
  /// The first top-level key that is not in `allowed`, if any.
  std::optional<std::string> unexpected_key(std::initializer_list<std::string_view> allowed) const;
  /// The first top-level key that is not in `allowed`, if any.
  std::optional<std::string> unexpected_key(const std::vector<std::string_view>& allowed) const;
  /// Calls `read` on each table of the top-level array `name` (none when absent); stops at the first bad row
  /// with an internal Error naming the file, "[[name]] #n" and its line.
  Expected<Ok> read_rows(std::string_view name, const std::function<void(TomlRow&)>& read) const;
  /// Appends `make(row)` to `out` for each table of the top-level array `name`, as read_rows.
  template <typename T, typename Make>
  Expected<Ok> append_rows(std::string_view name, std::vector<T>& out, Make make) const {
    return read_rows(name, [&out, &make](TomlRow& row) { out.push_back(make(row)); });
  }
  /// Calls `read` on the top-level table `name` (not when absent); an internal Error naming the file and
  /// "[name]" when it is not a table or a read fails.
  Expected<Ok> read_table(std::string_view name, const std::function<void(TomlRow&)>& read) const;

 private:
  struct Parsed;  // the toml++ root table, defined in toml_rows.cpp

  TomlFile(std::unique_ptr<Parsed> parsed, std::string file);

  std::unique_ptr<Parsed> m_parsed;
  std::string m_file;
};

}  // namespace gpuenv::util
