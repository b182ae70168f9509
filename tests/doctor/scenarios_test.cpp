// `gpuenv doctor --root <tree> [--nvidia-smi-xml <report>]` end to end on the scenario host trees under
// tests/fixtures/hosts (each tree's README.md says what it is). One row per run: exit code, verdict and the status
// of the findings that make the scenario what it is.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "doctor/doctor.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

/// A finding that must be present with `status`; `excerpt` (when not empty) must appear in its message or remedy.
struct Expect {
  const char* id;
  const char* status;
  const char* excerpt = "";
};

struct Scenario {
  const char* tree;               ///< tests/fixtures/hosts/<tree>; <tree>.nvidia-smi.xml is used when it exists
  std::vector<std::string> args;  ///< extra doctor arguments
  int exit_code;
  const char* verdict;
  std::vector<Expect> findings;
};

// clang-format off
const std::vector<Scenario> k_scenarios = {
    {"no-driver", {}, 1, "NOT READY", {
        {"driver.kernel_module", "fail", "install the NVIDIA driver"},
        {"driver.nouveau", "pass"},
        {"driver.library_mismatch", "skip"},
        {"gpu.count", "skip", "no NVIDIA driver"},
        {"xid.events", "pass", "/var/log/kern.log"},
        {"toolkit.installed", "skip"},
        {"container.toolkit", "skip"}}},
    {"nouveau-bound", {}, 1, "NOT READY", {
        {"driver.kernel_module", "fail", "blacklist nouveau"},
        {"driver.nouveau", "fail", "owns the GPUs"},
        {"driver.probe", "fail", "No NVIDIA graphics adapter probed"},
        {"driver.library_mismatch", "skip", "no loaded module to compare with"},
        {"gpu.count", "skip"}}},
    {"secure-boot-blocks-module", {}, 1, "NOT READY", {
        {"driver.kernel_module", "fail", "mokutil --import"},
        {"driver.secure_boot", "warn", "Secure Boot is enabled"},
        {"driver.nouveau", "pass"},
        {"gpu.count", "skip"}}},
    {"driver-library-mismatch", {}, 1, "NOT READY", {
        {"driver.kernel_module", "pass", "550.127.05"},
        {"driver.library_mismatch", "fail", "the loaded kernel module is 550.127.05"},
        {"driver.library_mismatch", "fail", "libnvidia-ml 550.144.03"},
        {"driver.library_mismatch", "fail", "reboot"}}},
    {"healthy-8xh100", {}, 0, "READY", {
        {"host.os", "pass", "Ubuntu 22.04.4 LTS"},
        {"host.vcpus_per_gpu", "pass", "224 vCPUs for 8 GPUs"},
        {"host.memory", "pass"},
        {"driver.kernel_module", "pass", "565.57.01"},
        {"driver.library_mismatch", "pass"},
        {"gpu.count", "pass", "8 GPUs: 8x NVIDIA H100 80GB HBM3"},
        {"gpu.ecc", "pass"},
        {"gpu.row_remap", "pass"},
        {"gpu.retired_pages", "skip"},
        {"gpu.temperature", "pass"},
        {"gpu.throttle", "pass"},
        {"gpu.pcie_link", "pass"},
        {"gpu.persistence_mode", "pass"},
        {"gpu.processes", "pass"},
        {"xid.events", "pass"},
        {"cuda.driver", "skip", "not loaded under --root"},
        {"toolkit.installed", "pass", "12.6.3"},
        {"toolkit.path", "skip"},
        {"toolkit.driver_support", "pass"},
        {"container.toolkit", "pass"},
        {"container.docker_runtime", "pass"}}},
    {"healthy-8xh100", {"--expect-gpus", "8", "--strict"}, 0, "READY", {
        {"gpu.count", "pass", "8 GPUs"}}},
    {"healthy-8xh100", {"--expect-gpus", "7"}, 1, "NOT READY", {
        {"gpu.count", "fail", "expected 7"}}},
    {"t4-ecc-row-remap", {}, 1, "NOT READY", {
        {"gpu.count", "pass", "Tesla T4"},
        {"gpu.ecc", "fail", "2 uncorrectable ECC errors"},
        {"gpu.retired_pages", "fail", "page retirement is pending"},
        {"gpu.row_remap", "skip"},
        {"gpu.persistence_mode", "warn"}}},
    {"a10g-row-remap-pending", {}, 1, "NOT READY", {
        {"gpu.row_remap", "fail", "a row remap is pending"},
        {"gpu.ecc", "fail", "1 uncorrectable ECC errors"},
        {"gpu.retired_pages", "skip"}}},
    {"a100-pcie-downtrained-under-load", {}, 1, "NOT READY", {
        {"gpu.count", "pass", "NVIDIA A100-SXM4-80GB"},
        {"gpu.pcie_link", "fail", "Gen4 x8 of Gen4 x16 under load"},
        {"gpu.ecc", "pass"},
        {"gpu.processes", "warn"}}},
    {"xid79", {"--expect-gpus", "8"}, 1, "NOT READY", {
        {"xid.events", "fail", "Xid 79 on 0000:00:14"},
        {"gpu.count", "fail", "7 GPUs: 7x Tesla V100S-PCIE-32GB; expected 8"}}},
    {"xid79", {}, 1, "NOT READY", {
        {"xid.events", "fail", "fallen off the bus"},
        {"gpu.count", "warn", "the report header says 8 attached"}}},
    {"toolkit-not-on-path", {}, 0, "READY", {
        {"toolkit.installed", "pass", "12.4.1 at /usr/local/cuda-12.4"},
        {"toolkit.path", "skip", "PATH is not judged under --root"},
        {"toolkit.driver_support", "pass"}}},
    {"toolkit-newer-than-driver", {}, 0, "DEGRADED", {
        {"toolkit.installed", "pass", "12.8.2"},
        {"toolkit.driver_support", "warn", "below CUDA 12.8.2's minimum"},
        {"driver.library_mismatch", "pass"}}},
    {"toolkit-newer-than-driver", {"--strict"}, 1, "DEGRADED", {
        {"toolkit.driver_support", "warn"}}},
    {"cudnn-wrong-cuda-major", {}, 1, "NOT READY", {
        {"cudnn.installed", "pass", "9.6.0"},
        {"cudnn.cuda_major", "fail", "built for CUDA 11 but the toolkit is CUDA 12.4.1"},
        {"cudnn.cuda_major", "fail", "libcudnn9-cuda-12"}}},
    {"container-toolkit-missing", {}, 0, "DEGRADED", {
        {"container.toolkit", "warn", "NVIDIA Container Toolkit is not"},
        {"gpu.count", "pass"}}},
    {"container-toolkit-missing", {"--strict"}, 1, "DEGRADED", {
        {"container.toolkit", "warn"}}},
    {"aws-p4d-missing-gpu", {}, 1, "NOT READY", {
        {"host.cloud", "pass", "AWS, instance type p4d.24xlarge"},
        {"gpu.count", "fail", "7 GPUs: 7x NVIDIA A100-SXM4-40GB; p4d.24xlarge should have 8x A100 40960 MiB"},
        {"gpu.model", "pass", "A100"},
        {"gpu.memory_size", "pass", "40960 MiB"},
        {"gpu.interconnect", "skip", "does not report NVLink"},
        {"gpu.init_failed", "fail", "the GPU at 0000:a0:1d.0"},
        {"fabric.efa", "pass", "4 EFA devices, as p4d.24xlarge (AWS) should have"}}},
    {"aws-p4d-missing-gpu", {"--instance-type", "p5.48xlarge"}, 1, "NOT READY", {
        {"fabric.efa", "fail", "4 EFA devices in /sys/class/infiniband (rdmap144s27, rdmap160s27, rdmap16s27, "
                               "rdmap32s27); p5.48xlarge (AWS) should have 32"},
        {"fabric.efa", "fail", "InterfaceType efa"}}},
    {"aws-p4d-missing-gpu", {"--instance-type", "p4de.24xlarge"}, 1, "NOT READY", {
        {"host.cloud", "pass", "instance type p4de.24xlarge"},
        {"host.cloud", "pass", "instance type from --instance-type"},
        {"gpu.count", "fail", "p4de.24xlarge should have 8x A100 81920 MiB"},
        {"gpu.memory_size", "fail", "GPU 0 has 40960 MiB"},
        {"gpu.memory_size", "fail", "p4de.24xlarge (AWS) should have 81920 MiB per GPU"},
        {"gpu.model", "pass"}}},
    {"t4-ecc-row-remap", {"--instance-type", "g5.xlarge"}, 1, "NOT READY", {
        {"host.cloud", "pass", "AWS, instance type g5.xlarge"},
        {"gpu.model", "fail", "GPU 0 is Tesla T4; g5.xlarge (AWS) should have 1x A10G 22888 MiB"},
        {"gpu.count", "pass"}}},
    {"aws-p4d-missing-gpu", {"--expect-gpus", "7"}, 1, "NOT READY", {
        {"gpu.count", "pass", "7 GPUs"},
        {"gpu.init_failed", "fail"}}},
    {"healthy-8xh100", {}, 0, "READY", {
        {"host.cloud", "skip", "/sys/class/dmi/id is not readable"}}},
    {"conforms-to-profile", {"--profile", "pytorch-2.4-cu124"}, 0, "READY", {
        {"profile.driver", "pass", "570.124.04"},
        {"profile.cuda_toolkit", "pass", "12.4.1"},
        {"profile.cudnn", "pass", "9.6.0"},
        {"cudnn.cuda_major", "pass"},
        {"container.toolkit", "pass"}}},
    {"conforms-to-profile", {"--profile", "cuda-11.8-ubuntu22.04"}, 1, "NOT READY", {
        {"profile.cuda_toolkit", "fail", "wants CUDA 11.8.0; the node has 12.4.1"},
        {"profile.driver", "pass"}}},
};
// clang-format on

