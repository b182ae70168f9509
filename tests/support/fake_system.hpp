#pragma once
// An in-memory System for tests: files from a map or a fixture host tree, scripted commands, no real I/O.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::testing {

class FakeSystem : public system::System {
 public:
  /// Adds every file under `directory` as if it were at "/" (a fixture host tree).
  void add_tree(const std::string& directory);

  std::map<std::string, std::string> files;
  std::map<std::string, std::string> env;
  /// Commands keyed by argv joined with spaces; unscripted commands report not_found.
  std::map<std::string, system::CommandResult> commands;
  /// Results handed out one per run, first in first out, before `commands` is consulted (a log that grows).
  std::map<std::string, std::deque<system::CommandResult>> command_queue;
  /// Libraries opened for real, by the name asked for -> the path dlopen'ed (a fake libcuda under test).
  std::map<std::string, std::string> real_libraries;
  /// Libraries in memory, by name -> the symbols they export (support/fake_library.hpp; each entry point returns 0).
  std::map<std::string, std::vector<std::string>> memory_libraries;
  std::vector<std::string> files_read;
  std::vector<std::string> commands_run;
  std::map<std::string, std::string> written;

  using system::System::read_file;  // the bounded read by kind, applied to these files
  util::Expected<std::string> read_file(const std::string& path) override;
  bool exists(const std::string& path) override;
  std::vector<std::string> list_directory(const std::string& path) override;
  std::optional<std::string> environment(const std::string& name) override;
  /// `env` in name order.
  std::vector<std::pair<std::string, std::string>> environment_variables() override;
  /// Erases the name from `env`.
  void unset_environment(const std::string& name) override { env.erase(name); }
  system::CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;
  system::LibraryResult load_library(const std::string& name) override;
  using system::System::write_file_atomic;  // the 0644 form
  util::Expected<util::Ok> write_file_atomic(const std::string& path, const std::string& contents,
                                             unsigned mode) override;
  /// The mode each write_file_atomic asked for, by path.
  std::map<std::string, unsigned> written_modes;
  /// Paths trust_problem refuses, with the reason; every other path is trusted.
  std::map<std::string, std::string> untrusted;
  std::optional<std::string> trust_problem(const std::string& path) override;
  /// /dev/kmsg's records: files["/dev/kmsg"] when present, else the error a reader without CAP_SYSLOG gets.
  util::Expected<std::string> read_kernel_messages() override;
  std::optional<std::uint64_t> available_bytes(const std::string& path) override;
  /// Moves a file of `files`; removes one from `files` and `written` and records its path in `removed`.
  util::Expected<util::Ok> rename_file(const std::string& from, const std::string& to) override;
  util::Expected<util::Ok> remove_file(const std::string& path) override;
  std::vector<std::string> removed;
  /// Answers to HTTP requests keyed by "METHOD path" (e.g. "GET /latest/meta-data/instance-type"); unscripted
  /// requests fail as an unreachable host would.
  std::map<std::string, system::HttpResponse> http_answers;
  std::vector<system::HttpRequest> http_requests;
  util::Expected<system::HttpResponse> http_request(const system::HttpRequest& request,
                                                    std::chrono::milliseconds timeout) override;
  /// Free bytes by path prefix, for available_bytes.
  std::map<std::string, std::uint64_t> free_space;

  // Fault injection (docs/reliability.md "Fault injection and deadlines").
  /// Paths that are listed and exist (keep them in `files` too) but fail to read with this error text: a file that
  /// vanished between listing and reading, a device node or file without permission.
  std::map<std::string, std::string> read_errors;
  /// The clock now() reads. A command scripted as timed_out moves it on by the timeout it was given, as waiting
  /// for a hung command would, so deadline tests take no real time.
  std::chrono::steady_clock::time_point clock{};
  std::chrono::steady_clock::time_point now() override { return clock; }
  /// Owners and modes by path, for path_status (a path not listed has no status).
  std::map<std::string, system::PathStatus> statuses;
  std::optional<system::PathStatus> path_status(const std::string& path) override {
    const auto it = statuses.find(path);
    if (it == statuses.end()) return std::nullopt;
    return it->second;
  }
  /// Sleeping moves the clock on and is recorded; nothing waits.
  void sleep_for(std::chrono::milliseconds duration) override {
    clock += duration;
    sleeps.push_back(duration);
  }
  std::vector<std::chrono::milliseconds> sleeps;
  /// The timeout each run() was given, in order (to check that a deadline cut them).
  std::vector<std::chrono::milliseconds> command_timeouts;

 private:
  /// run() may be called from several threads at once (watch's interruption flow runs on its own thread).
  std::shared_ptr<std::recursive_mutex> m_run_lock = std::make_shared<std::recursive_mutex>();  // movable
};

/// The path of a file under tests/fixtures.
std::string fixture_path(const std::string& relative);
/// The contents of a file under tests/fixtures (empty string and a failed REQUIRE when missing).
std::string read_fixture(const std::string& relative);

}  // namespace gpuenv::testing
