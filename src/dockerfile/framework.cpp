#include "dockerfile/framework.hpp"

#include <optional>

#include "compat/derive.hpp"
#include "compat/mirrors.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile/sources.hpp"
#include "dockerfile/text.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

using util::Error;
using util::Version;

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

/// How pip finds the torch wheels: index options and a phrase for the comment.
struct TorchSource {
  std::string index;
  std::string how;
};

util::Expected<TorchSource> torch_source(const profile::Profile& p, const compat::TorchRelease& release,
                                         const compat::Derived& derived, std::vector<std::string>& requirements,
                                         const std::string& torch_pin) {
  const std::string& variant = derived.torch_variant;
  TorchSource out;
  if (release.install == "index-url") {
    requirements.push_back("torch==" + torch_pin);
    if (!release.torchvision.empty()) requirements.push_back("torchvision==" + release.torchvision);
    if (!release.torchaudio.empty()) requirements.push_back("torchaudio==" + release.torchaudio);
    out.index = "--index-url " + derived.wheel_index_url;
    out.how =
        "from PyTorch's " + variant + " wheel index (--index-url: every package, dependencies included, comes from it)";
  } else if (release.install == "extra-index-url" || release.install == "find-links") {
    // Before 2.0 the CUDA wheels carry a local version label (+cu117) that selects them over PyPI's default.
    requirements.push_back("torch==" + torch_pin + "+" + variant);
    if (!release.torchvision.empty()) requirements.push_back("torchvision==" + release.torchvision + "+" + variant);
    if (!release.torchaudio.empty()) requirements.push_back("torchaudio==" + release.torchaudio);
    if (release.install == "extra-index-url") {
      out.index = "--extra-index-url " + derived.wheel_index_url;
      out.how = "+" + variant + " wheels from PyTorch's " + variant +
                " index added to PyPI (--extra-index-url, as PyTorch documents for 1.11-1.13)";
    } else {
      out.index = "--find-links " + std::string(compat::upstream::pytorch) + "/torch_stable.html";
      out.how =
          "+" + variant + " wheels found through PyTorch's torch_stable.html page (as PyTorch documents for 1.9-1.10)";
    }
  } else {
    return Error::internal("torch " + torch_pin + ": unknown install style `" + release.install + "`");
  }
  if (const std::optional<TorchMirror> mirror = torch_mirror(p, variant, release.install)) {
    out.index = mirror->options;
    out.how = mirror->how;
  }
  return out;
}

