// cli::find_overlay through FakeSystem: /etc/gpuenv/data.d and $GPUENV_DATA_DIR (and --data-dir's directory), their
// precedence, and the errors for a file no table is named after or a directory that does not exist.

#include "cli/data_overlay.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "compat/knowledge_base.hpp"
#include "support/fake_system.hpp"

namespace {

using gpuenv::testing::FakeSystem;

/// A [[gpu]] row for a model named `model` with `cc`, citing `source`.
std::string gpu_row(const std::string& model, const std::string& cc, const std::string& source) {
  return "[[gpu]]\nmodel = \"" + model + "\"\ncompute_capability = \"" + cc + "\"\nstatus = \"verified\"\nsource = \"" +
         source + "\"\n";
}

/// The compute capability and source the merged knowledge base gives `model`.
std::pair<std::string, std::string> merged_gpu(FakeSystem& system, const std::string& data_dir,
                                               const std::string& model) {
  auto overlay = gpuenv::cli::find_overlay(system, data_dir);
  REQUIRE(overlay);
  auto kb = gpuenv::compat::load_knowledge_base(*overlay);
  REQUIRE(kb);
  const auto* gpu = kb->gpu(model);
  REQUIRE(gpu != nullptr);
  return {gpu->compute_capability, gpu->provenance.source};
}

}  // namespace

TEST_CASE("overlay directories: /etc/gpuenv/data.d is read through System", "[cli][overlay]") {
  FakeSystem system;
  system.files["/etc/gpuenv/data.d/gpus.toml"] = gpu_row("Zeta 1", "12.0", "https://example.com/zeta");
  system.files["/etc/gpuenv/data.d/README"] = "not a table, not *.toml: ignored";
  const auto [cc, source] = merged_gpu(system, "", "Zeta 1");
  CHECK(cc == "12.0");
  CHECK(source == "https://example.com/zeta (from overlay /etc/gpuenv/data.d/gpus.toml:1)");
}

TEST_CASE("overlay directories: $GPUENV_DATA_DIR over /etc, --data-dir over both", "[cli][overlay]") {
  FakeSystem system;
  system.files["/etc/gpuenv/data.d/gpus.toml"] = gpu_row("Zeta 1", "12.0", "etc");
  system.files["/srv/env-data/gpus.toml"] = gpu_row("Zeta 1", "12.1", "env");
  system.files["/home/me/data/gpus.toml"] = gpu_row("Zeta 1", "12.2", "cli");
  system.env["GPUENV_DATA_DIR"] = "/srv/env-data";
  CHECK(merged_gpu(system, "", "Zeta 1").first == "12.1");
  CHECK(merged_gpu(system, "/home/me/data", "Zeta 1").first == "12.2");
  CHECK(merged_gpu(system, "/home/me/data", "Zeta 1").second == "cli (from overlay /home/me/data/gpus.toml:1)");
  system.env.erase("GPUENV_DATA_DIR");
  CHECK(merged_gpu(system, "", "Zeta 1").first == "12.0");
}

TEST_CASE("overlay directories: no directory, no overlay", "[cli][overlay]") {
  FakeSystem system;
  auto overlay = gpuenv::cli::find_overlay(system, "");
  REQUIRE(overlay);
  CHECK(overlay->empty());
}

TEST_CASE("overlay directories: errors name the file or directory and the fix", "[cli][overlay]") {
  FakeSystem system;
  system.files["/etc/gpuenv/data.d/gpu.toml"] = gpu_row("Zeta 1", "12.0", "s");
  auto misnamed = gpuenv::cli::find_overlay(system, "");
  REQUIRE_FALSE(misnamed);
  CHECK(misnamed.error().kind == gpuenv::util::ErrorKind::input);
  CHECK_THAT(misnamed.error().message,
             Catch::Contains("/etc/gpuenv/data.d/gpu.toml:1: `gpu.toml` is not a gpuenv data table"));
  CHECK_THAT(misnamed.error().remedy, Catch::Contains("rename it to gpus.toml"));

  FakeSystem missing;
  missing.env["GPUENV_DATA_DIR"] = "/nowhere";
  auto env = gpuenv::cli::find_overlay(missing, "");
  REQUIRE_FALSE(env);
  CHECK_THAT(env.error().message, Catch::Contains("GPUENV_DATA_DIR=/nowhere: no such directory"));
  auto flag = gpuenv::cli::find_overlay(system, "/nowhere/either");
  REQUIRE_FALSE(flag);
}

TEST_CASE("overlay check: every module's table is judged with its own schema", "[cli][overlay]") {
  struct Case {
    const char* table;
    const char* text;
    const char* excerpt;  ///< "" when the overlay is valid
  };
  const std::vector<Case> cases = {
      {"cuda.toml", "[[release]]\nversion = \"99.0.0\"\nstatus = \"verified\"\nsource = \"s\"\n", ""},
      {"cuda.toml", "[[release]]\nversion = \"99.0.0\"\nstatus = \"verified\"\n",
       "/d/cuda.toml:1: [[release]]: missing `source`"},
      {"xid.toml", "\n[[xid]]\ncode = 79\nnmae = \"x\"\n", "/d/xid.toml:2: [[xid]]"},
      {"thresholds.toml", "[[threshold]]\nid = \"x\"\n", "/d/thresholds.toml:1: [[threshold]]"},
      {"instances.toml", "[[instance]]\ncloud = \"aws\"\n", "/d/instances.toml:1: [[instance]]"},
      {"actions.toml",
       "[[action]]\nid = \"gpu.ecc\"\nfail = \"replace_hardware\"\nstatus = \"policy\"\nsource = \"s\"\n", ""},
      {"actions.toml", "[[action]]\nid = \"gpu.ecc\"\nfail = \"panic\"\n", "/d/actions.toml:1: [[action]]"},
      {"expectations.toml", "[efficiency]\nnot_a_key = 1\n", "/d/expectations.toml:2: [efficiency] has no key"},
      {"python.toml", "[[os_python]]\nos = \"ubuntu26.04\"\n", "/d/python.toml:1: [[os_python]]"},
      {"wheel_libraries.toml", "[[torch_cudnn]]\ntorch = \"2.99\"\n", "/d/wheel_libraries.toml:1: [[torch_cudnn]]"},
      {"targets.toml", "[[target]]\ndistro = \"ubuntu\"\n", "/d/targets.toml:1: [[target]]"},
  };
  for (const Case& c : cases) {
    INFO(c.table << ": " << c.text);
    auto checked = gpuenv::cli::check_overlay({{c.table, std::string("/d/") + c.table, c.text}});
    if (std::string(c.excerpt).empty()) {
      CHECK(checked);
      continue;
    }
    REQUIRE_FALSE(checked);
    CHECK(checked.error().kind == gpuenv::util::ErrorKind::input);
    CHECK_THAT(checked.error().message, Catch::Contains(c.excerpt));
  }
}
