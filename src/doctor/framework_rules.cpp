#include "doctor/framework_rules.hpp"

#include <algorithm>

#include "probe/frameworks.hpp"
#include "util/strings.hpp"

namespace gpuenv::doctor {
namespace {

using probe::FrameworkFacts;
using report::Finding;
using report::Status;

std::string sm(const std::string& capability) {
  std::string digits;
  for (char c : capability)
    if (c != '.') digits += c;
  return "sm_" + digits;
}

std::string summary(const FrameworkFacts& f) {
  std::string text = f.name + " " + f.version;
  text +=
      f.cuda.empty() ? " (CPU-only build)" : " (CUDA " + f.cuda + (f.cudnn.empty() ? "" : ", cuDNN " + f.cudnn) + ")";
  return text;
}

void check_one(const probe::HostFacts& facts, const FrameworkFacts& f, std::vector<Finding>& out) {
  const std::string id = "framework." + f.name;
  const unsigned node_gpus = facts.gpus.availability.available ? static_cast<unsigned>(facts.gpus.gpus.size()) : 0;
  if (!f.import_error.empty()) {
    out.push_back({id, Status::fail, "import " + f.name + " failed: " + f.import_error,
                   "reinstall " + f.name + " into " + facts.frameworks->availability.source +
                       "'s environment (a wheel for this Python and CUDA); run `" +
                       facts.frameworks->availability.source + " -c 'import " + f.name + "'` to see the whole error",
                   ""});
    return;
  }
  if (!f.error.empty()) {
    out.push_back({id, Status::warn, summary(f) + " imports, but asking it about CUDA failed: " + f.error, "", ""});
    return;
  }
  if (f.cuda.empty() && node_gpus > 0) {
    out.push_back({id, Status::fail, summary(f) + " cannot use the node's " + std::to_string(node_gpus) + " GPUs",
                   "install a CUDA build of " + f.name + " (the default CPU wheel ignores GPUs)", ""});
  } else if (f.cuda_available == false && node_gpus > 0) {
    out.push_back(
        {id, Status::fail,
         summary(f) + " sees no GPU (cuda is not available) on a node with " + std::to_string(node_gpus) + " GPUs",
         "check the driver supports CUDA " + f.cuda + " (driver.* findings) and CUDA_VISIBLE_DEVICES", ""});
  } else if (f.device_count && node_gpus > 0 && *f.device_count < node_gpus) {
    out.push_back(
        {id, Status::warn,
         summary(f) + " sees " + std::to_string(*f.device_count) + " of " + std::to_string(node_gpus) + " GPUs",
         "check CUDA_VISIBLE_DEVICES in the environment doctor ran in", ""});
  } else {
    out.push_back({id, Status::pass,
                   summary(f) + (f.device_count ? ", " + std::to_string(*f.device_count) + " GPUs visible" : ""), "",
                   ""});
  }
}

/// torch only: every GPU's architecture must have SASS or PTX in the wheel ("no kernel image is available").
void check_arch(const probe::HostFacts& facts, const FrameworkFacts& f, std::vector<Finding>& out) {
  if (f.name != "torch" || f.arch_list.empty()) return;
  std::vector<std::string> capabilities = f.device_capabilities;
  if (capabilities.empty()) {
    for (const probe::GpuFacts& gpu : facts.gpus.gpus) capabilities.push_back(gpu.compute_capability);
  }
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < capabilities.size(); ++i) {
    if (capabilities[i].empty() || probe::arch_list_covers(f.arch_list, capabilities[i])) continue;
    const std::string entry = sm(capabilities[i]);
    if (std::find(missing.begin(), missing.end(), entry) == missing.end()) missing.push_back(entry);
  }
  const std::string list = util::join(f.arch_list, " ");
  if (missing.empty()) {
    out.push_back({"framework.torch_arch", Status::pass,
                   "torch " + f.version + " has kernels for every GPU (" + list + ")", "", ""});
    return;
  }
  const bool blackwell = std::any_of(missing.begin(), missing.end(), [](const std::string& s) {
    return s.size() >= 6 && (s.substr(3, 2) == "10" || s.substr(3, 2) == "12");
  });
  out.push_back({"framework.torch_arch", Status::fail,
                 "torch " + f.version + " has no kernel image and no PTX for " + util::join(missing, ", ") +
                     " (its arch list: " + list + "): CUDA calls fail with \"no kernel image is available\"",
                 "install a torch wheel whose torch.cuda.get_arch_list() includes " + util::join(missing, ", ") +
                     (blackwell ? " (Blackwell GPUs need the cu128 wheels, torch 2.7 or later)"
                                : " (a wheel built for a newer CUDA)"),
                 ""});
}

/// The tiny matmul on each device the framework sees: the first real work on the GPU, where "no kernel image" and
/// a broken device show up.
void check_matmul(const FrameworkFacts& f, std::vector<Finding>& out) {
  if (f.matmul.empty()) return;
  const std::string id = "framework." + f.name + "_matmul";
  const std::string device = f.name == "torch" ? "cuda:" : "/GPU:";
  std::vector<std::string> failed;
  for (const probe::MatmulResult& r : f.matmul) {
    if (r.outcome == probe::MatmulResult::Outcome::ok) continue;
    const bool mismatch = r.outcome == probe::MatmulResult::Outcome::mismatch;
    failed.push_back(device + std::to_string(r.device) + (mismatch ? " computed a wrong result (" : " failed (") +
                     r.detail + ")");
  }
  const std::string what = "a 64x64 matmul in " + f.name + " " + f.version;
  if (failed.empty()) {
    out.push_back({id, Status::pass,
                   what + " gave the right result on " + std::to_string(f.matmul.size()) +
                       (f.matmul.size() == 1 ? " device" : " devices"),
                   "", ""});
    return;
  }
  out.push_back({id, Status::fail, what + ": " + util::join(failed, "; "),
                 "a wrong result means a faulty GPU (run `gpuenv smoke --memtest 0.9` and check the gpu.* and xid "
                 "findings); an error names the cause (\"no kernel image\": see framework.torch_arch)",
                 ""});
}

}  // namespace

void check_frameworks(const probe::HostFacts& facts, std::vector<Finding>& out) {
  if (!facts.frameworks) return;
  const probe::FrameworkProbe& probe = *facts.frameworks;
  if (!probe.availability.available) {
    out.push_back({"framework.python", Status::skip, probe.availability.reason, "", ""});
    return;
  }
  bool any = false;
  for (const FrameworkFacts& f : probe.frameworks) {
    if (!f.installed) continue;
    any = true;
    check_one(facts, f, out);
    check_arch(facts, f, out);
    check_matmul(f, out);
  }
  if (!any)
    out.push_back({"framework.installed", Status::skip,
                   "neither torch nor tensorflow is installed for " + probe.availability.source, "", ""});
}

}  // namespace gpuenv::doctor
