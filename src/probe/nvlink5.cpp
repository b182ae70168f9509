#include "probe/nvlink5.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace gpuenv::probe {

static_assert(sizeof(nvml::FieldValue) == 40 && offsetof(nvml::FieldValue, value) == 32, "nvml.h nvmlFieldValue_t");

namespace {

// nvml.h NVML_FI_DEV_NVLINK_COUNT_* (NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f): DCGM 4.6.0 MonitorNVLink5Fields'
// counters (its DCGM fields 1214, 1204-1209, 1219 map to these NVML ids in dcgmlib/src/dcgm_fields.cpp), with the link
// recoveries as MonitorNVLinkErrorFields splits them (213 successful: DCGM_HEALTH_RESULT_WARN, 214 failed:
// DCGM_HEALTH_RESULT_FAIL) instead of their sum (215); effective errors are shown, not judged (gpuenv's own policy
// where it differs from DCGM's: see nvlink5_error_fields).
constexpr NvLink5Field k_nvlink5_fields[] = {
    {221, "symbol errors", false},
    {206, "malformed packet errors", false},
    {207, "buffer overrun errors", false},
    {208, "receive errors", false},
    {209, "remote receive errors", false},
    {210, "general receive errors", false},
    {211, "local link integrity errors", false},
    {213, "successful link recoveries", true},
    {214, "failed link recoveries", false},
    {219, "effective errors", false, false},
};

/// nvml.h NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER and _SYMBOL_BER.
constexpr unsigned k_effective_ber_field = 220, k_symbol_ber_field = 222;
constexpr nvml::Return k_nvml_success = 0;

const NvLink5Field* known_field(unsigned id) {
  for (const NvLink5Field& field : k_nvlink5_fields)
    if (field.id == id) return &field;
  return nullptr;
}

/// A field value as an unsigned count; nullopt when NVML could not read it or it is negative or fractional.
std::optional<std::uint64_t> as_count(const nvml::FieldValue& field) {
  if (field.nvml_return != k_nvml_success) return std::nullopt;
  switch (field.value_type) {
    case 1:
      return field.value.u;
    case 2:
      return field.value.ul;
    case 3:
      return field.value.ull;
    case 4:
      return field.value.sll < 0 ? std::nullopt : std::optional<std::uint64_t>(field.value.sll);
    case 5:
      return field.value.si < 0 ? std::nullopt : std::optional<std::uint64_t>(field.value.si);
    case 6:
      return field.value.us;
    default:
      return std::nullopt;
  }
}

/// A field id and the scopeId it is asked at.
struct ScopedField {
  unsigned field;
  unsigned scope;
};

/// Asks NVML for `fields` of `device`, each at its scope (a link, all links, or 0 for a GPU total), in one call; the
/// answers it could read, in order.
std::vector<NvLink5Counter> field_values(const nvml::NvLinkErrorCalls& calls, nvml::Device device,
                                         const std::vector<ScopedField>& fields) {
  std::vector<NvLink5Counter> out;
  if (calls.field_values == nullptr) return out;
  std::vector<nvml::FieldValue> request;
  for (const ScopedField& field : fields)
    request.push_back(nvml::FieldValue{field.field, field.scope, 0, 0, 0, -1, {}});
  if (calls.field_values(device, static_cast<int>(request.size()), request.data()) != k_nvml_success) return out;
  for (const nvml::FieldValue& answer : request) {
    if (const std::optional<std::uint64_t> value = as_count(answer)) out.push_back({answer.field_id, *value});
  }
  return out;
}

}  // namespace

std::span<const NvLink5Field> nvlink5_error_fields() { return k_nvlink5_fields; }

std::string nvlink5_counter_name(unsigned field) {
  if (const NvLink5Field* known = known_field(field)) return known->what;
  return "errors (NVML field " + std::to_string(field) + ")";
}

bool nvlink5_warns_only(unsigned field) {
  const NvLink5Field* known = known_field(field);
  return known != nullptr && known->warns;
}

bool nvlink5_judged(unsigned field) {
  const NvLink5Field* known = known_field(field);
  return known == nullptr || known->judged;
}

std::vector<NvLink5Counter> nvlink5_growth(const std::vector<NvLink5Counter>& before,
                                           const std::vector<NvLink5Counter>& after) {
  std::vector<NvLink5Counter> out;
  for (const NvLink5Counter& later : after) {
    const auto earlier = std::find_if(before.begin(), before.end(),
                                      [&](const NvLink5Counter& counter) { return counter.field == later.field; });
    if (earlier == before.end()) continue;
    out.push_back({later.field, later.value >= earlier->value ? later.value - earlier->value : later.value});
  }
  return out;
}

std::optional<std::uint64_t> nvlink5_sum(const std::vector<NvLink5Counter>& counters, bool warns) {
  std::optional<std::uint64_t> total;
  for (const NvLink5Counter& counter : counters) {
    if (nvlink5_judged(counter.field) && nvlink5_warns_only(counter.field) == warns)
      total = total.value_or(0) + counter.value;
  }
  return total;
}

