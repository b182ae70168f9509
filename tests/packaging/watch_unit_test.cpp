// gpuenv-watch.service checked by the real `systemd-analyze verify` (Debian 12's systemd 252) in a scratch root: a
// copy of this machine's unit directory (so the units it orders after exist), the unit where the package puts it, and
// stand-ins for the programs it runs. verify exits 0 on warnings such as an unknown key, so its output must be empty
// too; a misspelled key is shown to produce output. What the unit promises (reload by SIGHUP, journald, the state
// directory, no crash loop) is read from it.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/skip.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path k_unit = fs::path(GPUENV_SOURCE_DIR) / "packaging/systemd/gpuenv-watch.service";

gpuenv::system::CommandResult run_tool(const std::vector<std::string>& argv) {
  return gpuenv::system::make_real_system()->run(argv, std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("systemd: gpuenv-watch.service passes systemd-analyze verify", "[packaging][systemd][system-test]") {
  GPUENV_SKIP_UNLESS(run_tool({"systemd-analyze", "--version"}).exit_code == 0,
                     "systemd-analyze is not installed (scripts/bootstrap installs systemd)");
  std::string pattern = (fs::temp_directory_path() / "gpuenv-watch-unit-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  const fs::path root = pattern;
  fs::create_directories(root / "usr/lib/systemd");
  // cp -a: the directory holds symlinks (aliases, units masked to /dev/null) that must stay links.
  REQUIRE(run_tool({"cp", "-a", "/usr/lib/systemd/system", (root / "usr/lib/systemd/").string()}).exit_code == 0);
  const fs::path installed = root / "usr/lib/systemd/system/gpuenv-watch.service";
  fs::copy_file(k_unit, installed, fs::copy_options::overwrite_existing);
  for (const char* program : {"usr/bin/gpuenv", "bin/mkdir", "bin/kill"}) {
    fs::create_directories((root / program).parent_path());
    std::ofstream(root / program) << "#!/bin/sh\n";
    fs::permissions(root / program, fs::perms(0755));
  }
  const auto verified = run_tool({"systemd-analyze", "verify", "--root=" + root.string(), "gpuenv-watch.service"});
  INFO(verified.out << verified.err);
  CHECK(verified.exit_code == 0);
  CHECK(verified.out.empty());
  CHECK(verified.err.empty());

  // The check can fail: a misspelled key is reported.
  std::string text = gpuenv::testing::read_text(installed);
  const std::size_t at = text.find("Restart=on-failure");
  REQUIRE(at != std::string::npos);
  text.replace(at, 7, "Restrat");
  REQUIRE(gpuenv::testing::write_text(installed, text));
  const auto broken = run_tool({"systemd-analyze", "verify", "--root=" + root.string(), "gpuenv-watch.service"});
  CHECK(gpuenv::util::contains(broken.err, "Unknown key 'Restrat'"));
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

TEST_CASE("systemd: gpuenv-watch.service reloads on SIGHUP, keeps its state, stops restarting a failing watch",
          "[packaging][systemd]") {
  const std::string unit = gpuenv::testing::read_text(k_unit);
  CHECK(gpuenv::util::contains(unit, "\nExecStart=/usr/bin/gpuenv watch --prometheus "));
  CHECK(gpuenv::util::contains(unit, "\nExecReload=/bin/kill -HUP $MAINPID\n"));
  CHECK(gpuenv::util::contains(unit, "\nStateDirectory=gpuenv\n"));  // /var/lib/gpuenv, the database's directory
  CHECK(gpuenv::util::contains(unit, "\nRestart=on-failure\n"));
  CHECK(gpuenv::util::contains(unit, "\nStartLimitBurst=5\n"));
  CHECK(gpuenv::util::contains(unit, "\nType=simple\n"));
  // systemd.service(5): ExecStopPost= runs "after the service is stopped ... including cases where the commands
  // configured in ExecStop= were used, where the service does not have any ExecStop= defined, or where the service
  // exited unexpectedly": a stopped or crashed watch leaves no textfile node_exporter would serve as current.
  CHECK(gpuenv::util::contains(unit, "\nExecStopPost=-/bin/rm -f ${GPUENV_TEXTFILE_DIR}/gpuenv-watch.prom\n"));
  const std::string package = gpuenv::testing::read_text(fs::path(GPUENV_SOURCE_DIR) / "scripts/package");
  CHECK(gpuenv::util::contains(package, "packaging/systemd/gpuenv-watch.service"));
}