util::Expected<FrameworkSteps> pytorch_steps(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                             const Data& data) {
  auto torch = Version::parse(p.framework_version);
  // pip reads torch==2.4 as 2.4.0, and so do the rules: pin that release, spelled out.
  if (torch && torch->size() == 2) torch = Version({torch->major(), torch->minor(), 0});
  const compat::TorchRelease* release = torch ? kb.torch_release(*torch) : nullptr;
  if (!torch || !Version::parse(p.cuda_version) || release == nullptr)
    return Error::internal("torch " + p.framework_version + " is not in the knowledge base");
  const compat::Derived derived = compat::derive(p, kb);
  const std::string& variant = derived.torch_variant;
  const auto wheel_cuda = compat::cuda_of_variant(variant);
  if (!wheel_cuda) return Error::internal("no CUDA line for wheel variant " + variant);
  FrameworkSteps steps;
  steps.package = "torch";
  steps.pin = torch->str();
  steps.variant = variant;
  GPUENV_TRY_ASSIGN(auto source, torch_source(p, *release, derived, steps.requirements, steps.pin));
  if (const std::optional<TorchMirror> mirror = torch_mirror(p, variant, release->install)) {
    steps.arg_lines = mirror->arg_line;
  }
  steps.index = source.index;
  steps.numpy_cap = numpy_requirement(data, "pytorch", *torch);
  if (!steps.numpy_cap.empty()) steps.requirements.push_back("\"" + steps.numpy_cap + "\"");

  std::string text = "PyTorch " + steps.pin + ", " + variant + " wheel (it bundles its own CUDA " +
                     major_minor(*wheel_cuda) + " runtime), " + source.how + ". ";
  if (release->torchvision.empty()) {
    text += "torchvision and torchaudio are not pinned: the knowledge base does not list torch " +
            release->version.str() + "'s companions.";
  } else {
    text += "torchvision and torchaudio are pinned to the companions the knowledge base lists for torch " +
            release->version.str() + ".";
  }
  if (!steps.numpy_cap.empty())
    text += " " + steps.numpy_cap + ": torch " + steps.pin + " was built against NumPy 1.x.";
  steps.comment = comment(text);
  steps.check_comment =
      comment("Fail the build when pip brought a wheel that is not a CUDA " + major_minor(*wheel_cuda) +
              " build (a +cpu wheel, another CUDA line), when the cuBLAS and cuDNN that `import torch` maps are "
              "missing or come from outside the venv (shadowed), or when a directory on LD_LIBRARY_PATH holds a copy "
              "that would shadow them.");
  steps.check = "RUN python -c \"import os, torch; v = torch.version.cuda or 'none'; " +
                cuda_line_assert("v", *wheel_cuda, "torch") + "; " + wheel_library_assert(k_venv) + "; " +
                no_shadow_assert() +
                "; print('torch', torch.__version__, 'CUDA', v, 'cuDNN', torch.backends.cudnn.version())\"\n";
  steps.label = "pytorch " + steps.pin;
  steps.variant_label = variant;
  steps.loaded_cuda = major_minor(*wheel_cuda);
  if (const TorchCudnn* cudnn = data.cudnn_of_torch(*torch, variant)) steps.loaded_cudnn = cudnn->cudnn;
  steps.from_wheels = true;
  return steps;
}

/// For TensorFlow [and-cuda]: the NVIDIA wheels it must have brought (it opens them only when a GPU is
/// initialised, so a build without a GPU checks that they are installed and that nothing can shadow them).
std::string and_cuda_assert(const Version& cuda) {
  const std::string suffix = "-cu" + std::to_string(cuda.major());
  return "names = {d.metadata['Name'].lower().replace('_', '-') for d in md.distributions()}; "
         "missing = [n for n in ('nvidia-cublas" +
         suffix + "', 'nvidia-cudnn" + suffix +
         "') if n not in names]; "
         "assert not missing, 'the [and-cuda] wheels are missing: %s (a CPU-only install)' % missing";
}

