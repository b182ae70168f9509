// `gpuenv dockerfile` end to end through the built binary: golden files, the committed dockerfiles/ tree,
// --set, -o, --all with its index, refusals with the same findings as `profile check`, and bad input (exit 2,
// no partial files). Update the golden files with scripts/regen-dockerfiles (or GPUENV_UPDATE_GOLDEN=1).

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "dockerfile_support.hpp"
#include "support/fake_system.hpp"
#include "support/source_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::testing::run_gpuenv;
using gpuenv::util::contains;

using gpuenv::testing::k_source;
const std::string k_fixtures = "tests/fixtures/dockerfile/";

struct GoldenCase {
  std::string file;
  std::vector<std::string> args;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> out;
  std::istringstream lines(read_text(k_source / k_fixtures / "golden/cases.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    GoldenCase c;
    words >> c.file;
    std::string word;
    while (words >> word) c.args.push_back(word);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> dockerfile_args(std::vector<std::string> args) {
  args.insert(args.begin(), "dockerfile");
  return args;
}

/// `text` with every run of spaces made one (table columns differ with the longest id).
std::string squeeze(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

/// The FAIL lines of a findings table ("  FAIL  id  message"), spaces squeezed.
std::vector<std::string> fail_lines(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view line : gpuenv::util::split_lines(text)) {
    if (contains(line, "FAIL ")) out.push_back(squeeze(line));
  }
  return out;
}

nlohmann::json parse_json(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  INFO(text);
  REQUIRE_FALSE(json.is_discarded());
  return json;
}

}  // namespace

TEST_CASE("dockerfile: golden Dockerfiles: representative profiles render byte for byte as reviewed",
          "[dockerfile][e2e][golden][system-test]") {
  const bool update = std::getenv("GPUENV_UPDATE_GOLDEN") != nullptr;
  const auto cases = golden_cases();
  REQUIRE(cases.size() >= 12);
  for (const GoldenCase& c : cases) {
    INFO("golden " << c.file << ": gpuenv dockerfile " << gpuenv::util::join(c.args, " "));
    const auto result = run_in_source(dockerfile_args(c.args));
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    const fs::path golden = k_source / k_fixtures / "golden" / c.file;
    if (update) write_text(golden, result.out);
    CHECK(result.out == read_text(golden));
    CHECK(own_problems(result.out).empty());
  }
  // Every golden file is listed (no stale leftovers).
  std::set<std::string> listed;
  for (const GoldenCase& c : cases) listed.insert(c.file);
  for (const std::string& name : files_in(k_source / k_fixtures / "golden", ".Dockerfile"))
    CHECK(listed.contains(name));
}

TEST_CASE("dockerfiles/ holds the current Dockerfile of every shipped profile that can have one",
          "[dockerfile][e2e][system-test]") {
  const auto list = run_gpuenv({"profile", "list"});
  REQUIRE(list.exit_code == 0);
  std::set<std::string> expected;
  for (std::string_view line : gpuenv::util::split_lines(list.out)) {
    const std::string name(line.substr(0, line.find(' ')));
    if (name.empty()) continue;
    const auto result = run_in_source({"dockerfile", name});
    const fs::path file = k_source / "dockerfiles" / (name + ".Dockerfile");
    INFO(name << "\n" << result.err);
    if (result.exit_code == 1) {
      CHECK(result.out.empty());
      CHECK_FALSE(fs::exists(file));
      continue;
    }
    REQUIRE(result.exit_code == 0);
    expected.insert(name + ".Dockerfile");
    INFO("dockerfiles/" << name << ".Dockerfile is stale or missing: run scripts/regen-dockerfiles");
    REQUIRE(fs::exists(file));
    CHECK(read_text(file) == result.out);
  }
  CHECK(expected.size() >= 14);
  const auto present = files_in(k_source / "dockerfiles", ".Dockerfile");
  CHECK(std::set<std::string>(present.begin(), present.end()) == expected);
}

TEST_CASE("dockerfile: the -o file holds exactly what stdout gets and warnings go to stderr only",
          "[dockerfile][e2e]") {
  TempDir dir;
  const auto to_stdout = run_gpuenv({"dockerfile", "tensorflow-2.10-cu112"});
  REQUIRE(to_stdout.exit_code == 0);
  CHECK(contains(to_stdout.err, "gpuenv: warning: image.tag:"));  // CUDA 11.2.2 images are end-of-life
  CHECK_FALSE(contains(to_stdout.out, "gpuenv: warning"));
  const std::string path = (dir.path() / "tf.Dockerfile").string();
  const auto to_file = run_gpuenv({"dockerfile", "tensorflow-2.10-cu112", "-o", path});
  REQUIRE(to_file.exit_code == 0);
  CHECK(to_file.out.empty());
  CHECK(read_text(path) == to_stdout.out);
  // Same input, same bytes.
  CHECK(run_gpuenv({"dockerfile", "tensorflow-2.10-cu112"}).out == to_stdout.out);
}

TEST_CASE("dockerfile: a matrix profile: the first valid cell by default, --set picks a cell or overrides a field",
          "[dockerfile][e2e]") {
  const auto first = run_gpuenv({"dockerfile", "pytorch-matrix"});
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.err, "using the first valid one, cuda.version=12.6.3,framework.python=3.10,os.arch=x86_64"));
  CHECK(contains(first.out,
                 "# Regenerate with: gpuenv dockerfile pytorch-matrix --set cuda.version=12.6.3 --set "
                 "framework.python=3.10 --set os.arch=x86_64\n"));
  // The same cell named explicitly gives the same file, and no note.
  const auto named = run_gpuenv({"dockerfile", "pytorch-matrix", "--set", "cuda.version=12.6.3", "--set",
                                 "framework.python=3.10", "--set", "os.arch=x86_64"});
  REQUIRE(named.exit_code == 0);
  CHECK(named.out == first.out);
  CHECK(named.err.empty());
  // An include-extended cell: the devel image.
  const auto devel =
      run_gpuenv({"dockerfile", "pytorch-matrix", "--set", "cuda.version=13.0.2", "--set", "framework.python=3.13"});
  REQUIRE(devel.exit_code == 0);
  CHECK(contains(devel.out, "FROM nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04\n"));
  CHECK(contains(
      devel.out,
      "--set cuda.version=13.0.2 --set framework.python=3.13 --set os.arch=x86_64 --set image.flavor=devel\n"));
  // A field outside the matrix overrides; one axis value picks among the rest.
  const auto flavor =
      run_gpuenv({"dockerfile", "pytorch-matrix", "--set", "cuda.version=12.8.1", "--set", "image.flavor=devel"});
  REQUIRE(flavor.exit_code == 0);
  CHECK(contains(flavor.out, "FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04\n"));
  CHECK(contains(
      flavor.out,
      "--set cuda.version=12.8.1 --set framework.python=3.11 --set os.arch=x86_64 --set image.flavor=devel\n"));
  // An axis value no cell has: the base profile with the override, said on stderr.
  const auto off_axis =
      run_gpuenv({"dockerfile", "pytorch-matrix", "--set", "cuda.version=12.6.3", "--set", "framework.python=3.14"});
  INFO(off_axis.err);
  REQUIRE(off_axis.exit_code == 0);
  CHECK(contains(off_axis.err, "no matrix cell of pytorch-matrix has cuda.version=12.6.3,framework.python=3.14"));
  CHECK(contains(off_axis.out, "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\n"));  // PyTorch: lean base (issue 12)
  CHECK(contains(off_axis.out, "uv python install 3.14"));
  // An axis value with no wheel: refused like any other invalid profile.
  CHECK(run_gpuenv({"dockerfile", "pytorch-matrix", "--set", "cuda.version=12.9.1"}).exit_code == 1);
}

