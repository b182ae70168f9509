// The host side of a GPU's place: PCIe link speeds and widths from sysfs, the upstream port above the GPU, and the
// CPUs of its NUMA node.

#include "smoke/internal/host_link.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "util/strings.hpp"

namespace gpuenv::smoke {

namespace {

/// The highest CPU number a cpulist may name: Linux's NR_CPUS is at most 8192 (arch/x86/Kconfig), so a larger one
/// is not a CPU list.
constexpr long long k_max_cpu = 1 << 20;

/// A link width file's number ("16\n"); PCIe links are x1 to x32 (widths above are no link).
std::optional<int> pcie_width(std::string_view text) {
  const auto width = util::parse_int(text, 1, 64);
  return width ? std::optional<int>(static_cast<int>(*width)) : std::nullopt;
}

}  // namespace

std::optional<int> pcie_generation_from_speed(std::string_view text) {
  // "16.0 GT/s PCIe" (older kernels "8 GT/s", "2.5 GT/s"); "Unknown" is no speed.
  text = util::trim(text);
  const auto rate = util::parse_double(text.substr(0, text.find(' ')));
  if (!rate) return std::nullopt;
  const std::pair<double, int> table[] = {{2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (const auto& [speed, generation] : table) {
    if (std::fabs(*rate - speed) < 0.01) return generation;
  }
  return std::nullopt;
}

std::optional<CapableLink> capable_pcie_link(const DeviceInfo& info) {
  auto lower_of = [](std::optional<int> gpu, std::optional<int> upstream) -> std::optional<int> {
    if (gpu && upstream) return std::min(*gpu, *upstream);
    return gpu ? gpu : upstream;
  };
  const std::optional<int> generation = lower_of(info.pcie_max_generation, info.pcie_upstream_max_generation);
  const std::optional<int> width = lower_of(info.pcie_max_width, info.pcie_upstream_max_width);
  if (!generation || !width) return std::nullopt;
  return CapableLink{*generation, *width};
}

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  std::string list(text);
  while (!list.empty() && std::isspace(static_cast<unsigned char>(list.back())) != 0) list.pop_back();
  std::size_t at = 0;
  while (at < list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string_view range = std::string_view(list).substr(at, end - at);
    const std::size_t dash = range.find('-');
    const auto first = util::parse_int(range.substr(0, dash), 0, k_max_cpu);
    const auto last = dash == std::string_view::npos ? first : util::parse_int(range.substr(dash + 1), 0, k_max_cpu);
    if (!first || !last || *last < *first || *last - *first > 65536) return {};
    for (long long cpu = *first; cpu <= *last; ++cpu) cpus.push_back(static_cast<int>(cpu));
    at = end + 1;
  }
  return cpus;
}

std::string sysfs_bus_id(std::string_view driver_bus_id) {
  std::string id(driver_bus_id);
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);  // 8-digit domain -> 4 digits
  return id;
}

/// The GPU's link files, and its parent's: /sys/bus/pci/devices/<bdf> is a link into /sys/devices/pci…/<bridge>/<bdf>,
/// and the kernel resolves "<link>/.." to the bridge (the upstream port the GPU's link trains against).
void read_pcie_link(system::System& system, const std::string& sysfs_root, DeviceInfo& info) {
  if (info.pci_bus_id.empty()) return;
  const std::string base = sysfs_root + "/bus/pci/devices/" + sysfs_bus_id(info.pci_bus_id) + "/";
  auto number = [&](const std::string& file) -> std::optional<int> {
    auto text = system.read_file(base + file);
    return text ? pcie_width(*text) : std::nullopt;
  };
  auto generation = [&](const std::string& file) -> std::optional<int> {
    auto text = system.read_file(base + file);
    return text ? pcie_generation_from_speed(*text) : std::nullopt;
  };
  info.pcie_generation = generation("current_link_speed");
  info.pcie_width = number("current_link_width");
  info.pcie_max_generation = generation("max_link_speed");
  info.pcie_max_width = number("max_link_width");
  info.pcie_upstream_max_generation = generation("../max_link_speed");
  info.pcie_upstream_max_width = number("../max_link_width");
}

LinkSampler::LinkSampler(system::System& system, const std::string& sysfs_root, const std::string& pci_bus_id,
                         std::shared_ptr<const std::atomic<int>> in_flight, std::chrono::milliseconds interval) {
  if (pci_bus_id.empty()) return;
  const std::string base = sysfs_root + "/bus/pci/devices/" + sysfs_bus_id(pci_bus_id) + "/";
  m_thread = std::thread([this, &system, base, in_flight = std::move(in_flight), interval] {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop) {
      lock.unlock();
      // Under load only when copies were in flight both before and after the reads.
      const bool busy_before = in_flight->load() > 0;
      std::optional<int> generation, width;
      if (busy_before) {
        if (auto text = system.read_file(base + "current_link_speed")) generation = pcie_generation_from_speed(*text);
        if (auto text = system.read_file(base + "current_link_width")) width = pcie_width(*text);
      }
      const bool under_load = busy_before && in_flight->load() > 0;
      lock.lock();
      if (under_load && (generation || width)) {
        ++m_seen.samples;
        if (generation) m_seen.generation = std::max(m_seen.generation.value_or(0), *generation);
        if (width) m_seen.width = std::max(m_seen.width.value_or(0), *width);
      }
      m_wake.wait_for(lock, interval, [this] { return m_stop; });
    }
  });
}

LinkSampler::~LinkSampler() { stop(); }

LinkUnderLoad LinkSampler::stop() {
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_seen;
}

std::string link_text(std::optional<int> generation, std::optional<int> width) {
  return (generation ? "Gen" + std::to_string(*generation) : std::string("Gen?")) + " x" +
         (width ? std::to_string(*width) : std::string("?"));
}

}  // namespace gpuenv::smoke
