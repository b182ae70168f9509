// Fault injection through the System seam (docs/reliability.md "Fault injection and deadlines"): doctor on the
// healthy 8x H100 host tree, live, with one fault injected per row: nvidia-smi hanging, killed, printing garbage,
// nothing or a flood; a file that vanishes between listing and reading; libraries whose symbols are missing; NVML
// denied the device nodes or hanging. Each row must end in a finding that names the fault and a NOT READY (exit 1)
// or DEGRADED verdict: never an exception, a crash or a hang.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "doctor/doctor.hpp"
#include "support/fake_system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using gpuenv::report::Status;
using gpuenv::report::Verdict;
using gpuenv::system::CommandResult;
using gpuenv::testing::FakeSystem;
using gpuenv::testing::fixture_path;

constexpr const char* k_nvml = "libnvidia-ml.so.1";
constexpr const char* k_nvidia_smi = "nvidia-smi -q -x";
/// Binary noise with a NUL and an unfinished tag, as a crashing or mis-linked nvidia-smi might print.
constexpr char k_garbage[] = "\x01\xff<<nvidia_smi_log>>\x00garbage";

/// A private copy of a fake library (a fresh dlopen instance, so the fake reads this test's fixture).
class LibraryCopy {
 public:
  explicit LibraryCopy(const std::string& original) {
    static int counter = 0;
    m_path = fs::temp_directory_path() /
             ("gpuenv-fault-lib-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".so");
    fs::copy_file(original, m_path, fs::copy_options::overwrite_existing);
  }
  ~LibraryCopy() {
    std::error_code ignored;
    fs::remove(m_path, ignored);
  }
  LibraryCopy(const LibraryCopy&) = delete;
  LibraryCopy& operator=(const LibraryCopy&) = delete;
  std::string path() const { return m_path.string(); }

 private:
  fs::path m_path;
};

struct Fault {
  const char* name;
  std::function<void(FakeSystem&)> inject;
  const char* finding;  ///< the id that must name the fault
  Status status;
  const char* excerpt;  ///< in that finding's message
};

CommandResult nvidia_smi(int exit_code, std::string out, bool timed_out = false, int signal = 0,
                         bool truncated = false) {
  CommandResult result;
  result.exit_code = exit_code;
  result.out = std::move(out);
  result.timed_out = timed_out;
  result.signal = signal;
  result.truncated = truncated;
  return result;
}

/// The healthy tree, live: NVML is not loadable through the fake, so doctor falls back to nvidia-smi (scripted with
/// the tree's healthy report unless a fault replaces it).
FakeSystem healthy_host() {
  FakeSystem fake;
  fake.add_tree(fixture_path("hosts/healthy-8xh100"));
  fake.commands[k_nvidia_smi] = nvidia_smi(0, gpuenv::testing::read_fixture("hosts/healthy-8xh100.nvidia-smi.xml"));
  return fake;
}

gpuenv::doctor::DoctorRequest live_request() {
  gpuenv::doctor::DoctorRequest request;
  request.collect.live = true;
  request.collect.timeout = 1000ms;
  request.deadline = 45s;
  return request;
}

const gpuenv::report::Finding* find(const gpuenv::doctor::DoctorReport& report, const std::string& id) {
  const auto it = std::find_if(report.findings.begin(), report.findings.end(),
                               [&](const gpuenv::report::Finding& f) { return f.id == id; });
  return it == report.findings.end() ? nullptr : &*it;
}

/// Sets GPUENV_FAKE_NVML for the scope (the fake reads it when first called).
struct FakeNvmlFixture {
  explicit FakeNvmlFixture(const std::string& conf) {
    ::setenv("GPUENV_FAKE_NVML", fixture_path("nvml/" + conf).c_str(), 1);
  }
  ~FakeNvmlFixture() { ::unsetenv("GPUENV_FAKE_NVML"); }
  FakeNvmlFixture(const FakeNvmlFixture&) = delete;
  FakeNvmlFixture& operator=(const FakeNvmlFixture&) = delete;
};

}  // namespace

