// Issue 30 item 6: what a variable or a flag names, root loads or trusts only when no one but root (or the user
// running gpuenv) can change it; an overlay's install values are held to a profile's grammar (docs/security.md,
// "Named files"). Through FakeSystem for the rules, and end to end on the real filesystem.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/data_overlay.hpp"
#include "cli/trusted_paths.hpp"
#include "profile/catalog.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::FakeSystem;

const std::string k_gpu_row =
    "[[gpu]]\nmodel = \"Zeta 1\"\ncompute_capability = \"12.0\"\nstatus = \"verified\"\nsource = \"s\"\n";

/// An empty 0755 directory under the temporary directory, named `prefix` and the process id: only its owner (root in
/// CI) can change it, so what a test makes inside decides the trust check.
fs::path fresh_directory(const std::string& prefix) {
  const fs::path dir = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  return dir;
}

}  // namespace

TEST_CASE("named libraries: a path must be trusted, a soname is the loader's, unset keeps the default",
          "[cli][security]") {
  FakeSystem system;
  CHECK(*gpuenv::cli::library_from_environment(system, "GPUENV_NVML_LIBRARY", "libnvidia-ml.so.1") ==
        "libnvidia-ml.so.1");
  system.env["GPUENV_NVML_LIBRARY"] = "libnvidia-ml.so.550.54.15";
  CHECK(*gpuenv::cli::library_from_environment(system, "GPUENV_NVML_LIBRARY", "x") == "libnvidia-ml.so.550.54.15");
  system.env["GPUENV_NVML_LIBRARY"] = "/opt/nvidia/libnvidia-ml.so.1";
  CHECK(*gpuenv::cli::library_from_environment(system, "GPUENV_NVML_LIBRARY", "x") == "/opt/nvidia/libnvidia-ml.so.1");
  system.env["GPUENV_CUDA_LIBRARY"] = "/home/mallory/libcuda.so.1";
  system.untrusted["/home/mallory/libcuda.so.1"] = "/home/mallory belongs to uid 1001";
  const auto refused = gpuenv::cli::library_from_environment(system, "GPUENV_CUDA_LIBRARY", "libcuda.so.1");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == gpuenv::util::ErrorKind::input);
  CHECK_THAT(refused.error().message, Catch::Contains("GPUENV_CUDA_LIBRARY=/home/mallory/libcuda.so.1: not trusted: "
                                                      "/home/mallory belongs to uid 1001"));
  CHECK_THAT(refused.error().remedy, Catch::Contains("chmod go-w"));
}

TEST_CASE("overlay directories: each directory and file must be trusted, named by what named it", "[cli][security]") {
  FakeSystem system;
  system.files["/etc/gpuenv/data.d/gpus.toml"] = k_gpu_row;
  system.files["/srv/env-data/gpus.toml"] = k_gpu_row;
  system.files["/home/me/data/gpus.toml"] = k_gpu_row;
  system.env["GPUENV_DATA_DIR"] = "/srv/env-data";
  REQUIRE(gpuenv::cli::find_overlay(system, "/home/me/data"));

  system.untrusted["/srv/env-data"] = "/srv/env-data is writable by everyone";
  auto env = gpuenv::cli::find_overlay(system, "");
  REQUIRE_FALSE(env);
  CHECK_THAT(env.error().message, Catch::Contains("GPUENV_DATA_DIR=/srv/env-data: not trusted: /srv/env-data is "
                                                  "writable by everyone"));
  system.untrusted.clear();
  system.untrusted["/home/me/data/gpus.toml"] = "/home/me/data/gpus.toml is writable by its group (gid 100)";
  auto flag = gpuenv::cli::find_overlay(system, "/home/me/data");
  REQUIRE_FALSE(flag);
  CHECK_THAT(flag.error().message, Catch::Contains("--data-dir /home/me/data: /home/me/data/gpus.toml: not trusted"));
  system.untrusted.clear();
  system.untrusted["/etc/gpuenv/data.d"] = "/etc/gpuenv/data.d belongs to uid 1001";
  auto etc = gpuenv::cli::find_overlay(system, "");
  REQUIRE_FALSE(etc);
  CHECK_THAT(etc.error().message, Catch::Contains("/etc/gpuenv/data.d: not trusted"));
}

