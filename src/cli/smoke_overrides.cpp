#include "cli/smoke_overrides.hpp"

#include <algorithm>
#include <optional>

#include "util/strings.hpp"

namespace gpuenv::cli {

util::Expected<util::Ok> read_smoke_overrides(const std::vector<std::string>& pairs, const char* flag, bool minimum,
                                              std::map<std::string, smoke::MetricOverride>& overrides) {
  const auto& ids = smoke::judged_metric_ids();
  for (const std::string& pair : pairs) {
    const auto equals = pair.find('=');
    const std::string id = pair.substr(0, equals);
    const std::string_view text =
        equals == std::string::npos ? std::string_view() : std::string_view(pair).substr(equals + 1);
    // value_or rather than a dereference: gcc 10 (the portable build) misreads the optional as maybe-uninitialized.
    const double value = util::parse_double(text).value_or(0.0);
    const bool known = std::find(ids.begin(), ids.end(), id) != ids.end();
    if (!known || !(value > 0)) {
      return util::Error::usage(std::string(flag) + " " + pair + ": expected ID=VALUE with a positive VALUE (GB/s or " +
                                    "TFLOP/s) and ID one of " + util::join(ids, ", "),
                                std::string("for example ") + flag + " h2d_pinned=24");
    }
    (minimum ? overrides[id].minimum : overrides[id].expected) = value;
  }
  return util::Ok{};
}

}  // namespace gpuenv::cli
