#pragma once
// A loaded library in memory for binder tests: it exports exactly the names it is given and records every lookup.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::testing {

class FakeLibrary final : public system::DynamicLibrary {
 public:
  using Entry = int (*)();
  /// Exports each name as `entry` (what a bound pointer returns tells which name it was).
  explicit FakeLibrary(std::map<std::string, Entry> exports) : m_exports(std::move(exports)) {}
  /// Exports each name as an entry point returning 0 (for tables that only check what bound).
  explicit FakeLibrary(const std::vector<std::string>& names) {
    for (const std::string& name : names) m_exports[name] = &answer_zero;
  }
  void* symbol(const std::string& name) override {
    asked.push_back(name);
    const auto it = m_exports.find(name);
    return it == m_exports.end() ? nullptr : reinterpret_cast<void*>(it->second);
  }
  /// Every name looked up, in order.
  std::vector<std::string> asked;

 private:
  static int answer_zero() { return 0; }
  std::map<std::string, Entry> m_exports;
};

}  // namespace gpuenv::testing
