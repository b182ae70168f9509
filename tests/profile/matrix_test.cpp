// Matrix expansion (GitHub Actions semantics), --set parsing, overrides and cell selection.

#include "profile/matrix.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "profile/parser.hpp"

using gpuenv::profile::Assignments;
using gpuenv::profile::Cell;
using gpuenv::profile::expand_matrix;
using gpuenv::profile::Matrix;
using gpuenv::profile::Profile;
using gpuenv::profile::ProfileDocument;
using gpuenv::util::ErrorKind;

namespace {

Profile base_profile() {
  Profile p;
  p.name = "m";
  p.os_distro = "ubuntu";
  p.os_version = "22.04";
  p.cuda_version = "12.4.1";
  p.framework_name = "pytorch";
  p.framework_version = "2.4.1";
  p.framework_python = "3.11";
  return p;
}

/// cuda.version × framework.python, 2 × 3.
ProfileDocument two_axes() {
  ProfileDocument document{base_profile(), {}};
  document.matrix.axes = {{"cuda.version", {"12.1.1", "12.4.1"}}, {"framework.python", {"3.9", "3.10", "3.11"}}};
  return document;
}

std::vector<std::string> labels(const std::vector<Cell>& cells) {
  std::vector<std::string> out;
  for (const Cell& cell : cells) out.push_back(cell.label());
  return out;
}

}  // namespace

TEST_CASE("a document without a matrix is one requested cell: the base profile", "[profile][matrix]") {
  const ProfileDocument document{base_profile(), {}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].assignments.empty());
  CHECK(cells[0].label().empty());
  CHECK(cells[0].requested);
  CHECK(cells[0].profile.cuda_version == "12.4.1");
  CHECK(cells[0].profile.name == "m");
}

TEST_CASE("the product runs the first axis slowest, values in listed order", "[profile][matrix]") {
  const auto cells = expand_matrix(two_axes());
  CHECK(labels(cells) == std::vector<std::string>{
                             "cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.1.1,framework.python=3.10",
                             "cuda.version=12.1.1,framework.python=3.11", "cuda.version=12.4.1,framework.python=3.9",
                             "cuda.version=12.4.1,framework.python=3.10", "cuda.version=12.4.1,framework.python=3.11"});
  for (const Cell& cell : cells) {
    INFO(cell.label());
    CHECK_FALSE(cell.requested);
    CHECK(cell.profile.cuda_version == cell.assignments[0].second);
    CHECK(cell.profile.framework_python == cell.assignments[1].second);
    CHECK(cell.profile.framework_version == "2.4.1");  // untouched base fields carry over
  }

  ProfileDocument three = two_axes();
  three.matrix.axes.push_back({"image.flavor", {"runtime", "devel"}});
  const auto cells3 = expand_matrix(three);
  REQUIRE(cells3.size() == 12);
  CHECK(cells3[0].label() == "cuda.version=12.1.1,framework.python=3.9,image.flavor=runtime");
  CHECK(cells3[1].label() == "cuda.version=12.1.1,framework.python=3.9,image.flavor=devel");
  CHECK(cells3[11].label() == "cuda.version=12.4.1,framework.python=3.11,image.flavor=devel");
  CHECK(cells3[11].profile.image_flavor == "devel");
}

TEST_CASE("exclude removes every cell that matches all of an entry's fields", "[profile][matrix]") {
  struct Row {
    std::vector<std::map<std::string, std::string>> exclude;
    std::vector<std::string> remaining;
  };
  const Row rows[] = {
      // Partial match: one field removes a whole row of the product.
      {{{{"framework.python", "3.9"}}},
       {"cuda.version=12.1.1,framework.python=3.10", "cuda.version=12.1.1,framework.python=3.11",
        "cuda.version=12.4.1,framework.python=3.10", "cuda.version=12.4.1,framework.python=3.11"}},
      // Full match: exactly one cell.
      {{{{"cuda.version", "12.1.1"}, {"framework.python", "3.11"}}},
       {"cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.1.1,framework.python=3.10",
        "cuda.version=12.4.1,framework.python=3.9", "cuda.version=12.4.1,framework.python=3.10",
        "cuda.version=12.4.1,framework.python=3.11"}},
      // Several entries.
      {{{{"cuda.version", "12.1.1"}}, {{"framework.python", "3.11"}}},
       {"cuda.version=12.4.1,framework.python=3.9", "cuda.version=12.4.1,framework.python=3.10"}},
      // A value no cell has, and a field that is no axis: nothing is removed.
      {{{{"cuda.version", "11.8.0"}}, {{"image.flavor", "runtime"}}},
       {"cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.1.1,framework.python=3.10",
        "cuda.version=12.1.1,framework.python=3.11", "cuda.version=12.4.1,framework.python=3.9",
        "cuda.version=12.4.1,framework.python=3.10", "cuda.version=12.4.1,framework.python=3.11"}},
      // An entry that must match on both fields: 12.1.1 with 3.12 matches nothing.
      {{{{"cuda.version", "12.1.1"}, {"framework.python", "3.12"}}},
       {"cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.1.1,framework.python=3.10",
        "cuda.version=12.1.1,framework.python=3.11", "cuda.version=12.4.1,framework.python=3.9",
        "cuda.version=12.4.1,framework.python=3.10", "cuda.version=12.4.1,framework.python=3.11"}},
  };
  for (const Row& row : rows) {
    ProfileDocument document = two_axes();
    document.matrix.exclude = row.exclude;
    const auto cells = expand_matrix(document);
    CHECK(labels(cells) == row.remaining);
  }
}

