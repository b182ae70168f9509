#pragma once
// GPU facts through NVML, loaded at run time (dlopen of libnvidia-ml.so.1 via System); no link-time dependency.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// The default NVML soname; GPUENV_NVML_LIBRARY overrides it (tests point it at a fake libnvidia-ml).
inline constexpr const char* k_nvml_library = "libnvidia-ml.so.1";

/// Reads every GPU through NVML. Never throws: a missing library, a failed nvmlInit (with NVML's own
/// error string) or a call that does not return within `timeout` gives availability.available = false.
GpuInventory read_nvml(system::System& system, const std::string& library, std::chrono::milliseconds timeout);

/// NVML initialised once and read at every interval (`gpuenv watch`), where read_nvml would pay nvmlInit and
/// nvmlShutdown at each read. Every call runs on a thread abandoned at its limit (system/abandon.hpp), as read_nvml's
/// does; while an abandoned call is still inside NVML no other read starts (it would queue behind the hung one) and
/// read() answers at once that NVML is busy. One caller at a time.
class NvmlSession {
 public:
  /// Loads `library` and runs nvmlInit within `timeout`; nullptr with `why_not` set when either fails.
  static std::unique_ptr<NvmlSession> open(system::System& system, const std::string& library,
                                           std::chrono::milliseconds timeout, Availability& why_not);
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  /// Every GPU now (as read_nvml reads them) within `timeout`; availability.available = false with the reason when
  /// NVML fails, does not answer in time, or has not yet returned from a call abandoned earlier.
  /// With `links`, each readable GPU's link counters of the same call go there too (NVLink per link, the PCIe replay
  /// counter: probe/link_counters.hpp), so that a reader can compare two readings link by link.
  GpuInventory read(std::chrono::milliseconds timeout, std::vector<GpuLinkCounters>* links = nullptr);
  /// True while a call abandoned at its limit has not returned.
  bool hung() const;

  struct State;

 private:
  explicit NvmlSession(std::shared_ptr<State> state) : m_state(std::move(state)) {}
  std::shared_ptr<State> m_state;
};

/// NVML's name for a return code when the library is not there to ask ("Driver Not Loaded" for 9, ...).
std::string nvml_error_name(int code);

/// Names of the active bits of an NVML clocks-event (throttle) reason mask, idle and application clocks excluded.
std::vector<std::string> throttle_reason_names(unsigned long long mask);

}  // namespace gpuenv::probe
