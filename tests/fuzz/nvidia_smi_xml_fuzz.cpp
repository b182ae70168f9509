// Fuzz target: `nvidia-smi -q -x` reports (every driver since 418 writes its own shape): the report parser and the
// inventory doctor builds from it.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/collect.hpp"
#include "probe/nvidia_smi_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view xml = gpuenv::fuzz::as_text(data, size);
  if (const auto report = gpuenv::probe::parse_nvidia_smi_xml(xml)) (void)report->gpu_count_mismatch();
  (void)gpuenv::probe::inventory_from_nvidia_smi_xml(xml, "nvidia-smi");
  return 0;
}
