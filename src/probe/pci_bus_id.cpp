#include "probe/pci_bus_id.hpp"

#include <cctype>
#include <cstdio>
#include <vector>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

/// A whole string of 1..max_digits hex digits as a number.
std::optional<unsigned long> hex(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned long value = 0;
  for (const char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
    value = value * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(c)) != 0
                                                        ? c - '0'
                                                        : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  }
  return value;
}

}  // namespace

std::optional<std::string> canonical_pci_bus_id(std::string_view text) {
  std::string_view id = util::trim(text);
  if (util::starts_with(id, "PCI:")) id.remove_prefix(4);
  const std::vector<std::string_view> parts = util::split(id, ':');
  if (parts.size() != 3) return std::nullopt;
  std::string_view device_part = parts[2];
  std::string_view function_part = "0";
  if (const std::size_t dot = device_part.find('.'); dot != std::string_view::npos) {
    function_part = device_part.substr(dot + 1);
    device_part = device_part.substr(0, dot);
  }
  const auto domain = hex(parts[0], 8);
  const auto bus = hex(parts[1], 2);
  const auto device = hex(device_part, 2);
  const auto function = hex(function_part, 1);
  // PCI limits: 16-bit domain, 8-bit bus, 5-bit device, 3-bit function.
  if (!domain || !bus || !device || !function || *domain > 0xffff || *device > 0x1f || *function > 7) {
    return std::nullopt;
  }
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%04lx:%02lx:%02lx.%lx", *domain, *bus, *device, *function);
  return std::string(buffer);
}

}  // namespace gpuenv::probe