TEST_CASE("dockerfile: refused profiles: exit 1, nothing on stdout, the same findings as profile check",
          "[dockerfile][e2e]") {
  const std::string path = k_fixtures + "torch-python-3.15.toml";
  const auto check = run_in_source({"profile", "check", path});
  REQUIRE(check.exit_code == 1);
  const auto refused = run_in_source({"dockerfile", path});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK(contains(refused.err, "refusing to write a Dockerfile"));
  const auto expected = fail_lines(check.out);
  REQUIRE_FALSE(expected.empty());
  for (const std::string& line : expected) {
    INFO(line << "\n---\n" << refused.err);
    CHECK(contains(squeeze(refused.err), line));
  }
  // Debian passes profile check (fine for install) but has no nvidia/cuda image: image.os fails for a Dockerfile.
  const auto debian = run_gpuenv({"dockerfile", "cuda-12.4-debian12-install"});
  CHECK(debian.exit_code == 1);
  CHECK(debian.out.empty());
  CHECK(contains(debian.err, "FAIL  image.os"));
  // An unpublished tag via --set.
  const auto unpublished = run_gpuenv({"dockerfile", "pytorch-2.4-cu124", "--set", "os.version=24.04"});
  CHECK(unpublished.exit_code == 1);
  CHECK(unpublished.out.empty());
  CHECK(contains(unpublished.err, "FAIL  image.tag"));
  CHECK(contains(unpublished.err, "nvidia/cuda:12.4.1-base-ubuntu24.04 was never published"));
}

