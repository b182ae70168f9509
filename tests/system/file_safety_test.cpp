// Files root writes or trusts (docs/security.md, "Files root writes", "Named files"), on the real filesystem:
// planted symlinks, an umask of 000, directories an unprivileged user owns or can write. The cases that need a
// second user run as root and make that user with `setpriv --reuid=65534` (nobody); elsewhere they are skipped.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
constexpr unsigned k_nobody = 65534;

/// A fresh directory under /tmp (root's sticky /tmp: its own trust is not in question), removed at the end.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : m_dir(fs::temp_directory_path() / ("gpuenv-" + name + "-" + std::to_string(::getpid()))) {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
    fs::create_directories(m_dir);
    fs::permissions(m_dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path operator/(const std::string& name) const { return m_dir / name; }
  const fs::path& path() const { return m_dir; }

 private:
  fs::path m_dir;
};

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

unsigned mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

/// Runs argv as nobody (uid and gid 65534, no groups): the unprivileged user of the attacks.
gpuenv::system::CommandResult as_nobody(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  return gpuenv::system::make_real_system()->run(argv, std::chrono::seconds(10));
}

bool skip_unless_root() {
  if (::geteuid() == 0) return false;
  WARN("SKIPPED: needs root to act as a second, unprivileged user (setpriv --reuid=65534)");
  return true;
}

/// A directory owned by nobody, as a job user's own directory is.
void give_to_nobody(const fs::path& path) { REQUIRE(::chown(path.c_str(), k_nobody, k_nobody) == 0); }

}  // namespace

TEST_CASE("atomic write: a symlink planted at the temporary name redirects nothing", "[system][security]") {
  Scratch dir("plant");
  const fs::path victim = dir / "victim";
  std::ofstream(victim) << "precious\n";
  // gpuenv named its temporary ".<name>.tmp.<pid>" and opened it following links: a link planted under that name
  // made the write land in the victim.
  fs::create_symlink(victim, dir / (".metrics.prom.tmp." + std::to_string(::getpid())));
  auto real = gpuenv::system::make_real_system();
  REQUIRE(real->write_file_atomic((dir / "metrics.prom").string(), "gpuenv_up 1\n"));
  CHECK(contents(victim) == "precious\n");
  CHECK(contents(dir / "metrics.prom") == "gpuenv_up 1\n");
  CHECK(fs::is_regular_file(fs::symlink_status(dir / "metrics.prom")));
  // The link is still there (never opened, never renamed); no temporary is left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 3);
}

TEST_CASE("atomic write: the file gets the mode asked for, whatever the umask", "[system][security]") {
  Scratch dir("mode");
  auto real = gpuenv::system::make_real_system();
  const mode_t old = ::umask(0);  // under umask 000 files came out 0666, /etc/apt's included
  REQUIRE(real->write_file_atomic((dir / "default").string(), "a\n"));
  REQUIRE(real->write_file_atomic((dir / "secret").string(), "b\n", 0600));
  REQUIRE(real->write_file_atomic((dir / "tool").string(), "c\n", 0755));
  ::umask(077);
  REQUIRE(real->write_file_atomic((dir / "shared").string(), "d\n", 0644));
  ::umask(old);
  CHECK(mode_of(dir / "default") == 0644);
  CHECK(mode_of(dir / "secret") == 0600);
  CHECK(mode_of(dir / "tool") == 0755);
  CHECK(mode_of(dir / "shared") == 0644);
  // Rewriting an existing file sets the mode again.
  REQUIRE(real->write_file_atomic((dir / "secret").string(), "b2\n", 0640));
  CHECK(mode_of(dir / "secret") == 0640);
  CHECK(contents(dir / "secret") == "b2\n");
}

