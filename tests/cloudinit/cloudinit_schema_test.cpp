// Integration: the user-data of every shipped profile (and of each gpuenv source and --doctor-only) is valid to the
// real `cloud-init schema` (Debian's cloud-init, with python3-jsonschema), a broken document is not, and PyYAML reads
// back exactly the profile text and the per-boot script.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cloudinit/cloudinit.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace {

using gpuenv::testing::read_text;
using gpuenv::util::contains;

const std::string k_zero_sha(64, '0');

/// Why `cloud-init schema` cannot prove anything here, or "" when it can (cloud-init and jsonschema both present).
std::string schema_unavailable(gpuenv::system::System& system) {
  if (system.run({"cloud-init", "--version"}, std::chrono::seconds(30)).exit_code != 0) {
    return "cloud-init is not installed (scripts/bootstrap installs it)";
  }
  // Without jsonschema, cloud-init 22.4.2 skips validation and still prints "Valid".
  if (system.run({"python3", "-c", "import jsonschema"}, std::chrono::seconds(30)).exit_code != 0) {
    return "python3-jsonschema is not installed: cloud-init schema would not validate";
  }
  return "";
}

using gpuenv::testing::TempDir;

/// `cloud-init schema --config-file FILE`: exit 0 and its Valid line (22.4.2 "Valid cloud-config: FILE", >= 23.4
/// "Valid schema FILE").
bool schema_valid(gpuenv::system::System& system, const fs::path& file, std::string& output) {
  const auto result = system.run({"cloud-init", "schema", "--config-file", file.string()}, std::chrono::seconds(120));
  output = result.out + result.err;
  return result.exit_code == 0 && (contains(result.out, "Valid cloud-config: " + file.string()) ||
                                   contains(result.out, "Valid schema " + file.string()));
}

/// The --set arguments of the first cell of `name` the binary accepts (none for a profile without a matrix).
std::vector<std::string> first_usable_cell(const gpuenv::profile::ShippedProfile& shipped,
                                           const std::vector<std::string>& base_args) {
  auto system = gpuenv::system::make_real_system();
  auto document = gpuenv::profile::load_profile(shipped.name, *system);
  REQUIRE(document.has_value());
  if (document->matrix.empty()) return {};
  for (const auto& cell : gpuenv::profile::expand_matrix(*document)) {
    std::vector<std::string> set;
    for (const auto& [field, value] : cell.assignments) {
      set.push_back("--set");
      set.push_back(field + "=" + value);
    }
    std::vector<std::string> args = base_args;
    args.insert(args.end(), set.begin(), set.end());
    if (gpuenv::testing::run_gpuenv(args).exit_code == 0) return set;
  }
  FAIL("no cell of " << shipped.name << " yields user-data");
  return {};
}

}  // namespace

TEST_CASE("cloud-init schema calls every shipped profile's user-data Valid",
          "[cloudinit][integration][system-test][engine]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_IF_REASON(schema_unavailable(*system));
  TempDir dir;
  int validated = 0;
  for (const auto& shipped : gpuenv::profile::shipped_profiles()) {
    INFO(shipped.name);
    const fs::path file = dir.path() / (shipped.name + ".yaml");
    std::vector<std::string> args = {"cloud-init",      shipped.name, "--gpuenv-url", "https://example.com/gpuenv",
                                     "--gpuenv-sha256", k_zero_sha,   "-o",           file.string()};
    const std::vector<std::string> set = first_usable_cell(
        shipped,
        {"cloud-init", shipped.name, "--gpuenv-url", "https://example.com/gpuenv", "--gpuenv-sha256", k_zero_sha});
    args.insert(args.end(), set.begin(), set.end());
    const auto generated = gpuenv::testing::run_gpuenv(args);
    INFO(generated.err);
    REQUIRE(generated.exit_code == 0);
    // EC2 refuses user-data above 16 KB (docs/cloud-init.md).
    CHECK(fs::file_size(file) < 16384);
    std::string output;
    CHECK(schema_valid(*system, file, output));
    INFO(output);

    // What cloud-init's YAML reader hands the node is exactly the profile text and the script.
    const fs::path files = dir.path() / (shipped.name + ".files");
    fs::create_directory(files);
    const auto extracted = system->run(
        {"python3", std::string(GPUENV_SOURCE_DIR) + "/tests/cloudinit/write_files.py", file.string(), files.string()},
        std::chrono::seconds(60));
    INFO(extracted.err);
    REQUIRE(extracted.exit_code == 0);
    CHECK(read_text(files / "_etc_gpuenv_profile.toml") == shipped.text);
    CHECK(contains(read_text(files / "_var_lib_cloud_scripts_per-boot_50-gpuenv"), "GPUENV_MODE='install'"));
    ++validated;
  }
  CHECK(validated == static_cast<int>(gpuenv::profile::shipped_profiles().size()));
  WARN("cloud-init schema: " << validated << " shipped profiles' user-data Valid");
}

TEST_CASE("cloud-init schema calls each gpuenv source and --doctor-only Valid",
          "[cloudinit][integration][system-test][engine]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_IF_REASON(schema_unavailable(*system));
  TempDir dir;
  const std::vector<std::vector<std::string>> variants = {
      {"--gpuenv-deb", "https://example.com/gpuenv_0.1.0_amd64.deb", "--gpuenv-sha256", k_zero_sha},
      {"--gpuenv-preinstalled"},
      {"--gpuenv-preinstalled", "--gpuenv-path", "/opt/gpuenv/bin/gpuenv", "--doctor-only"},
      {"--gpuenv-url", "https://example.com/gpuenv", "--gpuenv-sha256", k_zero_sha, "--doctor-only"},
  };
  int n = 0;
  for (const auto& variant : variants) {
    const fs::path file = dir.path() / ("variant-" + std::to_string(n++) + ".yaml");
    std::vector<std::string> args = {"cloud-init", "cuda-12.4-debian12-install", "-o", file.string()};
    args.insert(args.end(), variant.begin(), variant.end());
    INFO(gpuenv::util::join(args, " "));
    const auto generated = gpuenv::testing::run_gpuenv(args);
    INFO(generated.err);
    REQUIRE(generated.exit_code == 0);
    std::string output;
    INFO(output);
    CHECK(schema_valid(*system, file, output));
  }
}

TEST_CASE("cloud-init schema rejects a broken user-data document (the check can fail)",
          "[cloudinit][integration][system-test][engine]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_IF_REASON(schema_unavailable(*system));
  TempDir dir;
  const fs::path good = dir.path() / "good.yaml";
  const auto generated =
      gpuenv::testing::run_gpuenv({"cloud-init", "pytorch-2.9-cu128", "--gpuenv-preinstalled", "-o", good.string()});
  REQUIRE(generated.exit_code == 0);
  const std::string text = read_text(good);
  struct Broken {
    const char* what;
    std::string text;
  };
  std::string bad_key = text;
  bad_key.replace(bad_key.find("    owner: root:root"), 20, "    ownr: root:root");
  std::string bad_type = text;
  bad_type.replace(bad_type.find("permissions: '0700'"), 19, "permissions: [0700]");
  const std::vector<Broken> broken = {
      {"a misspelt write_files key", bad_key},
      {"permissions of the wrong type", bad_type},
      {"no #cloud-config header", text.substr(text.find('\n') + 1)},
  };
  for (const Broken& b : broken) {
    INFO(b.what);
    const fs::path file = dir.path() / "broken.yaml";
    std::ofstream(file, std::ios::binary) << b.text;
    std::string output;
    CHECK_FALSE(schema_valid(*system, file, output));
    INFO(output);
  }
}