TEST_CASE("dockerfile: all: one Dockerfile per valid cell, identical to the single-cell command, and an index",
          "[dockerfile][e2e][system-test]") {
  TempDir dir;
  const std::string profile = k_fixtures + "matrix-frameworks.toml";
  const auto all = run_in_source({"dockerfile", profile, "--all", "--out-dir", dir.str()});
  INFO(all.err);
  REQUIRE(all.exit_code == 0);
  const auto index = parse_json(read_text(dir.path() / "index.json"));
  CHECK(index.at("schema") == 1);
  CHECK(index.at("profile") == "matrix-frameworks");
  const auto& written = index.at("dockerfiles");
  const auto& skipped = index.at("skipped");
  CHECK(written.size() + skipped.size() == 4 * 3 * 2 * 2 - 3 * 2 + 1);  // product - exclude + one new include cell
  CHECK(written.size() >= 10);
  CHECK(skipped.size() >= 10);
  CHECK(files_in(dir.path(), ".Dockerfile").size() == written.size());
  CHECK(contains(all.err, "wrote " + std::to_string(written.size()) + " Dockerfiles and index.json"));
  CHECK(contains(all.err,
                 "skipped cuda.version=11.8.0,framework.python=3.10,framework.version=1.13.1,image.flavor=runtime: "
                 "pytorch.variant"));
  for (const auto& entry : written) {
    const std::string file = entry.at("file");
    INFO(file);
    CHECK(gpuenv::util::starts_with(file, "matrix-frameworks_"));
    CHECK(gpuenv::util::ends_with(file, ".Dockerfile"));
    for (const auto& [key, value] : entry.at("cell").items())
      CHECK(contains(file, "_" + key + "-" + value.get<std::string>()));
    std::vector<std::string> args{"dockerfile", profile};
    const std::string set = entry.at("set").get<std::string>();
    for (std::string_view word : gpuenv::util::split(set, ' ')) args.emplace_back(word);
    const auto one = run_in_source(args);
    REQUIRE(one.exit_code == 0);
    CHECK(read_text(dir.path() / file) == one.out);
    CHECK(contains(one.out, "FROM " + entry.at("image").get<std::string>() + "\n"));
    CHECK(contains(one.out, entry.at("profile_hash").get<std::string>()));
  }
  for (const auto& entry : skipped) {
    CHECK_FALSE(entry.at("findings").empty());
    CHECK(entry.at("findings")[0].at("status") == "fail");
  }
}

