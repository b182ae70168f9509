#include "probe/uptime.hpp"

#include "util/strings.hpp"

namespace gpuenv::probe {

std::optional<double> uptime_seconds(system::System& system) {
  auto text = system.read_file("/proc/uptime");
  if (!text) return std::nullopt;
  const std::string first(util::trim(text->substr(0, text->find(' '))));
  if (first.empty() || first.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  return util::parse_double(first);  // nullopt for "." or "1.2.3", which the filter lets through
}

}  // namespace gpuenv::probe
