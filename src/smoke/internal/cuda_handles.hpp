#pragma once
// Internal to smoke: owners of the CUDA driver handles a GPU's steps make (streams, events, modules, device memory).
// Move-only; each destroys its handle through the entry point of the CudaApi it was made with. The Gpu state holds
// them (shared by the step threads, so a step abandoned on its deadline keeps them alive), and DeviceRun::release
// resets them in order on a step thread with the context current; a hung GPU's are left to the process exit (~Gpu).

#include <utility>

#include "smoke/cuda_api.hpp"

namespace gpuenv::smoke {

/// One handle and the entry point that destroys it (cuStreamDestroy_v2, cuEventDestroy_v2, cuModuleUnload,
/// cuMemFree_v2); a null handle (Handle{}) owns nothing.
template <typename Handle>
class CudaHandle {
 public:
  using Destroy = CUresult (*)(Handle);
  CudaHandle() = default;
  CudaHandle(Handle handle, Destroy destroy) : m_handle(handle), m_destroy(destroy) {}
  ~CudaHandle() { reset(); }
  CudaHandle(CudaHandle&& other) noexcept
      : m_handle(std::exchange(other.m_handle, Handle{})), m_destroy(other.m_destroy) {}
  CudaHandle& operator=(CudaHandle&& other) noexcept {
    if (this != &other) {
      reset();
      m_handle = std::exchange(other.m_handle, Handle{});
      m_destroy = other.m_destroy;
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;

  Handle get() const { return m_handle; }
  explicit operator bool() const { return m_handle != Handle{}; }
  /// Destroys the handle now (its result is not checked: nothing could be done about a failure), if any.
  void reset() {
    if (m_handle != Handle{} && m_destroy != nullptr) m_destroy(m_handle);
    m_handle = Handle{};
  }
  /// Gives the handle up without destroying it (a hung GPU's: its driver may never answer).
  Handle leak() { return std::exchange(m_handle, Handle{}); }

 private:
  Handle m_handle{};
  Destroy m_destroy = nullptr;
};

using CudaStream = CudaHandle<CUstream>;
using CudaEvent = CudaHandle<CUevent>;
using CudaModule = CudaHandle<CUmodule>;
using DeviceMemory = CudaHandle<CUdeviceptr>;

/// cuStreamCreate(flags) into `out` (which keeps what it held until then only on failure); the CUresult.
inline CUresult create_stream(const CudaApi& api, unsigned flags, CudaStream& out) {
  CUstream stream = nullptr;
  const CUresult result = api.stream_create(&stream, flags);
  if (result == cuda_success) out = CudaStream(stream, api.stream_destroy);
  return result;
}

/// cuEventCreate(flags) into `out`; the CUresult.
inline CUresult create_event(const CudaApi& api, unsigned flags, CudaEvent& out) {
  CUevent event = nullptr;
  const CUresult result = api.event_create(&event, flags);
  if (result == cuda_success) out = CudaEvent(event, api.event_destroy);
  return result;
}

/// cuModuleLoadData(image) into `out`; the CUresult (on failure `out` is left empty).
inline CUresult load_module(const CudaApi& api, const void* image, CudaModule& out) {
  CUmodule module = nullptr;
  const CUresult result = api.module_load_data(&module, image);
  out = result == cuda_success ? CudaModule(module, api.module_unload) : CudaModule();
  return result;
}

/// cuMemAlloc_v2(bytes) into `out`; the CUresult.
inline CUresult allocate_device_memory(const CudaApi& api, std::size_t bytes, DeviceMemory& out) {
  CUdeviceptr pointer = 0;
  const CUresult result = api.mem_alloc(&pointer, bytes);
  if (result == cuda_success) out = DeviceMemory(pointer, api.mem_free);
  return result;
}

}  // namespace gpuenv::smoke
