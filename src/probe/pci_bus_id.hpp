#pragma once
// PCI bus ids as NVIDIA tools print them, reduced to one spelling so that sources can be matched.

#include <optional>
#include <string>
#include <string_view>

namespace gpuenv::probe {

/// "dddd:bb:dd.f" in lower case from any NVIDIA spelling: "00000000:3B:00.0" (nvidia-smi),
/// "PCI:0000:9b:00" (kernel Xid lines, no function: .0 assumed), "0000:b3:00.0"; nullopt for anything else.
std::optional<std::string> canonical_pci_bus_id(std::string_view text);

}  // namespace gpuenv::probe
