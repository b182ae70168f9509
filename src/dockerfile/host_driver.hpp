#pragma once
// The host drivers an image starts and runs on (docs/dockerfile.md "Host driver"): what the framework needs (a
// wheel's minor-version compatibility floor, else the base tag's toolkit release) and what the base image's
// NVIDIA_REQUIRE_CUDA lets the NVIDIA container toolkit start. The requirement is read as libnvidia-container reads
// it (src/cli/dsl.c): space-separated alternatives, each comma-separated conditions `<key><op><value>`, keys
// compared without case. Pure functions.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/derive.hpp"
#include "dockerfile/data.hpp"
#include "dockerfile/framework.hpp"
#include "profile/profile.hpp"
#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// One condition: "driver>=535" is {"driver", ">=", "535"} (key lower-cased).
struct RequireCondition {
  std::string key;  ///< arch | brand | cuda | driver, the toolkit's rules (src/cli/configure.c)
  std::string op;   ///< = != < <= > >=
  std::string value;
};
/// Alternatives (any one passing admits the driver) of conditions (all must pass).
using Requirement = std::vector<std::vector<RequireCondition>>;

/// Parses an NVIDIA_REQUIRE_CUDA value; an internal Error naming the condition the toolkit would reject as an
/// "invalid expression".
util::Expected<Requirement> parse_require_cuda(std::string_view text);

/// The lowest driver that reports CUDA `major_minor` (what a `cuda>=X.Y` condition needs), or nullopt.
using DriverOfCuda = std::function<std::optional<util::Version>(const util::Version&)>;

/// The lowest driver at or above `floor` that `requirement` admits on a GPU of a brand its alternatives name;
/// nullopt when none does. Conditions gpuenv cannot judge offline (an `arch`, a `cuda` bound it cannot map to a
/// driver) count as unmet, so the answer is never lower than the toolkit's.
std::optional<util::Version> lowest_admitted(const Requirement& requirement, const util::Version& floor,
                                             const DriverOfCuda& driver_of_cuda);

/// What a generated image needs of the host driver.
struct HostDriver {
  compat::DriverFloor framework;       ///< what the framework runs on (label io.gpuenv.framework.driver.min)
  bool framework_label = false;        ///< the framework brings its own CUDA (its floor differs in kind)
  std::optional<util::Version> start;  ///< the lowest driver the image starts on (label io.gpuenv.driver.min)
  std::string require_cuda;            ///< the base's NVIDIA_REQUIRE_CUDA for the profile's architecture; "" unknown
  std::string cuda_condition;          ///< "cuda>=12.8"
  std::optional<util::Version> cuda_driver;  ///< the lowest driver that meets cuda_condition
  std::vector<int> branches;        ///< older branches the requirement admits per brand, at or above `framework`
  std::vector<std::string> brands;  ///< the brands it names
};

/// The host-driver facts of profile `p`'s image.
HostDriver host_driver(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data,
                       const compat::Derived& derived, const FrameworkSteps& framework);
/// The header lines that explain them ("" when the image has no driver floor).
std::string host_driver_comment(const HostDriver& host);
/// The labels (key, value): io.gpuenv.driver.min, io.gpuenv.framework.driver.min, io.gpuenv.base.require_cuda.
std::vector<std::pair<std::string, std::string>> host_driver_labels(const HostDriver& host);

}  // namespace gpuenv::dockerfile
