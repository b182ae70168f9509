// `doctor --prometheus FILE` checked by the real `promtool check metrics` (Debian's prometheus package): every
// scenario's file must parse and pass promtool's lint (names, units, HELP, TYPE) with no message at all. A rendered
// report with hostile host text (quotes, backslashes, newlines, invalid UTF-8) and smoke measurements must too.

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>

#include "cli/doctor_output.hpp"
#include "fleet/fleet_support.hpp"
#include "support/run_binary.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::fleet;

bool skip_without_promtool() {
  if (have_tool("promtool")) return false;
  WARN("SKIPPED: promtool not installed (Debian package prometheus; scripts/bootstrap installs it)");
  return true;
}

/// The metric names a rendering declares (its "# TYPE name ..." lines).
std::set<std::string> declared_names(const std::string& text) {
  std::set<std::string> names;
  const std::regex type_line(R"(^# TYPE (\S+) )", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), type_line); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

gpuenv::doctor::DoctorReport hostile_report() {
  gpuenv::doctor::DoctorReport r;
  r.verdict = gpuenv::report::Verdict::not_ok;
  r.facts.host.os_id = "ubu\"ntu";
  r.facts.host.os_version_id = "22.04\\n";
  r.facts.host.kernel_release = "6.8.0-1\nX \xff\xfe broken";
  r.facts.kernel.module_version = "550.54.15";
  gpuenv::probe::GpuFacts gpu;
  gpu.index = 0;
  gpu.name = "NVIDIA \"H100\" 80GB\\HBM3";
  gpu.uuid = "GPU-\xED\xA0\x80-\xE0\x80\x80-\xF4\x90\x80\x80-\xC3\xA9";  // surrogate, overlong, > U+10FFFF, é
  gpu.memory_total_mib = 81559;
  gpu.temperature_c = 41;
  gpu.power_draw_w = 71.5;
  r.facts.gpus.gpus.push_back(gpu);
  gpuenv::probe::KernelEvent xid;
  xid.xid = 79;
  r.facts.kernel_events = {xid, xid};
  xid.xid = 13;
  r.facts.kernel_events.push_back(xid);
  r.findings = {
      {"gpu.ecc", gpuenv::report::Status::pass, "ok", "", ""},
      {"gpu.ecc", gpuenv::report::Status::fail, "GPU 1: 3 uncorrected", "", "", gpuenv::report::Action::reset_gpu},
      {"xid.events", gpuenv::report::Status::fail, "Xid 79", "", "", gpuenv::report::Action::reboot},
      {"toolkit.path", gpuenv::report::Status::skip, "", "", ""}};
  gpuenv::smoke::SmokeReport smoke;
  gpuenv::smoke::DeviceResult device;
  device.metrics = {{"h2d_pinned", "GB/s", {24.5, 24, 25, 3}, std::nullopt, 0},
                    {"gemm_bf16", "TFLOP/s", {650.25, 640, 660, 3}, std::nullopt, 0}};
  smoke.devices.push_back(device);
  smoke.peers.push_back({0, 1, true, {"p2p_0_1", "GB/s", {380, 370, 390, 3}, std::nullopt, 0}});
  r.smoke = smoke;
  return r;
}

}  // namespace

TEST_CASE("prometheus: promtool accepts every doctor scenario's textfile, lint included",
          "[cli][prometheus][system-test]") {
  if (skip_without_promtool()) return;
  TempDir scratch;
  std::set<std::string> names;
  for (const char* tree : {"healthy-8xh100", "xid79", "t4-ecc-row-remap", "no-driver", "toolkit-newer-than-driver",
                           "driver-library-mismatch", "a100-pcie-downtrained-under-load"}) {
    const fs::path file = scratch.path() / (std::string(tree) + ".prom");
    const auto run = gpuenv::testing::run_gpuenv(doctor_on_tree(tree, {"--quick", "--prometheus", file.string()}));
    INFO(tree << ": " << run.err);
    REQUIRE((run.exit_code == 0 || run.exit_code == 1));
    const std::string text = read_text(file);
    CHECK(promtool_problems(file).empty());
    CHECK(text.find("gpuenv_finding_status{id=\"driver.kernel_module\"}") != std::string::npos);
    CHECK(text.find("gpuenv_node_info{gpuenv_version=\"") != std::string::npos);
    CHECK(text.find("\ngpuenv_doctor_last_run_timestamp_seconds ") != std::string::npos);
    const auto declared = declared_names(text);
    names.insert(declared.begin(), declared.end());
  }
  // Written atomically: only the finished files are left, no hidden temporary.
  CHECK(names_in(scratch.path()).size() == 7);
  for (const std::string& name : names) CHECK(name.rfind("gpuenv_", 0) == 0);
  WARN("promtool check metrics: 7 scenarios, " << names.size() << " metric families, no problems");
}

TEST_CASE("prometheus: the scenario values say what doctor found", "[cli][prometheus]") {
  TempDir scratch;
  const fs::path file = scratch.path() / "xid79.prom";
  gpuenv::testing::run_gpuenv(doctor_on_tree("xid79", {"--quick", "--prometheus", file.string()}));
  const std::string text = read_text(file);
  CHECK(text.find("gpuenv_doctor_verdict 2\n") != std::string::npos);
  CHECK(text.find("gpuenv_doctor_ready 0\n") != std::string::npos);
  CHECK(text.find("gpuenv_finding_status{id=\"xid.events\"} 2\n") != std::string::npos);
  CHECK(text.find("gpuenv_xid_events{xid=\"79\"} ") != std::string::npos);
  CHECK(text.find("gpuenv_gpus_visible 7\n") != std::string::npos);
}

