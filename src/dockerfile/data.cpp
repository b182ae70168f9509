#include "dockerfile/data.hpp"

#include <toml++/toml.h>

#include <optional>
#include <set>

namespace gpuenv::dockerfile {

std::span<const util::EmbeddedFile> embedded_dockerfile_data();  // generated from data/dockerfile/*.toml

namespace {

using util::Error;
using util::Expected;
using util::Version;

/// One table read strictly: every key must be expected, so a typo in the data fails the tests.
class Row {
 public:
  Row(const toml::table& table, std::string where) : m_table(table), m_where(std::move(where)) {}

  std::string text(const char* key, bool required = true) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr) {
      if (required) fail(std::string("missing `") + key + "`");
      return {};
    }
    if (!node->is_string()) {
      fail(std::string("`") + key + "` must be a string");
      return {};
    }
    return node->as_string()->get();
  }

  Version version(const char* key) {
    const std::string value = text(key);
    auto parsed = Version::parse(value);
    if (!parsed) fail(std::string("`") + key + "` = \"" + value + "\" is not a version");
    return parsed.value_or(Version());
  }

  std::vector<std::string> texts(const char* key) {
    m_known.insert(key);
    std::vector<std::string> out;
    const toml::array* array = m_table.get(key) != nullptr ? m_table.get(key)->as_array() : nullptr;
    if (array == nullptr) {
      fail(std::string("`") + key + "` must be an array of strings");
      return out;
    }
    for (const toml::node& item : *array) {
      if (!item.is_string()) {
        fail(std::string("`") + key + "` must hold strings");
        continue;
      }
      out.push_back(item.as_string()->get());
    }
    return out;
  }

  compat::Provenance provenance() {
    compat::Provenance out{text("status"), text("source"), text("note", false)};
    if (out.status != "verified" && out.status != "secondary" && out.status != "unverified") {
      fail("`status` must be verified, secondary or unverified");
    }
    return out;
  }

  std::optional<Error> finish() {
    for (const auto& [key, node] : m_table) {
      if (!m_known.contains(std::string(key.str()))) fail("unexpected key `" + std::string(key.str()) + "`");
    }
    return m_error;
  }

 private:
  void fail(const std::string& message) {
    if (!m_error) m_error = Error::internal(m_where + ": " + message);
  }

  const toml::table& m_table;
  std::string m_where;
  std::set<std::string> m_known;
  std::optional<Error> m_error;
};

template <typename Read>
Expected<util::Ok> read_rows(const toml::table& root, const std::string& file, const char* name, Read read) {
  const toml::node* node = root.get(name);
  if (node == nullptr) return util::Ok{};
  const toml::array* rows = node->as_array();
  if (rows == nullptr) return Error::internal(file + ": `" + name + "` must be an array of tables");
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const toml::table* table = (*rows)[i].as_table();
    const std::string where = file + ": [[" + name + "]] #" + std::to_string(i + 1);
    if (table == nullptr) return Error::internal(where + ": not a table");
    Row row(*table, where);
    read(row);
    if (auto error = row.finish()) return *error;
  }
  return util::Ok{};
}

}  // namespace

const OsPython* Data::python_of(const std::string& image_os) const {
  for (const OsPython& row : os_python) {
    if (row.os == image_os) return &row;
  }
  return nullptr;
}

Expected<Data> parse_data(std::span<const util::EmbeddedFile> files) {
  Data data;
  bool have_uv = false;
  for (const util::EmbeddedFile& file : files) {
    const std::string name(file.name);
    toml::parse_result parsed = toml::parse(file.contents, name);
    if (!parsed) {
      const auto& error = parsed.error();
      return Error::internal(name + ":" + std::to_string(error.source().begin.line) + ": " +
                             std::string(error.description()));
    }
    const toml::table& root = parsed.table();
    for (const auto& [key, node] : root) {
      const std::string k(key.str());
      if (k != "os_python" && k != "uv" && k != "numpy")
        return Error::internal(name + ": unexpected table `" + k + "`");
    }
    auto os_rows = read_rows(root, name, "os_python", [&data](Row& row) {
      OsPython out;
      out.os = row.text("os");
      out.python = row.version("python");
      out.packages = row.texts("packages");
      out.interpreter = row.text("interpreter");
      out.provenance = row.provenance();
      data.os_python.push_back(std::move(out));
    });
    if (!os_rows) return os_rows.error();
    auto numpy_rows = read_rows(root, name, "numpy", [&data](Row& row) {
      NumpyCap out;
      out.framework = row.text("framework");
      out.below = row.version("below");
      out.requirement = row.text("requirement");
      out.provenance = row.provenance();
      data.numpy.push_back(std::move(out));
    });
    if (!numpy_rows) return numpy_rows.error();
    if (const toml::node* uv = root.get("uv")) {
      const toml::table* table = uv->as_table();
      if (table == nullptr || have_uv) return Error::internal(name + ": [uv] must be one table");
      Row row(*table, name + ": [uv]");
      data.uv.version = row.text("version");
      data.uv.image = row.text("image");
      data.uv.python_min = row.version("python_min");
      data.uv.python_max = row.version("python_max");
      data.uv.provenance = row.provenance();
      if (auto error = row.finish()) return *error;
      have_uv = true;
    }
  }
  if (!have_uv) return Error::internal("data/dockerfile: no [uv] table");
  return data;
}

Expected<const Data*> builtin_data() {
  static const Expected<Data> data = parse_data(embedded_dockerfile_data());
  if (!data) return data.error();
  return &*data;
}

}  // namespace gpuenv::dockerfile
