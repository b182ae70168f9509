#include "dockerfile/checks.hpp"

#include <algorithm>

#include "compat/derive.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile/reproducible.hpp"
#include "dockerfile/text.hpp"

namespace gpuenv::dockerfile {
namespace {

using report::Finding;
using report::Status;
using util::Version;

Finding make(std::string id, Status status, std::string message, std::string remedy = {}, std::string source = {}) {
  return Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

}  // namespace

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
  if (const auto compile = compile_finding(p, data)) out.push_back(*compile);
  if (const PipPin* pin = python ? pip_for(data, *python) : nullptr) {
    if (const PipAdvisory* advisory = pip_advisory_of(data, *pin)) {
      out.push_back(make("dockerfile.pip", Status::warn,
                         "pip " + pin->version + ", the last release for Python " + python->truncated(2).str() +
                             ", predates pip " + advisory->fixed.str() + "'s fix of " + advisory->id +
                             " (an interpreter with PEP 706 tar filters is not affected)",
                         "use Python " + std::string("3.9 or newer, whose pip carries the fix"),
                         advisory->provenance.source));
    }
  }
  return out;
}

}  // namespace gpuenv::dockerfile
