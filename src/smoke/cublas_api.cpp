#include "smoke/cublas_api.hpp"

#include <algorithm>
#include <utility>

#include "system/symbols.hpp"
#include "util/version.hpp"

namespace gpuenv::smoke {

namespace {

util::Expected<CublasApi> resolve_cublas_api(system::DynamicLibrary& library) {
  CublasApi api;
  system::SymbolBinder binder(library);
  binder.require(api.create, "cublasCreate_v2");
  binder.require(api.destroy, "cublasDestroy_v2");
  binder.require(api.set_stream, "cublasSetStream_v2");
  binder.require(api.get_property, "cublasGetProperty");
  binder.require(api.sgemm, "cublasSgemm_v2");
  binder.require(api.gemm_ex, "cublasGemmEx");
  binder.optional(api.status_name, "cublasGetStatusName");
  if (!binder.missing().empty()) return util::Error::internal("does not export " + binder.missing_text());
  return api;
}

std::string cublas_version(const CublasApi& api) {
  int major = 0, minor = 0, patch = 0;
  if (api.get_property(library_major_version, &major) != cublas_success) return "unknown";
  api.get_property(library_minor_version, &minor);
  api.get_property(library_patch_level, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::vector<std::string> cublas_candidates(system::System& system, int driver_cuda_major) {
  // /usr/local/cuda first (the toolkit the node selected), then versioned toolkits, newest first.
  std::vector<std::pair<util::Version, std::string>> toolkits;
  for (const std::string& name : system.list_directory("/usr/local")) {
    if (name.rfind("cuda-", 0) != 0) continue;
    if (auto version = util::Version::parse(name.substr(5))) toolkits.emplace_back(*version, name);
  }
  std::sort(toolkits.begin(), toolkits.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> directories = {"/usr/local/cuda/lib64"};
  for (const auto& [version, name] : toolkits) directories.push_back("/usr/local/" + name + "/lib64");
  std::vector<std::string> out;
  for (int major = driver_cuda_major; major >= 11; --major) {
    const std::string soname = "libcublas.so." + std::to_string(major);
    out.push_back(soname);
    for (const std::string& directory : directories) {
      if (system.exists(directory + "/" + soname)) out.push_back(directory + "/" + soname);
    }
  }
  return out;
}

util::Expected<Cublas> load_cublas(system::System& system, const std::vector<std::string>& candidates) {
  std::string attempts;
  for (const std::string& candidate : candidates) {
    auto loaded = system.load_library(candidate);
    if (!loaded) {
      attempts += (attempts.empty() ? "" : "; ") + candidate + ": not loadable";
      continue;
    }
    std::shared_ptr<system::DynamicLibrary> library(std::move(*loaded));
    auto api = resolve_cublas_api(*library);
    if (!api) {
      attempts += (attempts.empty() ? "" : "; ") + candidate + ": " + api.error().message;
      continue;
    }
    return Cublas{library, *api, candidate, cublas_version(*api)};
  }
  return util::Error::input(attempts.empty() ? "no candidate" : attempts);
}

std::string describe_cublas_status(const CublasApi& api, int status) {
  const char* name = api.status_name != nullptr ? api.status_name(status) : nullptr;
  if (name == nullptr) {
    switch (status) {
      case cublas_not_initialized:
        name = "CUBLAS_STATUS_NOT_INITIALIZED";
        break;
      case cublas_alloc_failed:
        name = "CUBLAS_STATUS_ALLOC_FAILED";
        break;
      case cublas_invalid_value:
        name = "CUBLAS_STATUS_INVALID_VALUE";
        break;
      case cublas_arch_mismatch:
        name = "CUBLAS_STATUS_ARCH_MISMATCH";
        break;
      case cublas_mapping_error:
        name = "CUBLAS_STATUS_MAPPING_ERROR";
        break;
      case cublas_execution_failed:
        name = "CUBLAS_STATUS_EXECUTION_FAILED";
        break;
      case cublas_internal_error:
        name = "CUBLAS_STATUS_INTERNAL_ERROR";
        break;
      case cublas_not_supported:
        name = "CUBLAS_STATUS_NOT_SUPPORTED";
        break;
      case cublas_license_error:
        name = "CUBLAS_STATUS_LICENSE_ERROR";
        break;
      default:
        name = "CUBLAS_STATUS_UNKNOWN";
    }
  }
  return std::string(name) + " (" + std::to_string(status) + ")";
}

}  // namespace gpuenv::smoke