TEST_CASE("fault injection: the healthy host without faults is not judged on faults", "[doctor][faults]") {
  FakeSystem fake = healthy_host();
  const auto report = gpuenv::doctor::run_doctor(fake, live_request());
  REQUIRE(report);
  const auto* count = find(*report, "gpu.count");
  REQUIRE(count != nullptr);
  CHECK(count->status == Status::pass);
  CHECK(find(*report, "host.unreadable") == nullptr);
  CHECK(find(*report, "doctor.deadline") == nullptr);
}

TEST_CASE("fault injection: each fault is a finding and a verdict, never a crash or a hang", "[doctor][faults]") {
  // clang-format off
  const std::vector<Fault> faults = {
      {"nvidia-smi hangs",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(-1, "", true); },
       "gpu.count", Status::fail, "nvidia-smi did not answer within"},
      {"nvidia-smi is killed by a signal",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(-1, "", false, 9); },
       "gpu.count", Status::fail, "nvidia-smi was killed by signal 9"},
      {"nvidia-smi prints garbage",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(0, std::string(k_garbage, sizeof k_garbage - 1)); },
       "gpu.count", Status::fail, "nvidia-smi -q -x: "},
      {"nvidia-smi prints nothing",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(0, ""); },
       "gpu.count", Status::fail, "nvidia-smi -q -x: "},
      {"nvidia-smi floods stdout past the cap",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(0, std::string(1 << 16, 'y'), false, 0, true); },
       "gpu.count", Status::fail, "printed more than 16 MiB"},
      {"nvidia-smi fails with text on stderr only",
       [](FakeSystem& f) { f.commands[k_nvidia_smi] = nvidia_smi(9, ""); },
       "gpu.count", Status::fail, "nvidia-smi failed with exit code 9"},
      {"/proc/driver/nvidia/version vanishes between listing and reading",
       [](FakeSystem& f) { f.read_errors["/proc/driver/nvidia/version"] = "No such file or directory"; },
       "host.unreadable", Status::warn, "/proc/driver/nvidia/version"},
      {"/proc/modules cannot be read",
       [](FakeSystem& f) { f.read_errors["/proc/modules"] = "Permission denied"; },
       "host.unreadable", Status::warn, "/proc/modules"},
      {"libcuda.so.1 lacks the driver API's symbols",
       [](FakeSystem& f) { f.real_libraries["libcuda.so.1"] = GPUENV_FAKE_NVML_LIBRARY; },
       "cuda.driver", Status::fail, "does not export cuInit"},
  };
  // clang-format on
  for (const Fault& fault : faults) {
    SECTION(fault.name) {
      FakeSystem fake = healthy_host();
      fault.inject(fake);
      const auto report = gpuenv::doctor::run_doctor(fake, live_request());
      REQUIRE(report);
      const auto* finding = find(*report, fault.finding);
      REQUIRE(finding != nullptr);
      INFO(finding->message);
      CHECK(finding->status == fault.status);
      CHECK(finding->message.find(fault.excerpt) != std::string::npos);
      CHECK(report->verdict != Verdict::ok);  // exit 1 (NOT READY) or, --strict, 1 for DEGRADED too
      if (fault.status == Status::fail) CHECK(report->verdict == Verdict::not_ok);
    }
  }
}

