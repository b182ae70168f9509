#include "dockerfile/dockerfile.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "compat/derive.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile/lint.hpp"
#include "dockerfile/sources.hpp"
#include "profile/fields.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

using report::Finding;
using report::Status;
using util::Error;
using util::Version;

constexpr const char* k_venv = "/opt/venv";
constexpr const char* k_python_dir = "/opt/python";

std::string major_minor(const Version& version) { return version.truncated(2).str(); }

/// "ubuntu22.04" -> "Ubuntu 22.04", "ubi9" -> "UBI 9", ...
std::string os_display(const std::string& image_os) {
  const struct {
    const char* prefix;
    const char* name;
  } names[] = {{"ubuntu", "Ubuntu "}, {"ubi", "UBI "}, {"rockylinux", "Rocky Linux "}, {"amzn", "Amazon Linux "}};
  for (const auto& n : names) {
    if (util::starts_with(image_os, n.prefix)) return n.name + image_os.substr(std::string_view(n.prefix).size());
  }
  return image_os;
}

/// Text safe inside a one-line comment.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

/// `text` as comment lines of at most 112 characters, broken at spaces.
std::string comment(std::string_view text) {
  constexpr std::size_t width = 112;
  std::string out;
  std::string line = "#";
  const std::string flat = one_line(text);
  for (std::string_view word : util::split(flat, ' ')) {
    if (word.empty()) continue;
    if (line.size() > 1 && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = "#";
    }
    line += " ";
    line += word;
  }
  return out + line + "\n";
}

