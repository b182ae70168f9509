// `gpuenv nccl judge` and `gpuenv nccl job` end to end: exit codes, JSON, the metrics file (checked by the real
// promtool), the job on standard output and in a file.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-nccl-e2e-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("nccl judge: exit codes follow the judgement, bad input is exit 2", "[cli][nccl][system-test]") {
  const auto right = run_gpuenv({"nccl", "judge", fixture_path("nccl/a3mega-2x8xh100-tcpxo.txt"), "--nodes", "2"});
  INFO(right.out << right.err);
  CHECK(right.exit_code == 0);
  CHECK(right.out.find("gpuenv nccl judge: OK") == 0);
  CHECK(right.out.find("nccl.busbw") != std::string::npos);
  const auto wrong = run_gpuenv({"nccl", "judge", fixture_path("nccl/a3mega-2x8xh100-wrong-derived.txt")});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.find("4096 wrong elements") != std::string::npos);
  const auto missing = run_gpuenv({"nccl", "judge", "/nonexistent/nccl.out"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.empty());
  const auto not_nccl = run_gpuenv({"nccl", "judge", fixture_path("nccl/README.md")});
  CHECK(not_nccl.exit_code == 2);
  CHECK(not_nccl.err.find("no nccl-tests result table") != std::string::npos);
}

TEST_CASE("nccl judge --json and --prometheus", "[cli][nccl][system-test]") {
  const fs::path metrics = scratch("nccl.prom");
  const auto result = run_gpuenv({"nccl", "judge", fixture_path("nccl/p4d-2x8xa100-efa-nccl2.8.txt"), "--json",
                                  "--instance-type", "p4d.24xlarge", "--prometheus", metrics.string()});
  INFO(result.err);
  CHECK(result.exit_code == 0);
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(json.at("command") == "nccl judge");
  CHECK(json.at("ranks") == 16);
  CHECK(json.at("nodes") == 2);
  CHECK(json.at("rows").size() == 30);
  CHECK(json.at("wrong_counts") == false);
  CHECK(json.at("judged_bytes") == 134217728);
  // p4d's multi-node row is AWS's advisory one at 128 MiB: the run has that size, reported beside it, not judged.
  CHECK(json.at("floor").at("judged") == false);
  const std::string text = slurp(metrics);
  CHECK(text.find("gpuenv_nccl_verdict 0\n") != std::string::npos);
  CHECK(text.find("gpuenv_nccl_bus_bandwidth_bytes_per_second{message_bytes=\"134217728\"}") != std::string::npos);
  if (gpuenv::testing::fleet::have_tool("promtool")) {
    const auto lint =
        gpuenv::testing::fleet::run_tool({"sh", "-c", "promtool check metrics < \"$1\"", "sh", metrics.string()});
    INFO(lint.out << lint.err);
    CHECK(lint.exit_code == 0);
    CHECK(lint.out.empty());
    CHECK(lint.err.empty());
  } else {
    WARN("SKIPPED: promtool not installed (Debian package prometheus; scripts/bootstrap installs it)");
  }
  fs::remove_all(metrics.parent_path());
}

TEST_CASE("nccl job: the Slurm script for an instance type, usage errors", "[cli][nccl][system-test]") {
  const auto slurm = run_gpuenv({"nccl", "job", "--slurm", "--nodes", "2", "--instance-type", "p4d.24xlarge"});
  INFO(slurm.err);
  CHECK(slurm.exit_code == 0);
  CHECK(slurm.out.find("#SBATCH --nodes=2\n") != std::string::npos);
  CHECK(slurm.out.find("export FI_PROVIDER=efa\n") != std::string::npos);
  CHECK(slurm.out.find(" -e 8589934592 ") != std::string::npos);  // 40 GB A100s: 8 GiB at most
  const fs::path file = scratch("job.yaml");
  const auto kubernetes =
      run_gpuenv({"nccl", "job", "--kubernetes", "--nodes", "3", "--instance-type", "Standard_ND96isr_H100_v5",
                  "--image", "nvcr.io/nvidia/pytorch:24.04-py3", "--output", file.string()});
  CHECK(kubernetes.exit_code == 0);
  CHECK(kubernetes.out.empty());
  const std::string manifest = slurp(file);
  CHECK(manifest.find("kind: MPIJob") != std::string::npos);
  CHECK(manifest.find("\"-x\", \"NCCL_IB_PCI_RELAXED_ORDERING=1\"") != std::string::npos);
  CHECK(manifest.find("\"-e\", \"17179869184\"") != std::string::npos);  // the ND H100 v5 floor's 16 GiB
  fs::remove_all(file.parent_path());
  CHECK(run_gpuenv({"nccl", "job", "--nodes", "2"}).exit_code == 2);
  CHECK(run_gpuenv({"nccl", "job", "--kubernetes"}).exit_code == 2);
  CHECK(run_gpuenv({"nccl", "job", "--slurm", "--instance-type", "no-such-type"}).exit_code == 2);
}
