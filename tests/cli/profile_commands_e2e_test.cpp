// The shipped profiles and the `profile list|show|check` and `matrix` commands, end to end through the built binary.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compat/derive.hpp"
#include "compat/knowledge_base.hpp"
#include "profile/fields.hpp"
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

gpuenv::profile::ProfileDocument parse_shipped(const std::string& stem) {
  const std::string path = std::string(GPUENV_SOURCE_DIR) + "/profiles/" + stem + ".toml";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto document = gpuenv::profile::parse_profile(text.str(), path);
  INFO(path);
  REQUIRE(document.has_value());
  return *document;
}

nlohmann::json parse_json(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  INFO(text);
  REQUIRE_FALSE(json.is_discarded());
  return json;
}

}  // namespace

TEST_CASE("gpuenv ships at least 14 profiles, each named after its file with a one-line description",
          "[cli][e2e][profiles]") {
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

TEST_CASE("every shipped profile passes profile check", "[cli][e2e][profiles]") {
  // One run per form (by name with --json, by path as text) keeps this fast; each result is still per file.
  const auto files = shipped_files();
  std::vector<std::string> by_name{"profile", "check", "--json"};
  std::vector<std::string> by_path{"profile", "check"};
  for (const ShippedFile& file : files) {
    by_name.push_back(file.stem);
    by_path.push_back(file.path);
  }
  const auto named = run_gpuenv(by_name);
  INFO(named.err);
  CHECK(named.exit_code == 0);
  const auto json = parse_json(named.out);
  REQUIRE(json.is_array());
  REQUIRE(json.size() == files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO(files[i].stem);
    CHECK(json[i].at("profile") == files[i].stem);
    CHECK(json[i].at("origin") == "builtin:" + files[i].stem);
    CHECK(json[i].at("valid") == true);
    for (const auto& cell : json[i].at("cells")) {
      CHECK(cell.at("valid") == true);
      for (const auto& finding : cell.at("findings")) {
        INFO(finding.dump());
        CHECK(finding.at("status") != "fail");
      }
    }
  }

  const auto pathed = run_gpuenv(by_path);
  INFO(pathed.out << pathed.err);
  CHECK(pathed.exit_code == 0);
  for (const ShippedFile& file : files) CHECK(pathed.out.find(file.stem + " (" + file.path + ")") != std::string::npos);
  CHECK(pathed.out.find("INCOMPATIBLE") == std::string::npos);
}

TEST_CASE("the required shipped profiles hold the versions they promise", "[cli][profiles]") {
  struct Expect {
    const char* name;
    const char* field;
    const char* value;
  };
  const Expect rows[] = {
      {"pytorch-1.13-cu117", "framework.version", "1.13.1"},
      {"pytorch-1.13-cu117", "cuda.version", "11.7.1"},
      {"pytorch-1.13-cu117", "framework.python", "3.10"},
      {"pytorch-1.13-cu117", "os.version", "22.04"},
      {"pytorch-1.13-cu117", "cudnn.version", "8"},
      {"pytorch-1.13-cu117", "image.flavor", ""},  // unset: gpuenv picks `base` for a wheel framework
      {"tensorflow-2.10-cu112", "framework.name", "tensorflow"},
      {"tensorflow-2.10-cu112", "framework.version", "2.10.0"},
      {"tensorflow-2.10-cu112", "cuda.version", "11.2.2"},
      {"tensorflow-2.10-cu112", "os.version", "20.04"},
      {"tensorflow-2.10-cu112", "cudnn.version", "8"},
      {"tensorflow-2.10-cu112", "framework.variant", ""},
      {"cuda-11.8-ubuntu22.04", "cuda.version", "11.8.0"},
      {"cuda-11.8-ubuntu22.04", "framework.name", ""},
      {"cuda-13.0-base", "cuda.version", "13.0.2"},
      {"cuda-13.0-base", "image.flavor", "base"},
      {"cuda-13.0-base", "os.version", "24.04"},
      {"pytorch-2.9-cu126", "cuda.version", "12.6.3"},
      {"pytorch-2.9-cu128", "cuda.version", "12.8.1"},
      {"pytorch-2.9-cu130", "cuda.version", "13.0.2"},
      {"pytorch-2.9-cu130", "cudnn.version", "9"},
      {"tensorflow-2.20-cu125", "cuda.version", "12.5.1"},
      {"tensorflow-2.20-cu125", "framework.version", "2.20.0"},
      {"tensorflow-2.20-cu125", "os.version", "22.04"},
      {"pytorch-2.9-cu128-rockylinux9", "os.distro", "rockylinux"},
      {"cuda-12.4-debian12-install", "os.distro", "debian"},
      {"cuda-12.4-debian12-install", "os.version", "12"},
      {"cuda-12.8-driver570-open", "driver.modules", "open"},
      {"cuda-12.8-driver570-open", "driver.branch", "570"},
  };
  for (const Expect& row : rows) {
    INFO(row.name << " " << row.field);
    CHECK(gpuenv::profile::get_field(parse_shipped(row.name).base, row.field) == row.value);
  }
  CHECK_FALSE(parse_shipped("pytorch-2.9-cu128-h100").base.gpu_models.empty());
  CHECK(parse_shipped("pytorch-2.9-cu126").base.framework_version == "2.9.1");
  CHECK_FALSE(parse_shipped("pytorch-matrix").matrix.empty());
}

TEST_CASE("profile list lists every shipped profile once", "[cli][e2e][profiles]") {
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
  const auto matrix =
      std::find_if(json.begin(), json.end(), [](const auto& row) { return row.at("name") == "pytorch-matrix"; });
  REQUIRE(matrix != json.end());
  CHECK(matrix->at("cells") == 21);  // 10 CUDA/Python cells on x86_64 and arm64, and Python 3.14
}

TEST_CASE("profile show prints the derived image tag and wheel index", "[cli][e2e][profiles]") {
  const auto text = run_gpuenv({"profile", "show", "pytorch-2.9-cu128"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("# pytorch-2.9-cu128 (builtin:pytorch-2.9-cu128)\n") == 0);
  CHECK(text.out.find("\ncuda.version: 12.8.1\n") != std::string::npos);
  CHECK(text.out.find("  image: nvidia/cuda:12.8.1-base-ubuntu24.04\n") != std::string::npos);
  CHECK(text.out.find("  wheel_index_url: https://download.pytorch.org/whl/cu128\n") != std::string::npos);
  CHECK(text.out.find("  torch_variant: cu128\n") != std::string::npos);

  const auto old = parse_json(run_gpuenv({"profile", "show", "--json", "pytorch-1.13-cu117"}).out);
  CHECK(old.at("derived").at("image") == "nvidia/cuda:11.7.1-base-ubuntu22.04");
  CHECK(old.at("derived").at("wheel_index_url") == "https://download.pytorch.org/whl/cu117");
  CHECK(old.at("fields").at("framework.version") == "1.13.1");

  const auto install_only = parse_json(run_gpuenv({"profile", "show", "--json", "cuda-12.4-debian12-install"}).out);
  CHECK_FALSE(install_only.at("derived").contains("image"));
  CHECK_FALSE(install_only.at("derived").contains("wheel_index_url"));
  CHECK(install_only.at("derived").at("driver_floor") == "550.54.15");

  const auto driver = parse_json(run_gpuenv({"profile", "show", "--json", "cuda-12.8-driver570-open"}).out);
  CHECK(driver.at("fields").at("driver.modules") == "open");
  CHECK(driver.at("derived").at("driver_branch") == "570");
  CHECK(driver.at("derived").at("driver_floor") == "570.124.06");
  CHECK(driver.at("derived").at("driver_floor_reason") == "driver.min");
}

TEST_CASE("the shipped profiles derive the images and wheel indexes their names promise", "[cli][profiles]") {
  auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE(kb.has_value());
  struct Expect {
    const char* name;
    const char* image;  ///< "" when no tag can be formed
    const char* wheel;  ///< "" without PyTorch
  };
  const Expect rows[] = {
      {"pytorch-1.13-cu117", "11.7.1-base-ubuntu22.04", "https://download.pytorch.org/whl/cu117"},
      {"pytorch-2.4-cu124", "12.4.1-base-ubuntu22.04", "https://download.pytorch.org/whl/cu124"},
      {"pytorch-2.9-cu126", "12.6.3-base-ubuntu24.04", "https://download.pytorch.org/whl/cu126"},
      {"pytorch-2.9-cu128", "12.8.1-base-ubuntu24.04", "https://download.pytorch.org/whl/cu128"},
      {"pytorch-2.9-cu130", "13.0.2-base-ubuntu24.04", "https://download.pytorch.org/whl/cu130"},
      {"pytorch-2.9-cu128-rockylinux9", "12.8.1-base-rockylinux9", "https://download.pytorch.org/whl/cu128"},
      {"pytorch-2.7-cu118-ubi8", "11.8.0-base-ubi8", "https://download.pytorch.org/whl/cu118"},
      {"tensorflow-2.10-cu112", "11.2.2-cudnn8-runtime-ubuntu20.04", ""},
      {"tensorflow-2.20-cu125", "12.5.1-base-ubuntu22.04", ""},
      {"cuda-13.0-base", "13.0.2-base-ubuntu24.04", ""},
      {"cuda-13.0-ubi9-devel", "13.0.2-cudnn-devel-ubi9", ""},
      {"cuda-11.8-ubuntu22.04", "11.8.0-runtime-ubuntu22.04", ""},
      {"cuda-12.8-driver570-open", "12.8.1-cudnn-devel-ubuntu24.04", ""},
      {"cuda-12.4-debian12-install", "", ""},
  };
  for (const Expect& row : rows) {
    INFO(row.name);
    const auto derived = gpuenv::compat::derive(parse_shipped(row.name).base, **kb);
    CHECK(derived.image_tag == row.image);
    CHECK(derived.wheel_index_url == row.wheel);
  }
}

TEST_CASE("profile show of a matrix profile shows every cell", "[cli][e2e][profiles]") {
  const auto result = run_gpuenv({"profile", "show", "--json", "pytorch-matrix"});
  REQUIRE(result.exit_code == 0);
  const auto cells = parse_json(result.out);
  REQUIRE(cells.is_array());
  REQUIRE(cells.size() == 21);
  CHECK(cells[0].at("cell").at("cuda.version") == "12.6.3");
  CHECK(cells[0].at("derived").at("wheel_index_url") == "https://download.pytorch.org/whl/cu126");
  CHECK(cells[20].at("cell").at("framework.python") == "3.14");
  CHECK(cells[20].at("derived").at("image") == "nvidia/cuda:13.0.2-base-ubuntu24.04");
  CHECK(cells[20].at("derived").at("wheel_index_url") == "https://download.pytorch.org/whl/cu130");
}

TEST_CASE("matrix --format github prints an include list of the valid cells only", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", "pytorch-matrix", "--format", "github"});
  REQUIRE(result.exit_code == 0);
  const auto json = parse_json(result.out);
  REQUIRE(json.is_object());
  CHECK(json.size() == 1);
  const auto& include = json.at("include");
  REQUIRE(include.is_array());
  CHECK(include.size() == 21);
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
  CHECK(labels.count("cuda.version=13.0.2,framework.python=3.13,os.arch=x86_64,image.flavor=devel") == 1);
  CHECK(labels.count("cuda.version=13.0.2,framework.python=3.13,os.arch=arm64,image.flavor=devel") == 1);

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

TEST_CASE("matrix --format json marks validity and requested cells", "[cli][e2e][matrix]") {
  const auto result =
      run_gpuenv({"matrix", fixture_path("profiles/valid/matrix-exclude-include.toml"), "--format", "json"});
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

TEST_CASE("matrix without a matrix yields the base profile as one cell", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", "pytorch-2.4-cu124", "--format", "github"});
  REQUIRE(result.exit_code == 0);
  const auto include = parse_json(result.out).at("include");
  REQUIRE(include.size() == 1);
  CHECK(include[0].at("label") == "pytorch-2.4-cu124");
  CHECK(include[0].at("set") == "");
  const auto invalid =
      run_gpuenv({"matrix", fixture_path("profiles/invalid/torch-2.4-python-3.13.toml"), "--format", "github"});
  CHECK(invalid.exit_code == 1);
  CHECK(parse_json(invalid.out).at("include").empty());
}

TEST_CASE("gpuenv version and help flags exit 0", "[cli][e2e]") {
  const auto version = run_gpuenv({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("gpuenv ", 0) == 0);
  const auto help = run_gpuenv({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("profile") != std::string::npos);
  CHECK(help.out.find("matrix") != std::string::npos);
  CHECK(help.out.find("Exit codes") != std::string::npos);
  const auto profile_help = run_gpuenv({"profile", "--help"});
  CHECK(profile_help.exit_code == 0);
  CHECK(profile_help.out.find("check") != std::string::npos);
}

TEST_CASE("usage errors exit 2", "[cli][e2e]") {
  const std::vector<std::vector<std::string>> commands = {
      {},
      {"frobnicate"},
      {"--frobnicate"},
      {"profile"},
      {"profile", "frobnicate"},
      {"profile", "check"},
      {"profile", "show", "a", "b"},
      {"matrix", "pytorch-matrix", "--format", "yaml"},
  };
  for (const auto& args : commands) {
    std::string joined;
    for (const auto& arg : args) joined += arg + " ";
    INFO("gpuenv " << joined);
    const auto result = run_gpuenv(args);
    CHECK(result.exit_code == 2);
    CHECK_FALSE(result.err.empty());
  }
  const auto missing = run_gpuenv({"profile", "check", fixture_path("profiles/does-not-exist.toml")});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("does-not-exist.toml") != std::string::npos);
}

TEST_CASE("an unknown profile name exits 2 with a did-you-mean", "[cli][e2e]") {
  const std::vector<std::vector<std::string>> commands = {{"profile", "check", "pytorch-2.4-cu12"},
                                                          {"profile", "show", "pytorch-2.4-cu12"},
                                                          {"matrix", "pytorch-2.4-cu12"}};
  for (const auto& args : commands) {
    INFO(args[0] << " " << args[1]);
    const auto result = run_gpuenv(args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(result.err.find("no shipped profile named `pytorch-2.4-cu12`") != std::string::npos);
    CHECK(result.err.find("did you mean `pytorch-2.4-cu124`?") != std::string::npos);
  }
}
