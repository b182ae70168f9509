// The nvidia/cuda image rules and the GPU rules (models, compute capabilities per CUDA release).

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

#include "compat/horizon.hpp"
#include "compat/rules_internal.hpp"

namespace gpuenv::compat::rules_detail {

// ---- nvidia/cuda image --------------------------------------------------------------------------

namespace {

/// The newest update of `cuda`'s minor (12.9.1 -> 12.9.2) that supersedes it under NVIDIA's "latest update only"
/// policy: an active image row, or a CUDA release whose images may simply be missing from the data (issue 25, rule 6).
/// Empty when `cuda` is the newest update gpuenv knows.
std::optional<Version> superseding_update(const KnowledgeBase& kb, const Version& cuda) {
  std::optional<Version> newest;
  const auto consider = [&](const Version& candidate) {
    if (candidate.truncated(2) == cuda.truncated(2) && candidate > cuda && (!newest || candidate > *newest))
      newest = candidate;
  };
  for (const CudaImage& image : kb.images)
    if (image.lifecycle == "active") consider(image.cuda);
  // A release NVIDIA published no images of (its minor's images stayed at an earlier update) supersedes none.
  for (const CudaRelease& release : kb.cuda_releases)
    if (release.no_images_source.empty()) consider(release.version);
  return newest;
}

/// The newest image row: its major is the newest CUDA major NVIDIA publishes images of.
const CudaImage* newest_image(const KnowledgeBase& kb) {
  const CudaImage* newest = nullptr;
  for (const CudaImage& image : kb.images)
    if (!newest || image.cuda > newest->cuda) newest = &image;
  return newest;
}

/// The newest image row of `cuda`'s minor older than `cuda` (the images a release without images left in place).
const CudaImage* newest_image_before(const KnowledgeBase& kb, const Version& cuda) {
  const CudaImage* newest = nullptr;
  for (const CudaImage& image : kb.images)
    if (image.cuda.truncated(2) == cuda.truncated(2) && image.cuda < cuda && (!newest || image.cuda > newest->cuda))
      newest = &image;
  return newest;
}

/// The CUDA majors whose images NVIDIA supports under its policy (the newest `majors_supported` in the table).
std::vector<int> supported_majors(const KnowledgeBase& kb) {
  const CudaImage* newest = newest_image(kb);
  std::vector<int> out;
  if (newest == nullptr) return out;
  for (int major = newest->cuda.major() - kb.image_policy.majors_supported + 1; major <= newest->cuda.major(); ++major)
    out.push_back(major);
  return out;
}

/// "12 and 13", "11, 12 and 13" (or "12 or 13" with `conjunction` "or").
std::string joined(const std::vector<int>& majors, const std::string& conjunction) {
  std::string out;
  for (std::size_t i = 0; i < majors.size(); ++i)
    out += (i == 0 ? "" : i + 1 == majors.size() ? " " + conjunction + " " : ", ") + std::to_string(majors[i]);
  return out;
}

/// Why a published tag is end-of-life, or due to be, under NVIDIA's support policy; `why` is empty for a supported
/// tag. Three causes: the row is EOL in NVIDIA's repository; its CUDA major is older than the supported majors; a
/// newer update of its CUDA release is published (only the latest update is supported).
struct Lifecycle {
  std::string why;  ///< "is end-of-life (...)", "is due for deletion: ...", or ""
  std::string remedy;
  std::string source;
};

Lifecycle lifecycle_of(const KnowledgeBase& kb, const CudaImage& image) {
  const ImagePolicy& policy = kb.image_policy;
  const std::vector<int> majors = policy.majors_supported > 0 ? supported_majors(kb) : std::vector<int>{};
  const bool old_major = !majors.empty() && image.cuda.major() < majors.front();
  const std::optional<Version> successor = superseding_update(kb, image.cuda);
  const std::string to_supported_major = "move to a CUDA " + joined(majors, "or") + " image";
  const std::string to_successor = successor ? "move cuda.version to " + successor->str() +
                                                   ", the supported release of CUDA " + major_minor(image.cuda)
                                             : "move to a supported CUDA release";
  if (image.lifecycle == "eol") {
    std::string when;
    if (!image.eol_date.empty()) when += "marked end-of-life " + image.eol_date;
    if (!image.deletion_date.empty()) {
      const auto as_of = kb.as_of.find("images.toml");
      const bool past = as_of != kb.as_of.end() && !as_of->second.empty() && image.deletion_date <= as_of->second;
      when += std::string(when.empty() ? "" : ", ") + (past ? "past " : "") + "NVIDIA's deletion date " +
              image.deletion_date;
    }
    return {"is end-of-life" + (when.empty() ? "" : " (" + when + ")"), old_major ? to_supported_major : to_successor,
            image.provenance.source};
  }
  if (old_major) {
    return {"is due for deletion: NVIDIA supports images of " + std::to_string(policy.majors_supported) +
                " CUDA majors at a time (" + joined(majors, "and") + ") and marks CUDA " +
                std::to_string(image.cuda.major()) + " end-of-life once a newer major is released",
            to_supported_major,
            // The row that makes the major old is cited too: it may be a data overlay's, which a finding says.
            policy.provenance.source + "; CUDA " + newest_image(kb)->cuda.str() +
                " images: " + newest_image(kb)->provenance.source};
  }
  if (policy.latest_update_only && successor) {
    // The newer update's own row is cited: it may be a data overlay's, which a finding says.
    const CudaImage* successor_image = kb.image(*successor);
    const CudaRelease* successor_release = kb.cuda_release(*successor);
    const std::string evidence = successor_image != nullptr
                                     ? "CUDA " + successor->str() + " images: " + successor_image->provenance.source
                                     : "CUDA " + successor->str() + ": " + successor_release->provenance.source;
    return {
        "is end-of-life under NVIDIA's support policy: superseded by " + successor->str() +
            " (only the latest update of a CUDA release is supported" +
            (successor_image != nullptr ? ", and CUDA " + successor->str() + " images are published)"
                                        : "; the CUDA " + successor->str() + " images are not in gpuenv's data yet)"),
        to_successor, policy.provenance.source + "; " + evidence};
  }
  return {};
}

/// Supported CUDA versions whose images were published for `os` (with a cuDNN variant there when `cudnn`), nearest
/// first (newer first among equals), for the remedy.
std::vector<std::string> images_with_os(const KnowledgeBase& kb, const Version& cuda, const std::string& os,
                                        bool cudnn = false) {
  const auto has = [](const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  std::vector<const CudaImage*> matches;
  for (const CudaImage& image : kb.images) {
    if (has(image.os, os) && (!cudnn || (!image.cudnn_token.empty() && has(image.cudnn_os, os))) &&
        lifecycle_of(kb, image).why.empty())
      matches.push_back(&image);
  }
  const auto distance = [&cuda](const Version& v) {
    return std::abs((v.major() * 100 + v.minor()) - (cuda.major() * 100 + cuda.minor()));
  };
  std::sort(matches.begin(), matches.end(), [&distance](const CudaImage* a, const CudaImage* b) {
    if (distance(a->cuda) != distance(b->cuda)) return distance(a->cuda) < distance(b->cuda);
    return a->cuda > b->cuda;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < matches.size() && i < 3; ++i) out.push_back(matches[i]->cuda.str());
  return out;
}

/// The warning for a tag on an OS a partial row does not list: gpuenv cannot tell whether it was published.
Finding unknown_tag(const std::string& tag, const CudaImage& image, const std::string& what,
                    const std::vector<std::string>& listed) {
  return make("image.tag", Status::warn,
              tag + ": gpuenv's sources list CUDA " + image.cuda.str() + " " + what + " for " + list(listed) +
                  " only (a partial listing), so whether this tag was published is not known",
              "check with `docker manifest inspect " + tag +
                  "`, or add the OS to the images.toml row in a data overlay (docs/knowledge-base.md)",
              image.provenance.source);
}

}  // namespace

void check_image(const Context& c, Findings& out) {
  if (!c.cuda) return;
  const Derived derived = derive(c.profile, c.kb);
  if (derived.image_os.empty()) {
    const std::string message = "NVIDIA publishes no nvidia/cuda images for " + c.profile.os_distro;
    if (c.purpose == Purpose::dockerfile) {
      out.push_back(make("image.os", Status::fail, message,
                         "use os.distro ubuntu, rockylinux, ubi or amzn for container images (" + c.profile.os_distro +
                             " is fine for `gpuenv install`)"));
    } else {
      out.push_back(
          make("image.os", Status::skip, message + "; fine for install, an error only for `gpuenv dockerfile`"));
    }
    return;
  }
  const std::string tag = "nvidia/cuda:" + derived.image_tag;
  const CudaImage* image = c.kb.image(*c.cuda);
  if (const CudaRelease* release = c.kb.cuda_release(*c.cuda);
      image == nullptr && release != nullptr && !release->no_images_source.empty()) {
    // The toolkit is real (install it on a node); only an image of it is not: a failure for `gpuenv dockerfile`.
    const CudaImage* newest_of_minor = newest_image_before(c.kb, *c.cuda);
    std::vector<std::string> others = images_with_os(c.kb, *c.cuda, derived.image_os);
    if (newest_of_minor != nullptr)
      others.erase(std::remove(others.begin(), others.end(), newest_of_minor->cuda.str()), others.end());
    const std::string message =
        tag + " was never published: NVIDIA released the CUDA " + c.cuda->str() +
        " toolkit without nvidia/cuda images" +
        (newest_of_minor ? " (the CUDA " + major_minor(*c.cuda) + " images stay at " + newest_of_minor->cuda.str() + ")"
                         : std::string());
    if (c.purpose != Purpose::dockerfile) {
      out.push_back(make("image.tag", Status::skip,
                         message + "; fine for install, an error only for `gpuenv dockerfile`", "",
                         release->no_images_source));
      return;
    }
    out.push_back(make("image.tag", Status::fail, message,
                       "set cuda.version to " +
                           (newest_of_minor ? newest_of_minor->cuda.str() + " for the image" +
                                                  (others.empty() ? std::string() : ", or to one of ")
                                            : std::string("one of ")) +
                           list(others),
                       release->no_images_source));
    return;
  }
  // Past the newest image, or a patch past the newest image of a known minor (12.9.2 when the data ends at 12.9.1).
  for (const Horizon& horizon : {image_horizon(c.kb), image_minor_horizon(c.kb, *c.cuda)}) {
    if (image != nullptr || !beyond(horizon, *c.cuda)) continue;
    out.push_back(make(
        "image.tag", Status::warn,
        tag + ": " + beyond_message(horizon, c.profile.cuda_version) + ", so whether NVIDIA published it is not known",
        beyond_remedy(horizon)));
    return;
  }
  if (image == nullptr) {
    out.push_back(make(
        "image.tag", Status::fail, "nvidia/cuda has no images for CUDA " + c.profile.cuda_version,
        "pick a CUDA version with published images, e.g. " + list(images_with_os(c.kb, *c.cuda, derived.image_os))));
    return;
  }
  if (std::find(image->os.begin(), image->os.end(), derived.image_os) == image->os.end()) {
    if (image->os_partial) {
      out.push_back(unknown_tag(tag, *image, "images", image->os));
      return;
    }
    out.push_back(make("image.tag", Status::fail,
                       tag + " was never published: CUDA " + image->cuda.str() + " images exist for " + list(image->os),
                       "use one of those OSes, or a CUDA version published for " + derived.image_os + " (" +
                           list(images_with_os(c.kb, *c.cuda, derived.image_os)) + ")",
                       image->provenance.source));
    return;
  }
  // A framework that brings its own cuDNN as pip wheels takes [cudnn] as the cuDNN it loads, not as an image to
  // pull: a `base` image (no cuDNN) is then the lean choice, not an error.
  const bool cudnn_from_wheels = framework_brings_cuda_libraries(c.profile, c.kb);
  if (!c.profile.cudnn_version.empty() && !(cudnn_from_wheels && effective_image_flavor(c.profile, c.kb) == "base")) {
    const std::string flavor = effective_image_flavor(c.profile, c.kb);
    if (flavor == "base") {
      out.push_back(make("image.tag", Status::fail, "nvidia/cuda has no cuDNN variant of `base` images",
                         "set image.flavor to runtime or devel, or drop [cudnn]", image->provenance.source));
      return;
    }
    const bool cudnn_on_os =
        std::find(image->cudnn_os.begin(), image->cudnn_os.end(), derived.image_os) != image->cudnn_os.end();
    if (!image->cudnn_token.empty() && !cudnn_on_os && image->os_partial) {
      out.push_back(unknown_tag(tag, *image, "cuDNN images", image->cudnn_os));
      return;
    }
    if (image->cudnn_token.empty() || !cudnn_on_os) {
      out.push_back(
          make("image.tag", Status::fail,
               tag + " was never published: CUDA " + image->cuda.str() + " has no cuDNN image for " + derived.image_os,
               image->cudnn_token.empty() ? "pick a CUDA version with cuDNN images for " + derived.image_os + " (" +
                                                list(images_with_os(c.kb, *c.cuda, derived.image_os, true)) +
                                                "), or install cuDNN yourself and drop [cudnn]"
                                          : "use one of " + list(image->cudnn_os),
               image->provenance.source));
      return;
    }
    const auto bundled = Version::parse(image->cudnn_version);
    const Version wanted = *Version::parse(c.profile.cudnn_version);
    if (bundled && bundled->major() != wanted.major()) {
      out.push_back(make("image.cudnn", Status::fail,
                         tag + " carries cuDNN " + image->cudnn_version + ", not cuDNN " + c.profile.cudnn_version,
                         "set cudnn.version to \"" + std::to_string(bundled->major()) +
                             "\", or choose a CUDA version whose image carries cuDNN " + std::to_string(wanted.major()),
                         image->provenance.source));
      return;
    }
    if (bundled && !bundled->starts_with(wanted)) {
      out.push_back(make("image.cudnn", Status::warn,
                         tag + " carries cuDNN " + image->cudnn_version + ", not " + c.profile.cudnn_version,
                         "set cudnn.version to \"" + std::to_string(wanted.major()) + "\" to accept the image's cuDNN",
                         image->provenance.source));
    }
  }
  if (const Lifecycle lifecycle = lifecycle_of(c.kb, *image); !lifecycle.why.empty()) {
    // The newer update may lack this profile's OS or cuDNN variant (12.8.2 has no cuDNN images, 13.3.1 no
    // rockylinux10): then the remedy names supported versions that have them.
    const bool cudnn = !c.profile.cudnn_version.empty() && effective_image_flavor(c.profile, c.kb) != "base";
    const std::vector<std::string> fitting = images_with_os(c.kb, *c.cuda, derived.image_os, cudnn);
    const std::optional<Version> successor = superseding_update(c.kb, image->cuda);
    const bool successor_fits =
        successor && std::find(fitting.begin(), fitting.end(), successor->str()) != fitting.end();
    const std::string remedy = !successor || successor_fits || fitting.empty()
                                   ? lifecycle.remedy
                                   : "move cuda.version to one of " + list(fitting) + " (CUDA " + successor->str() +
                                         " has no " + (cudnn ? "cuDNN " : "") + "image for " + derived.image_os + ")";
    out.push_back(make("image.tag", Status::warn,
                       tag + " " + lifecycle.why +
                           ": may vanish; unpatched (NVIDIA deletes end-of-life tags six months after EOL and no "
                           "longer updates them)",
                       remedy, lifecycle.source));
    return;
  }
  out.push_back(make("image.tag", Status::pass, tag + " is published", {}, image->provenance.source));
}

// ---- GPUs ---------------------------------------------------------------------------------------

namespace {

/// The profile's compute capabilities, with the models translated; unknown models are reported.
std::vector<std::string> target_compute_capabilities(const Context& c, Findings& out) {
  std::vector<std::string> ccs = c.profile.gpu_compute_capabilities;
  std::vector<std::string> names;
  for (const GpuModel& gpu : c.kb.gpus) names.push_back(gpu.model);
  for (const std::string& model : c.profile.gpu_models) {
    if (const GpuModel* gpu = c.kb.gpu(model)) {
      if (std::find(ccs.begin(), ccs.end(), gpu->compute_capability) == ccs.end())
        ccs.push_back(gpu->compute_capability);
      continue;
    }
    std::string message = "GPU model `" + model + "` is not in the knowledge base";
    const auto suggestion = util::closest_match(model, names);
    // NVML names every current NVIDIA GPU "NVIDIA ..."; such a name that is no near miss is a GPU newer than the
    // table, not a typo.
    if (!suggestion && util::starts_with(model, "NVIDIA ")) {
      out.push_back(make("gpu.model", Status::warn,
                         message + " " + as_of_note(c.kb, "gpus.toml") + "; it may be newer than gpuenv's data",
                         "give gpu.compute_capabilities, update gpuenv, or add the model to a data overlay (gpus.toml; "
                         "docs/knowledge-base.md)"));
      continue;
    }
    if (suggestion) message += "; did you mean `" + *suggestion + "`?";
    out.push_back(make("gpu.model", Status::fail, message,
                       "name a known model (" + list(names) + ") or give gpu.compute_capabilities"));
  }
  return ccs;
}

/// The profile's driver against what each targeted GPU generation needs (gpu.driver): a minimum driver (Blackwell:
/// R570) and the kernel-module flavour (Blackwell: open only). Judged only where the profile pins the driver.
void check_generation_driver(const Context& c, const std::vector<std::string>& ccs, Findings& out) {
  const std::optional<Version> pinned = !c.profile.driver_min.empty() ? Version::parse(c.profile.driver_min)
                                        : !c.profile.driver_branch.empty()
                                            ? Version::parse(c.profile.driver_branch + ".999")
                                            : std::nullopt;
  for (const std::string& cc : ccs) {
    const ArchSupport* arch = c.kb.arch(cc);
    if (arch == nullptr) continue;
    const std::string what = "compute capability " + cc + " (" + arch->name + ")";
    if (arch->driver_min && pinned && !pinned->at_least_as_written(*arch->driver_min)) {
      const std::string driver =
          "the profile's driver (" +
          (c.profile.driver_min.empty() ? "branch " + c.profile.driver_branch : c.profile.driver_min) + ")";
      const std::string remedy =
          "raise driver.min / driver.branch to " + std::to_string(arch->driver_min->major()) + " or newer";
      // An inferred minimum is not a fact a FAIL may rest on (issue 25: "settle or mark it").
      out.push_back(
          arch->driver_min_inferred
              ? make("gpu.driver", Status::warn,
                     driver + " may not drive " + what + ": the first toolkit that targets it came with " +
                         arch->driver_min->str() + " (inferred; no driver release notes read)",
                     remedy, arch->provenance.source)
              : make("gpu.driver", Status::fail,
                     driver + " cannot drive " + what + ": it needs driver " + arch->driver_min->str() + " or newer",
                     remedy, arch->provenance.source));
    }
    if (arch->driver_modules == "open" && c.profile.driver_modules == "proprietary") {
      out.push_back(make("gpu.driver", Status::fail,
                         what + " runs only with the open kernel modules; the profile asks for proprietary ones",
                         "set driver.modules = \"open\"", arch->provenance.source));
    }
  }
}

/// The architecture whose code runs on `cc` (cubin_runs_on: same major, lower minor) and that CUDA `cuda` targets, for
/// a GPU this CUDA cannot target itself (CUDA 12.8 on a 10.3 B300: its 10.0 code runs there). An architecture CUDA
/// still targets is preferred to one it dropped or renamed (10.1, Thor's old name, is 11.0 from CUDA 13), then the
/// highest minor.
const ArchSupport* family_target(const KnowledgeBase& kb, const Version& cc, const Version& cuda) {
  const ArchSupport* best = nullptr;
  std::pair<bool, Version> best_rank;
  for (const ArchSupport& row : kb.archs) {
    const auto candidate = Version::parse(row.compute_capability);
    if (!candidate || *candidate == cc || !cubin_runs_on(*candidate, cc)) continue;
    if (cuda < row.first_cuda || (row.last_cuda && cuda > *row.last_cuda)) continue;
    const std::pair<bool, Version> rank{!row.last_cuda.has_value(), *candidate};
    if (best == nullptr || rank > best_rank) {
      best = &row;
      best_rank = rank;
    }
  }
  return best;
}

}  // namespace

void check_gpus(const Context& c, Findings& out) {
  const std::vector<std::string> ccs = target_compute_capabilities(c, out);
  check_generation_driver(c, ccs, out);
  if (!c.cuda) return;
  const Version cuda = c.cuda->truncated(2);
  for (const std::string& cc : ccs) {
    const ArchSupport* arch = c.kb.arch(cc);
    const Horizon horizon = compute_capability_horizon(c.kb);
    if (const auto version = Version::parse(cc); arch == nullptr && version && beyond(horizon, *version)) {
      out.push_back(make("gpu.cuda_support", Status::warn, beyond_message(horizon, cc), beyond_remedy(horizon)));
      continue;
    }
    if (arch == nullptr) {
      out.push_back(make("gpu.cuda_support", Status::fail,
                         "compute capability " + cc + " is not a known NVIDIA architecture",
                         "check the value against https://developer.nvidia.com/cuda-gpus"));
      continue;
    }
    const std::string what = "compute capability " + cc + " (" + arch->name + ")";
    const ArchSupport* family = cuda < arch->first_cuda ? family_target(c.kb, *Version::parse(cc), cuda) : nullptr;
    if (family != nullptr) {
      out.push_back(make("gpu.cuda_support", Status::pass,
                         "CUDA " + c.profile.cuda_version + " cannot target " + what + " itself (from CUDA " +
                             arch->first_cuda.str() + "), but its " + family->compute_capability +
                             " code runs there (cubins run on the same major with an equal or higher minor)",
                         {}, std::string(k_binary_compatibility_source) + "; " + family->provenance.source));
    } else if (cuda < arch->first_cuda) {
      out.push_back(make("gpu.cuda_support", Status::fail,
                         "CUDA " + c.profile.cuda_version + " cannot target " + what + "; support starts with CUDA " +
                             arch->first_cuda.str(),
                         "use CUDA " + arch->first_cuda.str() + " or newer", arch->provenance.source));
    } else if (arch->last_cuda && cuda > *arch->last_cuda) {
      out.push_back(make("gpu.cuda_support", Status::fail,
                         "CUDA " + c.profile.cuda_version + " dropped " + what + "; the last CUDA to support it is " +
                             arch->last_cuda->str(),
                         "use CUDA " + arch->last_cuda->str() + " or older for these GPUs", arch->provenance.source));
    } else {
      out.push_back(make("gpu.cuda_support", Status::pass, "CUDA " + c.profile.cuda_version + " supports " + what, {},
                         arch->provenance.source));
    }
  }
}

}  // namespace gpuenv::compat::rules_detail
