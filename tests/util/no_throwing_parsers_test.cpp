// No code under src/ reads a number with std::sto* (or the C parsers strto*/ato*/*scanf): std::stoi and its kin throw
// on malformed or oversized text and ended the process (tests/fuzz/host_text_fuzz found one), strto*/ato* give 0 or
// a wrapped value silently, and sscanf's %d of a number out of int's range is undefined behaviour (C11 7.21.6.2p10).
// Numbers are read with util::parse_int/parse_unsigned/parse_double (util/strings.hpp), which return nullopt instead
// (issue 29, item 9).

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "support/source_tree.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;

/// A call of a throwing or silently wrapping number parser: `std::stoi(`, `stoull (`, `strtoul(`, `atoi(`,
/// `sscanf(`. Words in comments ("std::stoi threw …") are not calls.
const std::regex& parser_call() {
  static const std::regex pattern(
      R"(\b(sto(i|l|ll|ul|ull|f|d|ld)|strto(l|ll|ul|ull|f|d|ld|imax|umax)|ato(i|l|ll|f)|[sf]?scanf)\s*\()");
  return pattern;
}

/// Whether `line` may hold such a call: the substrings every one of them contains, searched before the regex (a
/// std::regex over every line of src/ took over a second).
bool may_call_parser(std::string_view line) {
  for (const char* part : {"sto", "strto", "ato", "scanf"}) {
    if (line.find(part) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the pattern finds parser calls and not their names in comments", "[util]") {
  for (const char* call : {"std::stoi(text)", "x = std::stoull (s);", "strtoul(p, nullptr, 16)", "std::atoi(s)",
                           "std::strtod(pair.c_str(), &end)", "std::sscanf(text, \"%d\", &value)", "fscanf(f, s)"}) {
    INFO(call);
    CHECK(may_call_parser(call));
    CHECK(std::regex_search(call, parser_call()));
  }
  for (const char* prose : {"// std::stoi threw out_of_range", "std::stoul threw on 20 digits", "stop(", "atomic("}) {
    INFO(prose);
    CHECK_FALSE(std::regex_search(prose, parser_call()));
  }
}

TEST_CASE("no source file under src/ parses numbers with std::sto*, strto*/ato* or sscanf", "[util]") {
  const fs::path root = GPUENV_SOURCE_DIR;
  std::vector<std::string> offenders;
  std::size_t files = 0;
  for (const fs::path& source : gpuenv::testing::files_under(root / "src", {".cpp", ".hpp", ".h", ".cu", ".cuh"})) {
    ++files;
    const std::string relative = fs::relative(source, root).generic_string();
    const std::string text = gpuenv::testing::read_text(source);
    std::size_t line = 1, start = 0;
    while (start < text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      if (may_call_parser(std::string_view(text).substr(start, end - start)) &&
          std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(start),
                            text.begin() + static_cast<std::ptrdiff_t>(end), parser_call()))
        offenders.push_back(relative + ":" + std::to_string(line) + ": " + text.substr(start, end - start));
      start = end + 1;
      ++line;
    }
  }
  CHECK(files > 100);  // the walk found the tree
  std::string listing;
  for (const std::string& offender : offenders) listing += "\n  " + offender;
  INFO("use util::parse_int, parse_unsigned or parse_double (util/strings.hpp) instead:" << listing);
  CHECK(offenders.empty());
}
