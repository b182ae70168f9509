// Integration: the per-boot script itself (as `gpuenv cloud-init` renders it) run boot after boot in a Debian 12 root
// (chroot), with a stand-in gpuenv that records its calls and answers like install and doctor, and stand-in
// systemctl/shutdown/curl that record instead of rebooting or downloading. The stand-in reboot then stops the script
// with SIGTERM, as systemd's shutdown would: the script must still be waiting for it (it never returns after asking
// for a reboot). Needs root and debootstrap.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cloudinit/cloudinit.hpp"
#include "support/skip.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace {

/// What Node::boot returns when the script was still running when the (stand-in) shutdown stopped it.
constexpr int k_stopped_by_shutdown = 1000;

using gpuenv::cloudinit::Options;
using gpuenv::cloudinit::SourceKind;
using gpuenv::testing::read_text;
using gpuenv::util::contains;

// Answers like `gpuenv install --resume P --json` and `gpuenv doctor --profile P --json`. /var/lib/standin/mode:
// "loop" (default): the first install asks for a reboot, the second finishes, later ones change nothing;
// "always-reboot": every install asks for a reboot; "refused": install refuses (exit 1). /var/lib/standin/verdict: the
// doctor verdict (default READY); /var/lib/standin/verdicts: verdicts used up one per call, before that.
constexpr const char* k_standin_gpuenv = R"(#!/bin/sh
d=/var/lib/standin
mkdir -p "$d"
echo "$*" >>"$d/calls"
case "$1" in
  install)
    step=$(cat "$d/install-step" 2>/dev/null || echo 0)
    mode=$(cat "$d/mode" 2>/dev/null || echo loop)
    if [ "$mode" = always-reboot ]; then step=0; fi
    if [ "$mode" = refused ]; then
      echo "install: refused" >>"$d/answers"
      printf '{"changed": false, "outcome": "refused", "reboot_required": false}\n'
      exit 1
    fi
    case "$step" in
      0) echo 1 >"$d/install-step"; echo "install: changed, reboot" >>"$d/answers"
         printf '{\n  "changed": true,\n  "reboot_required": true,\n  "steps": []\n}\n' ;;
      1) echo 2 >"$d/install-step"; echo "install: changed" >>"$d/answers"
         printf '{"changed": true, "reboot_required": false}\n' ;;
      *) echo "install: unchanged" >>"$d/answers"
         printf '{"changed":false,"reboot_required":false}\n' ;;
    esac
    exit 0 ;;
  doctor)
    if [ -s "$d/verdicts" ]; then
      verdict=$(head -n 1 "$d/verdicts")
      sed -i 1d "$d/verdicts"
    else
      verdict=$(cat "$d/verdict" 2>/dev/null || echo READY)
    fi
    echo "doctor: $verdict" >>"$d/answers"
    printf '{\n  "findings": [],\n  "schema": 1,\n  "verdict": "%s"\n}\n' "$verdict"
    [ "$verdict" = "NOT READY" ] && exit 1
    exit 0 ;;
esac
exit 2
)";

// systemctl and shutdown: `is-active` answers "inactive"; a reboot is recorded, then the caller is stopped with
// SIGTERM as the shutdown would stop it (unless /var/lib/standin/no-stop exists: then nothing stops it; or
// /var/lib/standin/reboot-fails: the request fails as systemctl's does when systemd refuses the job, exit 1).
constexpr const char* k_standin_reboot = R"(#!/bin/sh
mkdir -p /var/lib/standin
if [ "$1" = is-active ]; then
  left=$(cat /var/lib/standin/activating 2>/dev/null || echo 0)
  if [ "$left" -gt 0 ]; then echo $((left - 1)) >/var/lib/standin/activating; echo activating; exit 3; fi
  echo inactive
  exit 3
fi
echo "$(basename "$0") $*" >>/var/lib/standin/reboots
if [ -f /var/lib/standin/reboot-fails ]; then echo "Failed to reboot system via logind: Access denied" >&2; exit 1; fi
[ -f /var/lib/standin/no-stop ] || kill -TERM "$PPID"
)";

