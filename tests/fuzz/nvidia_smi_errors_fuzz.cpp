// Fuzz target: what nvidia-smi prints when it fails (driver/library mismatch, no driver, ...), classified for the
// findings, and the PCI bus ids NVIDIA tools print.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "probe/nvidia_smi_exit.hpp"
#include "probe/pci_bus_id.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  (void)gpuenv::probe::classify_nvidia_smi_error(text);
  (void)gpuenv::probe::canonical_pci_bus_id(text);
  return 0;
}
