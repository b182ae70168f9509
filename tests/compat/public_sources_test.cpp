// Issue 15, rule 3: every `source` gpuenv ships cites a public document, never a file of the development
// environment (its reference notes under shared/reference/, or anything under /work/). Scans every data file and
// every source file (data is compiled in, and strings in src/ reach output).

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// The private citation in `line`, if any: a shared/ or /work/ path, or a bare reference-note file name.
std::optional<std::string> private_citation(const std::string& line) {
  static const std::regex pattern(
      R"((shared/|/work/|(^|[^A-Za-z0-9_/.-])(gpus|xid|cuda-driver|cudnn|pytorch|tensorflow|nvidia-cuda-images|)"
      R"(health-thresholds|cloud-instances|mirrors-cn|anchors-[a-z-]+|style-side-by-side|model-codebases)\.md))");
  std::smatch match;
  if (std::regex_search(line, match, pattern)) return match.str(0);
  return std::nullopt;
}

std::vector<fs::path> files_under(const fs::path& root) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) out.push_back(entry.path());
  }
  return out;
}

}  // namespace

TEST_CASE("public sources: the detector catches private citations and passes public ones", "[compat][sources]") {
  struct Case {
    const char* line;
    bool private_citation;
  };
  const Case cases[] = {
      {R"x(source = "shared/reference/xid.md Table 1")x", true},
      {R"x(source = "NVIDIA notes via shared/reference/cuda-driver.md")x", true},
      {R"x(source = "health-thresholds.md Table 4a")x", true},
      {R"x(source = "gpus.md Table 1 (H200 SXM)")x", true},
      {R"x(# read from /work/shared/fixtures/x.xml)x", true},
      {R"x(source = "pytorch/pytorch RELEASE.md (https://github.com/pytorch/pytorch/blob/main/RELEASE.md)")x", false},
      {R"x(source = "gitlab.com/nvidia/container-images/cuda doc/supported-tags.md")x", false},
      {R"x(source = "https://github.com/moi90/pytorch_compute_capabilities table.md")x", false},
      {R"x(source = "MicrosoftDocs/azure-compute-docs articles/virtual-machines/sizes/nd-h200-v5-series.md")x", false},
      {R"x(source = "https://docs.nvidia.com/deploy/xid-errors/index.html")x", false},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    CHECK(private_citation(c.line).has_value() == c.private_citation);
  }
}

TEST_CASE("public sources: no data file or source file cites the development environment",
          "[compat][sources][system-test]") {
  const fs::path root = GPUENV_SOURCE_DIR;
  std::size_t files = 0;
  for (const char* folder : {"data", "src"}) {
    for (const fs::path& file : files_under(root / folder)) {
      ++files;
      std::ifstream in(file);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        const auto found = private_citation(line);
        INFO(fs::relative(file, root).string() << ":" << number << ": " << line);
        CHECK_FALSE(found.has_value());
      }
    }
  }
  CHECK(files > 50);
}
