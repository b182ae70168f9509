// Fuzz target: a CUDA toolkit's own statements of its version: version.json and version.txt.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/cuda_toolkit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  if (const auto json = gpuenv::probe::parse_cuda_version_json(text)) (void)json->component("cuda_nvcc");
  (void)gpuenv::probe::parse_cuda_version_txt(text);
  return 0;
}