/// A double-quoted LABEL value: backslash, quote and `$` (variable substitution) escaped, one line.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : one_line(text)) {
    if (c == '\\' || c == '"' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

enum class PackageManager { apt, dnf, yum };

PackageManager package_manager(const profile::Profile& profile) {
  if (profile.os_distro == "ubuntu" || profile.os_distro == "debian") return PackageManager::apt;
  // RHEL 7 / UBI 7 images have yum only; every later RHEL-family image and Amazon Linux 2023 have dnf.
  const auto version = Version::parse(profile.os_version);
  if ((profile.os_distro == "ubi" || profile.os_distro == "rhel") && version && version->major() <= 7)
    return PackageManager::yum;
  return PackageManager::dnf;
}

/// Continuation lines for a RUN: " \\\n && " between commands.
std::string chain(const std::vector<std::string>& commands) {
  std::string out;
  for (std::size_t i = 0; i < commands.size(); ++i) out += (i == 0 ? "" : " \\\n && ") + commands[i];
  return out;
}

std::string install_packages(PackageManager manager, const std::vector<std::string>& packages) {
  const std::string list = util::join(packages, " ");
  switch (manager) {
    case PackageManager::apt:
      return "RUN " +
             chain({"apt-get update", "apt-get install -y --no-install-recommends " + list,
                    "rm -rf /var/lib/apt/lists/*"}) +
             "\n";
    case PackageManager::dnf:
      return "RUN " +
             chain({"dnf install -y --setopt=install_weak_deps=False --nodocs " + list, "dnf clean all",
                    "rm -rf /var/cache/dnf"}) +
             "\n";
    case PackageManager::yum:
      return "RUN " +
             chain({"yum install -y --setopt=tsflags=nodocs " + list, "yum clean all", "rm -rf /var/cache/yum"}) + "\n";
  }
  return {};
}

/// The numpy requirement a framework release needs, if any.
std::string numpy_requirement(const Data& data, const std::string& framework, const Version& version) {
  for (const NumpyCap& cap : data.numpy) {
    if (cap.framework == framework && version < cap.below) return cap.requirement;
  }
  return {};
}

/// `assert` in a python -c one-liner that the CUDA line (major.minor) is `line`.
std::string cuda_line_assert(const std::string& value_expr, const Version& line, const std::string& what) {
  return "assert " + value_expr + ".split('.')[:2] == ['" + std::to_string(line.major()) + "', '" +
         std::to_string(line.minor()) + "'], '" + what + " is built for CUDA %s, not " + major_minor(line) + "' % " +
         value_expr;
}

/// The framework install and the build-time check; empty strings when the profile has no framework.
struct FrameworkSteps {
  std::string comment;
  std::string install;
  std::string check_comment;
  std::string check;
  std::string label;          ///< io.gpuenv.framework
  std::string variant_label;  ///< io.gpuenv.torch.variant
  std::string loaded_cuda;    ///< the CUDA line the framework loads ("12.8"); empty when unknown
  std::string loaded_cudnn;   ///< the cuDNN it loads ("9.10.2.21", "9.3"); empty when unknown
  bool from_wheels = false;   ///< those libraries come from its wheels, not from the image
};

util::Expected<FrameworkSteps> pytorch_steps(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                             const Data& data) {
  auto torch = Version::parse(p.framework_version);
  // pip reads torch==2.4 as 2.4.0, and so do the rules: pin that release, spelled out.
  if (torch && torch->size() == 2) torch = Version({torch->major(), torch->minor(), 0});
  const auto cuda = Version::parse(p.cuda_version);
  const compat::TorchRelease* release = torch ? kb.torch_release(*torch) : nullptr;
  if (!torch || !cuda || release == nullptr)
    return Error::internal("torch " + p.framework_version + " is not in the knowledge base");
  const compat::Derived derived = compat::derive(p, kb);
  const std::string& variant = derived.torch_variant;
  const auto wheel_cuda = compat::cuda_of_variant(variant);
  if (!wheel_cuda) return Error::internal("no CUDA line for wheel variant " + variant);
  const std::string torch_pin = torch->str();
  std::vector<std::string> requirements;
  std::string index;
  std::string how;
  if (release->install == "index-url") {
    requirements.push_back("torch==" + torch_pin);
    if (!release->torchvision.empty()) requirements.push_back("torchvision==" + release->torchvision);
    if (!release->torchaudio.empty()) requirements.push_back("torchaudio==" + release->torchaudio);
    index = "--index-url " + derived.wheel_index_url;
    how =
        "from PyTorch's " + variant + " wheel index (--index-url: every package, dependencies included, comes from it)";
  } else if (release->install == "extra-index-url" || release->install == "find-links") {
    // Before 2.0 the CUDA wheels carry a local version label (+cu117) that selects them over PyPI's default.
    requirements.push_back("torch==" + torch_pin + "+" + variant);
    if (!release->torchvision.empty()) requirements.push_back("torchvision==" + release->torchvision + "+" + variant);
    if (!release->torchaudio.empty()) requirements.push_back("torchaudio==" + release->torchaudio);
    if (release->install == "extra-index-url") {
      index = "--extra-index-url " + derived.wheel_index_url;
      how = "+" + variant + " wheels from PyTorch's " + variant +
            " index added to PyPI (--extra-index-url, as PyTorch documents for 1.12-1.13)";
    } else {
      index = "--find-links https://download.pytorch.org/whl/torch_stable.html";
      how =
          "+" + variant + " wheels found through PyTorch's torch_stable.html page (as PyTorch documents for 1.9-1.10)";
    }
  } else {
    return Error::internal("torch " + torch_pin + ": unknown install style `" + release->install + "`");
  }
  const std::optional<TorchMirror> mirror = torch_mirror(p, variant, release->install);
  if (mirror) {
    index = mirror->options;
    how = mirror->how;
  }
  const std::string numpy = numpy_requirement(data, "pytorch", *torch);
  if (!numpy.empty()) requirements.push_back("\"" + numpy + "\"");

  FrameworkSteps steps;
  std::string text = "PyTorch " + torch_pin + ", " + variant + " wheel (it bundles its own CUDA " +
                     major_minor(*wheel_cuda) + " runtime), " + how + ". ";
  if (release->torchvision.empty()) {
    text += "torchvision and torchaudio are not pinned: the knowledge base does not list torch " +
            release->version.str() + "'s companions.";
  } else {
    text += "torchvision and torchaudio are pinned to the companions the knowledge base lists for torch " +
            release->version.str() + ".";
  }
  if (!numpy.empty()) text += " " + numpy + ": torch " + torch->str() + " was built against NumPy 1.x.";
  steps.comment = comment(text);
  steps.install = (mirror ? mirror->arg_line : std::string()) + "RUN pip install --no-cache-dir " + index +
                  " \\\n      " + util::join(requirements, " ") + " \\\n && chmod -R g=u " + k_venv + "\n";
  steps.check_comment =
      comment("Fail the build when pip brought a wheel that is not a CUDA " + major_minor(*wheel_cuda) +
              " build (a +cpu wheel, another CUDA line), or when the cuBLAS and cuDNN that "
              "`import torch` maps are missing or come from outside the venv (shadowed).");
  steps.check = "RUN python -c \"import torch; v = torch.version.cuda or 'none'; " +
                cuda_line_assert("v", *wheel_cuda, "torch") + "; " + wheel_library_assert(k_venv) +
                "; print('torch', torch.__version__, 'CUDA', v, 'cuDNN', torch.backends.cudnn.version())\"\n";
  steps.label = "pytorch " + torch_pin;
  steps.variant_label = variant;
  steps.loaded_cuda = major_minor(*wheel_cuda);
  if (const TorchCudnn* cudnn = data.cudnn_of_torch(*torch, variant)) steps.loaded_cudnn = cudnn->cudnn;
  steps.from_wheels = true;
  return steps;
}

util::Expected<FrameworkSteps> tensorflow_steps(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                                const Data& data) {
  const auto tf = Version::parse(p.framework_version);
  const compat::TensorflowRelease* release = tf ? kb.tensorflow_release(*tf) : nullptr;
  if (release == nullptr) return Error::internal("TensorFlow " + p.framework_version + " is not in the knowledge base");
  const std::string version = release->version.str();
  const std::string numpy = numpy_requirement(data, "tensorflow", release->version);
  std::vector<std::string> requirements;
  FrameworkSteps steps;
  std::string text;
  if (release->and_cuda) {
    requirements.push_back("\"tensorflow[and-cuda]==" + version + "\"");
    text = "TensorFlow " + version + " with the [and-cuda] extra: pip brings the CUDA " + release->cuda.str() +
           " and cuDNN " + release->cudnn.str() + " libraries it was built with as NVIDIA wheels.";
  } else {
    requirements.push_back("tensorflow==" + version);
    text = "TensorFlow " + version + " (before the [and-cuda] extra existed): it loads the CUDA " +
           release->cuda.str() + " and cuDNN " + release->cudnn.str() + " libraries it was built with from the image.";
  }
  if (!numpy.empty()) {
    requirements.push_back("\"" + numpy + "\"");
    text += " " + numpy + ": TensorFlow " + version + " was built against NumPy 1.x.";
  }
  steps.comment = comment(text);
  steps.install =
      "RUN pip install --no-cache-dir " + util::join(requirements, " ") + " \\\n && chmod -R g=u " + k_venv + "\n";
  steps.check_comment = comment("Fail the build when TensorFlow is not a CUDA build of its tested CUDA " +
                                release->cuda.str() + " line.");
  steps.check =
      "RUN python -c \"import tensorflow as tf; assert tf.test.is_built_with_cuda(), 'TensorFlow is built without "
      "CUDA'; "
      "v = str(tf.sysconfig.get_build_info().get('cuda_version', 'none')); " +
      cuda_line_assert("v", release->cuda, "TensorFlow") + "; print('tensorflow', tf.__version__, 'CUDA', v)\"\n";
  steps.label = "tensorflow " + version;
  steps.loaded_cuda = release->cuda.str();
  steps.loaded_cudnn = release->cudnn.str();
  steps.from_wheels = release->and_cuda;
  return steps;
}

/// Whether NVIDIA published the tag the profile implies, judged from the knowledge base alone.
bool tag_published(const profile::Profile& p, const compat::KnowledgeBase& kb, const compat::Derived& derived) {
  const auto cuda = Version::parse(p.cuda_version);
  const compat::CudaImage* image = cuda ? kb.image(*cuda) : nullptr;
  if (image == nullptr || derived.image_os.empty()) return false;
  if (std::find(image->os.begin(), image->os.end(), derived.image_os) == image->os.end()) return false;
  const std::string flavor = compat::effective_image_flavor(p, kb);
  if (p.cudnn_version.empty() || (flavor == "base" && compat::framework_brings_cuda_libraries(p, kb))) return true;
  if (flavor == "base" || image->cudnn_token.empty()) return false;
  return std::find(image->cudnn_os.begin(), image->cudnn_os.end(), derived.image_os) != image->cudnn_os.end();
}

bool uv_provides(const Data& data, const Version& python) {
  const Version mm = python.truncated(2);
  return !(mm < data.uv.python_min) && !(data.uv.python_max < mm);
}

Finding make(std::string id, Status status, std::string message, std::string remedy = {}, std::string source = {}) {
  return Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

}  // namespace

PythonPlan plan_python(const profile::Profile& profile, const Data& data) {
  PythonPlan plan;
  if (profile.framework_name.empty()) return plan;
  plan.version = profile.framework_python;
  const auto wanted = Version::parse(profile.framework_python);
  const std::string image_os = compat::image_os_suffix(profile.os_distro, profile.os_version);
  const OsPython* os = data.python_of(image_os);
  if (wanted && os != nullptr && os->python == wanted->truncated(2)) {
    plan.method = PythonPlan::Method::os;
    plan.packages = os->packages;
    plan.interpreter = os->interpreter;
    plan.why =
        "Python " + plan.version + " is " + os_display(image_os) + "'s own python3 (" + os->provenance.source + ")";
    return plan;
  }
  plan.method = PythonPlan::Method::uv;
  const std::string os_python = os != nullptr ? os_display(image_os) + "'s own python3 is " + os->python.str()
                                              : "gpuenv has no sourced default python3 for " + os_display(image_os);
  plan.why = os_python + ", so Python " + plan.version + " comes from uv " + data.uv.version +
             " (`uv python install`), which unpacks a python-build-standalone CPython build into " + k_python_dir +
             ": one method for every distro (the deadsnakes PPA is Ubuntu-only and lacks some versions; a source build "
             "is slow)";
  return plan;
}

std::vector<Finding> check(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data) {
  std::vector<Finding> out;
  if (p.framework_name.empty()) {
    out.push_back(make("dockerfile.python", Status::skip, "no [framework]: the image gets no Python"));
    return out;
  }
  if (p.framework_version.empty() || p.framework_python.empty()) {
    out.push_back(make("dockerfile.framework", Status::fail,
                       "framework " + p.framework_name + " needs framework.version and framework.python",
                       "set framework.version and framework.python"));
    return out;
  }
  const PythonPlan plan = plan_python(p, data);
  const auto python = Version::parse(p.framework_python);
  if (plan.method == PythonPlan::Method::os) {
    out.push_back(make("dockerfile.python", Status::pass, plan.why, {},
                       data.python_of(compat::image_os_suffix(p.os_distro, p.os_version))->provenance.source));
  } else if (python && uv_provides(data, *python)) {
    out.push_back(
        make("dockerfile.python", Status::pass,
             "Python " + p.framework_python + " comes from uv " + data.uv.version + " (python-build-standalone)", {},
             data.uv.provenance.source));
  } else {
    const std::string range = data.uv.python_min.str() + "-" + data.uv.python_max.str();
    const std::string image_os = compat::image_os_suffix(p.os_distro, p.os_version);
    const OsPython* os = data.python_of(image_os);
    std::string remedy = "set framework.python to a version in " + range;
    if (os != nullptr) remedy += " or " + os->python.str() + " (" + os_display(image_os) + "'s own)";
    out.push_back(make("dockerfile.python", Status::fail,
                       "no way to put Python " + p.framework_python + " into the image: uv " + data.uv.version +
                           " installs CPython " + range +
                           (os != nullptr ? " and " + os_display(image_os) + "'s python3 is " + os->python.str() : ""),
                       remedy, data.uv.provenance.source));
  }
  if (p.framework_name == "tensorflow") {
    const auto tf = Version::parse(p.framework_version);
    const compat::TensorflowRelease* release = tf ? kb.tensorflow_release(*tf) : nullptr;
    if (release != nullptr && !release->and_cuda) {
      if (compat::effective_image_flavor(p, kb) == "base") {
        out.push_back(make("dockerfile.libraries", Status::warn,
                           "TensorFlow " + release->version.str() +
                               " loads the CUDA math libraries from the image, but a `base` image has none",
                           "set image.flavor to runtime (with [cudnn]) or devel", release->provenance.source));
      } else if (p.cudnn_version.empty()) {
        out.push_back(make("dockerfile.libraries", Status::warn,
                           "TensorFlow " + release->version.str() +
                               " loads cuDNN from the image, but the profile has no [cudnn] (no cuDNN image)",
                           "set cudnn.version to \"" + std::to_string(release->cudnn.major()) + "\"",
                           release->provenance.source));
      }
    }
  }
  if (const auto duplicate = duplicate_libraries(p, kb)) out.push_back(*duplicate);
  return out;
}

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string canonical_fields(const profile::Profile& p) {
  std::string out;
  for (const profile::FieldSpec& spec : profile::scalar_fields()) {
    // Mirrors change where the bytes come from, not what the image holds.
    if (spec.key == "name" || spec.key == "description" || util::starts_with(spec.key, "mirrors.")) continue;
    const std::string value = profile::get_field(p, spec.key);
    if (!value.empty()) out += std::string(spec.key) + "=" + value + "\n";
  }
  if (!p.gpu_compute_capabilities.empty())
    out += "gpu.compute_capabilities=" + util::join(p.gpu_compute_capabilities, ",") + "\n";
  if (!p.gpu_models.empty()) out += "gpu.models=" + util::join(p.gpu_models, ",") + "\n";
  return out;
}

std::string profile_hash(const profile::Profile& p) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical_fields(p))));
  return std::string("fnv1a64:") + hex;
}

