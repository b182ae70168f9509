// Issue 30 item 4 end to end: `doctor --prometheus` run by root into a directory a job user owns. The user can plant
// a link at the target, or at any temporary name, after any check gpuenv makes; so root refuses the directory and
// the file the link points at stays as it was (docs/security.md, "Files root writes").

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/run_binary.hpp"
#include "support/skip.hpp"

namespace fs = std::filesystem;

TEST_CASE("doctor --prometheus as root refuses a job user's directory, their planted link redirects nothing",
          "[cli][e2e][security][system-test]") {
  GPUENV_SKIP_UNLESS(::geteuid() == 0, "needs root to act as a second, unprivileged user (setpriv --reuid=65534)");
  const fs::path base = fs::temp_directory_path() / ("gpuenv-prom-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "theirs");
  const fs::path victim = base / "root-only";
  std::ofstream(victim) << "root:secret\n";
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write);
  REQUIRE(::chown((base / "theirs").c_str(), 65534, 65534) == 0);
  const auto planted =
      gpuenv::system::make_real_system()->run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ln",
                                               "-s", victim.string(), (base / "theirs" / "gpuenv.prom").string()},
                                              std::chrono::seconds(10));
  REQUIRE(planted.exit_code == 0);

  const auto result =
      gpuenv::testing::run_gpuenv({"doctor", "--quick", "--prometheus", (base / "theirs" / "gpuenv.prom").string()});
  INFO(result.err);
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("belongs to uid 65534") != std::string::npos);
  std::ifstream in(victim);
  std::ostringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "root:secret\n");
  struct stat st {};
  REQUIRE(::stat(victim.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  fs::remove_all(base);
}
