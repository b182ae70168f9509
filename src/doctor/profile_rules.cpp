#include <algorithm>
#include <set>

#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "doctor/framework_rules.hpp"
#include "doctor/instances.hpp"
#include "doctor/rules_detail.hpp"

namespace gpuenv::doctor::rules_detail {

// ---- Profile conformance ------------------------------------------------------------------------

namespace {

/// The os-release ID of a host that runs the profile's OS: UBI images are built from RHEL, Rocky Linux calls
/// itself "rocky".
std::string os_release_id(const std::string& distro) {
  if (distro == "rockylinux") return "rocky";
  if (distro == "ubi") return "rhel";
  return distro;
}

/// The profile's OS against the node's (os-release). Only a warning: the profile's container image carries its own
/// OS, so a mismatch matters only for what is installed on the host (toolkit, cuDNN, packages).
void check_profile_os(const HostFacts& facts, const profile::Profile& p, Findings& out) {
  if (p.os_distro.empty() || facts.host.os_id.empty()) return;
  const std::string wanted = p.os_distro + " " + p.os_version;
  const std::string node = facts.host.os_id + " " + facts.host.os_version_id;
  const auto want_version = Version::parse(p.os_version);
  const auto node_version = Version::parse(facts.host.os_version_id);
  // "9" covers VERSION_ID "9.4"; "22.04" must be "22.04".
  const bool same = os_release_id(p.os_distro) == facts.host.os_id && want_version && node_version &&
                    node_version->starts_with(*want_version);
  if (same) {
    out.push_back(make("profile.os", Status::pass, "the node runs " + node + ", as profile " + p.name + " targets"));
    return;
  }
  out.push_back(make("profile.os", Status::warn,
                     "profile " + p.name + " targets " + wanted + "; this node runs " + node,
                     "fine for the profile's container image (`gpuenv dockerfile " + p.name +
                         "`); for host installs pick a profile for " + node + " or reimage the node"));
}

/// The node's GPUs against the profile's `[gpu] models`: each GPU must be one of them (exact product names and the
/// aliases of data/compat/gpus.toml), unless the profile also lists its compute capability. A GPU of another model
/// with the same compute capability (an RTX 2080 for a "T4" profile) is not the hardware the profile was written for.
void check_profile_gpu_models(const HostFacts& facts, const compat::KnowledgeBase& kb, const profile::Profile& p,
                              Findings& out) {
  if (p.gpu_models.empty() || facts.gpus.gpus.empty()) return;
  const auto targeted_cc = [&](const GpuFacts& gpu) {
    std::string cc = gpu.compute_capability;
    if (cc.empty()) {
      if (const compat::GpuModel* model = kb.gpu(gpu.name)) cc = model->compute_capability;
    }
    const auto& ccs = p.gpu_compute_capabilities;
    return !cc.empty() && std::find(ccs.begin(), ccs.end(), cc) != ccs.end();
  };
  std::vector<std::string> wrong;
  std::set<std::string> seen;
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.name.empty()) continue;
    seen.insert(gpu.name);
    const bool listed = std::any_of(p.gpu_models.begin(), p.gpu_models.end(),
                                    [&](const std::string& model) { return is_gpu_model(kb, gpu.name, model); });
    if (listed || targeted_cc(gpu)) continue;
    const compat::GpuModel* known = kb.gpu(gpu.name);
    wrong.push_back("GPU " + std::to_string(gpu.index) + " is " + gpu.name +
                    (known ? " (" + known->model + ", compute capability " + known->compute_capability + ")"
                           : " (not in gpuenv's GPU table)"));
  }
  const std::string models = util::join(p.gpu_models, ", ");
  if (wrong.empty()) {
    if (seen.empty()) return;
    out.push_back(make("profile.gpu", Status::pass,
                       "the node's GPUs (" + util::join(std::vector<std::string>(seen.begin(), seen.end()), ", ") +
                           ") are ones profile " + p.name + " targets (" + models + ")"));
    return;
  }
  out.push_back(make("profile.gpu", Status::fail,
                     util::join(wrong, "; ") + "; profile " + p.name + " targets " + models,
                     "run this profile on nodes with " + models + ", or add the node's model to gpu.models"));
}

}  // namespace

