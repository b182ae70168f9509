#pragma once
// Calls that may never return (NVML or libcuda on a sick GPU, a child stuck in the driver) run on their own thread
// with a limit. When the limit passes the thread is abandoned: it keeps everything it touches (the library stays
// loaded for the rest of the process), the process records it, and cli leaves with _Exit so that no static
// destructor or library teardown runs under a thread that is still inside the library.

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "system/system.hpp"

namespace gpuenv::system {

/// Records that this process left work running (a thread in a library, a child that would not die).
void note_abandoned_work();
/// True once any work was abandoned: the process must then leave with _Exit, not exit.
bool work_was_abandoned();
/// Keeps `library` loaded until the process ends: an abandoned call may still be executing its code.
void keep_loaded_forever(std::shared_ptr<DynamicLibrary> library);

/// Runs `work(*library)` on its own thread. Returns its result when it finishes within `limit`; the thread is then
/// joined, so the library is released here, on the caller's thread, and never concurrently with process exit.
/// Returns nullopt when it does not: the thread is abandoned with the library kept loaded (note_abandoned_work).
/// An exception thrown by `work` is rethrown here.
template <typename T, typename Work>
std::optional<T> call_abandonable(std::shared_ptr<DynamicLibrary> library, Work work, std::chrono::milliseconds limit) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> result = promise->get_future();
  std::thread worker([library, promise, work = std::move(work)]() mutable {
    try {
      promise->set_value(work(*library));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  if (result.wait_for(limit) != std::future_status::ready) {
    keep_loaded_forever(std::move(library));
    worker.detach();
    note_abandoned_work();
    return std::nullopt;
  }
  worker.join();
  return result.get();
}

}  // namespace gpuenv::system
