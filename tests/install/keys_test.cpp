// Keys from the mirror (issue 30, item 5), each attack reproduced: a mirror serving a rogue cuda-keyring package
// (the plan never fetches it from the mirror, and sha256sum rejects a package that is not NVIDIA's), a rogue key
// (the real gpg keeps only the pinned fingerprint, and the check fails), plain http (the real curl refuses it),
// and a local repository in a directory others can write (refused before anything is read or done).

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "install/backend.hpp"
#include "install/plan_support.hpp"
#include "install/repository_url.hpp"
#include "support/fake_system.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::install::InstallPlan;
using gpuenv::install::Step;
using gpuenv::install::Target;
using gpuenv::testing::find_step;
using gpuenv::testing::install_profile;
using gpuenv::testing::make_plan;

constexpr std::chrono::seconds k_timeout{60};

using gpuenv::testing::TempDir;

/// `argv` with gpuenv's cache directory moved under `dir`, so the plan's own commands run on test files.
std::vector<std::string> relocated(std::vector<std::string> argv, const fs::path& dir) {
  for (std::string& word : argv) {
    if (const auto at = word.find("/var/cache/gpuenv"); at != std::string::npos)
      word.replace(at, std::string("/var/cache/gpuenv").size(), dir.string());
    if (const auto at = word.find("/usr/share/keyrings/"); at != std::string::npos)
      word.replace(at, std::string("/usr/share/keyrings").size(), dir.string());
  }
  return argv;
}

gpuenv::system::CommandResult run(const std::vector<std::string>& argv) {
  auto system = gpuenv::system::make_real_system();
  return system->run(argv, k_timeout);
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

bool on_path(const std::string& tool) { return run({"sh", "-c", "command -v " + tool}).exit_code == 0; }

/// A fresh key made by the real gpg in `home`; its fingerprint.
std::string make_rogue_key(const fs::path& home, const fs::path& exported) {
  fs::create_directories(home);
  fs::permissions(home, fs::perms::owner_all);
  const auto made =
      run({"gpg", "--batch", "--no-tty", "--homedir", home.string(), "--pinentry-mode", "loopback", "--passphrase", "",
           "--quick-gen-key", "rogue mirror <rogue@mirror.example>", "ed25519", "sign", "never"});
  REQUIRE(made.exit_code == 0);
  const auto listed = run({"gpg", "--batch", "--no-tty", "--homedir", home.string(), "--with-colons", "--list-keys"});
  const std::size_t at = listed.out.find("fpr:::::::::");
  REQUIRE(at != std::string::npos);
  const std::string fingerprint = listed.out.substr(at + 12, 40);
  REQUIRE(run({"gpg", "--batch", "--no-tty", "--homedir", home.string(), "--armor", "--output", exported.string(),
               "--export", fingerprint})
              .exit_code == 0);
  return fingerprint;
}

}  // namespace

TEST_CASE("install keys: with a mirror, the keyring package still comes from NVIDIA, over https only",
          "[install][keys]") {
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"},
                                  {}, "https://mirror.example/nvidia-cuda");
  const Step* keyring = find_step(p, "install.repo.cuda_keyring");
  REQUIRE(keyring != nullptr);
  CHECK(keyring->commands.at(0) ==
        std::vector<std::string>{"curl", "--proto", "=https", "--proto-redir", "=https", "-fsSL", "--create-dirs", "-o",
                                 "/var/cache/gpuenv/cuda-keyring_1.1-1_all.deb",
                                 "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
                                 "cuda-keyring_1.1-1_all.deb"});
  // GoogleCloudPlatform/compute-gpu-installation config.py NVIDIA_KEYRING_SHA256_SUMS["ubuntu"]["2204"].
  CHECK(keyring->files.at(0).content ==
        "d93190d50b98ad4699ff40f4f7af50f16a76dac3bb8da1eaaf366d47898ff8df  "
        "/var/cache/gpuenv/cuda-keyring_1.1-1_all.deb\n");
  CHECK(keyring->checks.at(0).text == "fpr:::::::::EB693B3035CD5710E231E123A4B469963BF863CC:");
  // The packages come from the mirror, verified with NVIDIA's key.
  CHECK(gpuenv::testing::file_of(*find_step(p, "install.repo.cuda"),
                                 "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list") ==
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://mirror.example/nvidia-cuda/ubuntu2204/"
        "x86_64/ /\n");
}

TEST_CASE("install keys: a rogue keyring package fails the plan's SHA-256 check (real sha256sum)",
          "[install][keys][system-test]") {
  TempDir dir;
  const InstallPlan p = make_plan(install_profile("[driver]\nbranch = \"580\"\n"), Target{"ubuntu", "22.04", "x86_64"});
  const Step* keyring = find_step(p, "install.repo.cuda_keyring");
  REQUIRE(keyring != nullptr);
  const fs::path sums = relocated({keyring->files.at(0).path}, dir.path()).front();
  write(sums, relocated({keyring->files.at(0).content}, dir.path()).front());
  const std::vector<std::string> check = relocated(keyring->commands.at(1), dir.path());
  REQUIRE(check.front() == "sha256sum");
  // What a hostile mirror would serve under the same name: another package (maintainer scripts run as root).
  write(dir.path() / "cuda-keyring_1.1-1_all.deb", "!<arch>\nrogue keyring with a postinst\n");
  CHECK(run(check).exit_code != 0);
  // The same line format accepts the file whose digest it names (so a genuine package passes).
  const auto digest = run({"sha256sum", (dir.path() / "cuda-keyring_1.1-1_all.deb").string()});
  REQUIRE(digest.exit_code == 0);
  write(sums, digest.out.substr(0, 64) + "  " + (dir.path() / "cuda-keyring_1.1-1_all.deb").string() + "\n");
  CHECK(run(check).exit_code == 0);
}