std::string tree_path(const std::string& tree) { return fixture_path("hosts/" + tree); }

std::optional<std::string> xml_for(const std::string& tree) {
  const std::string path = fixture_path("hosts/" + tree + ".nvidia-smi.xml");
  if (fs::exists(path)) return path;
  return std::nullopt;
}

/// doctor's base arguments for a tree: --root, and --nvidia-smi-xml when the tree has a captured report.
std::vector<std::string> doctor_args(const std::string& tree, const std::vector<std::string>& extra,
                                     const std::string& format) {
  std::vector<std::string> args{"doctor", "--root", tree_path(tree)};
  if (auto xml = xml_for(tree)) {
    args.push_back("--nvidia-smi-xml");
    args.push_back(*xml);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  if (!format.empty()) args.push_back(format);
  return args;
}

/// doctor warns below 20 GiB free where the tree lives (host.disk_free reads the real filesystem under --root),
/// which turns READY into DEGRADED on a nearly full disk; the rows are written for a machine with room.
bool low_disk() {
  std::error_code error;
  const auto space = fs::space(fixture_path("hosts"), error);
  return !error && space.available < 20ull * 1024 * 1024 * 1024;
}

std::string expected_verdict(const Scenario& s) {
  return std::string(s.verdict) == "READY" && low_disk() ? "DEGRADED" : s.verdict;
}

int expected_exit(const Scenario& s) {
  const bool strict = std::find(s.args.begin(), s.args.end(), "--strict") != s.args.end();
  return std::string(s.verdict) == "READY" && low_disk() && strict ? 1 : s.exit_code;
}

std::string describe(const Scenario& s) {
  std::string text = s.tree;
  for (const auto& arg : s.args) text += " " + arg;
  return text;
}

/// The first finding with the worst status (fail over warn), as --oneline names it; empty when none.
std::string worst_id(const nlohmann::json& findings) {
  for (const char* status : {"fail", "warn"}) {
    for (const auto& f : findings) {
      if (f.at("status") == status) return f.at("id");
    }
  }
  return {};
}

}  // namespace

