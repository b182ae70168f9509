#pragma once
// Doctor's rules for the Python frameworks on the node: does `import torch` work, does it see the GPUs, and does the
// wheel carry kernels (or PTX) for every GPU's architecture. Pure.

#include <vector>

#include "probe/facts.hpp"
#include "report/finding.hpp"

namespace gpuenv::doctor {

/// framework.python / framework.installed skips, framework.<name> and framework.<name>_arch findings; nothing
/// when the frameworks were not probed.
void check_frameworks(const probe::HostFacts& facts, std::vector<report::Finding>& out);

}  // namespace gpuenv::doctor
