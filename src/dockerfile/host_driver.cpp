#include "dockerfile/host_driver.hpp"

#include <algorithm>
#include <array>

#include "dockerfile/text.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

using util::Error;
using util::Version;

constexpr std::array<std::string_view, 6> k_operators = {"=", "!=", "<", "<=", ">", ">="};
/// The rules libnvidia-container evaluates (src/cli/configure.c: arch, brand, cuda, driver).
constexpr std::array<std::string_view, 4> k_keys = {"arch", "brand", "cuda", "driver"};

util::Expected<RequireCondition> parse_condition(std::string_view text) {
  const std::size_t op_at = text.find_first_of("<>=!");
  const std::size_t value_at = op_at == std::string_view::npos ? op_at : text.find_first_not_of("<>=!", op_at);
  const auto invalid = [&text](const std::string& why) {
    return Error::internal("NVIDIA_REQUIRE_CUDA condition `" + std::string(text) + "`: " + why);
  };
  if (op_at == 0 || op_at == std::string_view::npos) return invalid("no `<key><operator><value>`");
  if (value_at == std::string_view::npos) return invalid("no value after the operator");
  RequireCondition out{util::to_lower(text.substr(0, op_at)), std::string(text.substr(op_at, value_at - op_at)),
                       std::string(text.substr(value_at))};
  if (std::find(k_keys.begin(), k_keys.end(), out.key) == k_keys.end())
    return invalid("unknown key `" + out.key + "` (the toolkit knows arch, brand, cuda, driver)");
  if (std::find(k_operators.begin(), k_operators.end(), out.op) == k_operators.end())
    return invalid("unknown operator `" + out.op + "`");
  if ((out.key == "cuda" || out.key == "driver") && !Version::parse(out.value))
    return invalid("`" + out.value + "` is not a version");
  return out;
}

bool compare(const Version& a, const std::string& op, const Version& b) {
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

/// Whether driver `driver` meets `condition` on a GPU of the brand it names.
bool holds(const RequireCondition& condition, const Version& driver, const DriverOfCuda& driver_of_cuda) {
  if (condition.key == "driver") return compare(driver, condition.op, *Version::parse(condition.value));
  if (condition.key == "brand") return condition.op == "=";  // the brands it names are the ones judged
  if (condition.key == "cuda" && condition.op == ">=") {
    const auto needed = driver_of_cuda(Version::parse(condition.value)->truncated(2));
    return needed && driver >= *needed;
  }
  return false;  // an arch, or a cuda bound gpuenv cannot map to a driver: unmet
}

bool admits(const Requirement& requirement, const Version& driver, const DriverOfCuda& driver_of_cuda) {
  return std::any_of(requirement.begin(), requirement.end(), [&](const auto& conditions) {
    return std::all_of(conditions.begin(), conditions.end(),
                       [&](const RequireCondition& c) { return holds(c, driver, driver_of_cuda); });
  });
}

/// The framework's own floor: for wheels that bring their own CUDA, their CUDA major's minor-version
/// compatibility floor (cu12x: R525+), not what the base tag's toolkit release requires; driver.min wins.
compat::DriverFloor framework_floor(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                    const compat::Derived& derived, const FrameworkSteps& framework) {
  if (!p.driver_min.empty() || !framework.from_wheels) return derived.driver_floor;
  const auto cuda = Version::parse(framework.loaded_cuda);
  const compat::CudaMajor* major = cuda ? kb.cuda_major(cuda->major()) : nullptr;
  if (major == nullptr) return derived.driver_floor;
  return {major->compat_driver_min,
          "the framework's CUDA " + framework.loaded_cuda + " runs on any CUDA " + std::to_string(cuda->major()) +
              " driver through minor-version compatibility (" + major->provenance.source + ")"};
}

/// "535, 550 and 565".
std::string listed(const std::vector<int>& branches) {
  std::vector<std::string> names;
  for (const int branch : branches) names.push_back(std::to_string(branch));
  if (names.size() < 2) return util::join(names, "");
  const std::string last = names.back();
  names.pop_back();
  return util::join(names, ", ") + " and " + last;
}

}  // namespace

util::Expected<Requirement> parse_require_cuda(std::string_view text) {
  Requirement out;
  for (const std::string_view alternative : util::split(text, ' ')) {
    if (alternative.empty()) continue;
    std::vector<RequireCondition> conditions;
    for (const std::string_view condition : util::split(alternative, ',')) {
      if (condition.empty()) continue;
      GPUENV_TRY_ASSIGN(auto parsed, parse_condition(condition));
      conditions.push_back(std::move(parsed));
    }
    if (!conditions.empty()) out.push_back(std::move(conditions));
  }
  return out;
}

