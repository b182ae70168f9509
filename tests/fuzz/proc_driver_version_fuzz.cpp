// Fuzz target: /proc/driver/nvidia/version and the kernel-module banner inside it.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/proc_driver_version.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  (void)gpuenv::probe::parse_proc_driver_version(text);
  (void)gpuenv::probe::parse_kernel_module_banner(text);
  return 0;
}