TEST_CASE("doctor scenarios: exit code, verdict and key findings of every host tree", "[doctor][e2e][system-test]") {
  for (const Scenario& s : k_scenarios) {
    INFO("scenario: " << describe(s));
    const auto result = run_gpuenv(doctor_args(s.tree, s.args, "--json"));
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == expected_exit(s));
    const auto json = nlohmann::json::parse(result.out, nullptr, false);
    REQUIRE_FALSE(json.is_discarded());
    CHECK(json.at("schema") == 1);
    CHECK(json.at("verdict") == expected_verdict(s));
    const auto& findings = json.at("findings");
    for (const Expect& e : s.findings) {
      INFO("expected " << e.id << " " << e.status << " \"" << e.excerpt << "\"");
      const bool found = std::any_of(findings.begin(), findings.end(), [&](const nlohmann::json& f) {
        const std::string text = f.at("message").get<std::string>() + " | " + f.at("remedy").get<std::string>();
        return f.at("id") == e.id && f.at("status") == e.status && text.find(e.excerpt) != std::string::npos;
      });
      CHECK(found);
    }
    // The summary counts what the findings say.
    for (const char* status : {"pass", "warn", "fail", "skip"}) {
      const auto n = std::count_if(findings.begin(), findings.end(),
                                   [&](const nlohmann::json& f) { return f.at("status") == status; });
      CHECK(json.at("summary").at(status) == n);
    }
  }
}

