// Fuzz target: the version defines of cuDNN headers (cudnn_version.h, older cudnn.h) and nccl.h.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/cuda_toolkit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  (void)gpuenv::probe::parse_cudnn_header(text);
  (void)gpuenv::probe::parse_nccl_header(text);
  return 0;
}
