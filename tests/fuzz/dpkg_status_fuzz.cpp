// Fuzz target: the dpkg status file (/var/lib/dpkg/status) and the CUDA major read from each cuDNN package.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/packages.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const auto& package : gpuenv::probe::parse_dpkg_status(gpuenv::fuzz::as_text(data, size))) {
    (void)gpuenv::probe::cudnn_package_cuda(package);
  }
  return 0;
}