TEST_CASE("doctor scenarios: the JSON has the keys docs/doctor-json.md documents", "[doctor][e2e]") {
  const auto keys = [](const nlohmann::json& object) {
    std::set<std::string> out;
    for (const auto& [key, value] : object.items()) out.insert(key);
    return out;
  };
  const auto result = run_gpuenv(doctor_args("healthy-8xh100", {}, "--json"));
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(keys(json) == std::set<std::string>{"schema", "gpuenv_version", "verdict", "host", "driver", "gpus",
                                            "gpu_source", "cuda_toolkits", "findings", "summary", "action", "time"});
  CHECK(keys(json.at("host")) == std::set<std::string>{"os", "os_version", "kernel", "architecture", "cpus",
                                                       "memory_kib", "cloud", "instance_type"});
  CHECK(keys(json.at("driver")) ==
        std::set<std::string>{"version", "kernel_module_loaded", "open_module", "cuda_version"});
  CHECK(keys(json.at("summary")) == std::set<std::string>{"pass", "warn", "fail", "skip"});
  CHECK(keys(json.at("cuda_toolkits").at(0)) == std::set<std::string>{"version", "root", "nvcc"});
  // An idle H100 from the report: every optional GPU key is present (throttle_reasons: gpu_idle is active).
  CHECK(keys(json.at("gpus").at(0)) ==
        std::set<std::string>{"index", "name", "uuid", "pci_bus_id", "memory_mib", "compute_capability",
                              "temperature_c", "power_draw_w", "ecc_enabled", "ecc_uncorrected_volatile",
                              "persistence_mode", "mig_enabled", "pcie_gen_current", "pcie_gen_max",
                              "pcie_width_current", "pcie_width_max", "throttle_reasons"});
  CHECK(json.at("gpus").at(0).at("compute_capability").is_null());
  for (const auto& finding : json.at("findings")) {
    const auto k = keys(finding);
    CHECK((k == std::set<std::string>{"id", "status", "message", "remedy", "action"} ||
           k == std::set<std::string>{"id", "status", "message", "remedy", "source", "action"}));
  }
  // Without a driver: the nullable values are null, open_module is left out.
  const auto bare = nlohmann::json::parse(run_gpuenv(doctor_args("no-driver", {}, "--json")).out, nullptr, false);
  REQUIRE_FALSE(bare.is_discarded());
  CHECK(bare.at("driver").at("version").is_null());
  CHECK(bare.at("driver").at("cuda_version") == "");
  CHECK_FALSE(bare.at("driver").contains("open_module"));
  CHECK(bare.at("gpu_source").is_null());
  CHECK(bare.at("gpus").empty());
  CHECK(bare.at("cuda_toolkits").empty());
}

TEST_CASE("doctor scenarios: every host tree has a README and a row", "[doctor][e2e]") {
  std::set<std::string> covered;
  for (const Scenario& s : k_scenarios) covered.insert(s.tree);
  std::set<std::string> trees;
  for (const auto& entry : fs::directory_iterator(fixture_path("hosts"))) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    trees.insert(name);
    INFO("tree " << name);
    CHECK(fs::exists(entry.path() / "README.md"));
    CHECK(fs::exists(entry.path() / "etc/os-release"));
    CHECK(fs::exists(entry.path() / "proc/modules"));
    CHECK(covered.count(name) == 1);
  }
  CHECK(trees.size() >= 12);
  CHECK(trees == covered);
}

TEST_CASE("doctor scenarios: --oneline is one line of at most 80 characters naming the worst finding",
          "[doctor][e2e][system-test]") {
  std::set<std::string> seen;
  for (const Scenario& s : k_scenarios) {
    if (!seen.insert(describe(s)).second) continue;
    INFO("scenario: " << describe(s));
    const auto json_run = run_gpuenv(doctor_args(s.tree, s.args, "--json"));
    const auto json = nlohmann::json::parse(json_run.out, nullptr, false);
    REQUIRE_FALSE(json.is_discarded());
    const auto result = run_gpuenv(doctor_args(s.tree, s.args, "--oneline"));
    INFO("oneline: " << result.out);
    CHECK(result.exit_code == json_run.exit_code);
    REQUIRE_FALSE(result.out.empty());
    CHECK(result.out.back() == '\n');
    const std::string line = result.out.substr(0, result.out.size() - 1);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.size() <= 80);
    CHECK(line.rfind(json.at("verdict").get<std::string>() + ": ", 0) == 0);
    const std::string worst = worst_id(json.at("findings"));
    if (!worst.empty()) CHECK(line.find(worst) != std::string::npos);
    // The node's action ends the line (NHC's and Slurm's reasons carry it); nothing in it a shell would expand.
    const std::string action = json.at("action");
    if (action != "none") CHECK(line.size() >= action.size() + 2);
    if (action != "none") CHECK(line.substr(line.size() - action.size() - 2) == "[" + action + "]");
    CHECK(line.find_first_of("'\"`$\\") == std::string::npos);
  }
}