std::vector<std::string> nvlink5_rises(unsigned link, const std::vector<NvLink5Counter>& growth, bool warns) {
  std::vector<std::string> out;
  for (const NvLink5Counter& counter : growth) {
    if (counter.value == 0 || !nvlink5_judged(counter.field) || nvlink5_warns_only(counter.field) != warns) continue;
    out.push_back("link " + std::to_string(link) + ": " + std::to_string(counter.value) + " " +
                  nvlink5_counter_name(counter.field));
  }
  return out;
}

std::optional<std::uint64_t> nvlink_ecc_growth(std::optional<std::uint64_t> before,
                                               std::optional<std::uint64_t> after) {
  if (!before || !after) return std::nullopt;
  return *after >= *before ? *after - *before : *after;
}

std::optional<std::string> nvlink_ecc_rise(std::optional<std::uint64_t> growth) {
  if (!growth || *growth == 0) return std::nullopt;
  return std::to_string(*growth) + " " + k_nvlink_ecc_name;
}

std::vector<std::string> nvlink5_unjudged_rises(unsigned link, const std::vector<NvLink5Counter>& growth) {
  std::vector<std::string> out;
  for (const NvLink5Counter& counter : growth) {
    if (counter.value == 0 || nvlink5_judged(counter.field)) continue;
    out.push_back("link " + std::to_string(link) + ": " + std::to_string(counter.value) + " " +
                  nvlink5_counter_name(counter.field));
  }
  return out;
}

bool effective_ber_exceeded(const BitErrorRate& ber) {
  if (ber.mantissa == 0 || (ber.mantissa == 15 && ber.exponent == 255)) return false;
  return ber.exponent < 12 || (ber.exponent == 12 && ber.mantissa > 1) || (ber.exponent == 13 && ber.mantissa > 10);
}

bool symbol_ber_exceeded(const BitErrorRate& ber) {
  if (ber.mantissa == 0) return false;
  if (ber.exponent == 238) return ber.mantissa > 15;
  return ber.exponent < 238;
}

std::vector<std::string> nvlink5_ber_faults(std::optional<std::uint64_t> effective,
                                            std::optional<std::uint64_t> symbol) {
  std::vector<std::string> out;
  if (effective && effective_ber_exceeded(BitErrorRate(*effective))) {
    out.push_back("effective bit error rate " + BitErrorRate(*effective).str() +
                  " over all links (DCGM fails above 1e-12)");
  }
  if (symbol && symbol_ber_exceeded(BitErrorRate(*symbol))) {
    out.push_back("symbol bit error rate " + BitErrorRate(*symbol).str() +
                  " over all links (errors forward error correction did not fix)");
  }
  return out;
}

namespace nvml {

void read_nvlink_errors(const NvLinkErrorCalls& calls, Device device, unsigned link, NvLinkCounters& into) {
  if (calls.error_counter != nullptr) {
    // nvml.h nvmlNvLinkErrorCounter_t: 0 replay, 1 recovery, 2 CRC flit, 3 CRC data.
    int counter = 0;
    for (std::optional<std::uint64_t>* value : {&into.replay, &into.recovery, &into.crc_flit, &into.crc_data}) {
      unsigned long long read = 0;
      if (calls.error_counter(device, link, counter++, &read) == k_nvml_success) *value = read;
    }
  }
  // Asked on every link, whatever the older counters answered: nvml.h's "unsupported for Blackwell+" is on field ids
  // 161-163 only, not on nvmlDeviceGetNvLinkErrorCounter, and newer GB200 drivers answer the older fields
  // (NVIDIA/nvidia-resiliency-ext#302); DCGM reads both sets on every GPU and picks by architecture (DCGM 4.6.0
  // modules/health/DcgmHealthWatch.cpp). A link before NVLink5 answers each value NOT_SUPPORTED: no NVLink5 counters.
  std::vector<ScopedField> fields;
  for (const NvLink5Field& field : k_nvlink5_fields) fields.push_back({field.id, link});
  into.nvlink5 = field_values(calls, device, fields);
}

NvLink5Rates read_nvlink5_rates(const NvLinkErrorCalls& calls, Device device) {
  constexpr unsigned all_links = std::numeric_limits<unsigned>::max();
  NvLink5Rates out;
  std::optional<std::uint64_t> ecc;
  for (const NvLink5Counter& value : field_values(
           calls, device,
           {{k_effective_ber_field, all_links}, {k_symbol_ber_field, all_links}, {k_nvlink_ecc_total_field, 0}})) {
    if (value.field == k_effective_ber_field) out.effective_ber = value.value;
    if (value.field == k_symbol_ber_field) out.symbol_ber = value.value;
    if (value.field == k_nvlink_ecc_total_field) ecc = value.value;
  }
  // Only on an NVLink5 GPU (one of the rates read): an older GPU answering it is not judged by it.
  if (out.effective_ber || out.symbol_ber) out.ecc_errors = ecc;
  return out;
}

}  // namespace nvml
}  // namespace gpuenv::probe
