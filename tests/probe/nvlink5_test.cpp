// NVLink5 (Blackwell) error counters: probe's one table of how DCGM judges them (shared by smoke.link_errors,
// doctor's nvlink.errors and watch.nvlink_errors), the growth between two readings, the bit error rate limits, and
// the one reader of an NVLink's error counters, against stand-ins for the two NVML calls that check what is asked.
//
// Sources: nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f): NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY/_RECOVERY/_CRC
// "This is unsupported for Blackwell+. Please use NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_*"; "NVLink counter field id
// 201-225. Link ID needs to be specified in the scopeId field in nvmlFieldValue_t"; 213 "Number of times link went
// from Up to recovery, succeeded and link came back up", 214 "... failed and link was declared down";
// nvmlDeviceGetFieldValues "NVML_SUCCESS if any values in values were populated. Note that you must check the
// nvmlReturn field of each value for each individual status". NVIDIA/DCGM @ 72fa3fe (4.6.0):
// modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields (DCGM_FI_DEV_NVLINK_RX_SYMBOL_ERROR_TOTAL,
// ..._EFFECTIVE_BER_RAW,
// ..._RX_PACKET_MALFORMED_TOTAL, ..._RX_PACKET_DROPPED_TOTAL, ..._RX_ERROR_TOTAL, ..._RX_REMOTE_ERROR_TOTAL,
// ..._RX_GENERAL_ERROR_TOTAL, ..._INTEGRITY_ERROR_TOTAL, ..._RECOVERY_EVENT_TOTAL, ..._EFFECTIVE_ERROR_TOTAL,
// ..._SYMBOL_BER_RAW: "if (nvLinkError >= DCGM_LIMIT_MAX_NVLINK_ERROR)" fails, DCGM_LIMIT_MAX_NVLINK_ERROR 1 in
// common/DcgmGPUHardwareLimits.h), MonitorNVLinkErrorFields ("link recovery successful events counter",
// DCGM_HEALTH_RESULT_WARN; "link recovery failed events counter", DCGM_HEALTH_RESULT_FAIL), common/DcgmUtilities.cpp
// IsEffectiveBerThresholdExceeded ("1e-12 threshold"; "For exp=13: 10e-13 equals 1e-12, so mantissa > 10 exceeds";
// 15e-255 is the zero BER), IsSymbolBerThresholdExceeded (floor mantissa 15, DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED 238).

#include "probe/nvlink5.hpp"

#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <set>
#include <vector>

using gpuenv::probe::BitErrorRate;
using gpuenv::probe::NvLink5Counter;
using gpuenv::probe::NvLinkCounters;

namespace {

/// A raw NVML bit error rate: mantissa in bits 8-11, exponent in bits 0-7.
std::uint64_t nvlink5_ber(unsigned mantissa, unsigned exponent) {
  return (static_cast<std::uint64_t>(mantissa) << 8) | exponent;
}

}  // namespace

