// The release artifacts (scripts/package, docs/packaging.md) as a user meets them: the portable binary's glibc floor
// and dependencies, the binary and the .deb inside a clean Debian 11 root, lintian, the .rpm and the tarball.
//
// They need what scripts/test builds first when it runs as root (build/portable/gpuenv and dist/). Elsewhere they
// print SKIPPED; with GPUENV_REQUIRE_PACKAGES=1 (set by scripts/test after building them) a missing artifact fails.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace {

using gpuenv::system::CommandResult;

using gpuenv::testing::k_source;
const std::string k_portable = (k_source / "build/portable/gpuenv").string();
const std::string k_dist = (k_source / "dist").string();
/// RHEL and Rocky Linux 8 ship glibc 2.28: the oldest fleet OS `gpuenv install` targets (Ubuntu 20.04 and Debian 11
/// have 2.31). The portable build keeps within it (cmake/include/gpuenv_glibc_2_28.hpp, docs/packaging.md).
const gpuenv::util::Version k_glibc_floor = *gpuenv::util::Version::parse("2.28");

gpuenv::system::System& real_system() {
  static auto system = gpuenv::system::make_real_system();
  return *system;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (std::string_view line : gpuenv::util::split_lines(text)) lines.emplace_back(line);
  return lines;
}

CommandResult run(const std::vector<std::string>& argv, int seconds = 120) {
  return real_system().run(argv, std::chrono::seconds(seconds));
}

/// The GLIBC_x.y versions an `objdump -T` listing requires (undefined symbols only, "*UND*").
std::set<gpuenv::util::Version> required_glibc_versions(const std::string& objdump_text) {
  static const std::regex k_glibc(R"(\*UND\*.*\bGLIBC_([0-9]+(\.[0-9]+)+)\b)");
  std::set<gpuenv::util::Version> versions;
  for (const std::string& line : lines_of(objdump_text)) {
    std::smatch match;
    if (std::regex_search(line, match, k_glibc)) versions.insert(*gpuenv::util::Version::parse(match[1].str()));
  }
  return versions;
}

/// The undefined symbols of an `objdump -T` listing that need a glibc newer than `floor`, as "name (GLIBC_x.y)":
/// what keeps the binary from starting on the floor's systems.
std::vector<std::string> symbols_above(const std::string& objdump_text, const gpuenv::util::Version& floor) {
  static const std::regex k_symbol(R"(\*UND\*.*\bGLIBC_([0-9]+(\.[0-9]+)+)\)?\s+(\S+)\s*$)");
  std::vector<std::string> above;
  for (const std::string& line : lines_of(objdump_text)) {
    std::smatch match;
    if (std::regex_search(line, match, k_symbol) && *gpuenv::util::Version::parse(match[1].str()) > floor)
      above.push_back(match[3].str() + " (GLIBC_" + match[1].str() + ")");
  }
  return above;
}

/// Symbol versions from libstdc++/libgcc (GLIBCXX_, CXXABI_, GCC_): present only when those are linked dynamically.
std::vector<std::string> dynamic_cxx_runtime_symbols(const std::string& objdump_text) {
  static const std::regex k_cxx(R"(\b(GLIBCXX|CXXABI|GCC)_[0-9.]+\b)");
  std::vector<std::string> found;
  for (const std::string& line : lines_of(objdump_text)) {
    if (std::regex_search(line, k_cxx)) found.push_back(line);
  }
  return found;
}

/// The NEEDED entries of a `readelf -d` listing.
std::vector<std::string> needed_libraries(const std::string& readelf_text) {
  static const std::regex k_needed(R"(\(NEEDED\).*\[(.+)\])");
  std::vector<std::string> needed;
  for (const std::string& line : lines_of(readelf_text)) {
    std::smatch match;
    if (std::regex_search(line, match, k_needed)) needed.push_back(match[1].str());
  }
  return needed;
}

/// Whether the artifacts can be tested here; prints SKIPPED (or fails when they are required) when not.
bool artifacts_present(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (::access(path.c_str(), R_OK) == 0) continue;
    const char* required = std::getenv("GPUENV_REQUIRE_PACKAGES");
    if (required != nullptr && std::string(required) == "1")
      FAIL(path << " is missing: scripts/package did not make it");
    WARN("SKIPPED: " << path << " is missing (scripts/package builds it, as root)");
    return false;
  }
  return true;
}