// curl ... -K - (url and output on standard input, as the script passes them): records its argv and that config, then
// copies /srv/downloads/<last part of the URL> to the output.
constexpr const char* k_standin_curl = R"SH(#!/bin/sh
mkdir -p /var/lib/standin
echo "curl $*" >>/var/lib/standin/downloads
config=$(cat)
printf '%s\n' "$config" >>/var/lib/standin/curl-stdin
url=$(printf '%s\n' "$config" | sed -n 's/^url = "\(.*\)"$/\1/p')
out=$(printf '%s\n' "$config" | sed -n 's/^output = "\(.*\)"$/\1/p')
url=${url%%\?*}
cp "/srv/downloads/${url##*/}" "$out"
)SH";

void write_file(const fs::path& path, const std::string& text, fs::perms perms = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  fs::permissions(path, perms);
}

/// A private copy of the cached Debian 12 minbase root with the stand-ins installed, removed at the end.
class Node {
 public:
  explicit Node(const std::string& cached) {
    std::string pattern = "/var/tmp/gpuenv-per-boot-XXXXXX";
    m_root = ::mkdtemp(pattern.data());
    const auto copy = m_system->run({"cp", "-a", cached + "/.", m_root.string()}, std::chrono::seconds(600));
    REQUIRE(copy.exit_code == 0);
    write_file(m_root / "usr/local/sbin/systemctl", k_standin_reboot, fs::perms(0755));
    write_file(m_root / "usr/local/sbin/shutdown", k_standin_reboot, fs::perms(0755));
    write_file(m_root / "usr/local/sbin/curl", k_standin_curl, fs::perms(0755));
    write_file(m_root / "etc/gpuenv/profile.toml", "schema = 1\nname = \"standin\"\n");
  }
  ~Node() { fs::remove_all(m_root); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  fs::path path(const std::string& in_root) const { return m_root / in_root.substr(1); }
  std::string file(const std::string& in_root) const { return read_text(path(in_root)); }
  bool has(const std::string& in_root) const { return fs::exists(path(in_root)); }

  void install_script(const Options& options) {
    auto script = gpuenv::cloudinit::render_per_boot_script(options);
    REQUIRE(script.has_value());
    write_file(path(std::string(gpuenv::cloudinit::k_per_boot_path)), *script, fs::perms(0700));  // as the user-data
  }

  /// One boot: cloud-init's final stage runs the per-boot script; the run.
  gpuenv::system::CommandResult run_boot(std::chrono::seconds limit = std::chrono::seconds(120)) {
    return m_system->run({"chroot", m_root.string(), std::string(gpuenv::cloudinit::k_per_boot_path)}, limit);
  }

  /// One boot that ends by itself; its exit code (k_stopped_by_shutdown when the stand-in reboot stopped it).
  int boot() {
    const auto result = run_boot();
    INFO(result.out << result.err);
    REQUIRE_FALSE(result.timed_out);
    return result.signal == SIGTERM ? k_stopped_by_shutdown : result.exit_code;
  }

 private:
  std::unique_ptr<gpuenv::system::System> m_system = gpuenv::system::make_real_system();
  fs::path m_root;
};

/// The cached Debian 12 root, or "" with `why` set when this machine cannot make one.
std::string cached_root(std::string& why) {
  if (::geteuid() != 0) {
    why = "needs root (chroot)";
    return "";
  }
  auto system = gpuenv::system::make_real_system();
  if (system->run({"debootstrap", "--version"}, std::chrono::seconds(30)).not_found) {
    why = "debootstrap is not installed (scripts/bootstrap installs it)";
    return "";
  }
  const auto root =
      system->run({std::string(GPUENV_SOURCE_DIR) + "/scripts/debian-root", "bookworm"}, std::chrono::seconds(1200));
  if (root.exit_code != 0) {
    why = "scripts/debian-root bookworm failed: " + root.err;
    return "";
  }
  return std::string(gpuenv::util::trim(root.out));
}

/// A node made from the cached Debian 12 root, or nullptr after saying why this machine cannot make one.
std::unique_ptr<Node> fresh_node() {
  std::string why;
  const std::string cached = cached_root(why);
  if (cached.empty()) {
    WARN("SKIPPED: " << why);
    return nullptr;
  }
  return std::make_unique<Node>(cached);
}

/// The SHA-256 of a file on this machine, as sha256sum prints it.
std::string sha256_of(const fs::path& file) {
  const auto sum = gpuenv::system::make_real_system()->run({"sha256sum", file.string()}, std::chrono::seconds(30));
  REQUIRE(sum.exit_code == 0);
  return sum.out.substr(0, 64);
}

Options preinstalled_options() {
  Options options;
  options.source = {SourceKind::preinstalled, "", "", "/usr/bin/gpuenv"};
  options.retry_delay_s = 0;
  return options;
}

const std::string k_install_call = "install --resume /etc/gpuenv/profile.toml --json\n";
const std::string k_doctor_call = "doctor --tier boot --profile /etc/gpuenv/profile.toml --json\n";

}  // namespace

