#pragma once
// A System that holds a whole run (doctor) to one deadline: every command's timeout is cut to the time left, a
// command asked for after the deadline is not started, and what was cut short is recorded for a finding.

#include <chrono>
#include <string>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::system {

class DeadlineSystem final : public System {
 public:
  /// Forwards to `inner` until `deadline` (on inner's clock).
  DeadlineSystem(System& inner, std::chrono::steady_clock::time_point deadline);

  /// What the deadline cut short or kept from starting ("nvidia-smi -q -x", "NVML", ...), in order, no repeats.
  const std::vector<std::string>& cut_short() const { return m_cut_short; }
  /// Time left before the deadline (zero once it has passed).
  std::chrono::milliseconds time_left();
  /// `wanted` cut to the time left; a wait that ends at the deadline rather than at `wanted` should be reported
  /// with note_cut_short when it expires.
  std::chrono::milliseconds limit(std::chrono::milliseconds wanted);
  /// Records that `what` was cut short by the deadline.
  void note_cut_short(const std::string& what);

  util::Expected<std::string> read_file(const std::string& path) override { return m_inner.read_file(path); }
  util::Expected<std::string> read_file(const std::string& path, FileKind kind) override {
    return m_inner.read_file(path, kind);
  }
  bool exists(const std::string& path) override { return m_inner.exists(path); }
  std::vector<std::string> list_directory(const std::string& path) override { return m_inner.list_directory(path); }
  std::optional<std::string> environment(const std::string& name) override { return m_inner.environment(name); }
  std::vector<std::pair<std::string, std::string>> environment_variables() override {
    return m_inner.environment_variables();
  }
  void unset_environment(const std::string& name) override { m_inner.unset_environment(name); }
  /// Runs with min(timeout, time left); after the deadline, returns timed_out without starting anything.
  CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;
  LibraryResult load_library(const std::string& name) override { return m_inner.load_library(name); }
  std::optional<std::uint64_t> available_bytes(const std::string& path) override {
    return m_inner.available_bytes(path);
  }
  using System::write_file_atomic;
  util::Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents,
                                             unsigned mode) override {
    return m_inner.write_file_atomic(path, contents, mode);
  }
  util::Expected<util::Ok> rename_file(const std::string& from, const std::string& to) override {
    return m_inner.rename_file(from, to);
  }
  util::Expected<util::Ok> remove_file(const std::string& path) override { return m_inner.remove_file(path); }
  std::optional<std::string> trust_problem(const std::string& path) override { return m_inner.trust_problem(path); }
  util::Expected<std::string> read_kernel_messages() override { return m_inner.read_kernel_messages(); }
  /// Sends with min(timeout, time left); after the deadline, fails without connecting.
  util::Expected<HttpResponse> http_request(const HttpRequest& request, std::chrono::milliseconds timeout) override;
  std::chrono::steady_clock::time_point now() override { return m_inner.now(); }

 private:
  System& m_inner;
  std::chrono::steady_clock::time_point m_deadline;
  std::vector<std::string> m_cut_short;
};

/// argv joined with spaces, for messages ("nvidia-smi -q -x"); long arguments (a Python script) are elided.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace gpuenv::system