bool can_sandbox() {
  if (::geteuid() != 0 || run({"bwrap", "--version"}).exit_code != 0) {
    WARN("SKIPPED: needs root and bubblewrap to run inside a Debian 11 root");
    return false;
  }
  return true;
}

/// A fresh copy of the cached clean Debian 11 root, removed again on destruction.
class Bullseye {
 public:
  Bullseye() {
    const CommandResult cached = run({(k_source / "scripts/debian-root").string(), "bullseye"}, 600);
    REQUIRE(cached.exit_code == 0);
    char pattern[] = "/tmp/gpuenv-bullseye-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    REQUIRE(run({"cp", "-a", std::string(gpuenv::util::trim(cached.out)) + "/.", dir_}).exit_code == 0);
  }
  ~Bullseye() { run({"rm", "-rf", dir_}); }
  Bullseye(const Bullseye&) = delete;
  Bullseye& operator=(const Bullseye&) = delete;

  const std::string& dir() const { return dir_; }
  /// Runs argv inside the root (its own /dev and /proc, the host's /sys read-only, no network namespace needed).
  CommandResult run_inside(const std::vector<std::string>& argv) const {
    std::vector<std::string> command{
        "bwrap", "--bind",    dir_,   "/",    "--dev",    "/dev", "--proc",
        "/proc", "--ro-bind", "/sys", "/sys", "--setenv", "PATH", "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
    command.insert(command.end(), argv.begin(), argv.end());
    return run(command);
  }

 private:
  std::string dir_;
};

}  // namespace

TEST_CASE("the glibc floor check reads objdump listings and fails above 2.28, naming the symbol", "[packaging]") {
  // Lines as `objdump -T` prints them for the Debian 12 build that could not start on Ubuntu 22.04 (issue 9).
  const std::string too_new =
      "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.36) arc4random\n"
      "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) pthread_create\n"
      "0000000000000000      DF *UND*  0000000000000000  GLIBC_2.2.5 memcpy\n"
      "0000000000000000      DF *UND*  0000000000000000 (GLIBCXX_3.4.30) _ZNSt6chrono3_V212system_clock3nowEv\n";
  const auto versions = required_glibc_versions(too_new);
  REQUIRE(versions.size() == 3);
  CHECK(versions.rbegin()->str() == "2.36");
  CHECK(*versions.rbegin() > k_glibc_floor);
  CHECK(symbols_above(too_new, k_glibc_floor) ==
        std::vector<std::string>{"arc4random (GLIBC_2.36)", "pthread_create (GLIBC_2.34)"});
  // A Debian 11 (gcc 10, glibc 2.31) build without GPUENV_GLIBC_2_28 of condition_variable::wait_for,
  // timed_mutex::try_lock_for and shared_timed_mutex::try_lock_shared_for: libstdc++'s steady_clock waits.
  const std::string bullseye =
      "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.30) pthread_mutex_clocklock\n"
      "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.17) clock_gettime\n"
      "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.30) pthread_rwlock_clockrdlock\n"
      "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.30) pthread_cond_clockwait\n";
  CHECK(symbols_above(bullseye, k_glibc_floor) == std::vector<std::string>{"pthread_mutex_clocklock (GLIBC_2.30)",
                                                                           "pthread_rwlock_clockrdlock (GLIBC_2.30)",
                                                                           "pthread_cond_clockwait (GLIBC_2.30)"});
  CHECK(dynamic_cxx_runtime_symbols(too_new).size() == 1);
  CHECK(needed_libraries(" 0x0000000000000001 (NEEDED)  Shared library: [libstdc++.so.6]\n") ==
        std::vector<std::string>{"libstdc++.so.6"});
}