TEST_CASE("per-boot: install, reboot, verify, then nothing changes", "[cloudinit][integration][system-test][engine]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/usr/bin/gpuenv"), k_standin_gpuenv, fs::perms(0755));
  node.install_script(preinstalled_options());

  // Boot 1: install changes the node and asks for a reboot; the script reboots, verifies nothing yet, and is still
  // waiting when the shutdown stops it.
  write_file(node.path("/var/lib/gpuenv/ready"), "verdict=READY\nboot_id=an-earlier-boot\n");
  CHECK(node.boot() == k_stopped_by_shutdown);
  CHECK(node.file("/var/lib/standin/calls") == k_install_call);
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\n");
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));  // the earlier boot's marker went first thing
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
  CHECK_FALSE(node.has("/var/lib/gpuenv/doctor.json"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "install asks for a reboot (reboot 1 of at most 5)"));

  // Boot 2: install finishes without a reboot; doctor says READY: doctor.json and the marker are written.
  CHECK(node.boot() == 0);
  CHECK(node.file("/var/lib/standin/calls") == k_install_call + k_install_call + k_doctor_call);
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\n");
  CHECK(contains(node.file("/var/lib/gpuenv/doctor.json"), "\"verdict\": \"READY\""));
  CHECK(gpuenv::util::starts_with(node.file("/var/lib/gpuenv/ready"), "verdict=READY\n"));
  CHECK_FALSE(node.has("/var/lib/gpuenv/cloud-init-reboots"));

  // Boot 3: already ready: install changes nothing, no reboot, the marker stays.
  CHECK(node.boot() == 0);
  CHECK(node.file("/var/lib/standin/answers") ==
        "install: changed, reboot\ninstall: changed\ndoctor: READY\ninstall: unchanged\ndoctor: READY\n");
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\n");
  CHECK(node.has("/var/lib/gpuenv/ready"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "gpuenv install: nothing to change"));

  // A later boot where the node broke: NOT READY removes the marker (exit 1: cloud-init reports the failure).
  write_file(node.path("/var/lib/standin/verdict"), "NOT READY\n");
  CHECK(node.boot() == 1);
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
  CHECK(contains(node.file("/var/lib/gpuenv/doctor.json"), "\"verdict\": \"NOT READY\""));
  // DEGRADED (warnings) is ready enough: the marker comes back.
  write_file(node.path("/var/lib/standin/verdict"), "DEGRADED\n");
  CHECK(node.boot() == 0);
  CHECK(gpuenv::util::starts_with(node.file("/var/lib/gpuenv/ready"), "verdict=DEGRADED\n"));
  CHECK_FALSE(fs::exists(node.path("/var/lib/gpuenv/doctor.json.tmp")));

  // An install that refuses is not retried; doctor records the state, the marker goes (doctor alone would say READY).
  write_file(node.path("/var/lib/standin/mode"), "refused\n");
  fs::remove(node.path("/var/lib/standin/answers"));
  CHECK(node.boot() == 1);
  CHECK(node.file("/var/lib/standin/answers") == "install: refused\ndoctor: DEGRADED\n");
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "gpuenv install: refused (exit 1); not retrying"));

  // --doctor-only: verify, never install.
  Options verify_only = preinstalled_options();
  verify_only.doctor_only = true;
  node.install_script(verify_only);
  fs::remove(node.path("/var/lib/standin/calls"));
  CHECK(node.boot() == 0);
  CHECK(node.file("/var/lib/standin/calls") == k_doctor_call);
}

