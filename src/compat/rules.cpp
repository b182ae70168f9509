#include "compat/rules.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "compat/derive.hpp"
#include "compat/horizon.hpp"
#include "compat/rules_internal.hpp"
#include "util/strings.hpp"

namespace gpuenv::compat {
namespace {

using namespace rules_detail;  // NOLINT: the rule files share one vocabulary

// ---- CUDA release -------------------------------------------------------------------------------

void check_cuda_release(const Context& c, Findings& out) {
  if (!c.cuda) return;
  if (const CudaRelease* release = c.kb.cuda_release(*c.cuda)) {
    out.push_back(make("cuda.release", Status::pass, "CUDA " + c.profile.cuda_version + " is a CUDA release", {},
                       release->provenance.source));
    return;
  }
  // Past the newest release, or a patch past the newest update of a known minor (12.9.2 when the data ends at
  // 12.9.1): NVIDIA may have shipped it since the data was read. A hole below the newest patch, or a minor that
  // never existed (12.7), is a typo.
  for (const Horizon& horizon : {cuda_horizon(c.kb), cuda_minor_horizon(c.kb, *c.cuda)}) {
    if (!beyond(horizon, *c.cuda)) continue;
    out.push_back(
        make("cuda.release", Status::warn, beyond_message(horizon, c.profile.cuda_version), beyond_remedy(horizon)));
    return;
  }
  const auto [below, above] = c.kb.neighbours(*c.cuda);
  std::vector<std::string> nearest;
  if (below != nullptr) nearest.push_back(below->version.str());
  if (above != nullptr) nearest.push_back(above->version.str());
  out.push_back(
      make("cuda.release", Status::fail,
           "CUDA " + c.profile.cuda_version + " is not a CUDA release; the nearest are " + util::join(nearest, " and "),
           "set cuda.version to " + util::join(nearest, " or ")));
}

// ---- Driver -------------------------------------------------------------------------------------

void check_driver_minimum(const Context& c, Findings& out) {
  if (!c.cuda || c.profile.driver_min.empty()) return;
  const CudaRelease* release = c.kb.cuda_release(*c.cuda);
  const DriverJudgement judged =
      judge_driver(*Version::parse(c.profile.driver_min), "driver.min " + c.profile.driver_min, *c.cuda,
                   release ? release->driver_min : std::nullopt, c.kb);
  out.push_back(make("driver.cuda_minimum", judged.status, judged.message, judged.remedy,
                     release ? release->provenance.source : std::string()));
}

void check_driver_branch(const Context& c, Findings& out) {
  if (c.profile.driver_branch.empty()) return;
  // The profile schema admits three digits only; a profile built any other way gets a finding, not a throw.
  const std::optional<long long> number = util::parse_int(c.profile.driver_branch, 0, 9999);
  if (!number) {
    out.push_back(make("driver.branch", Status::fail,
                       "driver.branch " + c.profile.driver_branch + " is not a driver branch",
                       "set driver.branch to a three-digit branch such as \"550\""));
    return;
  }
  const int branch = static_cast<int>(*number);
  if (!c.profile.driver_min.empty()) {
    const Version min = *Version::parse(c.profile.driver_min);
    if (min.major() > branch) {
      out.push_back(
          make("driver.branch", Status::fail,
               "driver.branch " + c.profile.driver_branch + " cannot satisfy driver.min " + c.profile.driver_min,
               "set driver.branch to " + std::to_string(min.major()) + " or newer"));
      return;
    }
  }
  if (!c.cuda) return;
  const CudaRelease* release = c.kb.cuda_release(*c.cuda);
  if (release == nullptr) return;
  // A branch is judged by its major number: branch 535 can never reach 550.54.15.
  const Version branch_version({branch, 9999, 9999});
  if (!release->driver_min) {
    // No release minimum known (12.3.2): the major's minor-version-compatibility floor still applies.
    const DriverJudgement judged =
        judge_driver(branch_version, "driver branch " + c.profile.driver_branch, *c.cuda, std::nullopt, c.kb);
    out.push_back(make("driver.branch", judged.status, judged.message, judged.remedy, release->provenance.source));
    return;
  }
  if (branch >= release->driver_min->major()) {
    out.push_back(make("driver.branch", Status::pass,
                       "driver branch " + c.profile.driver_branch + " can satisfy CUDA " + c.profile.cuda_version +
                           " (needs >= " + release->driver_min->str() + ")"));
    return;
  }
  DriverJudgement judged =
      judge_driver(branch_version, "driver branch " + c.profile.driver_branch, *c.cuda, release->driver_min, c.kb);
  out.push_back(make("driver.branch", judged.status, judged.message, judged.remedy, release->provenance.source));
}

}  // namespace

std::string as_written(const Version& written, const Version& floor) {
  if (written >= floor) return {};
  return " (compared at the precision written: " + written.str() + " is the " + written.str() + " line)";
}

DriverJudgement judge_driver(const Version& driver, const std::string& subject, const Version& cuda,
                             const std::optional<Version>& required, const KnowledgeBase& kb) {
  const CudaMajor* major = kb.cuda_major(cuda.major());
  const std::string cuda_name = "CUDA " + cuda.str();
  const std::string major_name = "CUDA " + std::to_string(cuda.major()) + ".x";
  // A driver written "580.65" is the 580.65 line: it meets 580.65.06 (issue 25, rule 2).
  if (required && driver.at_least_as_written(*required)) {
    return {Status::pass,
            subject + " meets " + cuda_name + "'s minimum driver " + required->str() + as_written(driver, *required),
            {}};
  }
  const Horizon horizon = cuda_horizon(kb);
  if (major == nullptr) {
    if (!required && beyond(horizon, cuda))
      return {Status::warn, "no driver requirement for " + cuda_name + ": " + beyond_message(horizon, cuda.str()),
              "check NVIDIA's release notes; " + beyond_remedy(horizon)};
    if (!required)
      return {Status::warn, "no driver requirement for " + cuda_name + " in the knowledge base",
              "check NVIDIA's release notes"};
    return {Status::fail, subject + " is below " + cuda_name + "'s minimum driver " + required->str(),
            "raise the driver to " + required->str() + " or newer"};
  }
  if (driver.at_least_as_written(major->compat_driver_min)) {
    if (!required) {
      return {Status::pass,
              subject + " meets the " + major_name + " minor-version-compatibility floor " +
                  major->compat_driver_min.str() + as_written(driver, major->compat_driver_min) + " (" + cuda_name +
                  "'s own minimum is not in the knowledge base)",
              {}};
    }
    return {Status::warn,
            subject + " is below " + cuda_name + "'s minimum " + required->str() + " but at or above the " +
                major_name + " minor-version-compatibility floor " + major->compat_driver_min.str() +
                ": applications run with limited features (PTX newer than the driver cannot be JIT-compiled, so "
                "kernels need SASS for the GPU)",
            "raise the driver to " + required->str() + " (branch " + std::to_string(required->major()) +
                ") or newer; on data-center GPUs the cuda-compat package is the alternative"};
  }
  const std::string needed = required ? required->str() : major->compat_driver_min.str();
  return {Status::fail,
          subject + " is below the " + major_name + " floor " + major->compat_driver_min.str() + ": " + cuda_name +
              " applications cannot run on it",
          "raise the driver to " + needed +
              " or newer; on data-center GPUs, forward compatibility needs the cuda-compat-" +
              std::to_string(cuda.major()) + "-" + std::to_string(cuda.minor()) + " package"};
}

std::vector<Finding> check_profile(const Profile& profile, const KnowledgeBase& kb, Purpose purpose) {
  // Resolve GPU models once so the PyTorch and cuDNN rules see compute capabilities either way.
  Profile resolved = profile;
  for (const std::string& model : profile.gpu_models) {
    if (const GpuModel* gpu = kb.gpu(model)) {
      auto& ccs = resolved.gpu_compute_capabilities;
      if (std::find(ccs.begin(), ccs.end(), gpu->compute_capability) == ccs.end())
        ccs.push_back(gpu->compute_capability);
    }
  }
  const Context context{profile, kb, purpose, Version::parse(profile.cuda_version), driver_floor(profile, kb)};
  const Context resolved_context{resolved, kb, purpose, context.cuda, context.floor};
  Findings out;
  check_cuda_release(context, out);
  check_driver_minimum(context, out);
  check_driver_branch(context, out);
  check_cudnn(resolved_context, out);
  check_pytorch(resolved_context, out);
  check_tensorflow(context, out);
  check_image(context, out);
  check_gpus(context, out);
  return out;
}

}  // namespace gpuenv::compat

namespace gpuenv::compat {

std::vector<CellVerdict> check_cells(const std::vector<profile::Cell>& cells, const KnowledgeBase& kb,
                                     Purpose purpose) {
  std::vector<CellVerdict> out;
  out.reserve(cells.size());
  for (const profile::Cell& cell : cells) {
    std::vector<report::Finding> findings = check_profile(cell.profile, kb, purpose);
    const bool valid = report::verdict_of(findings) != report::Verdict::not_ok;
    out.push_back(CellVerdict{cell, std::move(findings), valid});
  }
  return out;
}

}  // namespace gpuenv::compat