TEST_CASE("install keys: a rogue key is not kept: only the pinned fingerprint is exported (real gpg)",
          "[install][keys][system-test]") {
  GPUENV_SKIP_UNLESS(on_path("gpg"), "gpg is not installed");
  TempDir dir;
  const fs::path downloaded = dir.path() / "keys" / "3bf863cc.pub";
  fs::create_directories(downloaded.parent_path());
  const std::string rogue = make_rogue_key(dir.path() / "maker", downloaded);
  const fs::path keyring = dir.path() / "cuda-archive-keyring.gpg";
  const auto run_pinned = [&](const std::string& fingerprint) {
    const auto pinned = gpuenv::install::pin_key("/var/cache/gpuenv/keys/3bf863cc.pub", fingerprint,
                                                 "/usr/share/keyrings/cuda-archive-keyring.gpg", false);
    for (const auto& argv : pinned.commands) run(relocated(argv, dir.path()));
    const auto shown = run(relocated(pinned.check.argv, dir.path()));
    return shown.exit_code == 0 && shown.out.find(pinned.check.text) != std::string::npos;
  };
  // The mirror's key posing as NVIDIA's: nothing is kept, the check fails, the step fails.
  CHECK_FALSE(run_pinned("EB693B3035CD5710E231E123A4B469963BF863CC"));
  // The mechanism itself: pinned to the key's own fingerprint, it is kept and passes.
  CHECK(run_pinned(rogue));
}

TEST_CASE("install keys: curl with the plan's flags refuses anything but https (real curl)",
          "[install][keys][system-test]") {
  GPUENV_SKIP_UNLESS(on_path("curl"), "curl is not installed");
  TempDir dir;
  const auto argv = gpuenv::install::https_download("http://127.0.0.1:9/cuda-keyring_1.1-1_all.deb",
                                                    (dir.path() / "out.deb").string());
  const auto result = run(argv);
  CHECK(result.exit_code == 1);  // CURLE_UNSUPPORTED_PROTOCOL: refused before any connection
  CHECK(result.err.find("http") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path() / "out.deb"));
}

TEST_CASE("install keys: a local repository only from directories only root can write", "[install][keys]") {
  gpuenv::testing::FakeSystem fake;
  const auto dir = [](std::uint32_t uid, std::uint32_t mode) {
    return gpuenv::system::PathStatus{uid, mode, true, false};
  };
  fake.statuses["/"] = dir(0, 0755);
  fake.statuses["/srv"] = dir(0, 0755);
  fake.statuses["/srv/repo"] = dir(0, 0755);
  CHECK_FALSE(gpuenv::install::check_local_repository(fake, "file:///srv/repo").has_value());
  CHECK_FALSE(gpuenv::install::check_local_repository(fake, "https://mirror.example/x").has_value());
  fake.statuses["/srv/repo"] = dir(1000, 0755);
  CHECK(gpuenv::install::check_local_repository(fake, "file:///srv/repo")
            ->message.find("/srv/repo is not owned by root") != std::string::npos);
  fake.statuses["/srv/repo"] = dir(0, 0775);
  CHECK(
      gpuenv::install::check_local_repository(fake, "file:///srv/repo")->message.find("writable by group or others") !=
      std::string::npos);
  fake.statuses["/srv/repo"] = dir(0, 0755);
  fake.statuses["/srv"] = dir(0, 01777);  // sticky or not, anyone can replace the repository under it
  CHECK(gpuenv::install::check_local_repository(fake, "file:///srv/repo").has_value());
  fake.statuses["/srv"] = gpuenv::system::PathStatus{0, 0777, false, true};
  CHECK(gpuenv::install::check_local_repository(fake, "file:///srv/repo")->message.find("is a symlink") !=
        std::string::npos);
}

TEST_CASE("install keys: a local repository under a world-writable directory is refused (real lstat)",
          "[install][keys][system-test]") {
  TempDir dir;  // under the temporary directory, which anyone can write
  auto system = gpuenv::system::make_real_system();
  const auto refused = gpuenv::install::check_local_repository(*system, "file://" + dir.path().string());
  REQUIRE(refused.has_value());
  CHECK(refused->message.find("writable by group or others") != std::string::npos);
  if (::geteuid() == 0) {  // a repository directory handed to another user
    fs::create_directories(dir.path() / "repo");
    REQUIRE(::chown((dir.path() / "repo").c_str(), 65534, 65534) == 0);
    CHECK(gpuenv::install::check_local_repository(*system, "file://" + (dir.path() / "repo").string())
              ->message.find("is not owned by root") != std::string::npos);
  }
}

TEST_CASE("install keys: repository URLs from any source pass one check", "[install][keys]") {
  using gpuenv::install::checked_repository_url;
  CHECK(checked_repository_url("https://mirror.example/cuda/", "--repo-url").value() == "https://mirror.example/cuda");
  CHECK(checked_repository_url("file:///srv/repo", "--repo-url").value() == "file:///srv/repo");
  for (const std::string bad :
       {"https://mirror.example/cuda /\ndeb [trusted=yes] http://evil/ ./", "http://mirror.example/cuda",
        "https://user:secret@mirror.example/cuda", "file:///srv/repo\n", "file:relative/dir", "file:///srv/../etc",
        "ftp://mirror.example/", "https://mirror.example/cuda?x=1"}) {
    INFO(bad);
    const auto checked = checked_repository_url(bad, "GPUENV_CUDA_REPO_URL");
    REQUIRE_FALSE(checked.has_value());
    CHECK(checked.error().message.find("GPUENV_CUDA_REPO_URL") == 0);
    CHECK(checked.error().message.find('\n') == std::string::npos);  // the message itself stays one line
  }
}