TEST_CASE("per-boot: reboots are bounded, and --set reaches install and doctor",
          "[cloudinit][integration][system-test][engine]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/usr/bin/gpuenv"), k_standin_gpuenv, fs::perms(0755));
  write_file(node.path("/var/lib/standin/mode"), "always-reboot\n");
  Options options = preinstalled_options();
  options.max_reboots = 2;
  options.selection = {{"framework.python", "3.11"}};
  node.install_script(options);

  CHECK(node.boot() == k_stopped_by_shutdown);
  CHECK(node.boot() == k_stopped_by_shutdown);
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\nsystemctl reboot --no-block\n");
  // The third request is refused: no reboot, no marker, exit 1; doctor still records the state.
  CHECK(node.boot() == 1);
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\nsystemctl reboot --no-block\n");
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "not rebooting again"));
  CHECK(contains(node.file("/var/lib/standin/calls"),
                 "install --resume /etc/gpuenv/profile.toml --set framework.python=3.11 --json\n"
                 "doctor --tier boot --profile /etc/gpuenv/profile.toml --set framework.python=3.11 --json\n"));
}

TEST_CASE("per-boot: a downloaded gpuenv is installed only when its SHA-256 matches",
          "[cloudinit][integration][system-test][engine]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/srv/downloads/gpuenv"), k_standin_gpuenv, fs::perms(0644));
  const std::string sha = sha256_of(node.path("/srv/downloads/gpuenv"));

  Options options = preinstalled_options();
  options.source = {SourceKind::url, "https://example.com/releases/gpuenv", std::string(64, 'f'), ""};
  node.install_script(options);
  CHECK(node.boot() == 1);
  CHECK_FALSE(node.has("/usr/local/bin/gpuenv"));
  CHECK_FALSE(node.has("/var/lib/standin/calls"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "SHA-256 mismatch"));

  options.source.sha256 = sha;
  node.install_script(options);
  CHECK(node.boot() == k_stopped_by_shutdown);  // first boot: installs gpuenv, then install asks for a reboot
  CHECK(node.file("/usr/local/bin/gpuenv") == k_standin_gpuenv);
  CHECK(fs::status(node.path("/usr/local/bin/gpuenv")).permissions() == fs::perms(0755));
  CHECK(node.file("/var/lib/standin/calls") == k_install_call);
  const std::string downloads = node.file("/var/lib/standin/downloads");
  CHECK(node.boot() == 0);  // the binary is there with the right checksum: no second download
  CHECK(node.file("/var/lib/standin/downloads") == downloads);
  CHECK(node.has("/var/lib/gpuenv/ready"));
}

