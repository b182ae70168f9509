// Fuzz target: `scontrol show node NAME` as the Slurm health check parses it, and the decision made from it.
#include <cstddef>
#include <cstdint>

#include "fleet/slurm.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto node = gpuenv::fleet::parse_scontrol_show_node(gpuenv::fuzz::as_text(data, size));
  if (!node) return 0;
  using gpuenv::fleet::NodeHealth;
  (void)gpuenv::fleet::decide_slurm_action(NodeHealth::not_ready, *node, "gpuenv: NOT READY");
  (void)gpuenv::fleet::decide_slurm_action(NodeHealth::degraded_by_jobs, *node, "gpuenv: DEGRADED");
  (void)gpuenv::fleet::decide_slurm_action(NodeHealth::ready, *node, "");
  return 0;
}
