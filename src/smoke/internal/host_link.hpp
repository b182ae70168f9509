#pragma once
// Internal to smoke: what the host's sysfs says about a GPU's place, its PCIe link (the GPU's and its upstream
// port's) and the CPUs of its NUMA node.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "smoke/smoke.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// "32.0 GT/s PCIe" -> 5 (2.5->1, 5->2, 8->3, 16->4, 32->5, 64->6); nullopt when unrecognised.
std::optional<int> pcie_generation_from_speed(std::string_view text);
/// "0-3,8,10-11\n" -> {0,1,2,3,8,10,11} (the kernel's cpulist format); empty when malformed.
std::vector<int> parse_cpu_list(std::string_view text);

/// "00000000:1B:00.0" -> "0000:1b:00.0" (the sysfs name under /sys/bus/pci/devices).
std::string sysfs_bus_id(std::string_view driver_bus_id);

/// The link a healthy slot trains to: min(the GPU's maximum, the upstream port's maximum) per generation and width,
/// each falling back to the other when one side is unknown; nullopt when neither is known.
struct CapableLink {
  int generation = 0;
  int width = 0;
};
std::optional<CapableLink> capable_pcie_link(const DeviceInfo& info);

/// Reads the GPU's current and maximum link and the upstream port's maximum into `info` (under `sysfs_root`).
void read_pcie_link(system::System& system, const std::string& sysfs_root, DeviceInfo& info);

/// The link a GPU's copies ran on: the fastest generation and widest width sysfs showed while they were in flight.
struct LinkUnderLoad {
  std::optional<int> generation;
  std::optional<int> width;
  std::size_t samples = 0;  ///< readings taken while copies were in flight
};

/// Reads the GPU's current PCIe link from sysfs every `interval` on its own thread while `in_flight` is above 0 (timed
/// copies queued or running), until stop(): T4, L4 and RTX cards retrain to Gen1 at idle, so a link read after the
/// copies says nothing about the link they ran on. The fastest reading counts: a link that is still training up at
/// the start of a burst must not look degraded.
class LinkSampler {
 public:
  LinkSampler(system::System& system, const std::string& sysfs_root, const std::string& pci_bus_id,
              std::shared_ptr<const std::atomic<int>> in_flight, std::chrono::milliseconds interval);
  ~LinkSampler();
  LinkSampler(const LinkSampler&) = delete;
  LinkSampler& operator=(const LinkSampler&) = delete;
  /// Ends the sampling (joins the thread: sysfs reads return at once) and returns the link seen under load.
  LinkUnderLoad stop();

 private:
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  LinkUnderLoad m_seen;
  std::thread m_thread;
};

/// "Gen5 x16" ("Gen?"/"x?" for an unknown part).
std::string link_text(std::optional<int> generation, std::optional<int> width);

}  // namespace gpuenv::smoke
