#include "compat/rules.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "compat/derive.hpp"
#include "util/strings.hpp"

namespace gpuenv::compat {
namespace {

using profile::Profile;
using report::Finding;
using report::Status;
using util::Version;

using Findings = std::vector<Finding>;

Finding make(std::string id, Status status, std::string message, std::string remedy = {}, std::string source = {}) {
  return Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

std::string list(const std::vector<std::string>& items) { return util::join(items, ", "); }

std::string major_minor(const Version& version) { return version.truncated(2).str(); }

/// Facts every rule needs, parsed once.
struct Context {
  const Profile& profile;
  const KnowledgeBase& kb;
  Purpose purpose;
  std::optional<Version> cuda;
  DriverFloor floor;
};

// ---- CUDA release -------------------------------------------------------------------------------

void check_cuda_release(const Context& c, Findings& out) {
  if (!c.cuda) return;
  if (const CudaRelease* release = c.kb.cuda_release(*c.cuda)) {
    out.push_back(make("cuda.release", Status::pass, "CUDA " + c.profile.cuda_version + " is a CUDA release", {},
                       release->provenance.source));
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
  const int branch = std::stoi(c.profile.driver_branch);
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

// ---- cuDNN --------------------------------------------------------------------------------------

/// A (cuDNN version, CUDA major) pair the knowledge base knows exists, with the toolkit minors if listed.
struct CudnnEvidence {
  Version cudnn;
  int cuda_major;
  std::vector<Version> cuda_versions;  ///< empty: not stated
  std::vector<std::string> compute_capabilities;
  std::string source;
  bool from_support_matrix = false;  ///< a cuDNN support-matrix row, not an image's bundled cuDNN
};

std::vector<CudnnEvidence> cudnn_evidence(const KnowledgeBase& kb, const Version& wanted) {
  std::vector<CudnnEvidence> out;
  for (const CudnnBuild& build : kb.cudnn_builds) {
    if (build.cudnn.starts_with(wanted)) {
      out.push_back({build.cudnn, build.cuda_major, build.cuda_versions, build.compute_capabilities,
                     build.provenance.source, true});
    }
  }
  // The cuDNN inside nvidia/cuda images proves a build for that image's CUDA exists.
  for (const CudaImage& image : kb.images) {
    const auto bundled = Version::parse(image.cudnn_version);
    if (bundled && bundled->starts_with(wanted)) {
      out.push_back({*bundled, image.cuda.major(), {image.cuda.truncated(2)}, {}, image.provenance.source, false});
    }
  }
  return out;
}

void check_cudnn(const Context& c, Findings& out) {
  if (c.profile.cudnn_version.empty() || !c.cuda) return;
  const Version wanted = *Version::parse(c.profile.cudnn_version);
  const std::vector<CudnnEvidence> evidence = cudnn_evidence(c.kb, wanted);
  const std::string name = "cuDNN " + c.profile.cudnn_version;
  const int major = c.cuda->major();
  if (evidence.empty()) {
    out.push_back(
        make("cudnn.cuda_major", Status::warn,
             name + " is not in the knowledge base; cannot confirm a build for CUDA " + std::to_string(major) + ".x",
             "check NVIDIA's cuDNN support matrix, or name a cuDNN release gpuenv knows (e.g. \"9\")"));
    return;
  }
  std::vector<CudnnEvidence> for_major;
  std::set<int> other_majors;
  for (const CudnnEvidence& e : evidence) {
    if (e.cuda_major == major) {
      for_major.push_back(e);
    } else {
      other_majors.insert(e.cuda_major);
    }
  }
  if (for_major.empty()) {
    std::vector<std::string> majors;
    for (int m : other_majors) majors.push_back(std::to_string(m) + ".x");
    // The newest cuDNN that does have a build for this CUDA major, as the fix.
    std::optional<Version> newest;
    for (const CudnnBuild& build : c.kb.cudnn_builds) {
      if (build.cuda_major == major && build.cudnn.major() == wanted.major() && (!newest || build.cudnn > *newest))
        newest = build.cudnn;
    }
    std::string remedy = "use CUDA " + list(majors);
    if (newest)
      remedy = "use cuDNN " + newest->str() + " (the newest " + std::to_string(wanted.major()) + ".x with a CUDA " +
               std::to_string(major) + ".x build), or " + remedy;
    out.push_back(make(
        "cudnn.cuda_major", Status::fail,
        name + " has no build for CUDA " + std::to_string(major) + ".x (builds exist for CUDA " + list(majors) + ")",
        remedy, evidence.front().source));
    return;
  }
  out.push_back(make("cudnn.cuda_major", Status::pass, name + " has a build for CUDA " + std::to_string(major) + ".x",
                     {}, for_major.front().source));
  const Version minor = c.cuda->truncated(2);
  const bool minor_listed = std::any_of(for_major.begin(), for_major.end(), [&minor](const CudnnEvidence& e) {
    return std::find(e.cuda_versions.begin(), e.cuda_versions.end(), minor) != e.cuda_versions.end();
  });
  // Only the support matrix lists supported toolkits; an image merely proves one pairing exists.
  const bool matrix_rows =
      std::any_of(for_major.begin(), for_major.end(), [](const CudnnEvidence& e) { return e.from_support_matrix; });
  if (!minor_listed && !matrix_rows) {
    out.push_back(make("cudnn.cuda_version", Status::skip,
                       name + " has no support-matrix row in the knowledge base; its support for CUDA " + minor.str() +
                           " is not checked"));
  } else if (!minor_listed) {
    out.push_back(make(
        "cudnn.cuda_version", Status::warn,
        name + "'s CUDA " + std::to_string(major) + ".x builds are not listed as supported with CUDA " + minor.str(),
        "pick a cuDNN release whose support matrix lists CUDA " + minor.str(), for_major.front().source));
  }
  // Judge compute capabilities only by the rows that cover this toolkit (9.10.2's Blackwell row covers 12.8-12.9 only).
  std::vector<CudnnEvidence> for_minor;
  for (const CudnnEvidence& e : for_major) {
    if (std::find(e.cuda_versions.begin(), e.cuda_versions.end(), minor) != e.cuda_versions.end())
      for_minor.push_back(e);
  }
  const std::vector<CudnnEvidence>& cc_rows = for_minor.empty() ? for_major : for_minor;
  for (const std::string& cc : c.profile.gpu_compute_capabilities) {
    const bool stated = std::any_of(cc_rows.begin(), cc_rows.end(),
                                    [](const CudnnEvidence& e) { return !e.compute_capabilities.empty(); });
    const bool listed = std::any_of(cc_rows.begin(), cc_rows.end(), [&cc](const CudnnEvidence& e) {
      return std::find(e.compute_capabilities.begin(), e.compute_capabilities.end(), cc) !=
             e.compute_capabilities.end();
    });
    if (stated && !listed) {
      out.push_back(make("cudnn.compute_capability", Status::warn,
                         name + " for CUDA " + std::to_string(major) + ".x does not list compute capability " + cc,
                         "choose a cuDNN release that supports " + cc, for_major.front().source));
    }
  }
}

// ---- PyTorch ------------------------------------------------------------------------------------

constexpr const char* k_binary_compatibility_source =
    "CUDA C++ Programming Guide, binary compatibility: a cubin for compute capability X.y runs on X.z with z >= y, not "
    "across "
    "major revisions (as implemented in llvm-project openmp/libomptarget cuda rtl.cpp)";

/// The highest listed architecture whose cubins run on `cc`: same major, minor not above cc's; "" if none.
std::string binary_compatible_arch(const std::vector<std::string>& built, const std::string& cc) {
  const auto target = Version::parse(cc);
  std::optional<Version> best;
  for (const std::string& candidate : built) {
    const auto v = Version::parse(candidate);
    if (!v || !target || v->major() != target->major() || v->minor() > target->minor()) continue;
    if (!best || *v > *best) best = v;
  }
  return best ? best->str() : std::string();
}

void check_pytorch(const Context& c, Findings& out) {
  if (c.profile.framework_name != "pytorch" || !c.cuda) return;
  // pip reads torch==2.4 as 2.4.0.
  Version torch = *Version::parse(c.profile.framework_version);
  if (torch.size() == 2) torch = Version({torch.major(), torch.minor(), 0});
  const std::string name = "torch " + torch.str();
  const TorchRelease* release = c.kb.torch_release(torch);
  if (release == nullptr) {
    std::vector<std::string> same_series;
    for (const TorchRelease& r : c.kb.torch_releases) {
      if (r.version.truncated(2) == torch.truncated(2)) same_series.push_back(r.version.str());
    }
    out.push_back(make("pytorch.release", Status::fail, name + " is not a PyTorch release in the knowledge base",
                       same_series.empty()
                           ? "pick a release listed by `gpuenv profile show`'s knowledge base (docs/knowledge-base.md)"
                           : "use one of " + list(same_series)));
    return;
  }
  const bool series_only = release->version.size() == 2;
  out.push_back(make("pytorch.release", Status::pass,
                     series_only ? name + " belongs to the " + release->version.str() +
                                       " series (its patch releases are not in the knowledge base)"
                                 : name + " is a PyTorch release",
                     {}, release->provenance.source));

  const bool explicit_variant = !c.profile.framework_variant.empty();
  const std::string variant = explicit_variant ? c.profile.framework_variant : torch_variant_for(*c.cuda);
  const bool exists = std::find(release->variants.begin(), release->variants.end(), variant) != release->variants.end();
  if (!exists) {
    std::string remedy =
        "set framework.variant to one of " + list(release->variants) + " (the wheel bundles its own CUDA runtime)";
    if (!explicit_variant) {
      std::vector<std::string> cudas;
      for (const std::string& v : release->variants) {
        if (auto cv = cuda_of_variant(v)) cudas.push_back(cv->str());
      }
      remedy += ", or use a CUDA " + list(cudas) + " release for cuda.version";
    }
    out.push_back(
        make("pytorch.variant", Status::fail,
             name + " has no " + variant + " wheel (variants: " + list(release->variants) + ")" +
                 (explicit_variant ? "" : "; " + variant + " follows from cuda.version " + c.profile.cuda_version),
             remedy, release->provenance.source));
  } else {
    out.push_back(
        make("pytorch.variant", Status::pass, name + "+" + variant + " exists", {}, release->provenance.source));
  }

  const auto wheel_cuda = cuda_of_variant(variant);
  if (explicit_variant && wheel_cuda && wheel_cuda->major() != c.cuda->major()) {
    out.push_back(
        make("pytorch.variant_cuda", Status::warn,
             "the " + variant + " wheel bundles CUDA " + wheel_cuda->str() + " while the image has CUDA " +
                 c.profile.cuda_version + ": two CUDA runtimes of different majors",
             "use a " + variant + "-matching cuda.version, or a variant for CUDA " + std::to_string(c.cuda->major())));
  }

  if (const TorchSeries* series = c.kb.torch_series_of(torch)) {
    const Version python = *Version::parse(c.profile.framework_python);
    const std::string range = series->python_min.str() + "-" + series->python_max.str();
    const bool experimental = std::any_of(series->python_experimental.begin(), series->python_experimental.end(),
                                          [&python](const std::string& mark) {
                                            const auto marked = Version::parse(mark);
                                            return marked && *marked == python;
                                          });
    if (experimental) {
      out.push_back(make("pytorch.python", Status::warn,
                         "torch " + series->series.str() + " has only experimental wheels for Python " +
                             c.profile.framework_python + " (supported: " + range + ")",
                         "experimental wheels: use a Python in " + range + " for a supported build",
                         series->provenance.source));
    } else if (python < series->python_min || python > series->python_max) {
      out.push_back(
          make("pytorch.python", Status::fail,
               "torch " + series->series.str() + " supports Python " + range + ", not " + c.profile.framework_python,
               "set framework.python to a version in " + range, series->provenance.source));
    } else {
      out.push_back(make(
          "pytorch.python", Status::pass,
          "Python " + c.profile.framework_python + " is within torch " + series->series.str() + "'s range " + range, {},
          series->provenance.source));
    }
  } else {
    out.push_back(make("pytorch.python", Status::warn,
                       "no Python range for torch " + torch.truncated(2).str() + " in the knowledge base",
                       "check PyTorch's release compatibility matrix"));
  }

  if (exists && wheel_cuda && c.floor.version) {
    const DriverJudgement judged =
        judge_driver(*c.floor.version, "the driver floor " + c.floor.version->str() + " (" + c.floor.reason + ")",
                     *wheel_cuda, c.kb.driver_for_minor(*wheel_cuda), c.kb);
    out.push_back(make("pytorch.driver", judged.status, "the " + variant + " wheel: " + judged.message, judged.remedy));
  }

  if (!exists) return;
  const TorchArch* arch = c.kb.torch_arch(torch, variant);
  for (const std::string& cc : c.profile.gpu_compute_capabilities) {
    if (arch == nullptr) {
      out.push_back(make("pytorch.compute_capability", Status::skip,
                         "no architecture list for torch " + torch.truncated(2).str() + "+" + variant +
                             " in the knowledge base; compute capability " + cc + " not checked"));
      continue;
    }
    const bool listed = std::find(arch->compute_capabilities.begin(), arch->compute_capabilities.end(), cc) !=
                        arch->compute_capabilities.end();
    const auto cc_version = Version::parse(cc);
    const auto ptx = Version::parse(arch->ptx);
    const std::string compatible = binary_compatible_arch(arch->compute_capabilities, cc);
    if (listed) {
      out.push_back(make("pytorch.compute_capability", Status::pass,
                         name + "+" + variant + " is built for compute capability " + cc, {}, arch->provenance.source));
    } else if (!compatible.empty()) {
      out.push_back(make("pytorch.compute_capability", Status::pass,
                         name + "+" + variant + " has no " + cc + " kernels but its " + compatible +
                             " kernels run there (cubins run on the same major with an equal or higher minor)",
                         {}, k_binary_compatibility_source));
    } else if (ptx && cc_version && *cc_version > *ptx) {
      out.push_back(make("pytorch.compute_capability", Status::warn,
                         name + "+" + variant + " has no kernels for " + cc +
                             "; it runs through JIT compilation of its " + arch->ptx + " PTX (slow first start)",
                         "use a PyTorch release built for " + cc, arch->provenance.source));
    } else {
      out.push_back(make("pytorch.compute_capability", Status::fail,
                         name + "+" + variant + " is not built for compute capability " + cc + " (built for " +
                             list(arch->compute_capabilities) + ")",
                         "use another wheel variant or PyTorch release that includes " + cc, arch->provenance.source));
    }
  }
}

// ---- TensorFlow ---------------------------------------------------------------------------------

void check_tensorflow(const Context& c, Findings& out) {
  if (c.profile.framework_name != "tensorflow" || !c.cuda) return;
  const Version tf = *Version::parse(c.profile.framework_version);
  const std::string name = "TensorFlow " + c.profile.framework_version;
  const TensorflowRelease* release = c.kb.tensorflow_release(tf);
  if (release == nullptr) {
    out.push_back(make("tensorflow.release", Status::fail, name + " is not in TensorFlow's tested build configurations",
                       "use a release listed at https://www.tensorflow.org/install/source#gpu"));
    return;
  }
  const bool exact = release->version == tf;
  out.push_back(make("tensorflow.release", Status::pass,
                     exact ? name + " is a TensorFlow release"
                           : name + " is judged by the tested configuration of " + release->version.str(),
                     {}, release->provenance.source));
  const std::string line = "CUDA " + release->cuda.str() + " / cuDNN " + release->cudnn.str();
  const std::string tested = "TensorFlow " + release->version.str() + " was built and tested with " + line;
  if (c.cuda->major() != release->cuda.major()) {
    out.push_back(make("tensorflow.cuda", Status::fail, tested + ", not CUDA " + c.profile.cuda_version,
                       "use a CUDA " + release->cuda.str() + ".x release, or a TensorFlow release built for CUDA " +
                           std::to_string(c.cuda->major()),
                       release->provenance.source));
  } else if (c.cuda->truncated(2) != release->cuda) {
    out.push_back(
        make("tensorflow.cuda", Status::warn, tested + "; CUDA " + c.profile.cuda_version + " is an untested pairing",
             "use a CUDA " + release->cuda.str() + ".x release" +
                 (release->and_cuda ? " (tensorflow[and-cuda] brings CUDA " + release->cuda.str() + " as pip packages)"
                                    : ""),
             release->provenance.source));
  } else {
    out.push_back(make("tensorflow.cuda", Status::pass, tested, {}, release->provenance.source));
  }
  if (!c.profile.cudnn_version.empty()) {
    const Version cudnn = *Version::parse(c.profile.cudnn_version);
    if (cudnn.major() != release->cudnn.major()) {
      out.push_back(make("tensorflow.cudnn", Status::fail, tested + ", not cuDNN " + c.profile.cudnn_version,
                         "set cudnn.version to \"" + release->cudnn.str() + "\"", release->provenance.source));
    } else if (cudnn.size() >= 2 && cudnn.truncated(2) != release->cudnn) {
      out.push_back(make("tensorflow.cudnn", Status::warn,
                         tested + "; cuDNN " + c.profile.cudnn_version + " is untested",
                         "set cudnn.version to \"" + release->cudnn.str() + "\"", release->provenance.source));
    } else {
      out.push_back(make("tensorflow.cudnn", Status::pass, "cuDNN " + c.profile.cudnn_version + " matches " + line, {},
                         release->provenance.source));
    }
  }
  const Version python = *Version::parse(c.profile.framework_python);
  const std::string range = release->python_min.str() + "-" + release->python_max.str();
  if (python < release->python_min || python > release->python_max) {
    out.push_back(make(
        "tensorflow.python", Status::fail,
        "TensorFlow " + release->version.str() + " supports Python " + range + ", not " + c.profile.framework_python,
        "set framework.python to a version in " + range, release->provenance.source));
  } else {
    out.push_back(make("tensorflow.python", Status::pass,
                       "Python " + c.profile.framework_python + " is within TensorFlow " + release->version.str() +
                           "'s range " + range,
                       {}, release->provenance.source));
  }
}

// ---- nvidia/cuda image --------------------------------------------------------------------------

/// CUDA versions whose images were published for `os`, nearest first, for the remedy.
std::vector<std::string> images_with_os(const KnowledgeBase& kb, const Version& cuda, const std::string& os) {
  std::vector<const CudaImage*> matches;
  for (const CudaImage& image : kb.images) {
    if (std::find(image.os.begin(), image.os.end(), os) != image.os.end() && image.lifecycle == "active")
      matches.push_back(&image);
  }
  std::sort(matches.begin(), matches.end(), [&cuda](const CudaImage* a, const CudaImage* b) {
    const auto distance = [&cuda](const Version& v) {
      return std::abs((v.major() * 100 + v.minor()) - (cuda.major() * 100 + cuda.minor()));
    };
    return distance(a->cuda) < distance(b->cuda);
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < matches.size() && i < 3; ++i) out.push_back(matches[i]->cuda.str());
  return out;
}

/// The active image of the same CUDA minor (12.1.0 -> 12.1.1), for EOL remedies.
const CudaImage* active_successor(const KnowledgeBase& kb, const Version& cuda) {
  const CudaImage* best = nullptr;
  for (const CudaImage& image : kb.images) {
    if (image.lifecycle == "active" && image.cuda.truncated(2) == cuda.truncated(2) &&
        (!best || image.cuda > best->cuda))
      best = &image;
  }
  return best;
}

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
  if (image == nullptr) {
    out.push_back(make(
        "image.tag", Status::fail, "nvidia/cuda has no images for CUDA " + c.profile.cuda_version,
        "pick a CUDA version with published images, e.g. " + list(images_with_os(c.kb, *c.cuda, derived.image_os))));
    return;
  }
  if (std::find(image->os.begin(), image->os.end(), derived.image_os) == image->os.end()) {
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
    if (image->cudnn_token.empty() ||
        std::find(image->cudnn_os.begin(), image->cudnn_os.end(), derived.image_os) == image->cudnn_os.end()) {
      out.push_back(
          make("image.tag", Status::fail,
               tag + " was never published: CUDA " + image->cuda.str() + " has no cuDNN image for " + derived.image_os,
               image->cudnn_token.empty()
                   ? "pick a CUDA update that has cuDNN images (e.g. " +
                         (active_successor(c.kb, *c.cuda) ? active_successor(c.kb, *c.cuda)->cuda.str()
                                                          : std::string("another release")) +
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
  if (image->lifecycle == "eol") {
    std::string when;
    if (!image->eol_date.empty()) when += "marked end-of-life " + image->eol_date;
    if (!image->deletion_date.empty())
      when += std::string(when.empty() ? "" : ", ") + "deletion scheduled for " + image->deletion_date;
    const CudaImage* successor = active_successor(c.kb, *c.cuda);
    out.push_back(make("image.tag", Status::warn,
                       tag + " is end-of-life" + (when.empty() ? "" : " (" + when + ")") +
                           ": NVIDIA deletes EOL tags six months after EOL, so it may no longer be pullable",
                       successor ? "move cuda.version to " + successor->cuda.str() +
                                       ", the supported release of CUDA " + major_minor(*c.cuda)
                                 : "move to a supported CUDA release",
                       image->provenance.source));
    return;
  }
  out.push_back(make("image.tag", Status::pass, tag + " is published", {}, image->provenance.source));
}

// ---- GPUs ---------------------------------------------------------------------------------------

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
    if (auto suggestion = util::closest_match(model, names)) message += "; did you mean `" + *suggestion + "`?";
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
    if (arch->driver_min && pinned && *pinned < *arch->driver_min) {
      out.push_back(
          make("gpu.driver", Status::fail,
               "the profile's driver (" +
                   (c.profile.driver_min.empty() ? "branch " + c.profile.driver_branch : c.profile.driver_min) +
                   ") cannot drive " + what + ": it needs driver " + arch->driver_min->str() + " or newer",
               "raise driver.min / driver.branch to " + std::to_string(arch->driver_min->major()) + " or newer",
               arch->provenance.source));
    }
    if (arch->driver_modules == "open" && c.profile.driver_modules == "proprietary") {
      out.push_back(make("gpu.driver", Status::fail,
                         what + " runs only with the open kernel modules; the profile asks for proprietary ones",
                         "set driver.modules = \"open\"", arch->provenance.source));
    }
  }
}

void check_gpus(const Context& c, Findings& out) {
  const std::vector<std::string> ccs = target_compute_capabilities(c, out);
  check_generation_driver(c, ccs, out);
  if (!c.cuda) return;
  const Version cuda = c.cuda->truncated(2);
  for (const std::string& cc : ccs) {
    const ArchSupport* arch = c.kb.arch(cc);
    if (arch == nullptr) {
      out.push_back(make("gpu.cuda_support", Status::fail,
                         "compute capability " + cc + " is not a known NVIDIA architecture",
                         "check the value against https://developer.nvidia.com/cuda-gpus"));
      continue;
    }
    const std::string what = "compute capability " + cc + " (" + arch->name + ")";
    if (cuda < arch->first_cuda) {
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

}  // namespace

DriverJudgement judge_driver(const Version& driver, const std::string& subject, const Version& cuda,
                             const std::optional<Version>& required, const KnowledgeBase& kb) {
  const CudaMajor* major = kb.cuda_major(cuda.major());
  const std::string cuda_name = "CUDA " + cuda.str();
  const std::string major_name = "CUDA " + std::to_string(cuda.major()) + ".x";
  if (required && driver >= *required) {
    return {Status::pass, subject + " meets " + cuda_name + "'s minimum driver " + required->str(), {}};
  }
  if (major == nullptr) {
    if (!required)
      return {Status::warn, "no driver requirement for " + cuda_name + " in the knowledge base",
              "check NVIDIA's release notes"};
    return {Status::fail, subject + " is below " + cuda_name + "'s minimum driver " + required->str(),
            "raise the driver to " + required->str() + " or newer"};
  }
  if (driver >= major->compat_driver_min) {
    if (!required) {
      return {Status::pass,
              subject + " meets the " + major_name + " minor-version-compatibility floor " +
                  major->compat_driver_min.str() + " (" + cuda_name + "'s own minimum is not in the knowledge base)",
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
