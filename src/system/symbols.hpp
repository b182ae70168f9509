#pragma once
// The one way a dlopen'ed library's entry points become function pointers: each bound by name, required or optional,
// a versioned entry point by the list of its names tried in order (the newest first, as the library's header maps
// its macros to them), and the required ones the library lacks collected for one error message. Used by every table
// of a dlopen'ed library: probe's NVML and libcuda, smoke's cuBLAS, nccl's libnccl and watch's SQLite.

#include <initializer_list>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/strings.hpp"

namespace gpuenv::system {

/// Binds function pointers to the symbols of one loaded library.
class SymbolBinder {
 public:
  explicit SymbolBinder(DynamicLibrary& library) : m_library(library) {}

  /// Sets `pointer` to the first of `names` the library exports and returns that name (a caller whose structure
  /// layout depends on the version asks which one bound); null and nullptr when it exports none of them, and then
  /// the first name is remembered as missing.
  template <typename Function>
  const char* require(Function*& pointer, std::initializer_list<const char*> names) {
    const char* bound = optional(pointer, names);
    if (bound == nullptr && names.size() > 0) m_missing.emplace_back(*names.begin());
    return bound;
  }
  template <typename Function>
  const char* require(Function*& pointer, const char* name) {
    return require(pointer, {name});
  }

  /// As require, but a library without any of `names` is still usable: nothing is remembered.
  template <typename Function>
  const char* optional(Function*& pointer, std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (void* address = m_library.symbol(name)) {
        pointer = reinterpret_cast<Function*>(address);
        return name;
      }
    }
    pointer = nullptr;
    return nullptr;
  }
  template <typename Function>
  const char* optional(Function*& pointer, const char* name) {
    return optional(pointer, {name});
  }

  /// The required symbols the library lacks, in the order they were bound (each versioned one by its first name).
  const std::vector<std::string>& missing() const { return m_missing; }
  /// "cuInit, cuMemAlloc_v2": missing() for a message ("" when none).
  std::string missing_text() const { return util::join(m_missing, ", "); }

 private:
  DynamicLibrary& m_library;
  std::vector<std::string> m_missing;
};

}  // namespace gpuenv::system