TEST_CASE("overlay install values: URLs as profile mirrors, paths and package names that pass for nothing else",
          "[cli][security]") {
  struct Case {
    const char* overlay;
    const char* excerpt;  ///< "" when accepted
  };
  const Case cases[] = {
      {"[repository]\ncuda_base_url = \"https://mirrors.example.com/nvidia-cuda\"\n", ""},
      {"[repository]\ncuda_base_url = \"http://mirrors.example.com/cuda\"\n",
       "[repository] cuda_base_url = \"http://mirrors.example.com/cuda\": it is plain http"},
      {"[repository]\ntoolkit_base_url = \"https://user:secret@mirror.example.com/x\"\n",
       "[repository] toolkit_base_url"},
      {"[repository]\ncuda_base_url = \"https://m.example.com/x [trusted=yes]\"\n", "it contains white space"},
      {"[repository]\nkeyring_path = \"/usr/share/keyrings/../../../etc/apt/trusted.gpg.d/x.gpg\"\n",
       "[repository] keyring_path"},
      {"[repository]\nkeyring_file = \"-oAPT::x\"\n", "[repository] keyring_file"},
      {"[packages]\ncuda_toolkit = \"-oAPT::Update::Pre-Invoke::=touch /tmp/pwned\"\n", "[packages] cuda_toolkit"},
      {"[packages]\ncudnn = \"cudnn9-cuda-12; reboot\"\n", "[packages] cudnn"},
      {"[packages]\ncuda_toolkit = \"cuda-toolkit-{cuda_dash}\"\n", ""},
  };
  for (const Case& c : cases) {
    INFO(c.overlay);
    FakeSystem system;
    system.files["/etc/gpuenv/data.d/targets.toml"] = c.overlay;
    auto overlay = gpuenv::cli::find_overlay(system, "");
    if (std::string(c.excerpt).empty()) {
      CHECK(overlay);
      continue;
    }
    REQUIRE_FALSE(overlay);
    CHECK_THAT(overlay.error().message, Catch::Contains("/etc/gpuenv/data.d/targets.toml: "));
    CHECK_THAT(overlay.error().message, Catch::Contains(c.excerpt));
  }
}

TEST_CASE("gpuenv refuses a world-writable library or overlay a variable names, before loading it",
          "[cli][e2e][security]") {
  const fs::path dir = fresh_directory("gpuenv-named-");
  fs::create_directories(dir / "data");
  fs::copy_file(GPUENV_FAKE_NVML_LIBRARY, dir / "libnvidia-ml.so.1");
  fs::permissions(dir / "libnvidia-ml.so.1", fs::perms::all);  // 0777: anyone could swap the code root loads
  const auto library = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json"},
                                                   {{"GPUENV_NVML_LIBRARY", (dir / "libnvidia-ml.so.1").string()}});
  CHECK(library.exit_code == 2);
  CHECK_THAT(library.err,
             Catch::Contains("GPUENV_NVML_LIBRARY=" + (dir / "libnvidia-ml.so.1").string() +
                             ": not trusted: " + (dir / "libnvidia-ml.so.1").string() + " is writable by everyone"));

  std::ofstream(dir / "data" / "gpus.toml") << k_gpu_row;
  fs::permissions(dir / "data", fs::perms::all);
  const auto overlay = gpuenv::testing::run_gpuenv({"profile", "list"}, {{"GPUENV_DATA_DIR", (dir / "data").string()}});
  CHECK(overlay.exit_code == 2);
  CHECK_THAT(overlay.err, Catch::Contains("GPUENV_DATA_DIR=" + (dir / "data").string() + ": not trusted"));
  fs::permissions(dir / "data", fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  CHECK(gpuenv::testing::run_gpuenv({"profile", "list"}, {{"GPUENV_DATA_DIR", (dir / "data").string()}}).exit_code ==
        0);
  fs::remove_all(dir);
}

TEST_CASE("smoke --nccl refuses a world-writable GPUENV_NCCL_LIBRARY before touching a GPU", "[cli][e2e][security]") {
  const fs::path dir = fresh_directory("gpuenv-named-nccl-");
  fs::copy_file(GPUENV_FAKE_NCCL_LIBRARY, dir / "libnccl.so.2");
  fs::permissions(dir / "libnccl.so.2", fs::perms::all);  // 0777: anyone could swap the code root loads
  const auto smoke = gpuenv::testing::run_gpuenv({"smoke", "--quick", "--nccl"},
                                                 {{"GPUENV_NCCL_LIBRARY", (dir / "libnccl.so.2").string()},
                                                  {"GPUENV_CUDA_LIBRARY", "libgpuenv-no-such-cuda.so.1"}});
  CHECK(smoke.exit_code == 2);
  CHECK_THAT(smoke.err, Catch::Contains("GPUENV_NCCL_LIBRARY=" + (dir / "libnccl.so.2").string() + ": not trusted: " +
                                        (dir / "libnccl.so.2").string() + " is writable by everyone"));
  fs::remove_all(dir);
}

