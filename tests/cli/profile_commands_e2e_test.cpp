// The shipped profiles and the `profile list|show|check` and `matrix` commands, end to end through the built binary.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "profile/parser.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

struct ShippedFile {
  std::string stem;
  std::string path;
  std::string text;
};

/// profiles/*.toml in the source tree, sorted by name.
std::vector<ShippedFile> shipped_files() {
  std::vector<ShippedFile> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GPUENV_SOURCE_DIR) + "/profiles")) {
    if (entry.path().extension() != ".toml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    out.push_back({entry.path().stem().string(), entry.path().string(), text.str()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.stem < b.stem; });
  return out;
}

nlohmann::json parse_json(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  return json;
}

}  // namespace

TEST_CASE("gpuenv ships at least 14 profiles, each named after its file with a one-line description", "[cli][e2e][profiles]") {
  const auto files = shipped_files();
  CHECK(files.size() >= 14);
  for (const ShippedFile& file : files) {
    INFO(file.path);
    auto document = gpuenv::profile::parse_profile(file.text, file.path);
    REQUIRE(document.has_value());
    CHECK(document->base.name == file.stem);
    CHECK_FALSE(document->base.description.empty());
    CHECK(document->base.description.find('\n') == std::string::npos);
  }
}

TEST_CASE("every shipped profile passes `profile check`, by name and by path", "[cli][e2e][profiles]") {
  for (const ShippedFile& file : shipped_files()) {
    INFO(file.stem);
    const auto by_name = run_gpuenv({"profile", "check", file.stem});
    INFO(by_name.out << by_name.err);
    CHECK(by_name.exit_code == 0);
    CHECK(by_name.out.find("INCOMPATIBLE") == std::string::npos);
    CHECK(run_gpuenv({"profile", "check", file.path}).exit_code == 0);
  }
}

TEST_CASE("`profile check` accepts all shipped profiles at once", "[cli][e2e][profiles]") {
  std::vector<std::string> args{"profile", "check", "--json"};
  for (const ShippedFile& file : shipped_files()) args.push_back(file.stem);
  const auto result = run_gpuenv(args);
  CHECK(result.exit_code == 0);
  const auto json = parse_json(result.out);
  REQUIRE(json.is_array());
  CHECK(json.size() == shipped_files().size());
  for (const auto& profile : json) {
    INFO(profile.at("profile"));
    CHECK(profile.at("valid") == true);
  }
}

TEST_CASE("the required shipped profiles exist with the versions they promise", "[cli][e2e][profiles]") {
  struct Expect {
    const char* name;
    const char* field;
    const char* value;
  };
  const Expect rows[] = {
      {"pytorch-1.13-cu117", "framework.version", "1.13.1"}, {"pytorch-1.13-cu117", "cuda.version", "11.7.1"},
      {"pytorch-1.13-cu117", "framework.python", "3.10"},    {"tensorflow-2.10-cu112", "framework.version", "2.10.0"},
      {"tensorflow-2.10-cu112", "cuda.version", "11.2.2"},   {"tensorflow-2.10-cu112", "os.version", "20.04"},
      {"cuda-11.8-ubuntu22.04", "cuda.version", "11.8.0"},   {"cuda-13.0-base", "cuda.version", "13.0.2"},
      {"cuda-13.0-base", "image.flavor", "base"},            {"pytorch-2.9-cu126", "cuda.version", "12.6.3"},
      {"pytorch-2.9-cu128", "cuda.version", "12.8.1"},       {"pytorch-2.9-cu130", "cuda.version", "13.0.2"},
      {"tensorflow-2.20-cu125", "cuda.version", "12.5.1"},   {"cuda-12.4-debian12-install", "os.distro", "debian"},
  };
  for (const Expect& row : rows) {
    INFO(row.name << " " << row.field);
    const auto result = run_gpuenv({"profile", "show", "--json", row.name});
    REQUIRE(result.exit_code == 0);
    const auto json = parse_json(result.out);
    CHECK(json.at("fields").value(row.field, std::string()) == row.value);
  }
  const auto tf = parse_json(run_gpuenv({"profile", "show", "--json", "tensorflow-2.10-cu112"}).out);
  CHECK(tf.at("fields").contains("framework.variant") == false);
  const auto bare = parse_json(run_gpuenv({"profile", "show", "--json", "cuda-11.8-ubuntu22.04"}).out);
  CHECK(bare.at("fields").contains("framework.name") == false);
}

