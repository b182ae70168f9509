// `gpuenv cloud-init` end to end through the built binary: exit codes for bad input, -o, a profile file as given.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_binary.hpp"
#include "support/text_files.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace {

using gpuenv::testing::read_text;
using gpuenv::testing::run_gpuenv;
using gpuenv::util::contains;

const std::string k_sha(64, 'b');

}  // namespace

TEST_CASE("gpuenv cloud-init refuses bad input with exit 2 and names the fix", "[cloudinit][e2e]") {
  struct Row {
    const char* what;
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"no gpuenv source", {"cloud-init", "pytorch-2.9-cu128"}, "no gpuenv download URL"},
      {"two sources",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-preinstalled", "--gpuenv-url", "https://e.com/g",
        "--gpuenv-sha256", k_sha},
       "exclude each other"},
      {"plain http",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-url", "http://e.com/g", "--gpuenv-sha256", k_sha},
       "not an https URL"},
      {"bad sha256",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-url", "https://e.com/g", "--gpuenv-sha256", "abc"},
       "not a SHA-256"},
      {"no sha256",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-deb", "https://e.com/g.deb"},
       "needs --gpuenv-sha256"},
      {"unknown profile", {"cloud-init", "pytorch-2.9-cu12", "--gpuenv-preinstalled"}, "did you mean"},
      {"matrix without a cell", {"cloud-init", "pytorch-matrix", "--gpuenv-preinstalled"}, "matrix cells match"},
      {"--gpuenv-path without --gpuenv-preinstalled",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-path", "/opt/gpuenv"},
       "--gpuenv-path goes with --gpuenv-preinstalled"},
      // Issue 30, item 7: credentials in the URL would sit in the user-data, the script, its log and `ps`.
      {"credentials in the URL",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-url", "https://ci:t0ken@e.com/g", "--gpuenv-sha256", k_sha},
       "the URL carries credentials"},
      {"curl config without a download",
       {"cloud-init", "pytorch-2.9-cu128", "--gpuenv-preinstalled", "--gpuenv-curl-config", "/etc/gpuenv/curl.conf"},
       "are for a download"},
      {"deb on rockylinux",
       {"cloud-init", "pytorch-2.9-cu128-rockylinux9", "--gpuenv-deb", "https://e.com/g.deb", "--gpuenv-sha256", k_sha},
       "does not install on rockylinux"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const auto result = run_gpuenv(row.args);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(contains(result.err, row.message));
  }
}

TEST_CASE("cloud-init: a --gpuenv-preinstalled flag written before the profile does not take the profile as its path",
          "[cloudinit][e2e]") {
  const auto result = run_gpuenv({"cloud-init", "--gpuenv-preinstalled", "pytorch-2.9-cu128"});
  INFO(result.err);
  CHECK(result.exit_code == 0);
  CHECK(contains(result.out, "#cloud-config"));
}

TEST_CASE("gpuenv cloud-init writes the user-data to stdout or, atomically, to -o", "[cloudinit][e2e]") {
  const auto printed = run_gpuenv({"cloud-init", "pytorch-2.9-cu128", "--gpuenv-preinstalled"});
  REQUIRE(printed.exit_code == 0);
  CHECK(gpuenv::util::starts_with(printed.out, "#cloud-config\n"));
  CHECK(contains(printed.out, "GPUENV_BIN='/usr/bin/gpuenv'"));

  std::string pattern = (fs::temp_directory_path() / "gpuenv-cloudinit-e2e-XXXXXX").string();
  const fs::path dir = ::mkdtemp(pattern.data());
  const fs::path profile = dir / "mine.toml";
  const std::string text =
      "# my own profile\nschema = 1\nname = \"mine\"\n\n[os]\ndistro = \"debian\"\nversion = "
      "\"12\"\n\n[cuda]\nversion = \"12.4.1\"\n";
  std::ofstream(profile) << text;
  const fs::path out = dir / "user-data";
  const auto written = run_gpuenv({"cloud-init", profile.string(), "--gpuenv-url", "https://e.com/gpuenv",
                                   "--gpuenv-sha256", k_sha, "-o", out.string()});
  INFO(written.err);
  CHECK(written.exit_code == 0);
  CHECK(written.out.empty());
  const std::string user_data = read_text(out);
  CHECK(contains(user_data, "      # my own profile\n      schema = 1\n      name = \"mine\"\n"));
  CHECK(contains(user_data, "GPUENV_URL='https://e.com/gpuenv'"));
  fs::remove_all(dir);
}

TEST_CASE("cloud-init: a signed URL is written with a warning that does not repeat its query", "[cloudinit][e2e]") {
  const auto result = run_gpuenv({"cloud-init", "pytorch-2.9-cu128", "--gpuenv-url",
                                  "https://b.example.com/gpuenv?X-Amz-Signature=s3cr3t", "--gpuenv-sha256", k_sha});
  CHECK(result.exit_code == 0);
  CHECK(contains(result.err, "gpuenv: warning: --gpuenv-url: the URL has a query string"));
  CHECK_FALSE(contains(result.err, "s3cr3t"));
  CHECK(contains(result.out, "GPUENV_URL_SHOWN='https://b.example.com/gpuenv?(query hidden)'"));
  CHECK(contains(result.out, "permissions: '0700'"));
}
