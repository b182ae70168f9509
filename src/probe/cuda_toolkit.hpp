#pragma once
// CUDA toolkit, cuDNN and NCCL versions as their installed files and tools state them.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::probe {

/// A toolkit's version.json (CUDA 11.1 and later): the release and each component's version.
struct CudaVersionJson {
  util::Version version;                            ///< "cuda"."version", e.g. 12.6.3
  std::map<std::string, util::Version> components;  ///< "cuda_nvcc" -> 12.6.85, "libcublas" -> 12.6.4.1, ...
  std::map<std::string, std::string> names;         ///< "cuda_nvcc" -> "CUDA NVCC" (the "name" field)

  /// The version of one component, e.g. component("libcublas").
  std::optional<util::Version> component(std::string_view key) const {
    const auto it = components.find(std::string(key));
    return it == components.end() ? std::nullopt : std::optional<util::Version>(it->second);
  }
};

/// Parses version.json; an Error for invalid JSON or a missing "cuda" version. Components without a
/// parseable "version" are skipped (newer toolkits may add other shapes).
util::Expected<CudaVersionJson> parse_cuda_version_json(std::string_view json);

/// Parses the old version.txt ("CUDA Version 10.2.89", CUDA 11.0 and earlier).
util::Expected<util::Version> parse_cuda_version_txt(std::string_view text);

/// Parses a cuDNN header's CUDNN_MAJOR / CUDNN_MINOR / CUDNN_PATCHLEVEL defines (cudnn_version.h for cuDNN 8+,
/// cudnn.h before); an Error when any of the three is missing.
util::Expected<util::Version> parse_cudnn_header(std::string_view header);

/// Parses nccl.h's NCCL_MAJOR / NCCL_MINOR / NCCL_PATCH defines; an Error when any of the three is missing.
util::Expected<util::Version> parse_nccl_header(std::string_view header);

}  // namespace gpuenv::probe
