#include "support/fake_system.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "support/fake_library.hpp"

namespace gpuenv::testing {

namespace fs = std::filesystem;

void FakeSystem::add_tree(const std::string& directory) {
  for (const auto& entry : fs::recursive_directory_iterator(directory)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream contents;
    contents << in.rdbuf();
    files["/" + fs::relative(entry.path(), directory).generic_string()] = contents.str();
  }
}

util::Expected<std::string> FakeSystem::read_file(const std::string& path) {
  files_read.push_back(path);
  if (const auto failing = read_errors.find(path); failing != read_errors.end())
    return util::Error::input("cannot read " + path + ": " + failing->second);
  const auto it = files.find(path);
  if (it == files.end()) return util::Error::input("cannot read " + path + ": No such file or directory");
  return it->second;
}

bool FakeSystem::exists(const std::string& path) {
  if (files.contains(path)) return true;
  const std::string prefix = path.back() == '/' ? path : path + "/";
  for (const auto& [name, contents] : files) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> FakeSystem::list_directory(const std::string& path) {
  const std::string prefix = path.back() == '/' ? path : path + "/";
  std::vector<std::string> names;
  for (const auto& [name, contents] : files) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const std::string first = rest.substr(0, rest.find('/'));
    if (names.empty() || names.back() != first) names.push_back(first);
  }
  return names;
}

std::optional<std::string> FakeSystem::environment(const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> FakeSystem::environment_variables() {
  return {env.begin(), env.end()};
}

system::CommandResult FakeSystem::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const std::lock_guard<std::recursive_mutex> held(*m_run_lock);
  std::string key;
  for (const std::string& arg : argv) key += (key.empty() ? "" : " ") + arg;
  commands_run.push_back(key);
  command_timeouts.push_back(timeout);
  const auto waited = [&](const system::CommandResult& result) {
    if (result.timed_out) clock += timeout;  // a hung command holds the caller for its whole timeout
    return result;
  };
  if (auto queued = command_queue.find(key); queued != command_queue.end() && !queued->second.empty()) {
    system::CommandResult result = queued->second.front();
    queued->second.pop_front();
    return waited(result);
  }
  const auto it = commands.find(key);
  if (it == commands.end()) {
    system::CommandResult missing;
    missing.not_found = true;
    return missing;
  }
  return waited(it->second);
}

system::LibraryResult FakeSystem::load_library(const std::string& name) {
  if (const auto it = real_libraries.find(name); it != real_libraries.end()) {
    return system::make_real_system()->load_library(it->second);
  }
  if (const auto it = memory_libraries.find(name); it != memory_libraries.end()) {
    return std::unique_ptr<system::DynamicLibrary>(std::make_unique<FakeLibrary>(it->second));
  }
  return util::Error::input(name + ": cannot open shared object file: No such file or directory");
}

util::Expected<util::Ok> FakeSystem::write_file_atomic(const std::string& path, const std::string& contents,
                                                       unsigned mode) {
  written[path] = contents;
  written_modes[path] = mode;
  return util::Ok{};
}

util::Expected<util::Ok> FakeSystem::rename_file(const std::string& from, const std::string& to) {
  const auto it = files.find(from);
  if (it == files.end())
    return util::Error::input("cannot rename " + from + " to " + to + ": No such file or directory");
  files[to] = it->second;
  files.erase(from);
  return util::Ok{};
}

util::Expected<util::Ok> FakeSystem::remove_file(const std::string& path) {
  files.erase(path);
  written.erase(path);
  removed.push_back(path);
  return util::Ok{};
}

std::optional<std::string> FakeSystem::trust_problem(const std::string& path) {
  const auto it = untrusted.find(path);
  if (it == untrusted.end()) return std::nullopt;
  return it->second;
}

util::Expected<std::string> FakeSystem::read_kernel_messages() {
  const auto it = files.find("/dev/kmsg");
  if (it == files.end()) return util::Error::input("/dev/kmsg: Operation not permitted");
  return it->second;
}

util::Expected<system::HttpResponse> FakeSystem::http_request(const system::HttpRequest& request,
                                                              std::chrono::milliseconds timeout) {
  http_requests.push_back(request);
  const auto it = http_answers.find(request.method + " " + request.path);
  if (it == http_answers.end())
    return util::Error::input(request.host + ": no connection within " + std::to_string(timeout.count()) + " ms");
  return it->second;
}

std::optional<std::uint64_t> FakeSystem::available_bytes(const std::string& path) {
  const auto it = free_space.find(path);
  if (it == free_space.end()) return std::nullopt;
  return it->second;
}

std::string fixture_path(const std::string& relative) { return std::string(GPUENV_FIXTURES) + "/" + relative; }

std::string read_fixture(const std::string& relative) {
  std::ifstream in(fixture_path(relative), std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace gpuenv::testing
