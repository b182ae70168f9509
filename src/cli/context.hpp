#pragma once
// What every command needs from the outside: the System seam, the output streams and the style.

#include <ostream>

#include "report/render.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::cli {

/// Exit codes, identical for every command (README "Exit codes").
enum class ExitCode { ok = 0, not_ok = 1, usage = 2, internal = 3 };

struct Context {
  system::System& system;
  std::ostream& out;
  std::ostream& err;
  report::TextStyle style;
};

/// The one place a command's ExitCode becomes the process's: returns it, or, when work was abandoned (a thread in
/// NVML or libcuda, a child that would not die), flushes stdout and stderr and _Exits with it.
int leave(ExitCode code);

/// Prints an Error (and its remedy) to stderr and returns its exit code: usage/input -> 2, internal -> 3.
ExitCode report_error(Context& context, const util::Error& error);

}  // namespace gpuenv::cli
