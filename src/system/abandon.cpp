#include "system/abandon.hpp"

#include <atomic>
#include <mutex>
#include <vector>

namespace gpuenv::system {
namespace {

std::atomic<bool> g_abandoned{false};

/// Never destroyed: the libraries in it must outlive every abandoned thread, i.e. the process.
struct KeptLibraries {
  std::mutex mutex;
  std::vector<std::shared_ptr<DynamicLibrary>> libraries;
};
KeptLibraries& kept_libraries() {
  static auto* kept = new KeptLibraries();  // deliberately leaked (reachable, so not a leak to LSan)
  return *kept;
}

}  // namespace

void note_abandoned_work() { g_abandoned.store(true); }

bool work_was_abandoned() { return g_abandoned.load(); }

void keep_loaded_forever(std::shared_ptr<DynamicLibrary> library) {
  if (library == nullptr) return;
  KeptLibraries& kept = kept_libraries();
  const std::lock_guard<std::mutex> lock(kept.mutex);
  kept.libraries.push_back(std::move(library));
}

}  // namespace gpuenv::system
