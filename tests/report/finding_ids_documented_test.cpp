// Every finding id the code can emit is documented: it stands, in backticks, in a table row of a docs/*.md file
// (docs/rules.md, doctor-json.md, smoke.md, install.md, dockerfile.md, fabric.md, watch.md each list their own), so
// that a user who meets an id in a report, an event or a Slurm drain reason can look it up. The ids are read from the
// sources as string literals in the finding namespaces ("smoke.matmul"), less what shares that shape and is no
// finding: profile field names, the ids of data/ rows (thresholds), file names, a literal that is only the start of
// a concatenated id ("profile.node_" + rule), and the keys the framework probe's Python prints.

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "profile/fields.hpp"
#include "support/source_tree.hpp"
#include "support/text_files.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::files_under;
using gpuenv::testing::k_source;
using gpuenv::testing::read_text;

/// The namespaces finding ids live in (the part before the first '.').
const std::set<std::string> k_finding_namespaces = {
    "cloud",   "container", "cuda",  "cudnn", "dockerfile", "doctor",  "driver", "fabric", "framework", "gpu",
    "history", "host",      "ib",    "image", "install",    "nccl",    "nvlink", "os",     "pcie",      "profile",
    "python",  "pytorch",   "smoke", "sxid",  "tensorflow", "toolkit", "watch",  "xid"};

/// Literals of that shape that are no finding id, each with why.
const std::map<std::string, std::string> k_not_findings = {
    {"tensorflow.cuda_available", "a key the framework probe's Python prints (probe/frameworks.cpp)"},
    {"tensorflow.device_count", "a key the framework probe's Python prints (probe/frameworks.cpp)"},
};

/// The ids the documentation lists: `a.b` in backticks on a table row of docs/*.md; a row's `install.conflict.*`
/// documents every id that starts with "install.conflict.".
struct Documented {
  std::set<std::string> ids;
  std::vector<std::string> prefixes;
  bool covers(const std::string& id) const {
    if (ids.count(id) != 0) return true;
    for (const std::string& prefix : prefixes) {
      if (gpuenv::util::starts_with(id, prefix)) return true;
    }
    return false;
  }
};

Documented documented_ids() {
  Documented out;
  const std::regex id(R"(`([a-z][a-z0-9_]*\.[a-z0-9_.]*[a-z0-9_*]|[a-z][a-z0-9_]*\.\*)`)");
  for (const fs::path& doc : files_under(k_source / "docs", {".md"})) {
    const std::string text = read_text(doc);
    for (std::string_view line : gpuenv::util::split_lines(text)) {
      if (!gpuenv::util::starts_with(line, "|")) continue;
      const std::string row(line);
      for (auto it = std::sregex_iterator(row.begin(), row.end(), id); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].str();
        if (gpuenv::util::ends_with(name, ".*")) {
          out.prefixes.push_back(name.substr(0, name.size() - 1));
        } else {
          out.ids.insert(name);
        }
      }
    }
  }
  return out;
}

/// The ids of data/ rows (`id = "gpu.ecc_uncorrected_volatile"`): thresholds and other settings named like findings.
std::set<std::string> data_row_ids() {
  std::set<std::string> out;
  const std::regex row(R"re(^\s*id\s*=\s*"([^"]+)")re", std::regex::multiline);
  for (const fs::path& table : files_under(k_source / "data", {".toml"})) {
    const std::string text = read_text(table);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it)
      out.insert((*it)[1].str());
  }
  return out;
}

/// The "ns.name" literals of `text` whose namespace is a finding namespace, each with whether `+` follows it. A scan
/// by hand: std::regex over every source file took half a second (two under ASan).
std::vector<std::pair<std::string, bool>> namespaced_literals(const std::string& text) {
  std::vector<std::pair<std::string, bool>> out;
  const auto is_word = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  for (std::size_t open = text.find('"'); open != std::string::npos; open = text.find('"', open + 1)) {
    std::size_t at = open + 1;
    if (at >= text.size() || text[at] < 'a' || text[at] > 'z') continue;
    while (at < text.size() && (is_word(text[at]) || text[at] == '.')) ++at;
    if (at >= text.size() || text[at] != '"') continue;
    const std::string name = text.substr(open + 1, at - open - 1);
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos || name.back() == '.' || name.find("..") != std::string::npos ||
        k_finding_namespaces.count(name.substr(0, dot)) == 0)
      continue;
    std::size_t next = at + 1;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\n')) ++next;
    out.emplace_back(name, next < text.size() && text[next] == '+');
    open = at;  // the closing quote opens nothing
  }
  return out;
}

/// Each literal "ns.name" of src/ in a finding namespace, with the files it is in; a literal followed by `+` (the
/// start of an id built at run time) and a file name ("cuda.toml", "nccl.h") are left out.
std::map<std::string, std::set<std::string>> id_literals() {
  std::map<std::string, std::set<std::string>> out;
  const std::regex file_name(R"(\.(toml|h|hpp|md|so|py|json|txt|sh|service|conf|list|repo)$)");
  for (const fs::path& source : files_under(k_source / "src", {".cpp", ".hpp"})) {
    for (const auto& [name, concatenated] : namespaced_literals(read_text(source))) {
      if (concatenated || std::regex_search(name, file_name)) continue;
      out[name].insert(fs::relative(source, k_source).string());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every finding id in src/ is documented in a table of docs/", "[report][docs]") {
  const Documented documented = documented_ids();
  const std::set<std::string> data_ids = data_row_ids();
  const std::vector<std::string> fields = gpuenv::profile::all_field_keys();
  const std::set<std::string> field_names(fields.begin(), fields.end());
  const auto literals = id_literals();
  REQUIRE(literals.size() > 150);  // the scan found the code's ids (smoke.*, gpu.*, watch.*, install.* ...)
  std::vector<std::string> undocumented;
  for (const auto& [name, files] : literals) {
    if (documented.covers(name) || data_ids.count(name) != 0 || field_names.count(name) != 0 ||
        k_not_findings.count(name) != 0)
      continue;
    undocumented.push_back(name + " (" +
                           gpuenv::util::join(std::vector<std::string>(files.begin(), files.end()), ", ") + ")");
  }
  INFO("undocumented finding ids:\n  " << gpuenv::util::join(undocumented, "\n  "));
  CHECK(undocumented.empty());
}

TEST_CASE("the finding-id scan sees an undocumented id and the shapes it leaves out", "[report][docs]") {
  const auto literals = id_literals();
  CHECK(literals.count("smoke.kernels") == 1);  // a documented finding id is found in the code
  CHECK(literals.count("profile.node_") == 0);  // "profile.node_" + rule: only the start of an id
  CHECK(literals.count("cuda.toml") == 0);      // a data file's name
  const auto found = namespaced_literals(R"(x = "smoke.a_b"; y = "gpu.x" + rule; z = "nccl.h"; "not.found" "s.")");
  REQUIRE(found.size() == 3);  // "not" and "s" are no finding namespace
  CHECK(found[0] == std::pair<std::string, bool>{"smoke.a_b", false});
  CHECK(found[1] == std::pair<std::string, bool>{"gpu.x", true});
  CHECK(found[2].first == "nccl.h");
  CHECK(documented_ids().covers("install.conflict.ppa"));  // docs/install.md's `install.conflict.*` row
  CHECK_FALSE(documented_ids().covers("smoke.no_such_check"));
}
