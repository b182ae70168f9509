// Host text is data, never a crash (issue 16): a host tree whose os-release holds a stray byte and a control
// character, and an nvidia-smi report with a mutated byte, rendered by every doctor renderer of the built binary.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/text_files.hpp"
#include "util/host_text.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::read_text;
using gpuenv::testing::run_gpuenv;

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

/// healthy-8xh100 copied to a temporary directory, with hostile bytes in os-release and in the nvidia-smi report.
struct HostileHost {
  fs::path top;
  fs::path tree;
  fs::path xml;
  HostileHost() {
    top = fs::temp_directory_path() / ("gpuenv-hostile-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    tree = top / "tree";
    fs::create_directories(top);
    fs::copy(gpuenv::testing::fixture_path("hosts/healthy-8xh100"), tree, fs::copy_options::recursive);
    std::string os_release = read_text(tree / "etc/os-release");
    replace_all(os_release, "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"", "PRETTY_NAME=\"Ubuntu\xFF 22.04\x1B[2J LTS\"");
    replace_all(os_release, "ID=ubuntu\n", "ID=ubuntu\xC3\n");
    fs::remove(tree / "etc/os-release");
    std::ofstream(tree / "etc/os-release", std::ios::binary) << os_release;
    std::string report = read_text(gpuenv::testing::fixture_path("hosts/healthy-8xh100.nvidia-smi.xml"));
    replace_all(report, "NVIDIA H100 80GB HBM3", "NVIDIA H100\xFE 80GB HBM3");
    xml = top / "report.xml";
    std::ofstream(xml, std::ios::binary) << report;
  }
  ~HostileHost() {
    std::error_code ignored;
    fs::remove_all(top, ignored);
  }
  std::vector<std::string> doctor(const std::string& format) const {
    std::vector<std::string> args = {"doctor", "--root", tree.string(), "--nvidia-smi-xml", xml.string()};
    if (!format.empty()) args.push_back(format);
    return args;
  }
};

}  // namespace

TEST_CASE("doctor --json with invalid UTF-8 in host text exits 0 or 1 and prints JSON that says what it cleaned",
          "[cli][host_text][e2e]") {
  const HostileHost host;
  const auto result = run_gpuenv(host.doctor("--json"));
  INFO(result.err);
  CHECK((result.exit_code == 0 || result.exit_code == 1));
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(report.at("host").at("os") == "ubuntu\xEF\xBF\xBD");
  CHECK(report.at("gpus").at(0).at("name") == "NVIDIA H100\xEF\xBF\xBD 80GB HBM3");
  REQUIRE(report.contains("host_text_cleaned"));
  CHECK(report.at("host_text_cleaned").get<std::string>().find("replaced by U+FFFD") != std::string::npos);
}

TEST_CASE("doctor text and --oneline print hostile host text escaped and say so", "[cli][host_text][e2e]") {
  const HostileHost host;
  const auto text = run_gpuenv(host.doctor(""));
  CHECK((text.exit_code == 0 || text.exit_code == 1));
  CHECK(gpuenv::util::is_valid_utf8(text.out));
  CHECK(text.out.find("Ubuntu\xEF\xBF\xBD 22.04\\x1B[2J LTS") != std::string::npos);
  CHECK(text.out.find('\x1B') == std::string::npos);  // no raw terminal escape reaches the terminal
  CHECK(text.out.find("note: host text was cleaned for display: ") != std::string::npos);

  const auto oneline = run_gpuenv(host.doctor("--oneline"));
  CHECK((oneline.exit_code == 0 || oneline.exit_code == 1));
  CHECK(gpuenv::util::is_valid_utf8(oneline.out));
  CHECK(oneline.out.size() <= 81);
  CHECK(oneline.out.find('\n') == oneline.out.size() - 1);
}

TEST_CASE("doctor --prometheus with hostile host text writes valid UTF-8 with a note", "[cli][host_text][e2e]") {
  const HostileHost host;
  const fs::path metrics = host.top / "gpuenv.prom";
  auto args = host.doctor("--quick");
  args.insert(args.end(), {"--prometheus", metrics.string()});
  const auto result = run_gpuenv(args);
  CHECK((result.exit_code == 0 || result.exit_code == 1));
  const std::string text = read_text(metrics);
  CHECK(gpuenv::util::is_valid_utf8(text));
  CHECK(text.find("# gpuenv: host text in label values was cleaned: ") != std::string::npos);
}

TEST_CASE("doctor --root must name a directory", "[cli][limits][e2e]") {
  const auto result = run_gpuenv({"doctor", "--root", "/etc/passwd", "--json"});
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("--root /etc/passwd: not a directory") != std::string::npos);
  CHECK(result.out.empty());
}