util::Expected<FrameworkSteps> tensorflow_steps(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                                const Data& data) {
  const auto tf = Version::parse(p.framework_version);
  const compat::TensorflowRelease* release = tf ? kb.tensorflow_release(*tf) : nullptr;
  if (release == nullptr) return Error::internal("TensorFlow " + p.framework_version + " is not in the knowledge base");
  FrameworkSteps steps;
  steps.package = "tensorflow";
  steps.pin = release->version.str();
  steps.numpy_cap = numpy_requirement(data, "tensorflow", release->version);
  std::string text;
  if (release->and_cuda) {
    steps.requirements.push_back("\"tensorflow[and-cuda]==" + steps.pin + "\"");
    text = "TensorFlow " + steps.pin + " with the [and-cuda] extra: pip brings the CUDA " + release->cuda.str() +
           " and cuDNN " + release->cudnn.str() + " libraries it was built with as NVIDIA wheels.";
  } else {
    steps.requirements.push_back("tensorflow==" + steps.pin);
    text = "TensorFlow " + steps.pin + " (before the [and-cuda] extra existed): it loads the CUDA " +
           release->cuda.str() + " and cuDNN " + release->cudnn.str() + " libraries it was built with from the image.";
  }
  if (!steps.numpy_cap.empty()) {
    steps.requirements.push_back("\"" + steps.numpy_cap + "\"");
    text += " " + steps.numpy_cap + ": TensorFlow " + steps.pin + " was built against NumPy 1.x.";
  }
  steps.comment = comment(text);
  // importlib.metadata (Python 3.8+) only where it is used: TensorFlow before [and-cuda] may run on an older Python.
  std::string check = std::string("RUN python -c \"import ") +
                      (release->and_cuda ? "os, importlib.metadata as md, " : "") +
                      "tensorflow as tf; "
                      "assert tf.test.is_built_with_cuda(), 'TensorFlow is built without CUDA'; "
                      "v = str(tf.sysconfig.get_build_info().get('cuda_version', 'none')); " +
                      cuda_line_assert("v", release->cuda, "TensorFlow");
  if (release->and_cuda) {
    check += "; " + and_cuda_assert(release->cuda) + "; " + no_shadow_assert();
    steps.check_comment =
        comment("Fail the build when TensorFlow is not a CUDA build of its tested CUDA " + release->cuda.str() +
                " line, when the [and-cuda] NVIDIA wheels are missing, or when a directory on LD_LIBRARY_PATH holds a "
                "cuBLAS/cuDNN that would shadow them. TensorFlow opens those libraries only when a GPU is "
                "initialised, so the check reads the installed wheels, not the mapped files.");
  } else {
    steps.check_comment = comment("Fail the build when TensorFlow is not a CUDA build of its tested CUDA " +
                                  release->cuda.str() + " line.");
  }
  steps.check = check + "; print('tensorflow', tf.__version__, 'CUDA', v)\"\n";
  steps.label = "tensorflow " + steps.pin;
  steps.loaded_cuda = release->cuda.str();
  steps.loaded_cudnn = release->cudnn.str();
  steps.from_wheels = release->and_cuda;
  return steps;
}

}  // namespace

util::Expected<FrameworkSteps> framework_steps(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                               const Data& data) {
  if (p.framework_name.empty()) return FrameworkSteps{};
  if (p.framework_name == "pytorch") return pytorch_steps(p, kb, data);
  if (p.framework_name == "tensorflow") return tensorflow_steps(p, kb, data);
  return Error::internal("unknown framework " + p.framework_name);
}

std::string framework_install(const FrameworkSteps& steps, const HashedRequirements* hashed,
                              const std::string& permissions) {
  const std::string pip =
      "RUN " + std::string(k_pip_cache_mount) + " \\\n    " + k_netrc_secret_mount + " \\\n    pip install ";
  const std::string index = steps.index.empty() ? std::string() : steps.index + " ";
  const std::string after = " \\\n && " + permissions + "\n";
  if (hashed == nullptr) {
    return steps.comment + steps.arg_lines + pip + steps.index + (steps.index.empty() ? "" : " \\\n      ") +
           util::join(steps.requirements, " ") + after;
  }
  const HashedRequirement* pin = hashed->find(steps.package);
  return steps.comment +
         comment("Hashed requirements (--hashed-requirements " + hashed->path +
                 ") replace these pins: pip's hash-checking mode installs only files whose hashes the lock lists, "
                 "refuses any package it does not pin and, with --only-binary :all:, never runs a source build; gpuenv "
                 "checked that it pins " +
                 steps.package + "==" + (pin != nullptr ? pin->version : steps.pin) +
                 ". The copy stays in the image as a record.") +
         steps.arg_lines + "COPY " + hashed->path + " " + k_hashed_requirements_path + "\n" + pip +
         "--require-hashes --only-binary :all: " + index + "\\\n      -r " + k_hashed_requirements_path + after;
}

std::string no_shadow_assert() {
  return "shadow = [os.path.join(d, f) for d in os.environ.get('LD_LIBRARY_PATH', '').split(':') if d and "
         "os.path.isdir(d) for f in os.listdir(d) if f.startswith(('libcublas', 'libcudnn', 'libnvJitLink'))]; "
         "assert not shadow, 'LD_LIBRARY_PATH shadows the wheels: %s' % shadow";
}

}  // namespace gpuenv::dockerfile