TEST_CASE("atomic write as root: a directory a user owns or can write is refused, a sticky one only for their files",
          "[system][security][system-test]") {
  if (skip_unless_root()) return;
  Scratch dir("rootwrite");
  auto real = gpuenv::system::make_real_system();
  const fs::path victim = dir / "shadow";
  std::ofstream(victim) << "root only\n";
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write);

  SECTION("a job user's own directory: they plant a link at the target after the check, or at any name") {
    const fs::path theirs = dir / "theirs";
    fs::create_directory(theirs);
    give_to_nobody(theirs);
    REQUIRE(as_nobody({"ln", "-s", victim.string(), (theirs / "gpuenv.prom").string()}).exit_code == 0);
    const auto written = real->write_file_atomic((theirs / "gpuenv.prom").string(), "gpuenv_up 1\n");
    REQUIRE_FALSE(written);
    CHECK(written.error().message.find("belongs to uid 65534") != std::string::npos);
    CHECK(written.error().remedy.find("chmod go-w") != std::string::npos);
    CHECK(contents(victim) == "root only\n");
  }
  SECTION("a world-writable directory without the sticky bit") {
    const fs::path open = dir / "open";
    fs::create_directory(open);
    fs::permissions(open, fs::perms::all);
    const auto written = real->write_file_atomic((open / "x").string(), "x\n");
    REQUIRE_FALSE(written);
    CHECK(written.error().message.find("writable by everyone") != std::string::npos);
  }
  SECTION("a user's directory on the way, through a link they control") {
    const fs::path theirs = dir / "theirs";
    fs::create_directory(theirs);
    give_to_nobody(theirs);
    REQUIRE(as_nobody({"ln", "-s", dir.path().string(), (theirs / "out").string()}).exit_code == 0);
    const auto written = real->write_file_atomic((theirs / "out" / "shadow").string(), "pwned\n");
    REQUIRE_FALSE(written);
    CHECK(contents(victim) == "root only\n");
  }
  SECTION("a sticky world-writable directory: root's own file or a new one, never a user's") {
    const fs::path sticky = dir / "sticky";
    fs::create_directory(sticky);
    fs::permissions(sticky, fs::perms::all | fs::perms::sticky_bit);
    CHECK(real->write_file_atomic((sticky / "new").string(), "new\n"));
    CHECK(contents(sticky / "new") == "new\n");
    REQUIRE(as_nobody({"touch", (sticky / "planted").string()}).exit_code == 0);
    const auto written = real->write_file_atomic((sticky / "planted").string(), "x\n");
    REQUIRE_FALSE(written);
    CHECK(written.error().message.find("belongs to uid 65534") != std::string::npos);
  }
}

TEST_CASE("trust: a named file only root and the user can change passes, anything else says why",
          "[system][security]") {
  Scratch dir("trust");
  auto real = gpuenv::system::make_real_system();
  const fs::path library = dir / "libnvidia-ml.so.1";
  std::ofstream(library) << "ELF";
  fs::permissions(library,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  CHECK_FALSE(real->trust_problem(library.string()));
  CHECK_FALSE(real->trust_problem((dir / "missing").string()));  // the reader says "no such file"
  fs::permissions(library, fs::perms::others_write, fs::perm_options::add);
  const auto everyone = real->trust_problem(library.string());
  REQUIRE(everyone);
  CHECK(everyone->find(library.string() + " is writable by everyone") != std::string::npos);
  fs::permissions(library, fs::perms::others_write, fs::perm_options::remove);
  fs::permissions(dir.path(), fs::perms::group_write, fs::perm_options::add);
  const auto group = real->trust_problem(library.string());
  REQUIRE(group);
  CHECK(group->find(dir.path().string() + " is writable by its group") != std::string::npos);
}

TEST_CASE("trust as root: a file, directory or link of another user is not root's to load",
          "[system][security][system-test]") {
  if (skip_unless_root()) return;
  Scratch dir("trustroot");
  auto real = gpuenv::system::make_real_system();
  const fs::path library = dir / "libcuda.so.1";
  std::ofstream(library) << "ELF";
  CHECK_FALSE(real->trust_problem(library.string()));
  SECTION("the file belongs to the user") {
    give_to_nobody(library);
    const auto problem = real->trust_problem(library.string());
    REQUIRE(problem);
    CHECK(problem->find("belongs to uid 65534") != std::string::npos);
  }
  SECTION("a link the user planted in sticky /tmp, to root's own good file") {
    const fs::path link = fs::temp_directory_path() / ("gpuenv-trust-link-" + std::to_string(::getpid()));
    REQUIRE(as_nobody({"ln", "-sf", library.string(), link.string()}).exit_code == 0);
    const auto problem = real->trust_problem(link.string());
    fs::remove(link);
    REQUIRE(problem);
    CHECK(problem->find("belongs to uid 65534") != std::string::npos);
  }
}