TEST_CASE("doctor scenarios: --prometheus writes the metrics file atomically", "[doctor][e2e]") {
  struct Row {
    const char* tree;
    const char* verdict_sample;
    const char* gpus_sample;
  };
  const Row rows[] = {{"healthy-8xh100", "gpuenv_doctor_verdict 0\n", "gpuenv_gpus_visible 8\n"},
                      {"container-toolkit-missing", "gpuenv_doctor_verdict 1\n", "gpuenv_gpus_visible 1\n"},
                      {"nouveau-bound", "gpuenv_doctor_verdict 2\n", "gpuenv_gpus_visible 0\n"}};
  static int counter = 0;
  for (const Row& row : rows) {
    INFO("scenario: " << row.tree);
    const fs::path dir = fs::temp_directory_path() /
                         ("gpuenv-doctor-prom-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "gpuenv.prom";
    const auto result = run_gpuenv(doctor_args(row.tree, {"--prometheus", file.string()}, "--json"));
    INFO("stderr: " << result.err);
    const auto json = nlohmann::json::parse(result.out, nullptr, false);
    CHECK_FALSE(json.is_discarded());  // --prometheus comes on top of the chosen output
    REQUIRE(fs::exists(file));
    std::vector<std::string> entries;
    for (const auto& entry : fs::directory_iterator(dir)) entries.push_back(entry.path().filename().string());
    CHECK(entries == std::vector<std::string>{"gpuenv.prom"});  // no temporary file left behind
    std::ifstream in(file);
    std::ostringstream contents;
    contents << in.rdbuf();
    const std::string text = contents.str();
    CHECK(text.find("# TYPE gpuenv_doctor_verdict gauge\n") != std::string::npos);
    const bool ready_on_low_disk = std::string(row.tree) == "healthy-8xh100" && low_disk();
    CHECK(text.find(ready_on_low_disk ? "gpuenv_doctor_verdict 1\n" : row.verdict_sample) != std::string::npos);
    CHECK(text.find(row.gpus_sample) != std::string::npos);
    CHECK(text.find("gpuenv_finding_status{id=\"gpu.count\"} ") != std::string::npos);
    CHECK(text.find("gpuenv_doctor_last_run_timestamp_seconds ") != std::string::npos);
    fs::remove_all(dir);
  }
}

// Under --root PATH is not judged (the process environment is not the tree's), so the toolkit-not-on-path tree is
// judged live here: a FakeSystem serves the tree's files and the environment.
//
// Only an unset PATH is used. src/probe/collect.cpp splits PATH (and LD_LIBRARY_PATH) into string_views of the
// temporary std::string that `environment(...).value_or("")` returns, and that temporary is destroyed before the views
// are read (a range-for over a temporary's parts; heap-use-after-free under ASan). A PATH that names the toolkit
// (`/usr/local/cuda-12.4/bin`, or `/usr/local/cuda/bin` with one toolkit) must give `toolkit.path` pass; add those rows
// once that is fixed. The pass direction of the rule itself is in rules_test.cpp (facts.toolkits[].on_path).
TEST_CASE("toolkit-not-on-path: live, with no PATH, nvcc is not on PATH", "[doctor]") {
  gpuenv::testing::FakeSystem system;
  system.add_tree(tree_path("toolkit-not-on-path"));
  gpuenv::doctor::DoctorRequest request;
  request.collect.live = true;
  request.collect.timeout = std::chrono::milliseconds(500);
  auto report = gpuenv::doctor::run_doctor(system, request);
  REQUIRE(report);
  REQUIRE(report->facts.toolkits.size() == 1);
  CHECK(report->facts.toolkits[0].version == "12.4.1");
  CHECK(report->facts.toolkits[0].has_nvcc);
  CHECK_FALSE(report->facts.toolkits[0].on_path);
  const auto& findings = report->findings;
  const auto it = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.id == "toolkit.path"; });
  REQUIRE(it != findings.end());
  CHECK(it->status == gpuenv::report::Status::warn);
  CHECK(it->message == "CUDA 12.4.1 is installed but its nvcc is not on PATH");
  CHECK(it->remedy.find("export PATH=/usr/local/cuda-12.4/bin:$PATH") != std::string::npos);
  CHECK(it->remedy.find("LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64") != std::string::npos);
  // Live, doctor asked the machine: nvidia-smi and dmesg were tried (and are not scripted here).
  CHECK(std::find(system.commands_run.begin(), system.commands_run.end(), "dmesg") != system.commands_run.end());
}
