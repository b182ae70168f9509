#pragma once
// Ending a test case as skipped: it prints "SKIPPED: <message>", which CTest counts as a skip
// (gpuenv_discover_tests' SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt), and returns from the test case.

#include <catch2/catch.hpp>
#include <string>

/// Skips the test case here: WARN("SKIPPED: " << message) and return (`message` is anything a stream takes).
#define GPUENV_SKIP(message)      \
  do {                            \
    WARN("SKIPPED: " << message); \
    return;                       \
  } while (false)

/// Skips the test case here unless `condition` holds.
#define GPUENV_SKIP_UNLESS(condition, message) \
  do {                                         \
    if (!(condition)) GPUENV_SKIP(message);    \
  } while (false)

/// Skips the test case here when `why_expr` (the reason the test cannot run, empty when it can) is not empty.
#define GPUENV_SKIP_IF_REASON(why_expr)                                                                         \
  do {                                                                                                          \
    if (const std::string gpuenv_skip_why = (why_expr); !gpuenv_skip_why.empty()) GPUENV_SKIP(gpuenv_skip_why); \
  } while (false)