TEST_CASE("dockerfile: all: exit 1 when a cell asked for by include is invalid, and still writes the valid ones",
          "[dockerfile][e2e]") {
  TempDir dir;
  const auto all =
      run_in_source({"dockerfile", k_fixtures + "matrix-requested-invalid.toml", "--all", "--out-dir", dir.str()});
  CHECK(all.exit_code == 1);
  CHECK(contains(all.err, "(include): image.tag"));
  CHECK(files_in(dir.path(), ".Dockerfile") ==
        std::vector<std::string>{"matrix-requested-invalid_framework.python-3.10.Dockerfile",
                                 "matrix-requested-invalid_framework.python-3.11.Dockerfile"});
  const auto index = parse_json(read_text(dir.path() / "index.json"));
  REQUIRE(index.at("skipped").size() == 1);
  CHECK(index.at("skipped")[0].at("requested") == true);
  // A profile without a matrix: one file named after it; an invalid one is "requested" too.
  TempDir single;
  REQUIRE(
      run_gpuenv({"dockerfile", "pytorch-2.4-cu124", "--all", "--out-dir", single.str(), "--with-doctor"}).exit_code ==
      0);
  CHECK(files_in(single.path(), ".Dockerfile") == std::vector<std::string>{"pytorch-2.4-cu124.Dockerfile"});
  CHECK(parse_json(read_text(single.path() / "index.json")).at("with_doctor") == true);
  TempDir refused;
  CHECK(run_gpuenv({"dockerfile", "cuda-12.4-debian12-install", "--all", "--out-dir", refused.str()}).exit_code == 1);
  CHECK(files_in(refused.path(), ".Dockerfile").empty());
}

TEST_CASE("dockerfile: bad input: a clear message, exit 2, and no files", "[dockerfile][e2e]") {
  TempDir dir;
  struct Bad {
    std::vector<std::string> args;
    const char* message;
  };
  const std::string file_not_dir = (dir.path() / "plain-file").string();
  write_text(file_not_dir, "x");
  const Bad cases[] = {
      {{"pytorch-2.4-cu124", "--set", "cuda.versoin=12.4.1"}, "did you mean `cuda.version`"},
      {{"pytorch-2.4-cu124", "--set", "cuda.version=12.4"}, "`cuda.version` = \"12.4\" is not valid"},
      {{"pytorch-2.4-cu124", "--set", "cuda.version"}, "expected FIELD=VALUE"},
      {{"no-such-profile"}, "no-such-profile"},
      {{"pytorch-matrix", "--all"}, "--all needs --out-dir"},
      {{"pytorch-matrix", "--out-dir", dir.str()}, "--out-dir is for --all"},
      {{"pytorch-matrix", "--all", "--out-dir", dir.str(), "--set", "framework.python=3.11"}, "--set picks one cell"},
      {{"pytorch-matrix", "--all", "--out-dir", dir.str(), "-o", "x"}, "-o writes one Dockerfile"},
      {{"pytorch-matrix", "--all", "--out-dir", (dir.path() / "missing").string()}, "no such directory"},
      {{"pytorch-matrix", "--all", "--out-dir", file_not_dir}, "cannot write"},
      {{"pytorch-2.4-cu124", "-o", (dir.path() / "missing" / "x.Dockerfile").string()}, "cannot write"},
  };
  for (const Bad& bad : cases) {
    INFO(gpuenv::util::join(bad.args, " "));
    const auto result = run_gpuenv(dockerfile_args(bad.args));
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(contains(result.err, bad.message));
  }
  if (::geteuid() != 0) {  // root writes through permission bits
    const fs::path locked = dir.path() / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    const auto result = run_gpuenv({"dockerfile", "pytorch-matrix", "--all", "--out-dir", locked.string()});
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, "cannot write"));
    fs::permissions(locked, fs::perms::owner_all);
    CHECK(fs::is_empty(locked));
  }
  // Nothing was written anywhere: the temp dir holds only the plain file made above.
  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path()))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK((left == std::vector<std::string>{"locked", "plain-file"} || left == std::vector<std::string>{"plain-file"}));
}
