// The systemd units the packages ship (packaging/systemd/) and the drop-ins in deploy/systemd/, checked by the real
// `systemd-analyze verify` (Debian 12's systemd 252) in a scratch root: a copy of this machine's unit directory (so
// the targets they name exist), the units and drop-ins where the package and an administrator put them, and
// stand-ins for the programs they run. verify exits 0 on warnings such as an unknown key, so its output must be
// empty too; a misspelled key is shown to produce output.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;

using gpuenv::testing::k_source;
const char* const k_units[] = {"gpuenv-doctor.service", "gpuenv-doctor.timer", "gpuenv-ready.target"};

gpuenv::system::CommandResult run_command(const std::vector<std::string>& argv) {
  return gpuenv::system::make_real_system()->run(argv, std::chrono::seconds(60));
}

/// A scratch root for `systemd-analyze verify --root`.
class UnitRoot {
 public:
  UnitRoot() {
    std::string pattern = (fs::temp_directory_path() / "gpuenv-units-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "usr/lib/systemd");
    // cp -a: the directory holds symlinks (aliases, units masked to /dev/null) that must stay links.
    REQUIRE(run_command({"cp", "-a", "/usr/lib/systemd/system", (root_ / "usr/lib/systemd/").string()}).exit_code == 0);
    for (const char* unit : k_units) fs::copy_file(k_source / "packaging/systemd" / unit, unit_path(unit));
    // What the units and slurmd.service run, as executables in the root.
    for (const char* program : {"usr/bin/gpuenv", "bin/mkdir", "usr/sbin/slurmd", "bin/kill", "usr/bin/kubelet"}) {
      fs::create_directories((root_ / program).parent_path());
      std::ofstream(root_ / program) << "#!/bin/sh\n";
      fs::permissions(root_ / program, fs::perms(0755));
    }
    std::ofstream(root_ / "usr/lib/systemd/system/kubelet.service")
        << "[Unit]\nDescription=stand-in kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n";
    for (const char* service : {"slurmd", "kubelet"}) {
      const fs::path dropin = root_ / "etc/systemd/system" / (std::string(service) + ".service.d");
      fs::create_directories(dropin);
      fs::copy_file(k_source / "deploy/systemd" / (std::string(service) + ".service.d") / "gpuenv-ready.conf",
                    dropin / "gpuenv-ready.conf");
    }
  }
  ~UnitRoot() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  UnitRoot(const UnitRoot&) = delete;
  UnitRoot& operator=(const UnitRoot&) = delete;

  const fs::path& path() const { return root_; }
  fs::path unit_path(const std::string& unit) const { return root_ / "usr/lib/systemd/system" / unit; }
  gpuenv::system::CommandResult verify(const std::vector<std::string>& units) const {
    std::vector<std::string> argv{"systemd-analyze", "verify", "--root=" + root_.string()};
    argv.insert(argv.end(), units.begin(), units.end());
    return run_command(argv);
  }

 private:
  fs::path root_;
};

std::string why_no_verify() {
  if (run_command({"systemd-analyze", "--version"}).exit_code != 0) return "systemd-analyze is not installed";
  if (!fs::exists("/usr/lib/systemd/system/slurmd.service")) return "slurmd is not installed (scripts/bootstrap)";
  return "";
}

}  // namespace