TEST_CASE("`profile list` lists every shipped profile once", "[cli][e2e][profiles]") {
  const auto result = run_gpuenv({"profile", "list"});
  REQUIRE(result.exit_code == 0);
  const auto files = shipped_files();
  std::vector<std::string> first_words;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) first_words.push_back(line.substr(0, line.find(' ')));
  std::vector<std::string> stems;
  for (const ShippedFile& file : files) stems.push_back(file.stem);
  CHECK(first_words == stems);

  const auto json = parse_json(run_gpuenv({"profile", "list", "--json"}).out);
  REQUIRE(json.size() == files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    CHECK(json[i].at("name") == files[i].stem);
    CHECK_FALSE(json[i].at("description").get<std::string>().empty());
  }
  const auto matrix = std::find_if(json.begin(), json.end(), [](const auto& row) { return row.at("name") == "pytorch-matrix"; });
  REQUIRE(matrix != json.end());
  CHECK(matrix->at("cells") == 11);
}

TEST_CASE("`profile show` prints the derived image tag and wheel index", "[cli][e2e][profiles]") {
  const auto text = run_gpuenv({"profile", "show", "pytorch-2.9-cu128"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("image: nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04\n") != std::string::npos);
  CHECK(text.out.find("wheel_index_url: https://download.pytorch.org/whl/cu128\n") != std::string::npos);
  CHECK(text.out.find("torch_variant: cu128\n") != std::string::npos);

  struct Expect {
    const char* name;
    const char* image;  ///< "" when no image is derived
    const char* wheel;  ///< "" when no wheel index is derived
  };
  const Expect rows[] = {
      {"pytorch-1.13-cu117", "nvidia/cuda:11.7.1-cudnn8-runtime-ubuntu22.04", "https://download.pytorch.org/whl/cu117"},
      {"pytorch-2.9-cu126", "nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04", "https://download.pytorch.org/whl/cu126"},
      {"pytorch-2.9-cu130", "nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04", "https://download.pytorch.org/whl/cu130"},
      {"pytorch-2.9-cu128-rockylinux9", "nvidia/cuda:12.8.1-cudnn-runtime-rockylinux9", "https://download.pytorch.org/whl/cu128"},
      {"tensorflow-2.10-cu112", "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04", ""},
      {"tensorflow-2.20-cu125", "nvidia/cuda:12.5.1-cudnn-runtime-ubuntu22.04", ""},
      {"cuda-13.0-base", "nvidia/cuda:13.0.2-base-ubuntu24.04", ""},
      {"cuda-11.8-ubuntu22.04", "nvidia/cuda:11.8.0-runtime-ubuntu22.04", ""},
      {"cuda-12.4-debian12-install", "", ""},
  };
  for (const Expect& row : rows) {
    INFO(row.name);
    const auto result = run_gpuenv({"profile", "show", "--json", row.name});
    REQUIRE(result.exit_code == 0);
    const auto derived = parse_json(result.out).at("derived");
    CHECK(derived.value("image", std::string()) == row.image);
    CHECK(derived.value("wheel_index_url", std::string()) == row.wheel);
  }

  const auto driver = parse_json(run_gpuenv({"profile", "show", "--json", "cuda-12.8-driver570-open"}).out);
  CHECK(driver.at("fields").at("driver.modules") == "open");
  CHECK(driver.at("derived").at("driver_branch") == "570");
  CHECK(driver.at("derived").at("driver_floor") == "570.124.06");
}

TEST_CASE("`profile show` of a matrix profile shows every cell", "[cli][e2e][profiles]") {
  const auto result = run_gpuenv({"profile", "show", "--json", "pytorch-matrix"});
  REQUIRE(result.exit_code == 0);
  const auto cells = parse_json(result.out);
  REQUIRE(cells.is_array());
  REQUIRE(cells.size() == 11);
  CHECK(cells[0].at("cell").at("cuda.version") == "12.6.3");
  CHECK(cells[0].at("derived").at("wheel_index_url") == "https://download.pytorch.org/whl/cu126");
  CHECK(cells[10].at("cell").at("framework.python") == "3.14");
  CHECK(cells[10].at("derived").at("wheel_index_url") == "https://download.pytorch.org/whl/cu130");
}

TEST_CASE("`matrix --format github` prints {\"include\": [...]} of the valid cells only", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", "pytorch-matrix", "--format", "github"});
  REQUIRE(result.exit_code == 0);
  const auto json = parse_json(result.out);
  REQUIRE(json.is_object());
  CHECK(json.size() == 1);
  const auto& include = json.at("include");
  REQUIRE(include.is_array());
  CHECK(include.size() == 11);
  std::set<std::string> labels;
  for (const auto& cell : include) {
    CHECK(cell.at("profile") == "pytorch-matrix");
    const std::string cuda = cell.at("cuda.version");
    const std::string python = cell.at("framework.python");
    CHECK((cuda == "12.6.3" || cuda == "12.8.1" || cuda == "13.0.2"));
    // Python 3.10 is excluded except on CUDA 12.6.3.
    CHECK_FALSE((python == "3.10" && cuda != "12.6.3"));
    CHECK(cell.at("set").get<std::string>().find("--set cuda.version=" + cuda) != std::string::npos);
    labels.insert(cell.at("label").get<std::string>());
  }
  CHECK(labels.size() == include.size());
  CHECK(labels.count("cuda.version=13.0.2,framework.python=3.13,image.flavor=devel") == 1);

  // A matrix with an invalid product cell: `matrix` drops it (exit 0) where `profile check` fails.
  const std::string mixed = fixture_path("profiles/invalid/matrix-with-invalid-cell.toml");
  const auto filtered = run_gpuenv({"matrix", mixed, "--format", "github"});
  CHECK(filtered.exit_code == 0);
  const auto kept = parse_json(filtered.out).at("include");
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].at("framework.python") == "3.12");
  CHECK(kept[0].at("profile") == mixed);
  CHECK(run_gpuenv({"profile", "check", mixed}).exit_code == 1);
}