void check_profile_conformance(const HostFacts& facts, const compat::KnowledgeBase& kb, const profile::Profile& p,
                               Findings& out) {
  // The profile itself must be coherent: the same rules as `gpuenv profile check`.
  for (Finding finding : compat::check_profile(p, kb)) {
    if (finding.status == Status::pass) continue;
    finding.id = "profile." + finding.id;
    out.push_back(std::move(finding));
  }
  check_profile_os(facts, p, out);
  const compat::DriverFloor floor = compat::driver_floor(p, kb);
  const auto driver =
      Version::parse(facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version);
  if (floor.version && driver) {
    const auto cuda = Version::parse(p.cuda_version);
    compat::DriverJudgement judged =
        cuda ? compat::judge_driver(*driver, "driver " + driver->str(), *cuda, floor.version, kb)
             : compat::DriverJudgement{*driver >= *floor.version ? Status::pass : Status::fail, "", ""};
    out.push_back(make("profile.driver", judged.status, "profile " + p.name + ": " + judged.message, judged.remedy));
  } else if (floor.version) {
    out.push_back(make("profile.driver", Status::fail,
                       "profile " + p.name + " needs driver >= " + floor.version->str() + "; no driver is loaded",
                       "install driver branch " + std::to_string(floor.version->major()) + " or newer"));
  }
  if (!p.driver_modules.empty() && facts.kernel.open_module) {
    const bool open = *facts.kernel.open_module;
    if ((p.driver_modules == "open") != open) {
      out.push_back(make("profile.driver_modules", Status::warn,
                         "profile " + p.name + " wants " + p.driver_modules + " kernel modules; the loaded module is " +
                             (open ? "open" : "proprietary"),
                         "install the " + p.driver_modules + " kernel module flavour of the driver"));
    }
  }
  if (!p.cuda_version.empty()) {
    const auto wanted = Version::parse(p.cuda_version);
    const auto match =
        std::find_if(facts.toolkits.begin(), facts.toolkits.end(), [&wanted](const probe::CudaToolkit& tk) {
          // Compared at the precision the node states: nvcc says "release 12.4", which is the profile's 12.4.1
          // (issue 25, rule 2); version.json's 12.4.1 is compared fully.
          const auto v = Version::parse(tk.version);
          return v && wanted && wanted->truncated(3).starts_with(v->truncated(3));
        });
    if (match != facts.toolkits.end()) {
      out.push_back(
          make("profile.cuda_toolkit", Status::pass, "CUDA " + p.cuda_version + " is installed at " + match->root));
    } else {
      std::vector<std::string> have;
      for (const auto& tk : facts.toolkits) have.push_back(tk.version);
      out.push_back(
          make("profile.cuda_toolkit", Status::fail,
               "profile " + p.name + " wants CUDA " + p.cuda_version + "; the node has " +
                   (have.empty() ? "no toolkit" : util::join(have, ", ")),
               "install CUDA " + p.cuda_version + " (or use the profile's container image instead of a host toolkit)"));
    }
  }
  if (!p.cudnn_version.empty()) {
    const auto wanted = Version::parse(p.cudnn_version);
    const auto have =
        facts.cudnn ? Version::parse(facts.cudnn->version.empty() ? facts.cudnn->runtime_version : facts.cudnn->version)
                    : std::nullopt;
    if (have && wanted && have->starts_with(*wanted)) {
      out.push_back(
          make("profile.cudnn", Status::pass, "cuDNN " + have->str() + " satisfies the profile's " + p.cudnn_version));
    } else {
      out.push_back(make("profile.cudnn", Status::fail,
                         "profile " + p.name + " wants cuDNN " + p.cudnn_version + "; the node has " +
                             (have ? "cuDNN " + have->str() : "none"),
                         "install cuDNN " + p.cudnn_version + " for CUDA " + p.cuda_version));
    }
  }
  // Every GPU on the node must be one the profile targets, and one its CUDA can run.
  check_profile_gpu_models(facts, kb, p, out);
  std::vector<std::string> targets = p.gpu_compute_capabilities;
  for (const std::string& model : p.gpu_models) {
    if (const compat::GpuModel* gpu = kb.gpu(model)) targets.push_back(gpu->compute_capability);
  }
  // NVML reports the compute capability; an nvidia-smi report does not, so the product name is looked up in the
  // knowledge base's GPU table.
  std::set<std::string> node_ccs;
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.compute_capability.empty()) {
      node_ccs.insert(gpu.compute_capability);
    } else if (const compat::GpuModel* model = kb.gpu(gpu.name)) {
      node_ccs.insert(model->compute_capability);
    }
  }
  if (!node_ccs.empty()) {
    profile::Profile with_node_gpus = p;
    with_node_gpus.gpu_models.clear();
    with_node_gpus.gpu_compute_capabilities.assign(node_ccs.begin(), node_ccs.end());
    for (Finding finding : compat::check_profile(with_node_gpus, kb)) {
      if (finding.id != "gpu.cuda_support" && finding.id != "pytorch.compute_capability") continue;
      finding.id = "profile.node_" + finding.id.substr(finding.id.find('.') + 1);
      out.push_back(std::move(finding));
    }
    if (!targets.empty()) {
      for (const std::string& cc : node_ccs) {
        if (std::find(targets.begin(), targets.end(), cc) == targets.end()) {
          out.push_back(make("profile.gpu_targets", Status::fail,
                             "the node's GPUs have compute capability " + cc + ", which profile " + p.name +
                                 " does not target (" + util::join(targets, ", ") + ")",
                             "add \"" + cc + "\" to gpu.compute_capabilities, or run this profile on other nodes"));
        }
      }
    }
  }
}

}  // namespace gpuenv::doctor::rules_detail