TEST_CASE("systemd: gpuenv-doctor.service, .timer and gpuenv-ready.target pass systemd-analyze verify",
          "[packaging][systemd][system-test]") {
  GPUENV_SKIP_IF_REASON(why_no_verify());
  UnitRoot root;
  const auto verified = root.verify({k_units[0], k_units[1], k_units[2], "slurmd.service", "kubelet.service"});
  INFO(verified.out << verified.err);
  CHECK(verified.exit_code == 0);
  CHECK(verified.out.empty());
  CHECK(verified.err.empty());

  // The drop-ins do what they say: slurmd and kubelet require the target and start after it.
  for (const char* service : {"slurmd.service", "kubelet.service"}) {
    const auto shown = run_command(
        {"env", "SYSTEMD_LOG_LEVEL=debug", "systemd-analyze", "verify", "--root=" + root.path().string(), service});
    CHECK(gpuenv::util::contains(shown.out, "Requires: gpuenv-ready.target"));  // the unit dump, on stdout
    CHECK(gpuenv::util::contains(shown.out, "After: gpuenv-ready.target"));
  }

  // The check can fail: a misspelled key is reported (verify still exits 0, hence the empty-output check above).
  std::string text;
  {
    std::ifstream in(root.unit_path("gpuenv-doctor.service"));
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t at = text.find("Type=oneshot");
  REQUIRE(at != std::string::npos);
  text.replace(at, 4, "Tpye");
  std::ofstream(root.unit_path("gpuenv-doctor.service"), std::ios::trunc) << text;
  const auto broken = root.verify({"gpuenv-doctor.service"});
  CHECK(gpuenv::util::contains(broken.err, "Unknown key 'Tpye'"));
}

TEST_CASE("systemd: the units run doctor in the health tier and the package ships them", "[packaging][systemd]") {
  std::ifstream in(k_source / "packaging/systemd/gpuenv-doctor.service");
  const std::string service(std::istreambuf_iterator<char>(in), {});
  CHECK(gpuenv::util::contains(service, "ExecStart=/usr/bin/gpuenv doctor --tier health --oneline --prometheus "));
  CHECK(gpuenv::util::contains(service, "Type=oneshot"));
  std::ifstream target_in(k_source / "packaging/systemd/gpuenv-ready.target");
  const std::string target(std::istreambuf_iterator<char>(target_in), {});
  CHECK(gpuenv::util::contains(target, "Requires=gpuenv-doctor.service\nAfter=gpuenv-doctor.service\n"));
  std::ifstream package_in(k_source / "scripts/package");
  const std::string package(std::istreambuf_iterator<char>(package_in), {});
  for (const char* unit : k_units) CHECK(gpuenv::util::contains(package, std::string("packaging/systemd/") + unit));
}

TEST_CASE("systemd: gpuenv-doctor.service retries inside its one start at boot, and gpuenv takes its arguments",
          "[packaging][systemd]") {
  // Type=oneshot runs ExecStart once (systemd.service(5)); the unit fails on the first NOT READY and
  // gpuenv-ready.target (Requires=) is not reached this boot. So the bounded retry is doctor's own --boot-retry, and
  // the start timeout must outlast it: the last try starts before 300 s of uptime and ends within its 45 s deadline.
  std::ifstream in(k_source / "packaging/systemd/gpuenv-doctor.service");
  const std::string service(std::istreambuf_iterator<char>(in), {});
  CHECK(gpuenv::util::contains(service, " --boot-retry 300 "));
  const std::size_t timeout_at = service.find("\nTimeoutStartSec=");
  REQUIRE(timeout_at != std::string::npos);
  const auto timeout =
      gpuenv::util::parse_int(service.substr(timeout_at + 17, service.find('\n', timeout_at + 1) - timeout_at - 17));
  REQUIRE(timeout);
  CHECK(*timeout >= 300 + 45 + 10);

  // ExecStart's argv as systemd splits it (no shell; ${VAR} is one word, $VAR splits at spaces: systemd.service(5)
  // "Command lines"), run by the built gpuenv on a NOT READY tree: exit 1 (NOT READY), not 2 (a flag it refuses).
  const std::size_t exec_at = service.find("\nExecStart=/usr/bin/gpuenv ");
  REQUIRE(exec_at != std::string::npos);
  const std::string line = service.substr(exec_at + 27, service.find('\n', exec_at + 1) - exec_at - 27);
  std::string pattern = (fs::temp_directory_path() / "gpuenv-unit-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  const fs::path dir = pattern;
  std::vector<std::string> args;
  for (std::string_view word : gpuenv::util::split(line, ' ')) {
    std::string arg(word);
    if (arg == "$GPUENV_DOCTOR_ARGS") {
      for (const char* extra : {"--root", "", "--watch-db", "none"}) args.emplace_back(extra);
      args[args.size() - 3] = gpuenv::testing::fixture_path("hosts/no-driver");
      continue;
    }
    if (const auto var = arg.find("${GPUENV_TEXTFILE_DIR}"); var != std::string::npos)
      arg.replace(var, 22, dir.string());
    if (arg == "/var/lib/gpuenv/doctor.json") arg = (dir / "doctor.json").string();
    // A CI machine may have booted less than 300 s ago: 1 s of uptime has passed on any, so there is one try.
    if (!args.empty() && args.back() == "--boot-retry") arg = "1";
    args.push_back(arg);
  }
  const auto run = gpuenv::testing::run_gpuenv(args);
  INFO(gpuenv::util::join(args, " ") << "\n" << run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(gpuenv::util::starts_with(run.out, "NOT READY: "));
  CHECK(fs::exists(dir / "gpuenv.prom"));
  CHECK(fs::exists(dir / "doctor.json"));
  // Up for longer than the limit: one try, no retry message.
  CHECK_FALSE(gpuenv::util::contains(run.err, "gpuenv doctor: try"));
  std::error_code ignored;
  fs::remove_all(dir, ignored);

  // The kubelet drop-in says where it must not be used.
  std::ifstream kubelet_in(k_source / "deploy/systemd/kubelet.service.d/gpuenv-ready.conf");
  const std::string kubelet(std::istreambuf_iterator<char>(kubelet_in), {});
  CHECK(gpuenv::util::contains(kubelet, "Never on NVIDIA GPU Operator nodes"));
}

TEST_CASE("tmpfiles: the real systemd-tmpfiles removes the readiness marker at boot, and only then",
          "[packaging][systemd][system-test]") {
  // At boot systemd-tmpfiles-setup.service runs `systemd-tmpfiles --create --remove --boot` (systemd 252
  // units/systemd-tmpfiles-setup.service); a package install runs `--create` only (debhelper's dh_installtmpfiles
  // postinst), which must not remove the marker of the boot in progress. tmpfiles.d(5): "r  Remove a file or
  // directory if it exists", processed with --remove.
  GPUENV_SKIP_UNLESS(run_command({"systemd-tmpfiles", "--version"}).exit_code == 0,
                     "systemd-tmpfiles is not installed (systemd)");
  std::string pattern = (fs::temp_directory_path() / "gpuenv-tmpfiles-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  const fs::path root = pattern;
  const fs::path state = root / "var/lib/gpuenv";
  fs::create_directories(state);
  for (const char* file : {"ready", "ready.tmp", "doctor.json", "watch.db"}) std::ofstream(state / file) << "x\n";
  const std::string conf = (k_source / "packaging/tmpfiles/gpuenv.conf").string();

  const auto installed = run_command({"systemd-tmpfiles", "--create", "--root=" + root.string(), conf});
  INFO(installed.out << installed.err);
  CHECK(installed.exit_code == 0);
  CHECK(fs::exists(state / "ready"));
  // A --remove run after boot (by hand or by tooling) keeps this boot's marker: the `r!` lines act only with --boot.
  const auto removed = run_command({"systemd-tmpfiles", "--remove", "--root=" + root.string(), conf});
  INFO(removed.out << removed.err);
  CHECK(removed.exit_code == 0);
  CHECK(fs::exists(state / "ready"));

  const auto booted =
      run_command({"systemd-tmpfiles", "--create", "--remove", "--boot", "--root=" + root.string(), conf});
  INFO(booted.out << booted.err);
  CHECK(booted.exit_code == 0);
  CHECK(booted.err.empty());
  CHECK_FALSE(fs::exists(state / "ready"));
  CHECK_FALSE(fs::exists(state / "ready.tmp"));
  CHECK(fs::exists(state / "doctor.json"));  // the last report and watch's history stay
  CHECK(fs::exists(state / "watch.db"));
  std::error_code ignored;
  fs::remove_all(root, ignored);
}
