// Every child gpuenv starts (docs/security.md, "Child processes"): found in absolute, system directories only, started
// in "/" with a scrubbed environment. The pure rules, then the real runner with this process's environment set up
// as an attacker would leave it (a planted program in the working directory, PYTHONPATH, LD_PRELOAD, a lower-case
// `path`, an empty PATH as under slurmd).

#include "system/child_process.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "support/skip.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::system::child_environment;
using gpuenv::system::EnvironmentList;
using gpuenv::system::program_search_path;

std::optional<std::string> value_of(const EnvironmentList& environment, const std::string& name) {
  for (const auto& [key, value] : environment) {
    if (key == name) return value;
  }
  return std::nullopt;
}

/// Sets (or unsets) a variable of this process for one scope: the runner reads the real environment.
class ScopedVariable {
 public:
  ScopedVariable(std::string name, const std::optional<std::string>& value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) m_old = old;
    if (value) {
      ::setenv(m_name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(m_name.c_str());
    }
  }
  ~ScopedVariable() {
    if (m_old) {
      ::setenv(m_name.c_str(), m_old->c_str(), 1);
    } else {
      ::unsetenv(m_name.c_str());
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  std::string m_name;
  std::optional<std::string> m_old;
};

/// A directory of this test's own, removed at the end, with the working directory moved into it for the scope.
class PlantedDirectory {
 public:
  PlantedDirectory() : m_dir(fs::temp_directory_path() / ("gpuenv-child-" + std::to_string(::getpid()))) {
    fs::create_directories(m_dir);
    m_previous = fs::current_path();
  }
  ~PlantedDirectory() {
    fs::current_path(m_previous);
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }
  PlantedDirectory(const PlantedDirectory&) = delete;
  PlantedDirectory& operator=(const PlantedDirectory&) = delete;
  /// An executable script `name` that leaves `marker` behind when it runs.
  fs::path plant_program(const std::string& name) {
    const fs::path program = m_dir / name;
    std::ofstream(program) << "#!/bin/sh\necho planted > " << marker().string() << "\n";
    fs::permissions(program, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    return program;
  }
  fs::path marker() const { return m_dir / "ran"; }
  const fs::path& path() const { return m_dir; }
  void enter() { fs::current_path(m_dir); }

 private:
  fs::path m_dir;
  fs::path m_previous;
};

}  // namespace

TEST_CASE("search path: PATH's absolute entries, then the system directories, never the working directory",
          "[system][security]") {
  struct Row {
    std::optional<std::string> path;
    std::vector<std::string> first;  // the entries expected before the fixed system directories
  };
  const Row rows[] = {
      {std::nullopt, {}},     // slurmd, cron -: no PATH at all
      {std::string(""), {}},  // an empty PATH is the working directory in execvp
      {std::string(":/opt/bin::.:bin:/usr/bin"), {"/opt/bin", "/usr/bin"}},  // empty and relative entries skipped
      {std::string("/usr/bin:/usr/bin:/opt/x/"), {"/usr/bin", "/opt/x/"}},
  };
  for (const Row& row : rows) {
    INFO("PATH=" << row.path.value_or("(unset)"));
    const std::vector<std::string> search = program_search_path(row.path);
    REQUIRE(search.size() >= row.first.size());
    for (std::size_t i = 0; i < row.first.size(); ++i) CHECK(search[i] == row.first[i]);
    for (const std::string& directory : search) CHECK(directory.front() == '/');
    for (const char* fixed : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"})
      CHECK(std::find(search.begin(), search.end(), fixed) != search.end());
  }
}

TEST_CASE("child environment: an allowlist, PATH made safe, HOME the user's own", "[system][security]") {
  const EnvironmentList parent = {{"PATH", ".:/usr/bin"},
                                  {"PYTHONPATH", "/home/mallory"},
                                  {"PYTHONHOME", "/home/mallory"},
                                  {"LD_PRELOAD", "/home/mallory/evil.so"},
                                  {"LD_LIBRARY_PATH", "/home/mallory/lib"},
                                  {"APT_CONFIG", "/home/mallory/apt.conf"},
                                  {"HOME", "/home/mallory"},
                                  {"SSL_CERT_FILE", "/home/mallory/ca.pem"},
                                  {"BASH_ENV", "/home/mallory/rc"},
                                  {"path", "/home/mallory/bin"},
                                  {"https_proxy", "http://proxy:3128"},
                                  {"CUDA_VISIBLE_DEVICES", "0,1"},
                                  {"CUDA_VISIBLE_DEVICES", "7"},
                                  {"LANG", "C.UTF-8"},
                                  {"LC_CTYPE", "/home/mallory/locale"},
                                  {"LOCPATH", "/home/mallory/locale"}};
  const EnvironmentList root = child_environment(parent, "/root", true);
  for (const char* dropped : {"PYTHONPATH", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "APT_CONFIG",
                              "SSL_CERT_FILE", "BASH_ENV", "path", "LC_CTYPE", "LOCPATH"}) {
    INFO(dropped);
    CHECK_FALSE(value_of(root, dropped));
  }
  CHECK(value_of(root, "HOME") == "/root");
  CHECK(value_of(root, "LANG") == "C.UTF-8");  // a locale name passes; a path to locale files (LC_CTYPE) does not
  CHECK(value_of(root, "https_proxy") == "http://proxy:3128");
  CHECK(value_of(root, "CUDA_VISIBLE_DEVICES") == "0,1");  // the first of repeated names, as getenv
  const std::string path = *value_of(root, "PATH");
  CHECK(path.rfind("/usr/bin:", 0) == 0);
  CHECK(path.find(".:") == std::string::npos);
  // A user's own children keep the libraries the user's environment modules set up.
  CHECK(value_of(child_environment(parent, "/home/alice", false), "LD_LIBRARY_PATH") == "/home/mallory/lib");
}

TEST_CASE("command runner: children start in / with the scrubbed environment", "[system][security]") {
  PlantedDirectory planted;
  planted.enter();
  const ScopedVariable python("PYTHONPATH", planted.path().string());
  const ScopedVariable preload("GPUENV_TEST_SECRET", std::string("leaked"));
  auto real = gpuenv::system::make_real_system();
  const auto where = real->run({"pwd"}, std::chrono::seconds(10));
  CHECK(where.exit_code == 0);
  CHECK(where.out == "/\n");
  const auto env = real->run({"env"}, std::chrono::seconds(10));
  REQUIRE(env.exit_code == 0);
  CHECK(env.out.find("PYTHONPATH") == std::string::npos);
  CHECK(env.out.find("GPUENV_TEST_SECRET") == std::string::npos);
  CHECK(env.out.find("HOME=") != std::string::npos);
}

TEST_CASE("command runner: a program planted in the working directory is never run, whatever PATH says",
          "[system][security]") {
  PlantedDirectory planted;
  planted.plant_program("dmesg");
  planted.enter();
  auto real = gpuenv::system::make_real_system();
  // An empty entry, "." and a relative entry all name the working directory to execvp; Boost's search_path also
  // took a variable spelled `path`.
  for (const std::string& path : {std::string(":/nonexistent"), std::string("."), std::string("./")}) {
    INFO("PATH=" << path);
    const ScopedVariable variable("PATH", path);
    const ScopedVariable lower("path", planted.path().string());
    const auto result = real->run({"dmesg", "--version"}, std::chrono::seconds(10));
    CHECK_FALSE(fs::exists(planted.marker()));
    // Found in the fixed system directories instead (util-linux's dmesg is in /usr/bin or /bin).
    CHECK_FALSE(result.not_found);
  }
}

TEST_CASE("command runner: with no PATH at all (slurmd) system tools are still found", "[system][security]") {
  const ScopedVariable variable("PATH", std::nullopt);
  auto real = gpuenv::system::make_real_system();
  const auto result = real->run({"dmesg", "--version"}, std::chrono::seconds(10));
  CHECK_FALSE(result.not_found);
  CHECK(result.out.find("util-linux") != std::string::npos);
}

TEST_CASE("command runner as root: a PATH directory another user can add programs to is never searched",
          "[system][security][system-test]") {
  GPUENV_SKIP_UNLESS(::geteuid() == 0,
                     "needs root (the rule is root's; a user may run programs from their own directories)");
  // Root's PATH names a directory a job user owns (their ~/bin) or anyone can write (a sticky /tmp-like one): the
  // user puts a `dmesg` there, and root's doctor ran it. A directory only root can change is still searched.
  struct Row {
    const char* what;
    unsigned owner;
    fs::perms mode;
    bool searched;
  };
  const Row rows[] = {
      {"owned by nobody", 65534,
       fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
           fs::perms::others_exec,
       false},
      {"root's, world-writable and sticky", 0, fs::perms::all | fs::perms::sticky_bit, false},
      {"root's, group-writable", 0, fs::perms::owner_all | fs::perms::group_all, false},
      {"root's, 0755", 0,
       fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
           fs::perms::others_exec,
       true},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    PlantedDirectory planted;
    planted.plant_program("gpuenv-test-tool");
    fs::permissions(planted.path(), row.mode);
    REQUIRE(::chown(planted.path().c_str(), row.owner, row.owner) == 0);
    const ScopedVariable variable("PATH", planted.path().string() + ":/usr/bin:/bin");
    auto real = gpuenv::system::make_real_system();
    const auto result = real->run({"gpuenv-test-tool"}, std::chrono::seconds(10));
    CHECK(fs::exists(planted.marker()) == row.searched);
    CHECK(result.not_found == !row.searched);
    // A child that searches PATH itself (env, a script) gets the same directories.
    const auto env = real->run({"env"}, std::chrono::seconds(10));
    REQUIRE(env.exit_code == 0);
    CHECK((env.out.find("PATH=" + planted.path().string() + ":") != std::string::npos) == row.searched);
  }
}
