// The systemd units the packages ship (packaging/systemd/) and the drop-ins in deploy/systemd/, checked by the real
// `systemd-analyze verify` (Debian 12's systemd 252) in a scratch root: a copy of this machine's unit directory (so
// the targets they name exist), the units and drop-ins where the package and an administrator put them, and
// stand-ins for the programs they run. verify exits 0 on warnings such as an unknown key, so its output must be
// empty too; a misspelled key is shown to produce output.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path k_source = GPUENV_SOURCE_DIR;
const char* const k_units[] = {"gpuenv-doctor.service", "gpuenv-doctor.timer", "gpuenv-ready.target"};

gpuenv::system::CommandResult run(const std::vector<std::string>& argv) {
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
    REQUIRE(run({"cp", "-a", "/usr/lib/systemd/system", (root_ / "usr/lib/systemd/").string()}).exit_code == 0);
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
    return run(argv);
  }

 private:
  fs::path root_;
};

std::string why_no_verify() {
  if (run({"systemd-analyze", "--version"}).exit_code != 0) return "systemd-analyze is not installed";
  if (!fs::exists("/usr/lib/systemd/system/slurmd.service")) return "slurmd is not installed (scripts/bootstrap)";
  return "";
}

}  // namespace

TEST_CASE("systemd: gpuenv-doctor.service, .timer and gpuenv-ready.target pass systemd-analyze verify",
          "[packaging][systemd][system-test]") {
  if (const std::string why = why_no_verify(); !why.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  UnitRoot root;
  const auto verified = root.verify({k_units[0], k_units[1], k_units[2], "slurmd.service", "kubelet.service"});
  INFO(verified.out << verified.err);
  CHECK(verified.exit_code == 0);
  CHECK(verified.out.empty());
  CHECK(verified.err.empty());

  // The drop-ins do what they say: slurmd and kubelet require the target and start after it.
  for (const char* service : {"slurmd.service", "kubelet.service"}) {
    const auto shown =
        run({"env", "SYSTEMD_LOG_LEVEL=debug", "systemd-analyze", "verify", "--root=" + root.path().string(), service});
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