TEST_CASE("per-boot: a downloaded .deb is checked, installed with apt-get, and not fetched again",
          "[cloudinit][integration][system-test][engine]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  // A package holding the stand-in as /usr/bin/gpuenv, built with the host's dpkg-deb.
  const fs::path package = node.path("/var/tmp/gpuenv-package");
  write_file(package / "DEBIAN/control",
             "Package: gpuenv\nVersion: 0.1.0\nArchitecture: all\nMaintainer: gpuenv tests <tests@example.com>\n"
             "Description: stand-in gpuenv for the per-boot test\n");
  write_file(package / "usr/bin/gpuenv", k_standin_gpuenv, fs::perms(0755));
  auto system = gpuenv::system::make_real_system();
  const fs::path deb = node.path("/srv/downloads/gpuenv_0.1.0_all.deb");
  fs::create_directories(deb.parent_path());
  const auto built =
      system->run({"dpkg-deb", "--root-owner-group", "-b", package.string(), deb.string()}, std::chrono::seconds(60));
  INFO(built.err);
  REQUIRE(built.exit_code == 0);
  fs::remove_all(package);

  Options options = preinstalled_options();
  options.source = {SourceKind::deb, "https://example.com/releases/gpuenv_0.1.0_all.deb", sha256_of(deb), ""};
  node.install_script(options);
  CHECK(node.boot() == k_stopped_by_shutdown);  // first boot: installs the package, then install asks for a reboot
  CHECK(node.file("/usr/bin/gpuenv") == k_standin_gpuenv);
  CHECK(contains(node.file("/var/lib/dpkg/status"), "Package: gpuenv\nStatus: install ok installed\n"));
  CHECK(node.file("/var/lib/standin/calls") == k_install_call);
  CHECK_FALSE(node.has("/var/lib/gpuenv/gpuenv.deb"));
  const std::string downloads = node.file("/var/lib/standin/downloads");
  CHECK(node.boot() == 0);  // installed with that checksum: not downloaded again
  CHECK(node.file("/var/lib/standin/downloads") == downloads);
  CHECK(node.has("/var/lib/gpuenv/ready"));
}

TEST_CASE("per-boot: the real gpuenv doctor's JSON is read right (no GPU in the chroot: NOT READY, no marker)",
          "[cloudinit][integration][system-test][engine]") {
#if defined(__SANITIZE_ADDRESS__)
  GPUENV_SKIP("a sanitizer build of gpuenv needs the host's libasan, which the Debian root does not have");
#endif
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  fs::copy_file(GPUENV_BINARY, node.path("/usr/bin/gpuenv"));
  fs::permissions(node.path("/usr/bin/gpuenv"), fs::perms(0755));
  write_file(node.path("/etc/gpuenv/profile.toml"),
             read_text(std::string(GPUENV_SOURCE_DIR) + "/profiles/pytorch-2.9-cu128.toml"));
  write_file(node.path("/var/lib/gpuenv/ready"), "verdict=READY\n");  // left from an earlier boot
  Options options = preinstalled_options();
  options.doctor_only = true;
  node.install_script(options);
  CHECK(node.boot() == 1);
  CHECK(contains(node.file("/var/lib/gpuenv/doctor.json"), "\"verdict\": \"NOT READY\""));
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "gpuenv doctor: NOT READY (exit 1"));
}

TEST_CASE("per-boot: after asking for a reboot the script never returns to cloud-init",
          "[cloudinit][integration][system-test]") {
  // cloud-init marks a module as run before running it: a per-boot script that returned while the machine shuts down
  // would let the final stage start the user's scripts, which the shutdown kills and which never run again.
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/usr/bin/gpuenv"), k_standin_gpuenv, fs::perms(0755));
  write_file(node.path("/var/lib/standin/no-stop"), "");  // nothing stops the script this time
  node.install_script(preinstalled_options());
  const auto run = node.run_boot(std::chrono::seconds(5));
  INFO(run.out << run.err);
  CHECK(run.timed_out);  // still waiting for the shutdown after 5 s
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\n");
  CHECK(node.file("/var/lib/standin/calls") == k_install_call);  // no doctor, nothing after the request
  const std::string log = node.file("/var/log/gpuenv/cloud-init.log");
  CHECK(gpuenv::util::ends_with(log, "install asks for a reboot (reboot 1 of at most 5); rebooting\n"));
}

