#pragma once
// NVLink error counters as NVML reads them per link, and NVLink5's as DCGM judges them. nvml.h marks the older
// counters (nvmlDeviceGetNvLinkErrorCounter: replay, recovery, CRC flit and data) "unsupported for Blackwell+";
// Blackwell's NVLink5 counts its errors in the NVML_FI_DEV_NVLINK_COUNT_* field values instead
// (nvmlDeviceGetFieldValues, the link in scopeId), with two bit error rates over all links (scopeId UINT_MAX). This is
// the one reader of them (smoke, doctor's inventory and link counters, and watch's samples all read through
// read_nvlink_errors) and the one table of how a rise of each NVLink5 counter is judged (smoke.link_errors,
// nvlink.errors, watch.nvlink_errors and watch.nvlink_recoveries): gpuenv's own policy, after DCGM 4.6.0's health
// watch but gentler where the table says so.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "probe/fabric_facts.hpp"

namespace gpuenv::probe {

/// An NVLink5 error counter: its NVML field id, what it counts (for messages) and how a rise of it is judged.
struct NvLink5Field {
  unsigned id;
  const char* what;    ///< "symbol errors"
  bool warns;          ///< a rise warns; the others' rise fails
  bool judged = true;  ///< false: read and shown, a rise never judged (effective errors)
};

/// The NVLink5 error counters gpuenv reads, in DCGM's order: DCGM 4.6.0 MonitorNVLink5Fields' counters
/// (modules/health/DcgmHealthWatch.cpp: any rise fails, DCGM_LIMIT_MAX_NVLINK_ERROR 1). gpuenv's own policy differs
/// from DCGM's in two places: the link recoveries are judged as MonitorNVLinkErrorFields splits them (213 successful:
/// warn, 214 failed: fail) where MonitorNVLink5Fields fails any rise of their sum (215), which gpuenv does not read;
/// and a rise of effective errors (219) is not judged at all (a healthy link under load at an effective bit error rate
/// of 1e-15 counts some each hour): the effective bit error rate, judged against DCGM's 1e-12, is their judgement.
/// MonitorNVLink5Fields' NVLink ECC counter, a GPU-level total, is read with the rates (NvLink5Rates::ecc_errors).
std::span<const NvLink5Field> nvlink5_error_fields();
/// What NVLink5 counter `field` counts ("symbol errors"; "errors (NVML field N)" for one not in the table).
std::string nvlink5_counter_name(unsigned field);
/// Whether a rise of NVLink5 counter `field` only warns (a field not in the table fails).
bool nvlink5_warns_only(unsigned field);
/// Whether a rise of NVLink5 counter `field` is judged at all (false for effective errors; true for a field not in
/// the table).
bool nvlink5_judged(unsigned field);

/// The growth of each NVLink5 counter read in both `before` and `after` (a counter that went down was reset by a
/// driver reload: its growth is its later value); counters read at one end only are left out.
std::vector<NvLink5Counter> nvlink5_growth(const std::vector<NvLink5Counter>& before,
                                           const std::vector<NvLink5Counter>& after);
/// The sum of the judged `counters` whose rise warns (`warns`) or fails (!`warns`); nullopt when none is there.
std::optional<std::uint64_t> nvlink5_sum(const std::vector<NvLink5Counter>& counters, bool warns);
/// "link 3: 2 symbol errors" for each judged counter of `growth` above 0 whose rise warns (`warns`) or fails.
std::vector<std::string> nvlink5_rises(unsigned link, const std::vector<NvLink5Counter>& growth, bool warns);
/// "link 3: 26 effective errors" for each counter of `growth` above 0 whose rise is not judged (shown only).
std::vector<std::string> nvlink5_unjudged_rises(unsigned link, const std::vector<NvLink5Counter>& growth);

/// An NVLink5 bit error rate as nvml.h encodes it (NVML_NVLINK_ERROR_COUNTER_BER_GET): bits 0-7 the exponent, 8-11
/// the mantissa: mantissa x 10^-exponent.
struct BitErrorRate {
  unsigned mantissa;
  unsigned exponent;
  explicit BitErrorRate(std::uint64_t raw)
      : mantissa(static_cast<unsigned>((raw >> 8) & 0xf)), exponent(static_cast<unsigned>(raw & 0xff)) {}
  std::string str() const { return std::to_string(mantissa) + "e-" + std::to_string(exponent); }
};

/// DCGM 4.6.0 common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded: above 1e-12 (15e-255 is NVML's "zero"). A
/// mantissa of 0 is a zero rate too, as DCGM's symbol check reads it (its effective check would flag a raw 0).
bool effective_ber_exceeded(const BitErrorRate& ber);
/// DCGM 4.6.0 modules/health/DcgmHealthWatch.cpp IsSymbolBerThresholdExceeded with the Blackwell all-links floor
/// 15e-238 (DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED, common/DcgmGPUHardwareLimits.h): a symbol error forward error
/// correction could not fix ("Shouldn't see Symbol at all", MonitorNVLink5Fields).
bool symbol_ber_exceeded(const BitErrorRate& ber);
/// The bit error rates of `gpu` past DCGM's limits, as message parts ("effective bit error rate 2e-12 over all links
/// (DCGM fails above 1e-12)"); empty when neither was read or both are within them.
std::vector<std::string> nvlink5_ber_faults(std::optional<std::uint64_t> effective,
                                            std::optional<std::uint64_t> symbol);

/// nvml.h NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL (160, "NVLink data ECC Error Counter total for all Links";
/// NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f:2642): DCGM 4.6.0's DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL (1220, a GPU field,
/// dcgmlib/src/dcgm_fields.cpp), the last counter of MonitorNVLink5Fields, whose rise by 1 fails
/// (DCGM_LIMIT_MAX_NVLINK_ERROR).
inline constexpr unsigned k_nvlink_ecc_total_field = 160;
/// What it counts, for messages.
inline constexpr const char* k_nvlink_ecc_name = "NVLink ECC data errors (all links)";
/// The growth of the NVLink ECC data error total between two readings: nullopt when either is missing; a counter that
/// went down (a driver reload) counts its later value, as nvlink5_growth does.
std::optional<std::uint64_t> nvlink_ecc_growth(std::optional<std::uint64_t> before, std::optional<std::uint64_t> after);
/// "3 NVLink ECC data errors (all links)" for a `growth` (nvlink_ecc_growth) above 0, whose rise fails; nullopt for
/// none or an unknown one.
std::optional<std::string> nvlink_ecc_rise(std::optional<std::uint64_t> growth);

/// Where the NVLink5 judgement comes from, for findings' `source`: gpuenv's own policy where it differs from DCGM's.
inline constexpr const char* k_nvlink5_source =
    "gpuenv's policy after NVIDIA/DCGM @ 72fa3fe (4.6.0) modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields "
    "(gentler: successful link recoveries warn as MonitorNVLinkErrorFields has them, where DCGM fails any rise of the "
    "recovery total; effective errors shown, not judged, the effective bit error rate judging them; the NVLink ECC "
    "data error total, DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL, judged on NVLink5 GPUs only); "
    "common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded";

namespace nvml {

using Return = int;
using Device = struct nvmlDevice_st*;

/// nvml.h nvmlFieldValue_t (40 bytes on LP64: the value union at offset 32).
struct FieldValue {
  unsigned field_id;
  unsigned scope_id;  ///< the NVLink for the NVML_FI_DEV_NVLINK_COUNT_* fields ("Link ID needs to be specified in
                      ///< the scopeId field", nvml.h); UINT_MAX for the NVLink5 rates over all links
  long long timestamp;
  long long latency_usec;
  int value_type;      ///< nvmlValueType_t: 0 double, 1 unsigned int, 2 unsigned long, 3 unsigned long long, 4 signed
                       ///< long long, 5 int, 6 unsigned short
  Return nvml_return;  ///< per value: nvmlDeviceGetFieldValues succeeds when any value was filled
  union {
    double d;
    unsigned u;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
};

/// The two NVML entry points an NVLink's error counters are read through; either may be null (an old driver).
struct NvLinkErrorCalls {
  Return (*error_counter)(Device, unsigned, int, unsigned long long*) = nullptr;  ///< nvmlDeviceGetNvLinkErrorCounter
  Return (*field_values)(Device, int, FieldValue*) = nullptr;                     ///< nvmlDeviceGetFieldValues (R550+)
};

/// Link `link`'s error counters into `into`: the four older ones NVML answers, and the NVLink5 counters of
/// nvlink5_error_fields NVML answers (one nvmlDeviceGetFieldValues call on every link, whatever the older ones gave:
/// DCGM reads both sets on every GPU; a link before NVLink5 answers each NVLink5 value NOT_SUPPORTED, left out).
void read_nvlink_errors(const NvLinkErrorCalls& calls, Device device, unsigned link, NvLinkCounters& into);

/// NVLink5's effective and symbol bit error rates over all links (scopeId UINT_MAX: "NVLink5+ requires scopeId =
/// UINT_MAX for aggregate data", DCGM dcgmlib/src/DcgmCacheManager.cpp), raw; unknown when NVML cannot read them.
/// In the same nvmlDeviceGetFieldValues call, the NVLink ECC data error total (field 160) at scopeId 0, as DCGM asks
/// for it: NvmlFieldRequiresNvLinkAggregate (dcgmlib/src/DcgmCMUtils.cpp) does not list it, so
/// ActuallyUpdateGpuFieldValues leaves its scopeId at the 0 of its memset. It is kept only when one of the two rates
/// was read (an NVLink5 GPU): DCGM reads it in MonitorNVLink5Fields, the Blackwell counters, and gpuenv starts no
/// judgement of it on an older GPU that answers it.
struct NvLink5Rates {
  std::optional<std::uint64_t> effective_ber;
  std::optional<std::uint64_t> symbol_ber;
  std::optional<std::uint64_t> ecc_errors;  ///< NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL, cumulative
};
NvLink5Rates read_nvlink5_rates(const NvLinkErrorCalls& calls, Device device);

}  // namespace nvml
}  // namespace gpuenv::probe
