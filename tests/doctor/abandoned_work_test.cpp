// Work abandoned at a timeout (a hung NVML call) must own what it touches and must not be torn down under: the
// library is released on the caller's thread when the call finishes in time, kept loaded when it does not, and
// gpuenv then leaves with _Exit (no static destructors, no library teardown) and the documented exit code. And the
// doctor's global deadline holds end to end when every probe hangs.

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "probe/nvml.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using gpuenv::testing::fixture_path;
using gpuenv::testing::read_text;

using gpuenv::testing::TempDir;

/// An executable script at dir/name that never returns (exec, so the timeout's kill reaches the sleeper itself).
void write_hanging_program(const fs::path& dir, const std::string& name) {
  const fs::path path = dir / name;
  std::ofstream(path) << "#!/bin/sh\nexec /bin/sleep 1000\n";
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

bool has_finding(const nlohmann::json& report, const std::string& id, const std::string& status) {
  const auto& findings = report.at("findings");
  return std::any_of(findings.begin(), findings.end(),
                     [&](const nlohmann::json& f) { return f.at("id") == id && f.at("status") == status; });
}

std::string finding_message(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == id) return f.at("message").get<std::string>();
  }
  return {};
}

}  // namespace

TEST_CASE("read_nvml: a call that finishes in time releases the library on the caller's thread",
          "[doctor][nvml][faults]") {
  // Before the fix the worker thread was detached and could hold the last reference, so dlclose (and the library's
  // teardown) ran on it, racing the rest of the process and its exit: the crash seen once under load. Repeated,
  // since a detached worker is only sometimes the last owner.
  const TempDir dir;
  const fs::path log = dir.path() / "unload.log";
  ::setenv("GPUENV_FAKE_NVML", fixture_path("nvml/healthy-8xh100.conf").c_str(), 1);
  ::setenv("GPUENV_FAKE_NVML_UNLOAD_LOG", log.c_str(), 1);
  const std::string caller = std::to_string(static_cast<long>(::syscall(SYS_gettid)));
  auto real = gpuenv::system::make_real_system();
  // The first instance of the fake in a process defines its STB_GNU_UNIQUE symbols (libstdc++ inline statics), and
  // glibc never unloads such a library: load one before the measured ones, which can unload.
  const fs::path first = dir.path() / "libnvidia-ml-first.so";
  fs::copy_file(GPUENV_FAKE_NVML_LIBRARY, first);
  REQUIRE(gpuenv::probe::read_nvml(*real, first.string(), 5s).availability.available);
  int elsewhere = 0;
  for (int i = 0; i < 40; ++i) {
    const fs::path copy = dir.path() / ("libnvidia-ml-" + std::to_string(i) + ".so");
    fs::copy_file(GPUENV_FAKE_NVML_LIBRARY, copy);
    fs::remove(log);
    const auto inventory = gpuenv::probe::read_nvml(*real, copy.string(), 5s);
    REQUIRE(inventory.availability.available);
    // Unloaded already, exactly once, and here.
    const std::string unloaded_on = read_text(log);
    if (unloaded_on != caller + "\n") {
      ++elsewhere;
      WARN("iteration " << i << ": unloaded by [" << unloaded_on << "], the caller is " << caller);
    }
  }
  ::unsetenv("GPUENV_FAKE_NVML_UNLOAD_LOG");
  ::unsetenv("GPUENV_FAKE_NVML");
  CHECK(elsewhere == 0);
}

TEST_CASE("doctor: a hung NVML call is abandoned and gpuenv leaves without tearing the library down under it",
          "[doctor][nvml][faults][e2e][system-test]") {
  // The fake aborts (exit 134) when its teardown runs while the hung call is still inside it, which exit() does
  // unless gpuenv leaves with _Exit.
  const TempDir dir;
  const fs::path library = dir.path() / "libnvidia-ml-fake.so";
  fs::copy_file(GPUENV_FAKE_NVML_LIBRARY, library);
  const auto start = std::chrono::steady_clock::now();
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json", "--timeout", "2"},
                                                  {{"GPUENV_NVML_LIBRARY", library.string()},
                                                   {"GPUENV_FAKE_NVML", fixture_path("nvml/hang-teardown.conf")},
                                                   {"PATH", std::nullopt},
                                                   {"LD_LIBRARY_PATH", std::nullopt}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  CHECK(result.signal == 0);
  CHECK(result.exit_code == 1);  // NOT READY: the GPUs could not be queried
  CHECK(result.err.find("torn down") == std::string::npos);
  CHECK(elapsed < 10s);  // half the fixture's 20 s hang: gpuenv neither waited for the call nor joined it
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(has_finding(json, "doctor.deadline", "fail"));
  CHECK(finding_message(json, "doctor.deadline").find("NVML") != std::string::npos);
}

TEST_CASE("doctor --timeout 3 holds when every probe hangs (NVML, dmesg, python3)",
          "[doctor][faults][deadline][e2e][system-test]") {
  const TempDir dir;
  const fs::path library = dir.path() / "libnvidia-ml-fake.so";
  fs::copy_file(GPUENV_FAKE_NVML_LIBRARY, library);
  const fs::path bin = dir.path() / "bin";
  fs::create_directories(bin);
  for (const char* name : {"dmesg", "python3", "nvidia-smi"}) write_hanging_program(bin, name);
  // The smoke tests need visible GPUs; with none they are skipped, so the full doctor (frameworks on) runs.
  const auto start = std::chrono::steady_clock::now();
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--json", "--timeout", "3"},
                                                  {{"GPUENV_NVML_LIBRARY", library.string()},
                                                   {"GPUENV_FAKE_NVML", fixture_path("nvml/hang-long.conf")},
                                                   {"GPUENV_CUDA_LIBRARY", (dir.path() / "none.so").string()},
                                                   {"PATH", bin.string()},
                                                   {"LD_LIBRARY_PATH", std::nullopt}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == 1);
  CHECK(seconds >= 2.9);
  // Every probe hangs for 20 s or more (NVML 20 s, the commands 1000 s): a doctor that waited for any of them would
  // take that long; half of it leaves the deadline, the kills, the process start and exit ample time.
  CHECK(seconds < 10);
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(json.at("verdict") == "NOT READY");
  REQUIRE(has_finding(json, "doctor.deadline", "fail"));
  const std::string message = finding_message(json, "doctor.deadline");
  CHECK(message.find("--timeout 3 s") != std::string::npos);
  CHECK(message.find("NVML") != std::string::npos);
  // dmesg runs only when /dev/kmsg cannot be read (not as root on this machine): the kernel's records come first.
  const int kmsg = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
  if (kmsg < 0) CHECK(message.find("dmesg") != std::string::npos);
  if (kmsg >= 0) ::close(kmsg);
  CHECK(message.find("python3 -I -c ...") != std::string::npos);
  WARN("doctor --timeout 3 with every probe hanging returned in " << seconds << " s");
}
