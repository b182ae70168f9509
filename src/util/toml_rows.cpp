#include "util/toml_rows.hpp"

#include <algorithm>
#include <limits>

#include "util/toml_internal.hpp"

namespace gpuenv::util {

namespace {

std::string quoted(std::string_view key) { return "`" + std::string(key) + "`"; }

/// "a", "a or b", "a, b or c".
std::string alternatives(std::initializer_list<std::string_view> allowed) {
  std::string out;
  std::size_t index = 0;
  for (const std::string_view value : allowed) {
    if (index > 0) out += index + 1 == allowed.size() ? " or " : ", ";
    out += value;
    ++index;
  }
  return out;
}

}  // namespace

// ---- TomlRow ----------------------------------------------------------------------------------------------------

TomlRow::TomlRow(const Table& table, std::string where, std::string origin)
    : m_table(table), m_where(std::move(where)), m_origin(std::move(origin)) {}

bool TomlRow::declare(std::string_view key) {
  m_known.emplace(key);
  return m_table.toml.get(key) != nullptr;
}

std::string TomlRow::text(std::string_view key) {
  if (!declare(key)) {
    fail("missing " + quoted(key));
    return {};
  }
  return optional_text(key);
}

std::string TomlRow::optional_text(std::string_view key) {
  if (!declare(key)) return {};
  const toml::node* node = m_table.toml.get(key);
  if (!node->is_string()) {
    fail(quoted(key) + " must be a string");
    return {};
  }
  return node->as_string()->get();
}

std::string TomlRow::one_of(std::string_view key, std::initializer_list<std::string_view> allowed) {
  std::string value = text(key);
  if (m_table.toml.contains(key) && std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    fail(quoted(key) + " must be " + alternatives(allowed));
  }
  return value;
}

std::optional<std::vector<std::string>> TomlRow::strings(std::string_view key) {
  if (!declare(key)) return std::nullopt;
  std::vector<std::string> out;
  const toml::array* array = m_table.toml.get(key)->as_array();
  if (array == nullptr) {
    fail(quoted(key) + " must be an array of strings");
    return out;
  }
  for (const toml::node& item : *array) {
    if (!item.is_string()) {
      fail(quoted(key) + " must hold strings");
      continue;
    }
    out.push_back(item.as_string()->get());
  }
  return out;
}

std::vector<std::string> TomlRow::texts(std::string_view key) {
  auto out = strings(key);
  if (!out) fail("missing " + quoted(key));
  return std::move(out).value_or(std::vector<std::string>());
}

std::vector<std::string> TomlRow::optional_texts(std::string_view key) {
  return strings(key).value_or(std::vector<std::string>());
}

Version TomlRow::version(std::string_view key) {
  const std::string value = text(key);
  auto parsed = Version::parse(value);
  if (!parsed) fail(quoted(key) + " = \"" + value + "\" is not a version");
  return parsed.value_or(Version());
}

std::optional<Version> TomlRow::optional_version(std::string_view key) {
  const std::string value = optional_text(key);
  if (value.empty()) return std::nullopt;
  auto parsed = Version::parse(value);
  if (!parsed) fail(quoted(key) + " = \"" + value + "\" is not a version");
  return parsed;
}

std::vector<Version> TomlRow::versions(std::string_view key) {
  std::vector<Version> out;
  for (const std::string& value : texts(key)) {
    auto parsed = Version::parse(value);
    if (!parsed) fail(quoted(key) + " holds \"" + value + "\", not a version");
    out.push_back(parsed.value_or(Version()));
  }
  return out;
}

long long TomlRow::integer(std::string_view key) {
  return integer_in(key, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max(), "an integer");
}

long long TomlRow::integer_in(std::string_view key, long long min, long long max, std::string_view requirement) {
  const toml::node* node = declare(key) ? m_table.toml.get(key) : nullptr;
  if (node == nullptr || !node->is_integer() || node->as_integer()->get() < min || node->as_integer()->get() > max) {
    fail(quoted(key) + " must be " + std::string(requirement));
    return 0;
  }
  return node->as_integer()->get();
}

bool TomlRow::boolean(std::string_view key) {
  const toml::node* node = declare(key) ? m_table.toml.get(key) : nullptr;
  if (node == nullptr || !node->is_boolean()) {
    fail(quoted(key) + " must be true or false");
    return false;
  }
  return node->as_boolean()->get();
}

std::optional<bool> TomlRow::optional_boolean(std::string_view key) {
  if (!declare(key)) return std::nullopt;
  const toml::node* node = m_table.toml.get(key);
  if (node->is_boolean()) return node->as_boolean()->get();
  fail(quoted(key) + " must be true or false");
  return std::nullopt;
}

std::optional<double> TomlRow::optional_number(std::string_view key) {
  if (!declare(key)) return std::nullopt;
  const toml::node* node = m_table.toml.get(key);
  if (node->is_integer()) return static_cast<double>(node->as_integer()->get());
  if (node->is_floating_point()) return node->as_floating_point()->get();
  fail(quoted(key) + " must be a number");
  return std::nullopt;
}

void TomlRow::fail(std::string_view message) {
  if (m_error) return;
  // A built-in row is gpuenv's bug; an overlay row is the user's input.
  m_error = m_origin.empty() ? Error::internal(m_where + ": " + std::string(message))
                             : Error::input(m_where + ": " + std::string(message),
                                            "make the row match the table's row format (docs/knowledge-base.md); "
                                            "every row needs `status` and a public `source`");
}

std::vector<std::string> TomlRow::unread_keys() const {
  std::vector<std::string> out;
  for (const auto& [key, node] : m_table.toml) {
    if (!m_known.contains(key.str())) out.emplace_back(key.str());
  }
  return out;
}

std::optional<Error> TomlRow::finish() {
  for (const std::string& key : unread_keys()) fail("unexpected key " + quoted(key));
  return m_error;
}

// ---- TomlFile ---------------------------------------------------------------------------------------------------

TomlFile::TomlFile(std::unique_ptr<Parsed> parsed, std::string file)
    : m_parsed(std::move(parsed)), m_file(std::move(file)) {}
TomlFile::TomlFile(TomlFile&&) noexcept = default;
TomlFile& TomlFile::operator=(TomlFile&&) noexcept = default;
TomlFile::~TomlFile() = default;

Expected<TomlFile> TomlFile::parse(std::string_view text, std::string file) {
  toml::parse_result parsed = toml::parse(text, std::string_view(file));
  if (!parsed) {
    return Error::internal(file + ":" + std::to_string(parsed.error().source().begin.line) + ": " +
                           std::string(parsed.error().description()));
  }
  return TomlFile(std::make_unique<Parsed>(Parsed{std::move(parsed).table(), {}}), std::move(file));
}

bool TomlFile::contains(std::string_view key) const { return m_parsed->root.contains(key); }

std::optional<std::string> TomlFile::unexpected_key(std::initializer_list<std::string_view> allowed) const {
  return unexpected_key(std::vector<std::string_view>(allowed));
}

std::optional<std::string> TomlFile::unexpected_key(const std::vector<std::string_view>& allowed) const {
  for (const auto& [key, node] : m_parsed->root) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) return std::string(key.str());
  }
  return std::nullopt;
}