TEST_CASE("nvlink5 table: DCGM 4.6.0's counters, each judged as its health watch judges a rise", "[probe][nvlink5]") {
  struct Row {
    unsigned id;
    const char* what;
    bool warns;
    bool judged = true;
  };
  // The NVML ids of DCGM's fields (dcgmlib/src/dcgm_fields.cpp) and nvml.h's names for them.
  const Row rows[] = {
      {221, "symbol errors", false},                // NVML_FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS
      {206, "malformed packet errors", false},      // ..._MALFORMED_PACKET_ERRORS
      {207, "buffer overrun errors", false},        // ..._BUFFER_OVERRUN_ERRORS (DCGM: RX_PACKET_DROPPED)
      {208, "receive errors", false},               // ..._RCV_ERRORS
      {209, "remote receive errors", false},        // ..._RCV_REMOTE_ERRORS
      {210, "general receive errors", false},       // ..._RCV_GENERAL_ERRORS
      {211, "local link integrity errors", false},  // ..._LOCAL_LINK_INTEGRITY_ERRORS
      {213, "successful link recoveries", true},    // MonitorNVLinkErrorFields: DCGM_HEALTH_RESULT_WARN
      {214, "failed link recoveries", false},       // MonitorNVLinkErrorFields: DCGM_HEALTH_RESULT_FAIL
      // Not judged at all (gpuenv's policy; DCGM's MonitorNVLink5Fields fails any rise): a healthy link under load at
      // an effective BER of 1e-15 counts some each hour; the effective BER (220), judged against 1e-12, judges them.
      {219, "effective errors", false, false},
  };
  const auto table = gpuenv::probe::nvlink5_error_fields();
  REQUIRE(table.size() == std::size(rows));
  for (std::size_t i = 0; i < table.size(); ++i) {
    INFO(rows[i].id);
    CHECK(table[i].id == rows[i].id);
    CHECK(std::string(table[i].what) == rows[i].what);
    CHECK(table[i].warns == rows[i].warns);
    CHECK(gpuenv::probe::nvlink5_counter_name(rows[i].id) == rows[i].what);
    CHECK(gpuenv::probe::nvlink5_warns_only(rows[i].id) == rows[i].warns);
    CHECK(table[i].judged == rows[i].judged);
    CHECK(gpuenv::probe::nvlink5_judged(rows[i].id) == rows[i].judged);
  }
  // 215 (recoveries of either outcome) is not read: DCGM judges its two halves apart. A field gpuenv does not know
  // fails, named by its id.
  CHECK(gpuenv::probe::nvlink5_counter_name(215) == "errors (NVML field 215)");
  CHECK_FALSE(gpuenv::probe::nvlink5_warns_only(215));
  CHECK(gpuenv::probe::nvlink5_judged(215));
}

TEST_CASE("nvlink5 growth, sums and rises: counters read at both ends, a reset counted from zero", "[probe][nvlink5]") {
  const std::vector<NvLink5Counter> before = {{221, 10}, {213, 4}, {214, 0}, {219, 500}, {206, 7}};
  const std::vector<NvLink5Counter> after = {{221, 13}, {213, 5}, {214, 1}, {219, 540}, {207, 9}, {206, 2}};
  const auto grown = gpuenv::probe::nvlink5_growth(before, after);
  std::map<unsigned, std::uint64_t> by_field;
  for (const NvLink5Counter& counter : grown) by_field[counter.field] = counter.value;
  // 207 was not read before: left out; 206 went down (a driver reload): its later value is the growth.
  const std::map<unsigned, std::uint64_t> expected = {{221, 3}, {213, 1}, {214, 1}, {219, 40}, {206, 2}};
  CHECK(by_field == expected);
  CHECK(gpuenv::probe::nvlink5_sum(grown, false) == std::optional<std::uint64_t>(3 + 1 + 2));  // 221, 214, 206
  CHECK(gpuenv::probe::nvlink5_sum(grown, true) == std::optional<std::uint64_t>(1));  // 213; 219 in neither sum
  CHECK_FALSE(gpuenv::probe::nvlink5_sum({}, false));
  CHECK(gpuenv::probe::nvlink5_rises(7, grown, false) == std::vector<std::string>{"link 7: 3 symbol errors",
                                                                                  "link 7: 1 failed link recoveries",
                                                                                  "link 7: 2 malformed packet errors"});
  CHECK(gpuenv::probe::nvlink5_rises(7, grown, true) ==
        std::vector<std::string>{"link 7: 1 successful link recoveries"});
  CHECK(gpuenv::probe::nvlink5_unjudged_rises(7, grown) == std::vector<std::string>{"link 7: 40 effective errors"});
  CHECK_FALSE(gpuenv::probe::nvlink5_sum({{219, 40}}, true));
  CHECK_FALSE(gpuenv::probe::nvlink5_sum({{219, 40}}, false));
  CHECK(gpuenv::probe::nvlink5_rises(7, gpuenv::probe::nvlink5_growth(before, before), false).empty());
}