TEST_CASE("the portable binary needs glibc 2.28 at most and links nothing else dynamically",
          "[packaging][system-test][engine]") {
  if (!artifacts_present({k_portable})) return;
  const CommandResult symbols = run({"objdump", "-T", k_portable});
  REQUIRE(symbols.exit_code == 0);
  const auto versions = required_glibc_versions(symbols.out);
  REQUIRE_FALSE(versions.empty());
  INFO("highest GLIBC symbol version: " << versions.rbegin()->str());
  CHECK(symbols_above(symbols.out, k_glibc_floor) == std::vector<std::string>{});
  CHECK(dynamic_cxx_runtime_symbols(symbols.out).empty());

  const CommandResult dynamic = run({"readelf", "-d", k_portable});
  REQUIRE(dynamic.exit_code == 0);
  // glibc's own libraries only: no libstdc++, Boost or pugixml, and no NVIDIA library (they are dlopen'ed).
  const std::set<std::string> allowed{"libc.so.6",
                                      "libm.so.6",
                                      "libdl.so.2",
                                      "libpthread.so.0",
                                      "librt.so.1",
                                      "ld-linux-x86-64.so.2",
                                      "ld-linux-aarch64.so.1"};
  for (const std::string& library : needed_libraries(dynamic.out)) {
    INFO("NEEDED " << library);
    CHECK(allowed.count(library) == 1);
  }
}