std::optional<Version> lowest_admitted(const Requirement& requirement, const Version& floor,
                                       const DriverOfCuda& driver_of_cuda) {
  // The admitted drivers are a union of ranges, each starting at a `driver>=`/`driver=` value or at the driver a
  // `cuda>=` condition needs: the lowest admitted driver at or above `floor` is `floor` or one of those starts.
  std::vector<Version> candidates{floor};
  for (const auto& conditions : requirement) {
    for (const RequireCondition& c : conditions) {
      if (c.key == "driver" && (c.op == ">=" || c.op == "=")) candidates.push_back(*Version::parse(c.value));
      if (c.key == "cuda" && c.op == ">=") {
        if (const auto needed = driver_of_cuda(Version::parse(c.value)->truncated(2))) candidates.push_back(*needed);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const Version& candidate : candidates) {
    if (candidate >= floor && admits(requirement, candidate, driver_of_cuda)) return candidate;
  }
  return std::nullopt;
}

HostDriver host_driver(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data,
                       const compat::Derived& derived, const FrameworkSteps& framework) {
  HostDriver out;
  out.framework = framework_floor(p, kb, derived, framework);
  out.framework_label = framework.from_wheels;
  const auto cuda = Version::parse(p.cuda_version);
  if (!out.framework.version || !cuda) {
    out.start = out.framework.version;
    return out;
  }
  const Version floor = *out.framework.version;
  out.cuda_condition = "cuda>=" + major_minor(*cuda);
  out.cuda_driver = kb.driver_for_minor(cuda->truncated(2));
  const DriverOfCuda driver_of_cuda = [&kb](const Version& v) { return kb.driver_for_minor(v); };
  const std::string* text = data.require_cuda_of(*cuda, profile::effective_arch(p));
  const auto requirement = text != nullptr ? parse_require_cuda(*text) : util::Expected<Requirement>(Requirement{});
  if (text != nullptr && requirement) {
    out.require_cuda = *text;
    out.start = lowest_admitted(*requirement, floor, driver_of_cuda);
    for (const auto& conditions : *requirement) {
      for (const RequireCondition& c : conditions) {
        if (c.key == "brand" && std::find(out.brands.begin(), out.brands.end(), c.value) == out.brands.end())
          out.brands.push_back(c.value);
        const auto value = c.key == "driver" && c.op == ">=" ? Version::parse(c.value) : std::nullopt;
        if (value && value->major() >= floor.major() && (!out.cuda_driver || *value < *out.cuda_driver))
          out.branches.push_back(value->major());
      }
    }
    std::sort(out.branches.begin(), out.branches.end());
    out.branches.erase(std::unique(out.branches.begin(), out.branches.end()), out.branches.end());
  }
  // Not in the data (or admitting nothing): every NVIDIA requirement starts with the `cuda>=X.Y` alternative.
  if (!out.start) out.start = out.cuda_driver && floor < *out.cuda_driver ? *out.cuda_driver : floor;
  return out;
}

std::string host_driver_comment(const HostDriver& host) {
  if (!host.start) return {};
  const Version& floor = *host.framework.version;
  const std::string framework = one_line(host.framework.reason);
  std::string text = "Host driver: >= " + host.start->str() + " (label io.gpuenv.driver.min): ";
  if (*host.start == floor) {
    text += "the framework's floor (" + framework + ")";
  } else {
    text += "the framework alone runs from " + floor.str() + " (" + framework +
            (host.framework_label ? "; label io.gpuenv.framework.driver.min)" : ")") + ", but";
  }
  const std::string cuda_alternative =
      host.cuda_condition + (host.cuda_driver ? " (driver >= " + host.cuda_driver->str() + ")" : std::string());
  if (host.require_cuda.empty()) {
    text += (*host.start == floor ? "; " : " ") +
            std::string("the base's NVIDIA_REQUIRE_CUDA is not in gpuenv's data ") +
            "(data/dockerfile/base_images.toml), so only its " + cuda_alternative +
            " alternative is counted, not the older branches it may admit per GPU brand.";
    return comment(text);
  }
  const std::string asks =
      cuda_alternative + (host.branches.empty() ? std::string()
                                                : " or, on the GPU brands it lists, " +
                                                      std::string(host.branches.size() == 1 ? "branch " : "branches ") +
                                                      listed(host.branches));
  if (*host.start == floor) {
    text += ", which the base's NVIDIA_REQUIRE_CUDA (label io.gpuenv.base.require_cuda) admits: it asks " + asks;
  } else {
    text += " the base's NVIDIA_REQUIRE_CUDA (label io.gpuenv.base.require_cuda) asks " + asks +
            "; the NVIDIA container toolkit refuses to start the image below " + host.start->str() +
            " unless NVIDIA_DISABLE_REQUIRE=true";
  }
  if (!host.branches.empty() && std::find(host.brands.begin(), host.brands.end(), "geforce") == host.brands.end())
    text += ". Brands it does not list (GeForce, TITAN) need " + cuda_alternative;
  return comment(text + ".");
}

std::vector<std::pair<std::string, std::string>> host_driver_labels(const HostDriver& host) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!host.start) return out;
  out.emplace_back("io.gpuenv.driver.min", host.start->str());
  if (host.framework_label) out.emplace_back("io.gpuenv.framework.driver.min", host.framework.version->str());
  if (!host.require_cuda.empty()) out.emplace_back("io.gpuenv.base.require_cuda", host.require_cuda);
  return out;
}

}  // namespace gpuenv::dockerfile
