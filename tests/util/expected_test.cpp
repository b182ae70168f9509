// GPUENV_TRY and GPUENV_TRY_ASSIGN: a success passes the value through, a failure returns the same Error, and the
// expression is evaluated exactly once either way.

#include "util/expected.hpp"

#include <catch2/catch.hpp>
#include <string>

namespace {

using gpuenv::util::Error;
using gpuenv::util::ErrorKind;
using gpuenv::util::Expected;
using gpuenv::util::Ok;

struct TryProbe {
  int calls = 0;
  Expected<std::string> text(bool ok) {
    ++calls;
    if (!ok) return Error::input("bad text", "fix the text");
    return std::string("value");
  }
  Expected<Ok> check(bool ok) {
    ++calls;
    if (!ok) return Error::usage("bad check");
    return Ok{};
  }
};

Expected<int> try_check_then_42(TryProbe& probe, bool ok) {
  GPUENV_TRY(probe.check(ok));
  return 42;
}

Expected<std::string> try_assign_twice(TryProbe& probe, bool first_ok, bool second_ok) {
  GPUENV_TRY_ASSIGN(auto first, probe.text(first_ok));
  GPUENV_TRY_ASSIGN(const std::string second, probe.text(second_ok));  // a second one in the same scope
  return first + "+" + second;
}

}  // namespace

TEST_CASE("GPUENV_TRY returns the Error of a failed Expected and goes on after a success", "[util]") {
  TryProbe ok_probe;
  const auto passed = try_check_then_42(ok_probe, true);
  REQUIRE(passed.has_value());
  CHECK(*passed == 42);
  CHECK(ok_probe.calls == 1);

  TryProbe bad_probe;
  const auto failed = try_check_then_42(bad_probe, false);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().kind == ErrorKind::usage);
  CHECK(failed.error().message == "bad check");
  CHECK(failed.error().remedy.empty());
  CHECK(bad_probe.calls == 1);
}

TEST_CASE("GPUENV_TRY_ASSIGN declares the value of a success and returns the Error of a failure", "[util]") {
  TryProbe ok_probe;
  const auto both = try_assign_twice(ok_probe, true, true);
  REQUIRE(both.has_value());
  CHECK(*both == "value+value");
  CHECK(ok_probe.calls == 2);

  TryProbe first_bad;
  const auto first = try_assign_twice(first_bad, false, true);
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == ErrorKind::input);
  CHECK(first.error().message == "bad text");
  CHECK(first.error().remedy == "fix the text");
  CHECK(first_bad.calls == 1);  // stopped at the first failure

  TryProbe second_bad;
  const auto second = try_assign_twice(second_bad, true, false);
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().message == "bad text");
  CHECK(second_bad.calls == 2);
}
