// The framework rules: cuDNN, PyTorch wheels and TensorFlow builds against the knowledge base.

#include <algorithm>
#include <set>
#include <string_view>

#include "compat/horizon.hpp"
#include "compat/mirrors.hpp"
#include "compat/rules_internal.hpp"

namespace gpuenv::compat::rules_detail {

// ---- cuDNN --------------------------------------------------------------------------------------

namespace {

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

/// The drop that removed compute capability `cc` from every release `wanted` names ("9.22", "9.11.0"; "9" also names
/// releases before 9.11, so no drop covers it), if any.
const CudnnArchDrop* drop_covering(const KnowledgeBase& kb, const Version& wanted, const std::string& cc) {
  const auto capability = Version::parse(cc);
  if (!capability) return nullptr;
  for (const CudnnArchDrop& drop : kb.cudnn_arch_drops) {
    if (wanted >= drop.cudnn && *capability < drop.compute_capability_below) return &drop;
  }
  return nullptr;
}

/// cudnn.compute_capability for the GPUs a cuDNN release no longer runs on: a failure, whatever the release's rows say
/// (a release newer than the data included).
void check_cudnn_arch_drops(const Context& c, const Version& wanted, Findings& out) {
  for (const std::string& cc : c.profile.gpu_compute_capabilities) {
    const CudnnArchDrop* drop = drop_covering(c.kb, wanted, cc);
    if (drop == nullptr) continue;
    std::optional<Version> last;  // the newest cuDNN before the drop, as the fix
    for (const CudnnBuild& build : c.kb.cudnn_builds) {
      if (build.cudnn < drop->cudnn && (!last || build.cudnn > *last)) last = build.cudnn;
    }
    const std::string newer_gpu = "a GPU of compute capability " + drop->compute_capability_below.str() + " or newer";
    out.push_back(
        make("cudnn.compute_capability", Status::fail,
             "cuDNN " + c.profile.cudnn_version + " does not run on compute capability " + cc + ": cuDNN " +
                 drop->cudnn.str() + " dropped " + drop->name + " (compute capability below " +
                 drop->compute_capability_below.str() + ")",
             last ? "use cuDNN " + last->str() + " (before the drop) on this GPU, or " + newer_gpu : "use " + newer_gpu,
             drop->provenance.source));
  }
}

}  // namespace

void check_cudnn(const Context& c, Findings& out) {
  if (c.profile.cudnn_version.empty() || !c.cuda) return;
  const Version wanted = *Version::parse(c.profile.cudnn_version);
  check_cudnn_arch_drops(c, wanted, out);
  const std::vector<CudnnEvidence> evidence = cudnn_evidence(c.kb, wanted);
  const std::string name = "cuDNN " + c.profile.cudnn_version;
  const int major = c.cuda->major();
  if (const Horizon horizon = cudnn_horizon(c.kb); evidence.empty() && beyond(horizon, wanted)) {
    out.push_back(make("cudnn.cuda_major", Status::warn, beyond_message(horizon, c.profile.cudnn_version),
                       beyond_remedy(horizon)));
    return;
  }
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
  // Only the support matrix lists supported toolkits; an image merely proves one pairing exists, and a row read from a
  // redistributable manifest (no cuda_versions) states none.
  const bool matrix_rows = std::any_of(for_major.begin(), for_major.end(), [](const CudnnEvidence& e) {
    return e.from_support_matrix && !e.cuda_versions.empty();
  });
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
    if (drop_covering(c.kb, wanted, cc) != nullptr) continue;  // failed above
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

namespace {

/// The highest listed architecture whose cubins run on `cc` (cubin_runs_on); "" if none.
std::string binary_compatible_arch(const std::vector<std::string>& built, const std::string& cc) {
  const auto target = Version::parse(cc);
  std::optional<Version> best;
  for (const std::string& candidate : built) {
    const auto v = Version::parse(candidate);
    if (!v || !target || !cubin_runs_on(*v, *target)) continue;
    if (!best || *v > *best) best = v;
  }
  return best ? best->str() : std::string();
}

/// The wheel platform a profile installs: Linux aarch64 for os.arch = "arm64", x86_64 otherwise.
const char* wheel_platform(const Profile& profile) {
  return profile::effective_arch(profile) == "arm64" ? k_wheel_aarch64 : k_wheel_x86_64;
}

/// Whether `release` publishes `variant`'s wheel for `platform`: the variant list for x86_64, the aarch64 list
/// (with its unknowns) for Linux aarch64.
WheelAvailability wheel_for(const TorchRelease& release, const std::string& variant, std::string_view platform) {
  const bool listed = std::find(release.variants.begin(), release.variants.end(), variant) != release.variants.end();
  if (!listed) return WheelAvailability::absent;
  return platform == k_wheel_aarch64 ? aarch64_wheel(release, variant) : WheelAvailability::published;
}

/// "a", "a or b", "a, b or c".
std::string one_of_list(const std::vector<std::string>& items) {
  if (items.size() < 2) return list(items);
  return list(std::vector<std::string>(items.begin(), items.end() - 1)) + " or " + items.back();
}

/// The variants of `release` published for `platform` whose architecture list (kb) runs compute capability `cc`:
/// built for it, or a binary-compatible arch of the same major.
std::vector<std::string> variants_running(const KnowledgeBase& kb, const TorchRelease& release, const Version& torch,
                                          const std::string& cc, std::string_view platform) {
  std::vector<std::string> out;
  for (const std::string& variant : release.variants) {
    if (wheel_for(release, variant, platform) != WheelAvailability::published) continue;
    const TorchArch* arch = kb.torch_arch(torch, variant, platform);
    if (arch != nullptr && !binary_compatible_arch(arch->compute_capabilities, cc).empty()) out.push_back(variant);
  }
  return out;
}

/// What the PyTorch rules judge: the release, the wheel variant and the platform whose wheel is installed.
struct TorchWheel {
  Version torch;
  std::string name;  ///< "torch 2.4.1"
  const TorchRelease* release = nullptr;
  std::string variant;  ///< "cu124"
  bool explicit_variant = false;
  const char* platform = k_wheel_x86_64;
  /// The variant is one of the release's and is published (or may be) for the platform.
  bool exists = false;
};

bool is_aarch64(const TorchWheel& w) { return w.platform == std::string_view(k_wheel_aarch64); }

/// " for Linux aarch64" on arm64, "" on x86_64 (whose wheels every message has always meant).
std::string on_platform(const TorchWheel& w) { return is_aarch64(w) ? " for Linux aarch64" : ""; }

/// pytorch.release: the release row, or a warning past the horizon / a failure inside it. Null when the other PyTorch
/// rules have nothing to judge.
const TorchRelease* check_torch_release(const Context& c, const Version& torch, const std::string& name,
                                        Findings& out) {
  const TorchRelease* release = c.kb.torch_release(torch);
  // A patch past the newest known one of a known minor (2.11.1 when the data ends at 2.11.0): PyTorch may have
  // shipped it since the data was read (issue 25 rule 1, as for CUDA). A patch release takes only the fixes its
  // criteria admit (pytorch/pytorch RELEASE.md, "Patch Release Criteria"), so the newest known patch of the minor
  // stands in for the variant, Python and architecture rules. Checked before the table's horizon, which the newest
  // minor's next patch is past as well.
  if (const Horizon minor = torch_minor_horizon(c.kb, torch); release == nullptr && beyond(minor, torch)) {
    out.push_back(make("pytorch.release", Status::warn, beyond_message(minor, torch.str()), beyond_remedy(minor)));
    return c.kb.torch_release(*minor.newest);
  }
  if (const Horizon horizon = torch_horizon(c.kb); release == nullptr && beyond(horizon, torch)) {
    out.push_back(make("pytorch.release", Status::warn, beyond_message(horizon, torch.str()), beyond_remedy(horizon)));
    return nullptr;
  }
  if (release == nullptr) {
    std::vector<std::string> same_series;
    for (const TorchRelease& r : c.kb.torch_releases) {
      if (r.version.truncated(2) == torch.truncated(2)) same_series.push_back(r.version.str());
    }
    out.push_back(make("pytorch.release", Status::fail, name + " is not a PyTorch release in the knowledge base",
                       same_series.empty()
                           ? "pick a release listed by `gpuenv profile show`'s knowledge base (docs/knowledge-base.md)"
                           : "use one of " + list(same_series)));
    return nullptr;
  }
  const bool series_only = release->version.size() == 2;
  out.push_back(make("pytorch.release", Status::pass,
                     series_only ? name + " belongs to the " + release->version.str() +
                                       " series (its patch releases are not in the knowledge base)"
                                 : name + " is a PyTorch release",
                     {}, release->provenance.source));
  return release;
}

/// The newest release that publishes Linux aarch64 CUDA wheels, for the remedy of one that does not.
const TorchRelease* newest_with_aarch64_wheels(const KnowledgeBase& kb) {
  const TorchRelease* newest = nullptr;
  for (const TorchRelease& r : kb.torch_releases) {
    if (r.aarch64_variants && !r.aarch64_variants->empty() && (!newest || r.version > newest->version)) newest = &r;
  }
  return newest;
}

/// pytorch.variant: the variant is one of the release's (its list is complete: rule 5 of issue 25, no horizon for a
/// release the data knows) and, on arm64, one it publishes a Linux aarch64 wheel of.
void check_torch_variant(const Context& c, TorchWheel& w, Findings& out) {
  const TorchRelease& release = *w.release;
  const bool listed = std::find(release.variants.begin(), release.variants.end(), w.variant) != release.variants.end();
  const WheelAvailability wheel = wheel_for(release, w.variant, w.platform);
  w.exists = wheel != WheelAvailability::absent;
  const std::string wheel_name = w.name + "+" + w.variant;
  if (!listed) {
    std::string remedy =
        "set framework.variant to one of " + list(release.variants) + " (the wheel bundles its own CUDA runtime)";
    if (!w.explicit_variant) {
      std::vector<std::string> cudas;
      for (const std::string& v : release.variants) {
        if (auto cv = cuda_of_variant(v)) cudas.push_back(cv->str());
      }
      remedy += ", or use a CUDA " + list(cudas) + " release for cuda.version";
    }
    out.push_back(
        make("pytorch.variant", Status::fail,
             w.name + " has no " + w.variant + " wheel (variants: " + list(release.variants) + ")" +
                 (w.explicit_variant ? "" : "; " + w.variant + " follows from cuda.version " + c.profile.cuda_version),
             remedy, release.provenance.source));
  } else if (wheel == WheelAvailability::absent) {
    const std::vector<std::string>& arm = *release.aarch64_variants;
    const TorchRelease* newer = newest_with_aarch64_wheels(c.kb);
    const std::string remedy =
        !arm.empty()
            ? "set framework.variant to one of " + list(arm) + ", the CUDA wheels it publishes for Linux aarch64"
        : newer != nullptr ? "use a release with Linux aarch64 CUDA wheels (torch " + newer->version.str() + ": " +
                                 list(*newer->aarch64_variants) + ")"
                           : "use a release with Linux aarch64 CUDA wheels";
    out.push_back(make("pytorch.variant", Status::fail,
                       w.name + " publishes no Linux aarch64 " + w.variant + " wheel (its Linux aarch64 CUDA wheels: " +
                           (arm.empty() ? std::string("none") : list(arm)) + "); os.arch is arm64",
                       remedy, release.aarch64_source));
  } else if (wheel == WheelAvailability::unknown) {
    out.push_back(make("pytorch.variant", Status::warn,
                       "whether " + wheel_name + " is published for Linux aarch64 is not in gpuenv's data " +
                           as_of_note(c.kb, "pytorch.toml"),
                       "look for a manylinux aarch64 " + w.variant + " wheel at " + std::string(upstream::pytorch) +
                           "/" + w.variant +
                           "/torch/, or add aarch64_variants to the pytorch.toml row in a data overlay "
                           "(docs/knowledge-base.md)",
                       release.aarch64_source.empty() ? release.provenance.source : release.aarch64_source));
  } else {
    out.push_back(make("pytorch.variant", Status::pass, wheel_name + " exists" + on_platform(w), {},
                       is_aarch64(w) ? release.aarch64_source : release.provenance.source));
  }
}

/// pytorch.python: the Python against the series' range and its experimental marks.
void check_torch_python(const Context& c, const Version& torch, Findings& out) {
  const TorchSeries* series = c.kb.torch_series_of(torch);
  if (series == nullptr) {
    out.push_back(make("pytorch.python", Status::warn,
                       "no Python range for torch " + torch.truncated(2).str() + " in the knowledge base",
                       "check PyTorch's release compatibility matrix"));
    return;
  }
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
    out.push_back(
        make("pytorch.python", Status::pass,
             "Python " + c.profile.framework_python + " is within torch " + series->series.str() + "'s range " + range,
             {}, series->provenance.source));
  }
}

/// pytorch.compute_capability: each target GPU against the architecture list of the wheel for the profile's platform.
void check_torch_compute_capabilities(const Context& c, const TorchWheel& w, Findings& out) {
  const TorchArch* arch = c.kb.torch_arch(w.torch, w.variant, w.platform);
  const std::string wheel_name = w.name + "+" + w.variant;
  for (const std::string& cc : c.profile.gpu_compute_capabilities) {
    if (arch == nullptr) {
      const bool aarch64 = is_aarch64(w);
      out.push_back(make("pytorch.compute_capability", Status::skip,
                         std::string(aarch64 ? "no Linux aarch64" : "no") + " architecture list for torch " +
                             w.torch.truncated(2).str() + "+" + w.variant +
                             " in the knowledge base; compute capability " + cc + " not checked" +
                             (aarch64 ? " (the x86_64 wheel's list does not hold for the aarch64 wheel)" : "")));
      continue;
    }
    const bool listed = std::find(arch->compute_capabilities.begin(), arch->compute_capabilities.end(), cc) !=
                        arch->compute_capabilities.end();
    const auto cc_version = Version::parse(cc);
    const auto ptx = Version::parse(arch->ptx);
    const std::string compatible = binary_compatible_arch(arch->compute_capabilities, cc);
    if (listed) {
      out.push_back(make("pytorch.compute_capability", Status::pass,
                         wheel_name + on_platform(w) + " is built for compute capability " + cc, {},
                         arch->provenance.source));
    } else if (!compatible.empty()) {
      out.push_back(make("pytorch.compute_capability", Status::pass,
                         wheel_name + on_platform(w) + " has no " + cc + " kernels but its " + compatible +
                             " kernels run there (cubins run on the same major with an equal or higher minor)",
                         {}, k_binary_compatibility_source));
    } else if (ptx && cc_version && *cc_version > *ptx) {
      out.push_back(make("pytorch.compute_capability", Status::warn,
                         wheel_name + on_platform(w) + " has no kernels for " + cc +
                             "; it runs through JIT compilation of its " + arch->ptx + " PTX (slow first start)",
                         "use a PyTorch release built for " + cc, arch->provenance.source));
    } else {
      const std::vector<std::string> running = variants_running(c.kb, *w.release, w.torch, cc, w.platform);
      const std::string remedy = running.empty() ? "use another wheel variant or PyTorch release that includes " + cc
                                                 : "use " + w.name + "'s " + one_of_list(running) +
                                                       " wheel (its architecture list covers " + cc +
                                                       "): set framework.variant, or a cuda.version of that CUDA line";
      out.push_back(make("pytorch.compute_capability", Status::fail,
                         wheel_name + on_platform(w) + " is not built for compute capability " + cc + " (built for " +
                             list(arch->compute_capabilities) + ")",
                         remedy, arch->provenance.source));
    }
  }
}

}  // namespace

void check_pytorch(const Context& c, Findings& out) {
  if (c.profile.framework_name != "pytorch" || !c.cuda) return;
  TorchWheel w;
  // pip reads torch==2.4 as 2.4.0.
  w.torch = *Version::parse(c.profile.framework_version);
  if (w.torch.size() == 2) w.torch = Version({w.torch.major(), w.torch.minor(), 0});
  w.name = "torch " + w.torch.str();
  w.release = check_torch_release(c, w.torch, w.name, out);
  if (w.release == nullptr) return;
  w.explicit_variant = !c.profile.framework_variant.empty();
  w.variant = w.explicit_variant ? c.profile.framework_variant : torch_variant_for(*c.cuda);
  w.platform = wheel_platform(c.profile);
  check_torch_variant(c, w, out);

  const auto wheel_cuda = cuda_of_variant(w.variant);
  if (w.explicit_variant && wheel_cuda && wheel_cuda->major() != c.cuda->major()) {
    out.push_back(make(
        "pytorch.variant_cuda", Status::warn,
        "the " + w.variant + " wheel bundles CUDA " + wheel_cuda->str() + " while the image has CUDA " +
            c.profile.cuda_version + ": two CUDA runtimes of different majors",
        "use a " + w.variant + "-matching cuda.version, or a variant for CUDA " + std::to_string(c.cuda->major())));
  }
  check_torch_python(c, w.torch, out);
  if (w.exists && wheel_cuda && c.floor.version) {
    const DriverJudgement judged =
        judge_driver(*c.floor.version, "the driver floor " + c.floor.version->str() + " (" + c.floor.reason + ")",
                     *wheel_cuda, c.kb.driver_for_minor(*wheel_cuda), c.kb);
    out.push_back(
        make("pytorch.driver", judged.status, "the " + w.variant + " wheel: " + judged.message, judged.remedy));
  }
  if (w.exists) check_torch_compute_capabilities(c, w, out);
}

// ---- TensorFlow ---------------------------------------------------------------------------------

void check_tensorflow(const Context& c, Findings& out) {
  if (c.profile.framework_name != "tensorflow" || !c.cuda) return;
  const Version tf = *Version::parse(c.profile.framework_version);
  const std::string name = "TensorFlow " + c.profile.framework_version;
  const TensorflowRelease* release = c.kb.tensorflow_release(tf);
  if (const Horizon horizon = tensorflow_horizon(c.kb); release == nullptr && beyond(horizon, tf)) {
    out.push_back(make("tensorflow.release", Status::warn, beyond_message(horizon, c.profile.framework_version),
                       beyond_remedy(horizon)));
    return;
  }
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

}  // namespace gpuenv::compat::rules_detail
