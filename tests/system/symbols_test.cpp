// system::SymbolBinder on a fake library that exports a chosen set of names: present, absent optional, absent
// required, a versioned entry point's names tried in order (the first exported one wins) and the missing list.

#include "system/symbols.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "support/fake_library.hpp"

namespace {

int symbols_old_entry() { return 1; }
int symbols_new_entry() { return 2; }
int symbols_newest_entry() { return 3; }

}  // namespace

TEST_CASE("symbols: each entry point binds by its names in order, and the required ones absent are listed",
          "[system][symbols]") {
  using gpuenv::system::SymbolBinder;
  struct Row {
    const char* what;
    std::map<std::string, int (*)()> exports;
    std::vector<const char*> names;
    bool required;
    const char* bound;                 ///< the name that bound, or nullptr
    int answer;                        ///< what the bound pointer returns (0: null)
    std::vector<std::string> asked;    ///< the lookups, in order
    std::vector<std::string> missing;  ///< the binder's missing list afterwards
  };
  const std::vector<Row> rows = {
      {"present, required", {{"fooInit", symbols_old_entry}}, {"fooInit"}, true, "fooInit", 1, {"fooInit"}, {}},
      {"present, optional", {{"fooInit", symbols_old_entry}}, {"fooInit"}, false, "fooInit", 1, {"fooInit"}, {}},
      {"absent, optional: null and not missing", {}, {"fooInit"}, false, nullptr, 0, {"fooInit"}, {}},
      {"absent, required: null and missing", {}, {"fooInit"}, true, nullptr, 0, {"fooInit"}, {"fooInit"}},
      {"versioned: the newest name wins when both are exported, and the older is not asked",
       {{"fooInit_v2", symbols_new_entry}, {"fooInit", symbols_old_entry}},
       {"fooInit_v2", "fooInit"},
       true,
       "fooInit_v2",
       2,
       {"fooInit_v2"},
       {}},
      {"versioned: falls back to the older name",
       {{"fooInit", symbols_old_entry}},
       {"fooInit_v2", "fooInit"},
       true,
       "fooInit",
       1,
       {"fooInit_v2", "fooInit"},
       {}},
      {"versioned: the names are tried in the caller's order, not by version",
       {{"fooList_v3", symbols_newest_entry}, {"fooList_v2", symbols_new_entry}},
       {"fooList_v2", "fooList_v3"},
       false,
       "fooList_v2",
       2,
       {"fooList_v2"},
       {}},
      {"versioned, required, none exported: missing by its first name",
       {{"other", symbols_old_entry}},
       {"fooList_v3", "fooList_v2"},
       true,
       nullptr,
       0,
       {"fooList_v3", "fooList_v2"},
       {"fooList_v3"}},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    gpuenv::testing::FakeLibrary library(row.exports);
    SymbolBinder binder(library);
    int (*pointer)() = symbols_old_entry;  // overwritten either way
    const char* bound = nullptr;
    if (row.names.size() == 1) {
      bound = row.required ? binder.require(pointer, row.names[0]) : binder.optional(pointer, row.names[0]);
    } else {
      REQUIRE(row.names.size() == 2);
      bound = row.required ? binder.require(pointer, {row.names[0], row.names[1]})
                           : binder.optional(pointer, {row.names[0], row.names[1]});
    }
    CHECK(std::string(bound != nullptr ? bound : "(none)") == (row.bound != nullptr ? row.bound : "(none)"));
    CHECK((pointer != nullptr ? pointer() : 0) == row.answer);
    CHECK(library.asked == row.asked);
    CHECK(binder.missing() == row.missing);
  }
}

TEST_CASE("symbols: the missing list keeps the order of binding, optional ones never in it", "[system][symbols]") {
  gpuenv::testing::FakeLibrary library({{"cuDriverGetVersion", symbols_old_entry}});
  gpuenv::system::SymbolBinder binder(library);
  int (*init)() = nullptr;
  int (*version)() = nullptr;
  int (*error_name)() = nullptr;
  int (*alloc)() = nullptr;
  binder.require(init, "cuInit");
  binder.require(version, "cuDriverGetVersion");
  binder.optional(error_name, "cuGetErrorName");
  binder.require(alloc, {"cuMemAlloc_v2", "cuMemAlloc"});
  CHECK(binder.missing() == std::vector<std::string>{"cuInit", "cuMemAlloc_v2"});
  CHECK(binder.missing_text() == "cuInit, cuMemAlloc_v2");
  CHECK(version != nullptr);
  CHECK(init == nullptr);
  CHECK(error_name == nullptr);
  CHECK(alloc == nullptr);

  gpuenv::testing::FakeLibrary complete({{"cuInit", symbols_old_entry}});
  gpuenv::system::SymbolBinder all_there(complete);
  all_there.require(init, "cuInit");
  CHECK(all_there.missing().empty());
  CHECK(all_there.missing_text().empty());
}