TEST_CASE("nvlink5 bit error rates: DCGM's effective and symbol limits", "[probe][nvlink5]") {
  struct Case {
    const char* what;
    std::uint64_t raw;
    bool effective_exceeded;  ///< as an effective BER
    bool symbol_exceeded;     ///< as the all-links symbol BER (Blackwell floor 15e-238)
  };
  const Case cases[] = {
      {"NVML's zero 15e-255", nvlink5_ber(15, 255), false, false},
      {"raw 0: mantissa 0", 0, false, false},
      {"1e-12: at the effective limit", nvlink5_ber(1, 12), false, true},
      {"10e-13: at the effective limit", nvlink5_ber(10, 13), false, true},
      {"2e-12", nvlink5_ber(2, 12), true, true},
      {"11e-13", nvlink5_ber(11, 13), true, true},
      {"1e-11", nvlink5_ber(1, 11), true, true},
      {"9e-14", nvlink5_ber(9, 14), false, true},
      {"DCGM's healthy Blackwell aggregate, raw 73710 (bit 16 set)", 73710, false, false},
      {"15e-238: the symbol floor", nvlink5_ber(15, 238), false, false},
      {"15e-237: above the symbol floor", nvlink5_ber(15, 237), false, true},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(gpuenv::probe::effective_ber_exceeded(BitErrorRate(c.raw)) == c.effective_exceeded);
    CHECK(gpuenv::probe::symbol_ber_exceeded(BitErrorRate(c.raw)) == c.symbol_exceeded);
  }
  CHECK(BitErrorRate(nvlink5_ber(2, 12)).str() == "2e-12");
  CHECK(gpuenv::probe::nvlink5_ber_faults(nvlink5_ber(15, 255), 73710).empty());
  CHECK(gpuenv::probe::nvlink5_ber_faults(std::nullopt, std::nullopt).empty());
  CHECK(gpuenv::probe::nvlink5_ber_faults(nvlink5_ber(2, 12), nvlink5_ber(1, 13)) ==
        std::vector<std::string>{"effective bit error rate 2e-12 over all links (DCGM fails above 1e-12)",
                                 "symbol bit error rate 1e-13 over all links (errors forward error correction did "
                                 "not fix)"});
}

namespace {

// Stand-ins for nvmlDeviceGetNvLinkErrorCounter and nvmlDeviceGetFieldValues: a device is Hopper (1: the older
// counters, each NVLink5 value NOT_SUPPORTED), Blackwell (2: the older counters refused) or Blackwell on a newer driver
// (3: the older counters answered with 0, as NVIDIA/nvidia-resiliency-ext#302 reports of fields 161/162 on GB200);
// each link of a Blackwell GPU counts 100 x link + the field's place in a request, and every request is recorded.
struct Nvlink5Request {
  unsigned field, scope;
};
std::vector<Nvlink5Request> g_nvlink5_requests;
constexpr int k_nvlink5_not_supported = 3;

gpuenv::probe::nvml::Device nvlink5_device(bool blackwell, bool answers_old = false) {
  return reinterpret_cast<gpuenv::probe::nvml::Device>(static_cast<std::uintptr_t>(!blackwell    ? 1
                                                                                   : answers_old ? 3
                                                                                                 : 2));
}
bool nvlink5_is_blackwell(gpuenv::probe::nvml::Device device) { return reinterpret_cast<std::uintptr_t>(device) >= 2; }

int nvlink5_error_counter(gpuenv::probe::nvml::Device device, unsigned link, int counter, unsigned long long* value) {
  if (reinterpret_cast<std::uintptr_t>(device) == 2) return k_nvlink5_not_supported;  // "unsupported for Blackwell+"
  *value = nvlink5_is_blackwell(device) ? 0 : 10ULL * link + static_cast<unsigned long long>(counter);
  return 0;
}

int nvlink5_field_values(gpuenv::probe::nvml::Device device, int count, gpuenv::probe::nvml::FieldValue* values) {
  bool any = false;
  for (int i = 0; i < count; ++i) {
    gpuenv::probe::nvml::FieldValue& value = values[i];
    g_nvlink5_requests.push_back({value.field_id, value.scope_id});
    value.nvml_return = k_nvlink5_not_supported;
    if (value.field_id == 160) {  // the NVLink ECC data error total: every GPU answers it here, at scopeId 0 only
      if (value.scope_id != 0) continue;
      value.nvml_return = 0;
      value.value_type = 3;  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
      value.value.ull = nvlink5_is_blackwell(device) ? 7 : 5;
      any = true;
      continue;
    }
    if (!nvlink5_is_blackwell(device)) continue;
    if (value.field_id == 219) continue;  // one field NVML cannot read on this link: left out, not zero
    value.nvml_return = 0;
    if (value.scope_id == std::numeric_limits<unsigned>::max()) {
      value.value_type = 3;  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
      value.value.ull = value.field_id == 220 ? nvlink5_ber(15, 255) : 73710;
    } else if (value.field_id == 206) {
      value.value_type = 5;  // NVML_VALUE_TYPE_SIGNED_INT: a negative count is no count
      value.value.si = -1;
    } else {
      value.value_type = 1;  // NVML_VALUE_TYPE_UNSIGNED_INT
      value.value.u = 100 * value.scope_id + static_cast<unsigned>(i);
    }
    any = true;
  }
  return any ? 0 : k_nvlink5_not_supported;
}

}  // namespace