TEST_CASE("include extends matching cells with its other fields, without adding a cell", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "12.4.1"}, {"image.flavor", "devel"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 6);
  for (const Cell& cell : cells) {
    INFO(cell.label());
    CHECK_FALSE(cell.requested);
    CHECK(cell.profile.image_flavor == (cell.profile.cuda_version == "12.4.1" ? "devel" : ""));  // "": gpuenv chooses
  }
  CHECK(cells[3].label() == "cuda.version=12.4.1,framework.python=3.9,image.flavor=devel");
  CHECK(cells[0].label() == "cuda.version=12.1.1,framework.python=3.9");
}

TEST_CASE("include that matches no cell without overwriting an axis value adds a requested cell", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "11.8.0"}, {"framework.python", "3.10"}},
                             {{"cuda.version", "12.4.1"}, {"framework.python", "3.12"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 8);
  CHECK(cells[6].label() == "cuda.version=11.8.0,framework.python=3.10");
  CHECK(cells[6].requested);
  CHECK(cells[6].profile.cuda_version == "11.8.0");
  CHECK(cells[6].profile.framework_python == "3.10");
  CHECK(cells[6].profile.framework_version == "2.4.1");
  CHECK(cells[7].label() == "cuda.version=12.4.1,framework.python=3.12");
  CHECK(cells[7].requested);
  for (std::size_t i = 0; i < 6; ++i) CHECK_FALSE(cells[i].requested);
}

TEST_CASE("a later include may overwrite a value an earlier include added, never an axis value", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "12.4.1"}, {"image.flavor", "devel"}},
                             {{"framework.python", "3.11"}, {"image.flavor", "base"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 6);
  CHECK(cells[2].label() == "cuda.version=12.1.1,framework.python=3.11,image.flavor=base");
  CHECK(cells[4].label() == "cuda.version=12.4.1,framework.python=3.10,image.flavor=devel");
  CHECK(cells[5].label() == "cuda.version=12.4.1,framework.python=3.11,image.flavor=base");
  CHECK(cells[5].profile.image_flavor == "base");
}

TEST_CASE("an include without axis fields extends every original cell (GitHub semantics)", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"image.flavor", "devel"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 6);
  for (const auto& cell : cells) {
    CHECK(cell.profile.image_flavor == "devel");
    CHECK_FALSE(cell.requested);
  }
}

TEST_CASE("cells added by an include are not extended by later includes", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "13.0.2"}, {"image.flavor", "base"}},
                             {{"cuda.version", "13.0.2"}, {"image.flavor", "devel"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 8);
  CHECK(cells[6].label() == "cuda.version=13.0.2,image.flavor=base");
  CHECK(cells[7].label() == "cuda.version=13.0.2,image.flavor=devel");
}

TEST_CASE("exclude runs before include, so include can add an excluded combination back", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.exclude = {{{"cuda.version", "12.1.1"}}};
  document.matrix.include = {{{"cuda.version", "12.1.1"}, {"framework.python", "3.10"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 4);
  CHECK(cells[3].label() == "cuda.version=12.1.1,framework.python=3.10");
  CHECK(cells[3].requested);
}

TEST_CASE("a matrix of include entries only is those cells, all requested", "[profile][matrix]") {
  ProfileDocument document{base_profile(), {}};
  document.matrix.include = {{{"cuda.version", "12.1.1"}}, {{"cuda.version", "12.4.1"}, {"image.flavor", "devel"}}};
  const auto cells = expand_matrix(document);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].label() == "cuda.version=12.1.1");
  CHECK(cells[1].label() == "cuda.version=12.4.1,image.flavor=devel");
  CHECK(cells[0].requested);
  CHECK(cells[1].requested);
  CHECK(cells[1].profile.image_flavor == "devel");
}

