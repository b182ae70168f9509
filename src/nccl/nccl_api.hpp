#pragma once
// The subset of nccl.h gpuenv calls, resolved by name from a dlopen'ed libnccl (never linked), and where to find the
// library: the one named (GPUENV_NCCL_LIBRARY), a Python environment's nvidia-nccl wheel (--python), or the node's
// libnccl.so.2. Declarations follow nccl.h (NVIDIA/nccl src/nccl.h.in @ 5067397c2676d5aed50042fc39e5c8ee96eb0027).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::nccl {

using ncclResult_t = int;  ///< nccl.h ncclResult_t: 0 ncclSuccess ... 8 ncclTimeout
using ncclComm_t = struct ncclComm*;
using cudaStream_t = struct CUstream_st*;  ///< the runtime's stream is the driver's CUstream

constexpr ncclResult_t nccl_success = 0;
constexpr int nccl_float32 = 7;  ///< ncclDataType_t ncclFloat32
constexpr int nccl_sum = 0;      ///< ncclRedOp_t ncclSum

struct NcclApi {
  ncclResult_t (*get_version)(int*) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
  ncclResult_t (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
};

/// Resolves every entry point; the error names the ones the library lacks (not a libnccl, or older than 2.4).
util::Expected<NcclApi> resolve_nccl_api(system::DynamicLibrary& library);

/// "ncclUnhandledCudaError (1): unhandled cuda error ..." through ncclGetErrorString when present.
std::string describe_nccl_error(const NcclApi& api, ncclResult_t result);

/// NCCL_VERSION_CODE as text: 22703 -> "2.27.3", 2803 -> "2.8.3" (nccl.h NCCL_VERSION: X*1000+Y*100+Z up to 2.8,
/// X*10000+Y*100+Z after).
std::string nccl_version_text(int code);

/// Where to look for libnccl.
struct NcclLocation {
  std::string library;                ///< a soname or path to use as is ("" to search)
  std::optional<std::string> python;  ///< an interpreter whose environment has the nvidia-nccl wheel
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

/// The libraries to try, in order: `library` when given; else the Python environment's
/// <site-packages>/nvidia/nccl/lib/libnccl.so.2 when `python` is given (asked of the interpreter with a fixed
/// script); else the soname libnccl.so.2 (the loader's search: the node's NCCL). An Error when --python names an
/// interpreter that cannot run or has no nvidia-nccl wheel.
util::Expected<std::vector<std::string>> nccl_candidates(system::System& system, const NcclLocation& location);

}  // namespace gpuenv::nccl