TEST_CASE("per-boot: a reboot that cannot be requested is reported, not waited for",
          "[cloudinit][integration][system-test]") {
  // Nothing would ever stop the script, and cloud-final.service has TimeoutSec=0 (cloud-init's
  // systemd/cloud-final.service; Debian 12 ships the same): waiting would hold cloud-init's final stage for good.
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/usr/bin/gpuenv"), k_standin_gpuenv, fs::perms(0755));
  write_file(node.path("/var/lib/standin/reboot-fails"), "");
  node.install_script(preinstalled_options());
  const auto run = node.run_boot(std::chrono::seconds(60));
  INFO(run.out << run.err);
  REQUIRE_FALSE(run.timed_out);
  CHECK(run.exit_code == 1);
  CHECK(node.file("/var/lib/standin/reboots") == "systemctl reboot --no-block\n");
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "the reboot could not be requested (exit 1)"));
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));  // doctor records the state; install did not finish
  CHECK(node.file("/var/lib/standin/calls") == k_install_call + k_doctor_call);
}

TEST_CASE("per-boot: doctor is asked again while nvidia-fabricmanager is still starting",
          "[cloudinit][integration][system-test]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/usr/bin/gpuenv"), k_standin_gpuenv, fs::perms(0755));
  write_file(node.path("/var/lib/standin/verdicts"), "NOT READY\nREADY\n");
  write_file(node.path("/var/lib/standin/activating"), "1\n");
  Options options = preinstalled_options();
  options.doctor_only = true;
  node.install_script(options);
  CHECK(node.boot() == 0);
  CHECK(node.file("/var/lib/standin/answers") == "doctor: NOT READY\ndoctor: READY\n");
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"),
                 "while nvidia-persistenced or nvidia-fabricmanager is starting"));
  CHECK(gpuenv::util::starts_with(node.file("/var/lib/gpuenv/ready"), "verdict=READY\nboot_id="));

  // Not starting (inactive): NOT READY is the answer, once.
  write_file(node.path("/var/lib/standin/verdicts"), "NOT READY\nREADY\n");
  fs::remove(node.path("/var/lib/standin/answers"));
  CHECK(node.boot() == 1);
  CHECK(node.file("/var/lib/standin/answers") == "doctor: NOT READY\n");
  CHECK_FALSE(node.has("/var/lib/gpuenv/ready"));
}

TEST_CASE("per-boot: a signed URL stays out of ps and the log, credentials come only from a root-only curl config",
          "[cloudinit][integration][system-test]") {
  const auto fresh = fresh_node();
  if (!fresh) return;
  Node& node = *fresh;
  write_file(node.path("/srv/downloads/gpuenv"), k_standin_gpuenv, fs::perms(0644));
  Options options = preinstalled_options();
  options.source = {SourceKind::url, "https://bucket.example.com/gpuenv?X-Amz-Signature=s3cr3t",
                    sha256_of(node.path("/srv/downloads/gpuenv")), "", "/etc/gpuenv/curl.conf"};
  node.install_script(options);

  // A config others can read is refused, not used.
  write_file(node.path("/etc/gpuenv/curl.conf"), "user = \"ci:token\"\n", fs::perms(0644));
  CHECK(node.boot() == 1);
  CHECK(contains(node.file("/var/log/gpuenv/cloud-init.log"), "refusing /etc/gpuenv/curl.conf"));
  CHECK_FALSE(node.has("/var/lib/standin/downloads"));

  fs::permissions(node.path("/etc/gpuenv/curl.conf"), fs::perms(0600));
  CHECK(node.boot() == k_stopped_by_shutdown);  // installed gpuenv, then install asked for a reboot
  const std::string argv = node.file("/var/lib/standin/downloads");
  CHECK(contains(argv, "-K /etc/gpuenv/curl.conf -K -"));
  CHECK(contains(argv, "--proto-redir =https"));
  CHECK_FALSE(contains(argv, "s3cr3t"));  // not in curl's argv, so not in `ps`
  CHECK(contains(node.file("/var/lib/standin/curl-stdin"),
                 "url = \"https://bucket.example.com/gpuenv?X-Amz-Signature=s3cr3t\""));
  const std::string log = node.file("/var/log/gpuenv/cloud-init.log");
  CHECK_FALSE(contains(log, "s3cr3t"));
  CHECK(contains(log, "https://bucket.example.com/gpuenv?(query hidden)"));
}