TEST_CASE("a parsed document expands the same way", "[profile][matrix]") {
  auto document = gpuenv::profile::parse_profile(R"(schema = 1
name = "m"
[os]
distro = "ubuntu"
version = "22.04"
[cuda]
version = "12.4.1"
[framework]
name = "pytorch"
version = "2.4.1"
python = "3.11"
[matrix]
"cuda.version" = ["12.1.1", "12.4.1"]
exclude = [ { "cuda.version" = "12.1.1" } ]
include = [ { "cuda.version" = "11.8.0" } ]
)",
                                                 "t.toml");
  REQUIRE(document.has_value());
  const auto cells = expand_matrix(*document);
  CHECK(labels(cells) == std::vector<std::string>{"cuda.version=12.4.1", "cuda.version=11.8.0"});
  REQUIRE(cells.size() == 2);
  CHECK_FALSE(cells[0].requested);
  CHECK(cells[1].requested);
}

TEST_CASE("select_cells keeps the cells whose fields equal every override", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "12.4.1"}, {"image.flavor", "devel"}}};
  const auto cells = expand_matrix(document);
  struct Row {
    Assignments overrides;
    std::vector<std::string> selected;
  };
  const Row rows[] = {
      {{{"cuda.version", "12.1.1"}, {"framework.python", "3.10"}}, {"cuda.version=12.1.1,framework.python=3.10"}},
      {{{"framework.python", "3.11"}},
       {"cuda.version=12.1.1,framework.python=3.11", "cuda.version=12.4.1,framework.python=3.11,image.flavor=devel"}},
      // Fields that are no axis are compared with the cell's resolved profile.
      {{{"image.flavor", "devel"}, {"framework.python", "3.9"}},
       {"cuda.version=12.4.1,framework.python=3.9,image.flavor=devel"}},
      {{{"os.distro", "ubuntu"}, {"cuda.version", "12.1.1"}},
       {"cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.1.1,framework.python=3.10",
        "cuda.version=12.1.1,framework.python=3.11"}},
      {{{"cuda.version", "13.0.2"}}, {}},
      {{}, labels(cells)},
  };
  for (const Row& row : rows) {
    CHECK(labels(gpuenv::profile::select_cells(cells, row.overrides)) == row.selected);
  }
}

TEST_CASE("pick_cells: fields the matrix sets pick cells, other fields are left to override", "[profile][matrix]") {
  ProfileDocument document = two_axes();
  document.matrix.include = {{{"cuda.version", "12.4.1"}, {"image.flavor", "devel"}}};
  struct Row {
    const char* what;
    Assignments assignments;
    std::vector<std::string> cells;
    Assignments selectors;
  };
  const Row rows[] = {
      {"no assignments: every cell", {}, labels(expand_matrix(document)), {}},
      {"two axes: one cell",
       {{"cuda.version", "12.1.1"}, {"framework.python", "3.10"}},
       {"cuda.version=12.1.1,framework.python=3.10"},
       {{"cuda.version", "12.1.1"}, {"framework.python", "3.10"}}},
      {"a field no cell sets overrides and picks nothing",
       {{"framework.python", "3.9"}, {"framework.version", "2.5.1"}},
       {"cuda.version=12.1.1,framework.python=3.9", "cuda.version=12.4.1,framework.python=3.9,image.flavor=devel"},
       {{"framework.python", "3.9"}}},
      {"the include's own field picks its cells",
       {{"image.flavor", "devel"}},
       {"cuda.version=12.4.1,framework.python=3.9,image.flavor=devel",
        "cuda.version=12.4.1,framework.python=3.10,image.flavor=devel",
        "cuda.version=12.4.1,framework.python=3.11,image.flavor=devel"},
       {{"image.flavor", "devel"}}},
      {"no cell has both values: the axis values alone pick",
       {{"cuda.version", "12.1.1"}, {"framework.python", "3.11"}, {"image.flavor", "devel"}},
       {"cuda.version=12.1.1,framework.python=3.11"},
       {{"cuda.version", "12.1.1"}, {"framework.python", "3.11"}, {"image.flavor", "devel"}}},
      {"a value no cell has: none", {{"cuda.version", "11.8.0"}}, {}, {{"cuda.version", "11.8.0"}}},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const auto pick = gpuenv::profile::pick_cells(document, row.assignments);
    CHECK(labels(pick.cells) == row.cells);
    CHECK(pick.selectors == row.selectors);
  }
}