Expected<Ok> TomlFile::read_rows(std::string_view name, const std::function<void(TomlRow&)>& read) const {
  const toml::node* node = m_parsed->root.get(name);
  if (node == nullptr) return Ok{};
  const toml::array* rows = node->as_array();
  const auto must_be_tables = [&] {
    return Error::internal(m_file + ": " + quoted(name) + " must be an array of tables");
  };
  if (rows == nullptr) return must_be_tables();
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const toml::table* table = (*rows)[i].as_table();
    if (table == nullptr) return must_be_tables();
    const TomlRow::Table row_table{*table};
    const std::string line = std::to_string(table->source().begin.line);
    const std::string overlay = m_parsed->overlay_path_of(*table);
    TomlRow row(row_table,
                overlay.empty()
                    ? m_file + ": [[" + std::string(name) + "]] #" + std::to_string(i + 1) + " (line " + line + ")"
                    : overlay + ":" + line + ": [[" + std::string(name) + "]]",
                overlay.empty() ? std::string() : "overlay " + overlay + ":" + line);
    read(row);
    if (auto error = row.finish()) return *std::move(error);
  }
  return Ok{};
}

Expected<Ok> TomlFile::read_table(std::string_view name, const std::function<void(TomlRow&)>& read) const {
  const toml::node* node = m_parsed->root.get(name);
  if (node == nullptr) return Ok{};
  const toml::table* table = node->as_table();
  if (table == nullptr) return Error::internal(m_file + ": " + quoted(name) + " must be a table");
  const TomlRow::Table row_table{*table};
  // An overlay replaces a [table]'s keys one by one: a problem is then named at the first overlay key's line.
  std::string overlay;
  std::string line = std::to_string(table->source().begin.line);
  for (const auto& [key, value] : *table) {
    if (overlay.empty() && !(overlay = m_parsed->overlay_path_of(value)).empty())
      line = std::to_string(value.source().begin.line);
  }
  TomlRow row(row_table,
              overlay.empty() ? m_file + ": [" + std::string(name) + "] (line " + line + ")"
                              : overlay + ":" + line + ": [" + std::string(name) + "]",
              overlay.empty() ? std::string() : "overlay " + overlay + ":" + line);
  read(row);
  if (auto error = row.finish()) return *std::move(error);
  return Ok{};
}

}  // namespace gpuenv::util
