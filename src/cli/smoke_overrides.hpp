#pragma once
// `--expect` / `--minimum ID=VALUE` for the smoke tests, shared by `gpuenv smoke` and `gpuenv doctor`.

#include <map>
#include <string>
#include <vector>

#include "smoke/smoke.hpp"
#include "util/expected.hpp"

namespace gpuenv::cli {

/// Reads `--expect` (minimum = false) or `--minimum` ID=VALUE pairs into `overrides`; a usage Error names the bad
/// pair and the valid ids.
util::Expected<util::Ok> read_smoke_overrides(const std::vector<std::string>& pairs, const char* flag, bool minimum,
                                              std::map<std::string, smoke::MetricOverride>& overrides);

}  // namespace gpuenv::cli
