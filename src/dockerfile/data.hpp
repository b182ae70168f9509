#pragma once
// The Dockerfile generator's own facts (data/dockerfile/*.toml, compiled in): which Python each image OS ships,
// the pinned uv that provides every other version, NumPy caps for older frameworks, the cuDNN each PyTorch
// wheel loads, the base images' NVIDIA_REQUIRE_CUDA and the --with-doctor curl image.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// The default `python3` of an nvidia/cuda image OS.
struct OsPython {
  std::string os;  ///< nvidia/cuda OS suffix: "ubuntu22.04", "ubi9", "amzn2023"
  util::Version python;
  std::vector<std::string> packages;
  std::string interpreter;
  compat::Provenance provenance;
};

/// The pinned uv used for every Python the OS does not ship as python3.
struct Uv {
  std::string version;
  std::string image;  ///< "ghcr.io/astral-sh/uv:0.11.23"
  util::Version python_min;
  util::Version python_max;
  compat::Provenance provenance;
};

/// "framework releases below `below` need `requirement`" (e.g. numpy<2).
struct NumpyCap {
  std::string framework;
  util::Version below;
  std::string requirement;
  compat::Provenance provenance;
};

/// The cuDNN a PyTorch CUDA wheel loads (data/dockerfile/wheel_libraries.toml).
struct TorchCudnn {
  util::Version torch;  ///< major.minor
  std::string variant;  ///< "cu128"
  std::string cudnn;    ///< "9.10.2.21"
  compat::Provenance provenance;
};

/// The pip release that pins pip itself in a venv of Python `python_min`..`python_max` (each pip release
/// supports a range of Pythons: 21.3.1 is the last for 3.6, 24.0 for 3.7, 25.0.1 for 3.8).
struct PipPin {
  util::Version python_min;  ///< major.minor
  util::Version python_max;  ///< major.minor
  std::string version;       ///< "26.2.1"
  compat::Provenance provenance;
};

/// A pip security advisory: pins below `fixed` carry it ([pip_advisory] in python.toml).
struct PipAdvisory {
  std::string id;       ///< "CVE-2025-8869"
  util::Version fixed;  ///< "25.3"
  compat::Provenance provenance;
};

/// PyTorch series `torch_min`..`torch_max` (major.minor) whose torch.compile refuses Python `python_from` and newer.
struct TorchCompileGap {
  util::Version torch_min;
  util::Version torch_max;
  util::Version python_from;
  compat::Provenance provenance;
};

/// The NVIDIA_REQUIRE_CUDA the images of one nvidia/cuda release carry, per architecture (base_images.toml).
struct RequireCuda {
  util::Version cuda;  ///< "12.8.1"
  std::string x86_64;  ///< the amd64 images' value, verbatim
  std::string arm64;   ///< the arm64 images' value (the row's `arm64`, else the same as x86_64)
  compat::Provenance provenance;
};

/// An image a build stage uses, pinned by tag (base_images.toml [curl]).
struct HelperImage {
  std::string image;  ///< "curlimages/curl:8.11.1"
  compat::Provenance provenance;
};

struct Data {
  std::vector<OsPython> os_python;
  std::vector<PipPin> pip;
  std::optional<PipAdvisory> pip_advisory;
  Uv uv;
  std::vector<NumpyCap> numpy;
  std::vector<TorchCudnn> torch_cudnn;
  std::vector<TorchCompileGap> torch_compile;
  std::vector<RequireCuda> require_cuda;
  HelperImage curl;
  std::string as_of;  ///< the date the pins were last checked (python.toml `as_of`)

  const OsPython* python_of(const std::string& image_os) const;
  /// The row for a torch release (any patch) and wheel variant, or null.
  const TorchCudnn* cudnn_of_torch(const util::Version& torch, const std::string& variant) const;
  /// The row saying torch `torch`'s torch.compile refuses Python `python` (major.minor), or null when it runs.
  const TorchCompileGap* compile_gap(const util::Version& torch, const util::Version& python) const;
  /// The NVIDIA_REQUIRE_CUDA of release `cuda`'s images for `arch` (x86_64 | arm64), or null when not in the data.
  const std::string* require_cuda_of(const util::Version& cuda, const std::string& arch) const;
};

/// Parses the tables; an internal Error naming the file and row on bad data.
util::Expected<Data> parse_data(std::span<const util::EmbeddedFile> files, const util::Overlay& overlay = {});

/// The dockerfile tables (python.toml, wheel_libraries.toml, compiled in) and how overlay rows replace theirs.
std::vector<util::DataTable> data_tables();
/// The compiled-in tables with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<Data> load_data(const util::Overlay& overlay);
/// The data compiled into this binary, parsed once.
util::Expected<const Data*> builtin_data();

}  // namespace gpuenv::dockerfile