TEST_CASE("prometheus: hostile host text is escaped, duplicate ids keep the worst status, smoke in base units",
          "[cli][prometheus][system-test]") {
  const std::string text = gpuenv::cli::doctor_prometheus(hostile_report(), "1.2.3", 1764556800);
  CHECK(text.find(R"(os="ubu\"ntu")") != std::string::npos);
  CHECK(text.find(R"(os_version="22.04\\n")") != std::string::npos);
  // Host text is cleaned first (the newline becomes the two characters \n, so the label stays one line), then
  // escaped for the format; a closing comment says what was cleaned.
  CHECK(text.find("kernel=\"6.8.0-1\\\\nX \xEF\xBF\xBD\xEF\xBF\xBD broken\"") != std::string::npos);
  const std::size_t note = text.find("\n# gpuenv: host text in label values was cleaned: ");
  REQUIRE(note != std::string::npos);
  CHECK(text.find("invalid UTF-8 bytes replaced by U+FFFD", note) != std::string::npos);
  CHECK(text.find("control character escaped\n", note) != std::string::npos);
  CHECK(text.find(R"(model="NVIDIA \"H100\" 80GB\\HBM3")") != std::string::npos);
  CHECK(text.find("UUID=\"GPU-\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD-\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD-"
                  "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD-\xC3\xA9\"") != std::string::npos);
  CHECK(text.find("gpuenv_finding_status{id=\"gpu.ecc\"} 2\n") != std::string::npos);
  CHECK(text.find("gpuenv_finding_status{id=\"toolkit.path\"} -1\n") != std::string::npos);
  CHECK(text.find("gpuenv_xid_events{xid=\"13\"} 1\ngpuenv_xid_events{xid=\"79\"} 2\n") != std::string::npos);
  // Per-GPU series carry DCGM-exporter's UUID label next to gpu, so DCGM's series join on it.
  CHECK(text.find("gpuenv_gpu_memory_total_bytes{gpu=\"0\",UUID=\"GPU-") != std::string::npos);
  CHECK(text.find("\xC3\xA9\"} 85520809984\n") != std::string::npos);
  // DCGM-exporter's temperature and power are not duplicated unless asked; the families stay declared.
  CHECK(text.find("# TYPE gpuenv_gpu_temperature_celsius gauge\n") != std::string::npos);
  CHECK(text.find("gpuenv_gpu_temperature_celsius{") == std::string::npos);
  CHECK(text.find("gpuenv_gpu_power_draw_watts{") == std::string::npos);
  const std::string gauges = gpuenv::cli::doctor_prometheus(hostile_report(), "1.2.3", 1764556800, {true});
  CHECK(gauges.find("gpuenv_gpu_temperature_celsius{gpu=\"0\",UUID=\"GPU-") != std::string::npos);
  CHECK(gauges.find("gpuenv_gpu_power_draw_watts{gpu=\"0\",UUID=\"GPU-") != std::string::npos);
  // The node's action: one series per action, 1 for the most disruptive of the findings' (gpu.ecc: reset_gpu).
  CHECK(text.find("gpuenv_node_action{action=\"none\"} 0\n") != std::string::npos);
  CHECK(text.find("gpuenv_node_action{action=\"reboot\"} 1\n") != std::string::npos);
  CHECK(text.find("gpuenv_node_action{action=\"reset_gpu\"} 0\n") != std::string::npos);
  // The smoke device names no PCI bus id here, so no UUID to join on: the label is left out, not empty.
  CHECK(text.find("gpuenv_smoke_bandwidth_bytes_per_second{gpu=\"0\",test=\"h2d_pinned\"} 24500000000\n") !=
        std::string::npos);
  CHECK(text.find("gpuenv_smoke_matmul_flops_per_second{gpu=\"0\",test=\"gemm_bf16\"} 650250000000000\n") !=
        std::string::npos);
  CHECK(text.find("gpuenv_smoke_peer_bandwidth_bytes_per_second{source=\"0\",destination=\"1\"} 380000000000\n") !=
        std::string::npos);
  CHECK(text.find("gpuenv_doctor_last_run_timestamp_seconds 1764556800\n") != std::string::npos);

  if (skip_without_promtool()) return;
  TempDir scratch;
  write_text(scratch.path() / "hostile.prom", text);
  CHECK(promtool_problems(scratch.path() / "hostile.prom").empty());
}

TEST_CASE("prometheus: the textfile is written 0644 whatever the umask, and names the node's action",
          "[cli][prometheus]") {
  // node_exporter does not run as root: a root service's umask 077 must not hide the file from it.
  TempDir scratch;
  const fs::path file = scratch.path() / "gpuenv.prom";
  std::vector<std::string> argv{"sh", "-c", "umask 077; exec \"$@\"", "sh", GPUENV_BINARY};
  const auto doctor = doctor_on_tree("xid79", {"--quick", "--prometheus", file.string()});
  argv.insert(argv.end(), doctor.begin(), doctor.end());
  const auto run = run_tool(argv);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(fs::status(file).permissions() == fs::perms(0644));
  const std::string text = read_text(file);
  CHECK(text.find("gpuenv_node_action{action=\"reboot\"} 1\n") != std::string::npos);  // Xid 79: RESTART_BM
  CHECK(text.find("gpuenv_node_action{action=\"none\"} 0\n") != std::string::npos);
}
