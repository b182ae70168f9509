#pragma once
// The Python frameworks users import (torch, tensorflow): what the node's interpreter says about them, from a
// short subprocess running an embedded script that prints `key=value` lines.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// The script `python -c` runs: imports each framework if installed and prints `<framework>.<key>=<value>` lines.
std::string_view framework_probe_script();

/// Parses the script's output (unknown keys and junk lines ignored). Pure.
std::vector<FrameworkFacts> parse_framework_report(std::string_view text);

/// Runs `python -I -c <script>` (isolated: no working directory, PYTHON* variable or user site on sys.path) with `timeout` (and, with `matmul`, a 64x64 matmul on each visible device); never
/// throws: a missing interpreter or a crash is a reason.
FrameworkProbe probe_frameworks(system::System& system, const std::string& python, std::chrono::milliseconds timeout,
                                bool matmul);

/// Whether a wheel with `arch_list` runs on a GPU of compute capability `capability` ("8.6"): SASS for the same
/// major and a minor at most the GPU's ("sm_80" runs on 8.6), or PTX ("compute_XY") at most the GPU's to JIT.
/// Arch-specific targets ("sm_90a") run only on exactly that GPU.
bool arch_list_covers(const std::vector<std::string>& arch_list, const std::string& capability);

}  // namespace gpuenv::probe