TEST_CASE("`matrix --format json` marks validity and requested cells", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", fixture_path("profiles/valid/matrix-exclude-include.toml"), "--format", "json"});
  REQUIRE(result.exit_code == 0);
  const auto cells = parse_json(result.out).at("cells");
  REQUIRE(cells.size() == 4);
  CHECK(cells[0].at("cell") == nlohmann::json({{"cuda.version", "12.1.1"}, {"framework.python", "3.10"}}));
  CHECK(cells[2].at("cell").at("image.flavor") == "devel");
  CHECK(cells[2].at("requested") == false);
  CHECK(cells[3].at("cell") == nlohmann::json({{"cuda.version", "11.8.0"}, {"framework.python", "3.10"}}));
  CHECK(cells[3].at("requested") == true);
  for (const auto& cell : cells) CHECK(cell.at("valid") == true);
}

TEST_CASE("`matrix` without a matrix yields the base profile as one cell", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", "pytorch-2.4-cu124", "--format", "github"});
  REQUIRE(result.exit_code == 0);
  const auto include = parse_json(result.out).at("include");
  REQUIRE(include.size() == 1);
  CHECK(include[0].at("label") == "pytorch-2.4-cu124");
  CHECK(include[0].at("set") == "");
  const auto invalid = run_gpuenv({"matrix", fixture_path("profiles/invalid/torch-2.4-python-3.13.toml"), "--format", "github"});
  CHECK(invalid.exit_code == 1);
  CHECK(parse_json(invalid.out).at("include").empty());
}

TEST_CASE("--version and --help exit 0", "[cli][e2e]") {
  const auto version = run_gpuenv({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("gpuenv ", 0) == 0);
  const auto help = run_gpuenv({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("profile") != std::string::npos);
  CHECK(help.out.find("matrix") != std::string::npos);
  CHECK(help.out.find("Exit codes") != std::string::npos);
}

TEST_CASE("usage errors exit 2", "[cli][e2e]") {
  CHECK(run_gpuenv({}).exit_code == 2);
  CHECK(run_gpuenv({"frobnicate"}).exit_code == 2);
  CHECK(run_gpuenv({"profile"}).exit_code == 2);
  CHECK(run_gpuenv({"profile", "frobnicate"}).exit_code == 2);
  CHECK(run_gpuenv({"profile", "check"}).exit_code == 2);
  CHECK(run_gpuenv({"matrix", "pytorch-matrix", "--format", "yaml"}).exit_code == 2);
  CHECK(run_gpuenv({"profile", "check", fixture_path("profiles/does-not-exist.toml")}).exit_code == 2);
}

TEST_CASE("an unknown profile name exits 2 with a did-you-mean", "[cli][e2e]") {
  const std::vector<std::vector<std::string>> commands = {
      {"profile", "check", "pytorch-2.4-cu12"}, {"profile", "show", "pytorch-2.4-cu12"}, {"matrix", "pytorch-2.4-cu12"}};
  for (const auto& args : commands) {
    INFO(args[0] << " " << args[1]);
    const auto result = run_gpuenv(args);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("no shipped profile named `pytorch-2.4-cu12`") != std::string::npos);
    CHECK(result.err.find("did you mean `pytorch-2.4-cu124`?") != std::string::npos);
  }
}