TEST_CASE("fault injection: NVML faults through the real dlopen path", "[doctor][faults][nvml][system-test]") {
  FakeSystem fake = healthy_host();
  fake.commands.erase(k_nvidia_smi);  // no fallback: the finding must carry NVML's own reason
  SECTION("a library whose NVML symbols are missing") {
    fake.real_libraries[k_nvml] = GPUENV_FAKE_CUDA_LIBRARY;
    const auto report = gpuenv::doctor::run_doctor(fake, live_request());
    REQUIRE(report);
    const auto* count = find(*report, "gpu.count");
    REQUIRE(count != nullptr);
    CHECK(count->status == Status::fail);
    CHECK(count->message.find("does not export nvmlInit") != std::string::npos);
    CHECK(report->verdict == Verdict::not_ok);
  }
  SECTION("/dev/nvidia* without permission: nvmlInit answers Insufficient Permissions") {
    const LibraryCopy library(GPUENV_FAKE_NVML_LIBRARY);
    const FakeNvmlFixture fixture("init-no-permission.conf");
    fake.real_libraries[k_nvml] = library.path();
    const auto report = gpuenv::doctor::run_doctor(fake, live_request());
    REQUIRE(report);
    const auto* count = find(*report, "gpu.count");
    REQUIRE(count != nullptr);
    CHECK(count->status == Status::fail);
    CHECK(count->message.find("Insufficient Permissions") != std::string::npos);
    CHECK(report->verdict == Verdict::not_ok);
  }
  SECTION("nvmlInit hangs: abandoned at the per-call timeout") {
    const LibraryCopy library(GPUENV_FAKE_NVML_LIBRARY);
    const FakeNvmlFixture fixture("hang-long.conf");
    fake.real_libraries[k_nvml] = library.path();
    const auto start = std::chrono::steady_clock::now();
    const auto report = gpuenv::doctor::run_doctor(fake, live_request());
    // The fixture hangs for 20 s and the timeout is 1 s: a doctor that waited for the call would take 20 s.
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    REQUIRE(report);
    const auto* count = find(*report, "gpu.count");
    REQUIRE(count != nullptr);
    CHECK(count->status == Status::fail);
    CHECK(count->message.find("NVML did not answer within") != std::string::npos);
    // The link counters do not ask the hung NVML again, at the start or the end of the run: they say why.
    const auto* nvlink = find(*report, "nvlink.errors");
    REQUIRE(nvlink != nullptr);
    CHECK(nvlink->status == Status::skip);
    CHECK(nvlink->message.find("GPU link counters not read: NVML did not answer the inventory") == 0);
    CHECK(report->verdict == Verdict::not_ok);
  }
}

TEST_CASE("deadline: doctor ends at --timeout when every probe hangs, and says what it cut short",
          "[doctor][faults][deadline]") {
  FakeSystem fake = healthy_host();
  CommandResult hung;
  hung.timed_out = true;
  fake.commands[k_nvidia_smi] = hung;
  fake.commands["dmesg"] = hung;
  auto request = live_request();
  request.collect.timeout = 10s;
  request.collect.frameworks = true;  // python3 -c ... would hang too
  request.deadline = 4s;
  const auto report = gpuenv::doctor::run_doctor(fake, request);
  REQUIRE(report);
  // nvidia-smi got the 4 s left instead of its 10 s; nothing else was started after the deadline.
  REQUIRE_FALSE(fake.command_timeouts.empty());
  CHECK(fake.command_timeouts.front() == 4s);
  CHECK(fake.commands_run == std::vector<std::string>{k_nvidia_smi});
  CHECK(fake.now() - std::chrono::steady_clock::time_point{} == 4s);
  const auto* deadline = find(*report, "doctor.deadline");
  REQUIRE(deadline != nullptr);
  INFO(deadline->message);
  CHECK(deadline->status == Status::fail);
  CHECK(deadline->message.find("--timeout 4 s") != std::string::npos);
  // In the order they were cut: libcuda is not even asked once the deadline has passed.
  CHECK(deadline->message.find("these finished: nvidia-smi -q -x, dmesg, libcuda, python3 -I -c ...;") !=
        std::string::npos);
  CHECK(report->verdict == Verdict::not_ok);
}

TEST_CASE("deadline: a run that ends in time has no deadline finding", "[doctor][faults][deadline]") {
  FakeSystem fake = healthy_host();
  auto request = live_request();
  request.deadline = 4s;
  const auto report = gpuenv::doctor::run_doctor(fake, request);
  REQUIRE(report);
  CHECK(find(*report, "doctor.deadline") == nullptr);
}
