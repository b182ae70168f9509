#pragma once
// The framework section of a generated Dockerfile: the pinned pip install (or the hashed requirements that
// replace the pins) and the build-time check that fails on a CPU-only or shadowed framework. Pure.

#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "dockerfile/reproducible.hpp"
#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::dockerfile {

/// What the Dockerfile installs for the profile's framework and how it proves the result.
struct FrameworkSteps {
  std::string comment;                    ///< comment lines describing the install
  std::string arg_lines;                  ///< ARG lines the install needs (a wheel mirror), or ""
  std::string index;                      ///< pip index options, "" for PyPI
  std::vector<std::string> requirements;  ///< pip requirement words ("torch==2.9.1", "\"numpy<2\"")
  std::string package;                    ///< the distribution a hashed file must pin ("torch")
  std::string pin;                        ///< its version ("2.9.1")
  std::string variant;                    ///< the wheel's local label a hashed pin may carry ("cu128"), or ""
  std::string numpy_cap;                  ///< "numpy<2" for releases built against NumPy 1.x, or ""
  std::string check_comment;
  std::string check;          ///< the RUN line of the build-time check
  std::string label;          ///< io.gpuenv.framework
  std::string variant_label;  ///< io.gpuenv.torch.variant
  std::string loaded_cuda;    ///< the CUDA line the framework loads ("12.8"); empty when unknown
  std::string loaded_cudnn;   ///< the cuDNN it loads ("9.10.2.21", "9.3"); empty when unknown
  bool from_wheels = false;   ///< those libraries come from its wheels, not from the image
};

/// The steps for the profile's framework (an empty FrameworkSteps without one); an internal Error for a release
/// the knowledge base does not know (the checks refuse those first).
util::Expected<FrameworkSteps> framework_steps(const profile::Profile& profile, const compat::KnowledgeBase& kb,
                                               const Data& data);

/// The install lines: the pins, or with `hashed` a COPY of the file and pip's hash-checking mode with wheels only;
/// both with pip's cache mount and the index credentials secret, then `permissions` (venv_permissions()) in the same
/// layer.
std::string framework_install(const FrameworkSteps& steps, const HashedRequirements* hashed,
                              const std::string& permissions);

/// A python -c statement list (no quotes) asserting that no directory on LD_LIBRARY_PATH holds a cuBLAS, cuDNN
/// or nvJitLink that the loader would pick before the wheels' RUNPATH.
std::string no_shadow_assert();

}  // namespace gpuenv::dockerfile
