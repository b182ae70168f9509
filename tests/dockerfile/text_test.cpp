// logical_lines: the one continuation joiner behind the Dockerfile parser (lint) and the pip requirement reader
// (reproducible). The two comment rules differ, as Docker's and pip's parsers do.

#include "dockerfile/text.hpp"

#include <catch2/catch.hpp>

using gpuenv::dockerfile::CommentRule;
using gpuenv::dockerfile::logical_lines;

namespace {

struct Row {
  const char* what;
  const char* text;
  CommentRule rule;
  std::vector<std::pair<std::string, std::size_t>> expected;  ///< text and starting line of each logical line
};

}  // namespace

TEST_CASE("dockerfile logical_lines joins continuations and drops comments per rule", "[dockerfile]") {
  const Row rows[] = {
      {"continuations joined, first line kept",
       "RUN a \\\n  && b\nUSER x\n",
       CommentRule::dockerfile,
       {{"RUN a && b", 1}, {"USER x", 3}}},
      {"a Dockerfile comment inside a continuation does not end it",
       "RUN a \\\n# why\n  && b\n",
       CommentRule::dockerfile,
       {{"RUN a && b", 1}}},
      {"a blank line inside a Dockerfile continuation does not end it",
       "RUN a \\\n\n  && b\n",
       CommentRule::dockerfile,
       {{"RUN a && b", 1}}},
      {"a Dockerfile # after text is text", "RUN echo a#b # c\n", CommentRule::dockerfile, {{"RUN echo a#b # c", 1}}},
      {"pip: # after a blank ends the line",
       "torch==2.9.1 # why\nnumpy==2.1.0\n",
       CommentRule::pip,
       {{"torch==2.9.1", 1}, {"numpy==2.1.0", 2}}},
      {"pip: # inside a word is kept",
       "pkg @ https://h/x.whl#sha256=ab\n",
       CommentRule::pip,
       {{"pkg @ https://h/x.whl#sha256=ab", 1}}},
      {"pip: a continuation with hashes",
       "torch==2.9.1 \\\n    --hash=sha256:aa\n",
       CommentRule::pip,
       {{"torch==2.9.1 --hash=sha256:aa", 1}}},
      {"pip: a blank line ends a continuation", "a \\\n\nb\n", CommentRule::pip, {{"a", 1}, {"b", 3}}},
      {"a last line without a newline and a dangling continuation",
       "RUN a \\",
       CommentRule::dockerfile,
       {{"RUN a", 1}}},
      {"only comments and blanks: no lines", "# a\n\n   \n# b\n", CommentRule::dockerfile, {}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    std::vector<std::pair<std::string, std::size_t>> got;
    for (const auto& line : logical_lines(row.text, row.rule)) got.emplace_back(line.text, line.line);
    CHECK(got == row.expected);
  }
}