TEST_CASE("the portable binary runs in a clean Debian 11 root", "[packaging][system-test][engine]") {
  if (!artifacts_present({k_portable}) || !can_sandbox()) return;
  Bullseye root;
  REQUIRE(run({"install", "-m", "0755", k_portable, root.dir() + "/usr/local/bin/gpuenv"}).exit_code == 0);

  CHECK(root.run_inside({"ldd", "--version"}).out.find("2.31") != std::string::npos);
  const CommandResult version = root.run_inside({"gpuenv", "--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("gpuenv ", 0) == 0);

  // No GPU or driver in the root: NOT READY (exit 1) with a JSON report, never a crash or a loader error.
  const CommandResult doctor = root.run_inside({"gpuenv", "doctor", "--quick", "--json"});
  INFO(doctor.err);
  CHECK(doctor.exit_code == 1);
  const auto report = nlohmann::json::parse(doctor.out);
  CHECK(report.at("verdict") == "NOT READY");
  CHECK(report.at("findings").size() > 5);

  const CommandResult check = root.run_inside({"gpuenv", "profile", "check", "--all"});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
}

TEST_CASE("the .deb installs with dpkg into a clean Debian 11 root and runs", "[packaging][system-test][engine]") {
  const std::string deb = k_dist + "/gpuenv_" + GPUENV_PROJECT_VERSION + "_amd64.deb";
  if (!artifacts_present({deb}) || !can_sandbox()) return;
  Bullseye root;
  REQUIRE(run({"cp", deb, root.dir() + "/tmp/gpuenv.deb"}).exit_code == 0);

  const CommandResult install = root.run_inside({"dpkg", "-i", "/tmp/gpuenv.deb"});
  INFO(install.out << install.err);
  REQUIRE(install.exit_code == 0);
  CHECK(root.run_inside({"dpkg-query", "-W", "-f=${Status}", "gpuenv"}).out == "install ok installed");
  CHECK(root.run_inside({"/usr/bin/gpuenv", "--version"}).out ==
        std::string("gpuenv ") + GPUENV_PROJECT_VERSION + "\n");
  CHECK(
      root.run_inside({"gpuenv", "profile", "check", "/usr/share/gpuenv/profiles/pytorch-2.9-cu128.toml"}).exit_code ==
      0);
  CHECK(root.run_inside({"test", "-s", "/usr/share/doc/gpuenv/copyright"}).exit_code == 0);
  CHECK(root.run_inside({"test", "-s", "/usr/lib/systemd/system/gpuenv-watch.service"}).exit_code == 0);
  for (const char* unit : {"gpuenv-doctor.service", "gpuenv-doctor.timer", "gpuenv-ready.target"})
    CHECK(root.run_inside({"test", "-s", std::string("/usr/lib/systemd/system/") + unit}).exit_code == 0);
  CHECK(root.run_inside({"test", "-s", "/usr/share/gpuenv/deploy/systemd/slurmd.service.d/gpuenv-ready.conf"})
            .exit_code == 0);
  CHECK(root.run_inside({"test", "-s", "/usr/lib/tmpfiles.d/gpuenv.conf"}).exit_code == 0);

  const CommandResult remove = root.run_inside({"dpkg", "--purge", "gpuenv"});
  CHECK(remove.exit_code == 0);
  CHECK(root.run_inside({"test", "-e", "/usr/bin/gpuenv"}).exit_code == 1);
}

TEST_CASE("lintian finds no error in the .deb", "[packaging][system-test][engine]") {
  const std::string deb = k_dist + "/gpuenv_" + GPUENV_PROJECT_VERSION + "_amd64.deb";
  if (!artifacts_present({deb})) return;
  GPUENV_SKIP_UNLESS(run({"lintian", "--version"}).exit_code == 0,
                     "lintian is not installed (scripts/bootstrap installs it)");
  const CommandResult lintian = run({"lintian", "--fail-on", "error", deb}, 300);
  INFO(lintian.out << lintian.err);
  CHECK(lintian.exit_code == 0);
  CHECK(lintian.out.find("E: ") == std::string::npos);
}

TEST_CASE("the .rpm carries the binary and requires only glibc", "[packaging][system-test][engine]") {
  const std::string rpm = k_dist + "/gpuenv-" + GPUENV_PROJECT_VERSION + "-1.x86_64.rpm";
  if (!artifacts_present({rpm})) return;
  const CommandResult files = run({"rpm", "-qpl", rpm});
  REQUIRE(files.exit_code == 0);
  CHECK(files.out.find("/usr/bin/gpuenv\n") != std::string::npos);
  CHECK(files.out.find("/usr/share/gpuenv/profiles/pytorch-2.9-cu128.toml\n") != std::string::npos);
  CHECK(files.out.find("/usr/lib/systemd/system/gpuenv-watch.service\n") != std::string::npos);
  CHECK(files.out.find("/usr/lib/systemd/system/gpuenv-doctor.timer\n") != std::string::npos);
  CHECK(files.out.find("/usr/lib/systemd/system/gpuenv-ready.target\n") != std::string::npos);
  CHECK(files.out.find("/usr/lib/tmpfiles.d/gpuenv.conf\n") != std::string::npos);

  const CommandResult requires_ = run({"rpm", "-qp", "--requires", rpm});
  REQUIRE(requires_.exit_code == 0);
  for (const std::string& line : lines_of(requires_.out)) {
    if (line.empty() || line.rfind("rpmlib(", 0) == 0) continue;
    INFO("Requires: " << line);
    CHECK(line.rfind("glibc >= ", 0) == 0);
  }
}

TEST_CASE("the tarball and SHA256SUMS verify, and the tarball's binary is the portable one",
          "[packaging][system-test][engine]") {
  const std::string tarball = k_dist + "/gpuenv-" + GPUENV_PROJECT_VERSION + "-linux-x86_64.tar.gz";
  if (!artifacts_present({tarball, k_dist + "/SHA256SUMS"})) return;
  const CommandResult sums = run({"sh", "-c", "cd \"$0\" && sha256sum --strict -c SHA256SUMS", k_dist});
  INFO(sums.out << sums.err);
  CHECK(sums.exit_code == 0);
  CHECK(sums.out.find(": OK") != std::string::npos);

  const std::string bare = k_dist + "/gpuenv-" + GPUENV_PROJECT_VERSION + "-linux-x86_64";
  CHECK(sums.out.find("gpuenv-" + std::string(GPUENV_PROJECT_VERSION) + "-linux-x86_64: OK") != std::string::npos);
  CHECK(run({bare, "--version"}).exit_code == 0);

  const CommandResult listing = run({"tar", "-tzf", tarball});
  REQUIRE(listing.exit_code == 0);
  const std::string top = std::string("gpuenv-") + GPUENV_PROJECT_VERSION + "/";
  CHECK(listing.out.find(top + "gpuenv\n") != std::string::npos);
  CHECK(listing.out.find(top + "profiles/pytorch-2.9-cu128.toml\n") != std::string::npos);
  CHECK(listing.out.find(top + "copyright\n") != std::string::npos);
}

namespace {

/// A directory under /tmp, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/gpuenv-export-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() { run({"rm", "-rf", path_}); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string trimmed(const std::string& text) { return std::string(gpuenv::util::trim(text)); }

/// The tarball entries' times (`tar --utc --full-time -tv`: "YYYY-MM-DD HH:MM:SS"), one per entry.
std::vector<std::string> tarball_times(const std::string& tarball) {
  const CommandResult listing = run({"tar", "--utc", "--full-time", "-tvzf", tarball});
  REQUIRE(listing.exit_code == 0);
  static const std::regex k_time(R"(\b(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\b)");
  std::vector<std::string> times;
  for (const std::string& line : lines_of(listing.out)) {
    std::smatch match;
    if (std::regex_search(line, match, k_time)) times.push_back(match[1].str());
  }
  return times;
}

std::string utc_time_of(const std::string& epoch) {
  return trimmed(run({"date", "-u", "-d", "@" + epoch, "+%Y-%m-%d %H:%M:%S"}).out);
}

}  // namespace

// Distributions build from a source export, and `git archive` gives one without .git: scripts/package used to stamp
// every tarball entry with `--mtime=@` (an empty `git log`), and tar warned "implausibly old time stamp" on each.
// The date now comes from SOURCE_DATE_EPOCH, the git history, or packaging/source-date, which `git archive` fills in
// (export-subst in .gitattributes; gitattributes(5), "export-subst").
TEST_CASE("scripts/package in a git archive export stamps every file with the commit's time",
          "[packaging][system-test][engine]") {
  GPUENV_SKIP_UNLESS(run({"git", "-C", k_source.string(), "rev-parse", "--is-inside-work-tree"}).exit_code == 0,
                     k_source.string() << " is not a git checkout (nothing to export)");
  // The tracked files as they are now (`git stash create` records them without touching the checkout; it prints
  // nothing when nothing changed, and HEAD is then the same tree).
  std::string commit = trimmed(run({"git", "-C", k_source.string(), "stash", "create"}).out);
  if (commit.empty()) commit = "HEAD";
  const std::string epoch = trimmed(run({"git", "-C", k_source.string(), "log", "-1", "--format=%ct", commit}).out);
  REQUIRE_FALSE(epoch.empty());
  ScratchDir scratch;
  const std::string tree = scratch.path() + "/gpuenv";
  REQUIRE(run({"mkdir", tree}).exit_code == 0);
  REQUIRE(
      run({"sh", "-c", "git -C \"$0\" archive \"$1\" | tar -x -C \"$2\"", k_source.string(), commit, tree}).exit_code ==
      0);
  REQUIRE(::access((tree + "/.git").c_str(), F_OK) != 0);
  CHECK(trimmed(run({"cat", tree + "/packaging/source-date"}).out) == epoch);
  // Any executable will do as the binary: the stamping is under test, not the build (scripts/package --skip-build).
  REQUIRE(run({"install", "-D", "-m", "0755", GPUENV_BINARY, tree + "/build/portable/gpuenv"}).exit_code == 0);
  const std::string tarball = tree + "/dist/gpuenv-" + GPUENV_PROJECT_VERSION + "-linux-x86_64.tar.gz";

  const CommandResult exported =
      run({"env", "-u", "SOURCE_DATE_EPOCH", tree + "/scripts/package", "--skip-build"}, 300);
  INFO(exported.out << exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK(exported.err.find("implausibly old time stamp") == std::string::npos);
  const std::vector<std::string> times = tarball_times(tarball);
  REQUIRE(times.size() > 5);
  for (const std::string& time : times) CHECK(time == utc_time_of(epoch));
  const CommandResult changelog =
      run({"sh", "-c", "dpkg-deb --fsys-tarfile \"$0\" | tar -xO ./usr/share/doc/gpuenv/changelog.gz | gzip -dc",
           tree + "/dist/gpuenv_" + GPUENV_PROJECT_VERSION + "_amd64.deb"});
  CHECK(changelog.out.find(trimmed(run({"date", "-R", "-d", "@" + epoch}).out)) != std::string::npos);

  // SOURCE_DATE_EPOCH, when set, wins (reproducible-builds.org/specs/source-date-epoch).
  const CommandResult pinned =
      run({"env", "SOURCE_DATE_EPOCH=1700000000", tree + "/scripts/package", "--skip-build"}, 300);
  REQUIRE(pinned.exit_code == 0);
  for (const std::string& time : tarball_times(tarball)) CHECK(time == "2023-11-14 22:13:20");

  // No date anywhere: refused before dist/ is touched, naming the way out.
  REQUIRE(run({"rm", tree + "/packaging/source-date"}).exit_code == 0);
  const CommandResult undated = run({"env", "-u", "SOURCE_DATE_EPOCH", tree + "/scripts/package", "--skip-build"}, 300);
  CHECK(undated.exit_code == 1);
  CHECK(undated.err.find("SOURCE_DATE_EPOCH") != std::string::npos);
  CHECK(run({"sh", "-c", "cd \"$0\" && sha256sum --strict --quiet -c SHA256SUMS", tree + "/dist"}).exit_code == 0);
}