std::string cell_file_name(const std::string& profile_name, const profile::Assignments& assignments) {
  std::string out = profile_name;
  for (const auto& [key, value] : assignments) out += "_" + key + "-" + value;
  for (char& c : out) {
    const bool safe =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!safe) c = '-';
  }
  return out + ".Dockerfile";
}

std::string regenerate_arguments(const Options& options) {
  std::string out = one_line(options.profile_argument);
  for (const auto& [key, value] : options.selection) out += " --set " + one_line(key) + "=" + one_line(value);
  if (options.with_doctor) out += " --with-doctor";
  return out;
}

util::Expected<std::string> render(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data,
                                   const Options& options) {
  const auto cuda = Version::parse(p.cuda_version);
  const compat::Derived derived = compat::derive(p, kb);
  if (!cuda || derived.image_tag.empty() || !tag_published(p, kb, derived)) {
    return Error::internal("refusing to write a Dockerfile: nvidia/cuda:" + derived.image_tag +
                           " is not a published tag in the knowledge base (run the checks first)");
  }
  const std::string base_image = "nvidia/cuda:" + derived.image_tag;
  const compat::CudaImage* image = kb.image(*cuda);
  const std::string image_os = derived.image_os;
  const PythonPlan plan = plan_python(p, data);
  if (!p.framework_name.empty()) {
    const auto python = Version::parse(p.framework_python);
    if (plan.method == PythonPlan::Method::uv && (!python || !uv_provides(data, *python))) {
      return Error::internal("no way to put Python " + p.framework_python + " into the image (run the checks first)");
    }
  }
  FrameworkSteps framework;
  if (p.framework_name == "pytorch") {
    auto steps = pytorch_steps(p, kb, data);
    if (!steps) return steps.error();
    framework = std::move(*steps);
  } else if (p.framework_name == "tensorflow") {
    auto steps = tensorflow_steps(p, kb, data);
    if (!steps) return steps.error();
    framework = std::move(*steps);
  } else if (!p.framework_name.empty()) {
    return Error::internal("unknown framework " + p.framework_name);
  }
  const PackageManager manager = package_manager(p);
  const bool uses_uv = plan.method == PythonPlan::Method::uv;

  std::string out;
  // ---- header ----
  out += "# syntax=docker/dockerfile:1\n";
  out += "# Generated by gpuenv " + one_line(options.gpuenv_version) + " from profile \"" + one_line(p.name) +
         "\"; do not edit, regenerate.\n";
  out += "# Regenerate with: gpuenv dockerfile " + regenerate_arguments(options) + "\n";
  if (!p.description.empty()) out += "# " + one_line(p.description) + "\n";
  out += "# Profile hash: " + profile_hash(p) + " (FNV-1a 64 of the resolved fields; label io.gpuenv.profile.hash)\n";
  std::vector<std::string> resolved{"CUDA " + p.cuda_version};
  const bool image_cudnn = derived.image_flavor.find("cudnn") != std::string::npos;
  if (image_cudnn) resolved.push_back("cuDNN " + p.cudnn_version);
  resolved.push_back(derived.image_flavor + " image");
  resolved.push_back(os_display(image_os));
  if (p.framework_name == "pytorch")
    resolved.push_back("PyTorch " + p.framework_version + " (" + framework.variant_label + " wheel)");
  if (p.framework_name == "tensorflow") resolved.push_back("TensorFlow " + p.framework_version);
  if (!p.framework_name.empty()) resolved.push_back("Python " + p.framework_python);
  out += "# Resolved: " + util::join(resolved, ", ") + "\n";
  if (framework.from_wheels) {
    out += comment(
        "Loaded by the framework: CUDA " + framework.loaded_cuda + " and cuDNN " +
        (framework.loaded_cudnn.empty() ? std::string("(version not in gpuenv's data)") : framework.loaded_cudnn) +
        " from its own wheels in " + k_venv + ", not from the image" +
        (derived.image_flavor == "base" ? " (a `base` image: cudart only, nothing duplicated)." : "."));
  }
  out +=
      "# Base image: " + base_image + " (a published tag: data/compat/images.toml, " + image->provenance.status + ")\n";
  if (image->lifecycle == "eol") {
    out +=
        "# Warning: this tag is end-of-life" +
        (image->deletion_date.empty() ? std::string() : "; NVIDIA set its deletion date to " + image->deletion_date) +
        ". NVIDIA deletes EOL tags six months after EOL: it may no longer be pullable.\n";
  }
  if (derived.driver_floor.version) {
    out += "# Host driver: >= " + derived.driver_floor.version->str() + " (" + one_line(derived.driver_floor.reason) +
           ")\n";
  }
  out += "# GPU access: NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES stay as NVIDIA's base image sets them\n";
  out +=
      "# (all; compute,utility); narrow them at run time (docker run --gpus '\"device=0\"', -e "
      "NVIDIA_VISIBLE_DEVICES=...).\n";
  out += std::string("# Build: docker build -f <this file> .  (BuildKit; the build context is ") +
         (options.with_doctor ? "only used for ./gpuenv with GPUENV_FROM=context" : "not used") + ")\n";
  if (!p.framework_name.empty()) {
    out += "# Run: docker run --gpus all --ipc=host ... (or --shm-size=8g): DataLoader workers share tensors through\n";
    out += "# /dev/shm, and Docker's default 64 MB makes them fail with bus errors.\n";
  }
  if (const std::string note = mirrors_note(p, framework.variant_label, uses_uv); !note.empty()) out += comment(note);
  if (const std::string arg = registry_arg(p); !arg.empty()) {
    out += "\n# The registry the nvidia/cuda base image comes from ([mirrors] registry).\n" + arg;
  }
  if (options.with_doctor) out += doctor_global_arg();

  // ---- helper stages ----
  if (uses_uv) {
    out += "\n# uv, only mounted while Python is installed (not kept in the image).\n";
    out += "FROM " + data.uv.image + " AS uv\n";
  }
  if (options.with_doctor) out += doctor_stages();

  // ---- the image ----
  out += "\nFROM " + from_reference(p, derived.image_tag) + "\n";
  std::vector<std::string> packages;
  std::vector<std::string> why_packages;
  if (plan.method == PythonPlan::Method::os) {
    packages = plan.packages;
    why_packages.push_back("Python " + plan.version + " (" + os_display(image_os) + "'s own python3)");
  }
  if (wants_compiler(p)) {
    const std::vector<std::string> compiler = compiler_packages(plan, manager == PackageManager::apt);
    packages.insert(packages.end(), compiler.begin(), compiler.end());
    why_packages.push_back(util::join(compiler, ", ") +
                           " for torch.compile (Triton compiles C at run time; `[image] compiler = false` drops them)");
  }
  if (manager != PackageManager::apt && !stays_root(p)) {
    packages.push_back("shadow-utils");
    why_packages.push_back("shadow-utils for useradd");
  }
  if (!packages.empty()) {
    if (manager == PackageManager::apt) out += "ARG DEBIAN_FRONTEND=noninteractive\n";
    out += comment("System packages: " + util::join(why_packages, "; ") + ".");
    out += install_packages(manager, packages);
  }

  if (plan.method != PythonPlan::Method::none) {
    if (const std::string args = python_source_args(p, uses_uv); !args.empty()) out += "\n" + args;
    out += "\n" + comment(plan.why + ". The framework goes into a virtual environment at " + k_venv +
                          ", not the system site-packages.");
    if (plan.method == PythonPlan::Method::os) {
      out += "RUN " +
             chain({plan.interpreter + " -m venv " + k_venv,
                    std::string(k_venv) + "/bin/python -m pip install --no-cache-dir --upgrade pip"}) +
             "\n";
    } else {
      out += std::string("ARG UV_PYTHON_INSTALL_DIR=") + k_python_dir + "\n";
      out += "ARG UV_PYTHON_PREFERENCE=only-managed\n";
      out += "ARG UV_NO_CACHE=1\n";
      out += "RUN --mount=from=uv,source=/uv,target=/usr/local/bin/uv \\\n    " +
             chain({"uv python install " + plan.version, "uv venv --seed --python " + plan.version + " " + k_venv}) +
             "\n";
    }
    out += std::string("ENV VIRTUAL_ENV=") + k_venv + " \\\n    PATH=" + k_venv +
           "/bin:$PATH \\\n    PYTHONUNBUFFERED=1\n";
    out += loader_path(framework.from_wheels);
    out += "\n" + framework.comment + framework.install;
    out += framework.check_comment + framework.check;
  }

  out += create_user(p);
  if (options.with_doctor) out += doctor_install();

  // Labels last, after the heavy layers, so changing one does not invalidate the build cache.
  std::vector<std::string> labels;
  const auto label = [&labels](const std::string& key, const std::string& value) {
    labels.push_back(key + "=" + quoted(value));
  };
  label("org.opencontainers.image.title", p.name);
  if (!p.description.empty()) label("org.opencontainers.image.description", p.description);
  label("org.opencontainers.image.base.name", "docker.io/" + base_image);
  label("io.gpuenv.profile", p.name);
  label("io.gpuenv.profile.hash", profile_hash(p));
  if (!options.selection.empty()) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : options.selection) parts.push_back(key + "=" + value);
    label("io.gpuenv.cell", util::join(parts, ","));
  }
  label("io.gpuenv.cuda", p.cuda_version);
  if (framework.from_wheels) {
    // The libraries the framework loads, not the image's (a base image has no cuDNN).
    label("io.gpuenv.framework.cuda", framework.loaded_cuda);
    if (!framework.loaded_cudnn.empty()) label("io.gpuenv.cudnn", framework.loaded_cudnn);
  } else if (!p.cudnn_version.empty()) {
    label("io.gpuenv.cudnn", p.cudnn_version);  // the image's cuDNN, which the framework loads
  }
  if (!framework.label.empty()) label("io.gpuenv.framework", framework.label);
  if (!framework.variant_label.empty()) label("io.gpuenv.torch.variant", framework.variant_label);
  if (!p.framework_python.empty() && !p.framework_name.empty()) label("io.gpuenv.python", p.framework_python);
  if (derived.driver_floor.version) label("io.gpuenv.driver.min", derived.driver_floor.version->str());
  out += "\nLABEL " + util::join(labels, " \\\n      ") + "\n";
  out += final_user(p);

  const std::vector<std::string> problems =
      structural_problems(out, {data.uv.image, doctor_download_image()}, stays_root(p));
  if (!problems.empty())
    return Error::internal("generated Dockerfile failed its own checks: " + util::join(problems, "; "));
  return out;
}

}  // namespace gpuenv::dockerfile
