// No code under src/ spells out `if (!x) return x.error();` (or its if-with-initializer form): GPUENV_TRY and
// GPUENV_TRY_ASSIGN (util/expected.hpp) say it once, evaluating the expression once and returning its Error unchanged
// (issue 29, item 5). A chain the macros cannot say goes into the allowlist below with the reason.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "support/source_tree.hpp"
#include "support/text_files.hpp"

namespace {

/// `if (!x) return x.error();`, `if (auto x = f(); !x) return x.error();` and the same with braces, line breaks or
/// `std::move(x).take_error()`, ending at the `;` of the return. The text before a match's `return` is searched
/// only in a window that ends at a `.error();` or `.take_error();` found by a plain substring search.
const std::regex& error_chain_pattern() {
  static const std::regex pattern(
      R"(if \((?:(?:const )?auto&{0,2} \w+ = [^;]*;\s*)?!\s*([\w.>-]+(?:\(\))?)\)\s*\{?\s*return (?:std::move\()?\1\)?\.(?:error|take_error)\(\);$)");
  return pattern;
}

/// A chain left on purpose: a substring of its line in `file` (relative to the source root) and why the macros
/// cannot say it.
struct AllowedErrorChain {
  const char* file;
  const char* line;
  const char* reason;
};

/// Empty: every chain in src/ says the same thing with GPUENV_TRY or GPUENV_TRY_ASSIGN. GPUENV_TRY(x) on a named
/// Expected also covers a value that must stay an Expected (checked after other statements, or read again as one).
const std::vector<AllowedErrorChain>& allowed_error_chains() {
  static const std::vector<AllowedErrorChain> allowed;
  return allowed;
}

/// Each error chain in `text`: its line number and the line of its `return`.
std::vector<std::pair<std::size_t, std::string>> error_chains_in(const std::string& text) {
  std::vector<std::pair<std::size_t, std::string>> out;
  constexpr std::size_t k_window = 400;  // longer than any if-with-initializer clang-format leaves
  for (const char* tail : {".error();", ".take_error();"}) {
    for (std::size_t at = text.find(tail); at != std::string::npos; at = text.find(tail, at + 1)) {
      const std::size_t end = at + std::char_traits<char>::length(tail);
      const std::size_t begin = end > k_window ? end - k_window : 0;
      std::match_results<std::string::const_iterator> match;
      if (!std::regex_search(text.cbegin() + static_cast<std::ptrdiff_t>(begin),
                             text.cbegin() + static_cast<std::ptrdiff_t>(end), match, error_chain_pattern()))
        continue;
      const std::size_t if_at = begin + static_cast<std::size_t>(match.position(0));
      const std::size_t if_line = text.rfind('\n', if_at) == std::string::npos ? 0 : text.rfind('\n', if_at) + 1;
      if (text.substr(if_line, if_at - if_line).find("//") != std::string::npos) continue;  // words in a comment
      const std::size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
      const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + at, '\n'));
      out.emplace_back(line, text.substr(line_start, end - line_start));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the error-chain pattern finds the chains GPUENV_TRY says and not other returns of an Error", "[util]") {
  for (const char* chain :
       {"  if (!profile) return profile.error();", "if (!x)\n    return x.error();", "if (!x) { return x.error();",
        "if (auto r = f(a, b); !r) return r.error();",
        "if (auto written = write(path,\n      text);\n  !written)\n"
        "    return written.error();",
        "if (!x) return std::move(x).take_error();", "if (!transaction.begun()) return transaction.begun().error();"}) {
    INFO(chain);
    CHECK(error_chains_in(chain).size() == 1);
  }
  for (const char* other : {"if (!x) return y.error();", "if (!a.b()) return a.c().error();",
                            "if (!server) {\n  m_listen.clear();\n  return server.error();",
                            "if (!text) return util::Error::input(text.error().message);",
                            "// if (!x) return x.error(); in a comment ends with more text", "return x.error();"}) {
    INFO(other);
    CHECK(error_chains_in(other).empty());
  }
}

TEST_CASE("no source file under src/ spells out if (!x) return x.error(): GPUENV_TRY says it", "[util]") {
  const std::filesystem::path root = GPUENV_SOURCE_DIR;
  std::vector<std::string> offenders;
  std::vector<bool> used(allowed_error_chains().size(), false);
  std::size_t files = 0;
  for (const std::filesystem::path& file : gpuenv::testing::files_under(root / "src", {".cpp", ".hpp", ".h"})) {
    ++files;
    const std::string text = gpuenv::testing::read_text(file);
    if (text.find("error();") == std::string::npos) continue;
    const std::string relative = std::filesystem::relative(file, root).generic_string();
    for (const auto& [line, source] : error_chains_in(text)) {
      bool allowed = false;
      for (std::size_t i = 0; i < allowed_error_chains().size(); ++i) {
        const AllowedErrorChain& chain = allowed_error_chains()[i];
        if (relative == chain.file && source.find(chain.line) != std::string::npos) allowed = used[i] = true;
      }
      if (!allowed) offenders.push_back(relative + ":" + std::to_string(line) + ": " + source);
    }
  }
  CHECK(files > 100);  // the walk found the tree
  std::string listing;
  for (const std::string& offender : offenders) listing += "\n  " + offender;
  INFO(
      "use GPUENV_TRY(expr) or GPUENV_TRY_ASSIGN(declaration, expr) (util/expected.hpp), or allowlist the chain "
      "with the reason the macros cannot say it:"
      << listing);
  CHECK(offenders.empty());
  for (std::size_t i = 0; i < used.size(); ++i) {
    INFO("an allowlisted chain is gone; remove its entry: " << allowed_error_chains()[i].file << ": "
                                                            << allowed_error_chains()[i].line);
    CHECK(used[i]);
  }
}