TEST_CASE("smoke --nccl --python refuses an interpreter someone else could change, before running it",
          "[cli][e2e][security]") {
  // The interpreter runs as root to find the nvidia-nccl wheel: one in a user's venv is that user's code.
  const fs::path dir = fresh_directory("gpuenv-named-python-");
  const fs::path marker = dir / "ran";
  std::ofstream(dir / "python") << "#!/bin/sh\ntouch " << marker.string() << "\n";
  fs::permissions(dir / "python", fs::perms::all);  // 0777
  const auto smoke = gpuenv::testing::run_gpuenv({"smoke", "--quick", "--nccl", "--python", (dir / "python").string()},
                                                 {{"GPUENV_CUDA_LIBRARY", "libgpuenv-no-such-cuda.so.1"}});
  CHECK(smoke.exit_code == 2);
  CHECK_THAT(smoke.err, Catch::Contains("--python " + (dir / "python").string() +
                                        ": not trusted: " + (dir / "python").string() + " is writable by everyone"));
  CHECK_FALSE(fs::exists(marker));
  fs::remove_all(dir);
}

TEST_CASE(
    "profile files for install and doctor: a file someone else could change is refused, a shipped name is not "
    "a file",
    "[cli][security]") {
  // A profile chooses the mirrors root installs from and the verdict that drains the node: one in a directory a job
  // user can write is that user's, whoever reviewed it first.
  const auto& shipped = gpuenv::profile::shipped_profiles();
  REQUIRE_FALSE(shipped.empty());
  FakeSystem system;
  system.files["/home/alice/node.toml"] = shipped.front().text;
  REQUIRE(gpuenv::cli::load_trusted_profile(system, "/home/alice/node.toml", "--profile"));
  system.untrusted["/home/alice/node.toml"] = "/home/alice belongs to uid 1000";
  const auto refused = gpuenv::cli::load_trusted_profile(system, "/home/alice/node.toml", "--profile");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == gpuenv::util::ErrorKind::input);
  CHECK_THAT(refused.error().message,
             Catch::Contains("--profile /home/alice/node.toml: not trusted: /home/alice belongs to uid 1000"));
  // A shipped profile is compiled in: nothing on disk to trust, even where a file of that name exists.
  system.untrusted[shipped.front().name] = "a file of that name in the working directory";
  CHECK(gpuenv::cli::load_trusted_profile(system, shipped.front().name, "--profile"));
}

TEST_CASE("gpuenv install and doctor refuse a world-writable profile file", "[cli][e2e][security][system-test]") {
  const fs::path dir = fresh_directory("gpuenv-profile-");
  const fs::path file = dir / "node.toml";
  std::ofstream(file) << gpuenv::profile::shipped_profiles().front().text;
  fs::permissions(file, fs::perms::all);  // 0777: anyone could point root's install at their own mirror
  const auto install = gpuenv::testing::run_gpuenv({"install", file.string(), "--dry-run"});
  CHECK(install.exit_code == 2);
  CHECK_THAT(install.err, Catch::Contains("profile " + file.string() + ": not trusted: " + file.string() +
                                          " is writable by everyone"));
  const auto doctor = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--profile", file.string()});
  CHECK(doctor.exit_code == 2);
  CHECK_THAT(doctor.err, Catch::Contains("--profile " + file.string() + ": not trusted"));
  fs::permissions(file, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  const auto accepted = gpuenv::testing::run_gpuenv({"install", file.string(), "--dry-run"});
  CHECK(accepted.err.find("not trusted") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("gpuenv doctor refuses a --python that someone else could change (a venv's site-packages run as root)",
          "[cli][e2e][security][system-test]") {
  // python -I ignores PYTHON* variables and the user's site directory, not a venv's own site-packages (pyvenv.cfg:
  // https://docs.python.org/3/library/site.html): an interpreter in a directory others can write is theirs to steer.
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-python-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // 0777, not sticky: anyone can replace what is in it
  const fs::path python = dir / "python3";
  std::ofstream(python) << "#!/bin/sh\nexit 0\n";
  fs::permissions(python, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  const auto doctor = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--python", python.string()});
  CHECK(doctor.exit_code == 2);
  CHECK_THAT(doctor.err, Catch::Contains("--python " + python.string() + ": not trusted"));
  fs::permissions(dir, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  const auto accepted = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--python", python.string()});
  CHECK(accepted.err.find("not trusted") == std::string::npos);
  fs::remove_all(dir);
}