TEST_CASE("read_nvlink_errors: the older counters and NVLink5's fields of that very link, each as answered",
          "[probe][nvlink5]") {
  const gpuenv::probe::nvml::NvLinkErrorCalls calls{nvlink5_error_counter, nvlink5_field_values};
  // Before Blackwell: the four counters of each link; NVLink5's fields asked for too (DCGM reads both sets on every
  // GPU), each answered NOT_SUPPORTED: no NVLink5 counters, so nothing for any rule to judge.
  g_nvlink5_requests.clear();
  NvLinkCounters hopper;
  gpuenv::probe::nvml::read_nvlink_errors(calls, nvlink5_device(false), 4, hopper);
  CHECK(hopper.replay == std::optional<std::uint64_t>(40));
  CHECK(hopper.crc_data == std::optional<std::uint64_t>(43));
  CHECK(hopper.nvlink5.empty());
  CHECK(g_nvlink5_requests.size() == gpuenv::probe::nvlink5_error_fields().size());
  const auto hopper_rates = gpuenv::probe::nvml::read_nvlink5_rates(calls, nvlink5_device(false));
  CHECK_FALSE(hopper_rates.effective_ber);
  CHECK_FALSE(hopper_rates.symbol_ber);
  // It answers the NVLink ECC data error total (160), which is dropped: no rate read, no NVLink5 GPU, nothing judged.
  CHECK_FALSE(hopper_rates.ecc_errors);

  // Blackwell on a driver that answers the older counters (with 0): NVLink5's fields are still read (review H1: the
  // old code skipped them, and with them every Blackwell fault).
  g_nvlink5_requests.clear();
  NvLinkCounters gb200;
  gpuenv::probe::nvml::read_nvlink_errors(calls, nvlink5_device(true, true), 2, gb200);
  CHECK(gb200.replay == std::optional<std::uint64_t>(0));
  CHECK(gb200.crc_data == std::optional<std::uint64_t>(0));
  CHECK(g_nvlink5_requests.size() == gpuenv::probe::nvlink5_error_fields().size());
  CHECK(gb200.nvlink5.size() == 8);

  // Blackwell: the four refused, the table's fields asked for with the link in scopeId, for each link its own values.
  for (const unsigned link : {0U, 3U, 17U}) {
    INFO("link " << link);
    g_nvlink5_requests.clear();
    NvLinkCounters blackwell;
    gpuenv::probe::nvml::read_nvlink_errors(calls, nvlink5_device(true), link, blackwell);
    CHECK_FALSE(blackwell.replay);
    CHECK_FALSE(blackwell.crc_flit);
    REQUIRE(g_nvlink5_requests.size() == gpuenv::probe::nvlink5_error_fields().size());
    std::set<unsigned> asked;
    for (const Nvlink5Request& request : g_nvlink5_requests) {
      CHECK(request.scope == link);
      asked.insert(request.field);
    }
    CHECK(asked == std::set<unsigned>{206, 207, 208, 209, 210, 211, 213, 214, 219, 221});
    // 219 not read, 206 negative: both left out; the others are this link's (100 x link + place in the request).
    REQUIRE(blackwell.nvlink5.size() == 8);
    for (const NvLink5Counter& counter : blackwell.nvlink5) {
      CHECK(counter.field != 219);
      CHECK(counter.field != 206);
      CHECK(counter.value / 100 == link);
    }
  }

  // The rates over all links: scopeId UINT_MAX, the effective (220) and symbol (222) bit error rates.
  g_nvlink5_requests.clear();
  const auto rates = gpuenv::probe::nvml::read_nvlink5_rates(calls, nvlink5_device(true));
  CHECK(rates.effective_ber == std::optional<std::uint64_t>(nvlink5_ber(15, 255)));
  CHECK(rates.symbol_ber == std::optional<std::uint64_t>(73710));
  // In the same call, the NVLink ECC data error total (160) at scopeId 0: DCGM 4.6.0 dcgmlib/src/DcgmCacheManager.cpp
  // ActuallyUpdateGpuFieldValues zeroes its requests ("memset(&values[0], 0, ...)") and sets scopeId UINT_MAX only
  // "if (isNvLink5OrNewer && NvmlFieldRequiresNvLinkAggregate(fieldMeta[i]->nvmlFieldId))", a list
  // (dcgmlib/src/DcgmCMUtils.cpp) without 160.
  CHECK(rates.ecc_errors == std::optional<std::uint64_t>(7));
  REQUIRE(g_nvlink5_requests.size() == 3);
  CHECK(g_nvlink5_requests[0].scope == std::numeric_limits<unsigned>::max());
  CHECK(g_nvlink5_requests[0].field == 220);
  CHECK(g_nvlink5_requests[1].field == 222);
  CHECK(g_nvlink5_requests[1].scope == std::numeric_limits<unsigned>::max());
  CHECK(g_nvlink5_requests[2].field == 160);
  CHECK(g_nvlink5_requests[2].scope == 0);

  // An old driver without nvmlDeviceGetFieldValues: nothing read, nothing called.
  NvLinkCounters old_driver;
  gpuenv::probe::nvml::read_nvlink_errors({nvlink5_error_counter, nullptr}, nvlink5_device(true), 1, old_driver);
  CHECK(old_driver.nvlink5.empty());
  CHECK_FALSE(gpuenv::probe::nvml::read_nvlink5_rates({nullptr, nullptr}, nvlink5_device(true)).effective_ber);
  CHECK_FALSE(gpuenv::probe::nvml::read_nvlink5_rates({nullptr, nullptr}, nvlink5_device(true)).ecc_errors);
}