TEST_CASE("resolve_cell: a node gets the one picked cell with every assignment applied, or a usage error",
          "[profile][matrix]") {
  const ProfileDocument document = two_axes();
  const auto one = gpuenv::profile::resolve_cell(
      document, {{"cuda.version", "12.4.1"}, {"framework.python", "3.10"}, {"framework.version", "2.5.1"}}, "m.toml");
  REQUIRE(one.has_value());
  CHECK(one->cuda_version == "12.4.1");
  CHECK(one->framework_python == "3.10");
  CHECK(one->framework_version == "2.5.1");  // not a matrix field: overridden

  const auto several = gpuenv::profile::resolve_cell(document, {{"cuda.version", "12.4.1"}}, "m.toml");
  REQUIRE_FALSE(several.has_value());
  CHECK(several.error().kind == ErrorKind::usage);
  CHECK(several.error().message == "m.toml: 3 matrix cells match; a node is one");
  CHECK(several.error().remedy == "pick one cell with --set FIELD=VALUE (see `gpuenv matrix m.toml`)");
  const auto none = gpuenv::profile::resolve_cell(document, {{"cuda.version", "11.8.0"}}, "m.toml");
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message == "m.toml: 0 matrix cells match; a node is one");

  // Without a matrix the base profile is the one cell, and every assignment overrides.
  const auto plain =
      gpuenv::profile::resolve_cell(ProfileDocument{base_profile(), {}}, {{"cuda.version", "12.6.3"}}, "m.toml");
  REQUIRE(plain.has_value());
  CHECK(plain->cuda_version == "12.6.3");
}

TEST_CASE("parse_assignments reads FIELD=VALUE and refuses anything else as a usage error", "[profile][matrix]") {
  auto ok = gpuenv::profile::parse_assignments({"cuda.version=12.6.3", "framework.python=3.12", "description=a=b"});
  REQUIRE(ok.has_value());
  CHECK(*ok == Assignments{{"cuda.version", "12.6.3"}, {"framework.python", "3.12"}, {"description", "a=b"}});
  CHECK(gpuenv::profile::parse_assignments({})->empty());

  struct Row {
    const char* item;
    const char* message;
  };
  const Row rows[] = {
      {"cuda.version", "--set cuda.version: expected FIELD=VALUE"},
      {"=12.4.1", "--set =12.4.1: expected FIELD=VALUE"},
      {"cuda.verison=12.4.1", "--set cuda.verison=12.4.1: unknown field `cuda.verison`; did you mean `cuda.version`?"},
      {"cuda.version=12.4", "--set cuda.version=12.4: `cuda.version` = \"12.4\" is not valid"},
      {"cudnn.version=", "--set cudnn.version=: `cudnn.version` = \"\" is not valid"},
      {"image.flavor=cudnn-runtime",
       "--set image.flavor=cudnn-runtime: `image.flavor` = \"cudnn-runtime\" is not valid"},
  };
  for (const Row& row : rows) {
    INFO(row.item);
    auto parsed = gpuenv::profile::parse_assignments({"os.distro=ubuntu", row.item});
    REQUIRE_FALSE(parsed.has_value());
    CHECK(parsed.error().kind == ErrorKind::usage);
    CHECK(parsed.error().message == row.message);
    CHECK_FALSE(parsed.error().remedy.empty());
  }
}

TEST_CASE("apply_overrides sets fields in order and names the override that is wrong", "[profile][matrix]") {
  auto applied = gpuenv::profile::apply_overrides(
      base_profile(),
      {{"cuda.version", "12.6.3"}, {"framework.version", "2.9.1"}, {"cuda.version", "12.8.1"}, {"cudnn.version", "9"}});
  REQUIRE(applied.has_value());
  CHECK(applied->cuda_version == "12.8.1");
  CHECK(applied->framework_version == "2.9.1");
  CHECK(applied->cudnn_version == "9");
  CHECK(applied->framework_python == "3.11");

  auto unknown = gpuenv::profile::apply_overrides(base_profile(), {{"gpu.models", "A100"}});
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().kind == ErrorKind::input);
  CHECK(unknown.error().message.rfind("--set gpu.models=A100: unknown field `gpu.models`", 0) == 0);

  auto bad = gpuenv::profile::apply_overrides(base_profile(), {{"cuda.version", "12.6.3"}, {"driver.branch", "55"}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "--set driver.branch=55: `driver.branch` = \"55\" is not valid");
}
