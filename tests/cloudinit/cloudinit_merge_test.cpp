// docs/cloud-init.md "Your own user-data: merge, do not append", checked with cloud-init's own code (Debian 12's
// cloud-init 22.4): gpuenv's user-data and a user's #cloud-config joined by `cloud-init devel make-mime`, then merged
// as cloud-init's init stage merges them (tests/cloudinit/cloudinit_merge.py calls UserDataProcessor and
// CloudConfigPartHandler). With the merge_how the docs give, gpuenv's files and the user's are all written and the
// user's runcmd is kept; without it, the user's write_files replaces gpuenv's (the per-boot script is lost), which is
// why the docs ask for it.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::write_text;
using gpuenv::util::contains;

/// The interpreter cloud-init runs with on Debian (its #! line), which can import the cloudinit package.
constexpr const char* k_cloudinit_python = "/usr/bin/python3";

gpuenv::system::CommandResult run(const std::vector<std::string>& argv) {
  return gpuenv::system::make_real_system()->run(argv, std::chrono::seconds(120));
}

std::string why_no_cloudinit() {
  if (run({"cloud-init", "--version"}).exit_code != 0) return "cloud-init is not installed (scripts/bootstrap)";
  if (run({k_cloudinit_python, "-c", "import cloudinit.handlers.cloud_config"}).exit_code != 0)
    return std::string(k_cloudinit_python) + " cannot import cloudinit";
  return "";
}

using gpuenv::testing::TempDir;

/// The cloud-config cloud-init makes of gpuenv's user-data followed by the user's part `user`.
std::string merged(const TempDir& dir, const std::string& user) {
  const fs::path gpuenv = dir.path() / "gpuenv.yaml";
  const fs::path yours = dir.path() / "yours.yaml";
  const fs::path mime = dir.path() / "user-data.mime";
  const auto generated = gpuenv::testing::run_gpuenv(
      {"cloud-init", "cuda-12.4-debian12-install", "--gpuenv-preinstalled", "-o", gpuenv.string()});
  INFO(generated.err);
  REQUIRE(generated.exit_code == 0);
  write_text(yours, user);
  // make-mime writes to stdout; argv, no shell.
  const auto made = run({"cloud-init", "devel", "make-mime", "-a", gpuenv.string() + ":cloud-config", "-a",
                         yours.string() + ":cloud-config"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  write_text(mime, made.out);
  const auto merge =
      run({k_cloudinit_python, std::string(GPUENV_SOURCE_DIR) + "/tests/cloudinit/cloudinit_merge.py", mime.string()});
  INFO(merge.err);
  REQUIRE(merge.exit_code == 0);
  return merge.out;
}

const std::string k_user_part =
    "#cloud-config\n"
    "write_files:\n"
    "  - path: /etc/motd\n"
    "    content: a GPU node\n"
    "runcmd:\n"
    "  - [touch, /run/user-runcmd]\n";

// docs/cloud-init.md, verbatim.
const std::string k_merge_how =
    "merge_how:\n"
    " - name: list\n"
    "   settings: [append]\n"
    " - name: dict\n"
    "   settings: [no_replace, recurse_list]\n";

}  // namespace

TEST_CASE("cloud-init: the merge_how in docs/cloud-init.md keeps gpuenv's files and the user's",
          "[cloudinit][system-test]") {
  GPUENV_SKIP_IF_REASON(why_no_cloudinit());
  TempDir dir;
  // The user's part with the docs' merge_how after its #cloud-config line.
  const std::string with =
      merged(dir, "#cloud-config\n" + k_merge_how + k_user_part.substr(k_user_part.find('\n') + 1));
  INFO(with);
  CHECK(contains(with, "path: /var/lib/cloud/scripts/per-boot/50-gpuenv"));
  CHECK(contains(with, "path: /etc/gpuenv/profile.toml"));
  CHECK(contains(with, "path: /etc/motd"));
  CHECK(contains(with, "/run/user-runcmd"));

  // The check can fail: without merge_how cloud-init's default (dict(replace)+list()) lets the user's write_files
  // replace gpuenv's, per-boot script included.
  const std::string without = merged(dir, k_user_part);
  INFO(without);
  CHECK(contains(without, "path: /etc/motd"));
  CHECK_FALSE(contains(without, "path: /var/lib/cloud/scripts/per-boot/50-gpuenv"));
}