TEST_CASE("nvlink_ecc_growth and nvlink_ecc_rise: the NVLink ECC data error total between two readings",
          "[probe][nvlink5]") {
  // DCGM 4.6.0 modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields: DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL among its
  // fields, "if (nvLinkError >= DCGM_LIMIT_MAX_NVLINK_ERROR)" FAIL, DCGM_LIMIT_MAX_NVLINK_ERROR 1
  // (common/DcgmGPUHardwareLimits.h); a value missing at either end is skipped ("continue").
  using Reading = std::optional<std::uint64_t>;
  struct Case {
    const char* name;
    Reading before, after, growth;
    const char* rise;  // nullptr: none
  } const cases[] = {
      {"equal: no rise", 4, 4, 0, nullptr},
      {"a rise of one fails", 4, 5, 1, "1 NVLink ECC data errors (all links)"},
      {"a rise of many", 0, 12, 12, "12 NVLink ECC data errors (all links)"},
      {"went down (driver reload): its later value", 9, 2, 2, "2 NVLink ECC data errors (all links)"},
      {"went down to 0", 9, 0, 0, nullptr},
      {"unread before: no growth", std::nullopt, 5, std::nullopt, nullptr},
      {"unread after: no growth", 5, std::nullopt, std::nullopt, nullptr},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const Reading growth = gpuenv::probe::nvlink_ecc_growth(c.before, c.after);
    CHECK(growth == c.growth);
    const std::optional<std::string> rise = gpuenv::probe::nvlink_ecc_rise(growth);
    CHECK(rise.has_value() == (c.rise != nullptr));
    if (rise && c.rise != nullptr) CHECK(*rise == c.rise);
  }
}
