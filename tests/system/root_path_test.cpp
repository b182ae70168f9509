// `doctor --root`: the tree must be a directory, and its symlinks resolve inside it (issue 16).

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;

/// A fixture tree in a temporary directory: <top>/tree is the inspected root, <top>/outside lies next to it.
struct FixtureTree {
  fs::path top;
  fs::path tree;
  FixtureTree() {
    top = fs::temp_directory_path() / ("gpuenv-root-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    tree = top / "tree";
    fs::create_directories(tree / "etc");
    fs::create_directories(tree / "usr/lib");
    fs::create_directories(top / "outside");
    std::ofstream(tree / "etc/shadow") << "tree shadow\n";
    std::ofstream(tree / "usr/lib/os-release") << "ID=tree\n";
    std::ofstream(top / "outside/secret") << "outside\n";
  }
  ~FixtureTree() {
    std::error_code ignored;
    fs::remove_all(top, ignored);
  }
  void link(const std::string& target, const std::string& name) const { fs::create_symlink(target, tree / name); }
  std::unique_ptr<gpuenv::system::System> system() const {
    auto rooted = gpuenv::system::make_rooted_system(tree.string());
    REQUIRE(rooted);
    return std::move(*rooted);
  }
};

}  // namespace

TEST_CASE("the --root tree must be a directory", "[system][root]") {
  const FixtureTree fixture;
  auto file = gpuenv::system::make_rooted_system((fixture.tree / "etc/shadow").string());
  REQUIRE_FALSE(file);
  CHECK(file.error().kind == gpuenv::util::ErrorKind::usage);
  CHECK(file.error().message.find("etc/shadow: not a directory") != std::string::npos);
  auto missing = gpuenv::system::make_rooted_system((fixture.top / "nope").string());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("no such directory") != std::string::npos);
}

TEST_CASE("symlinks under --root resolve inside the root", "[system][root]") {
  const FixtureTree fixture;
  struct Row {
    const char* target;
    const char* expected;  // what reading /link gives, or nullptr when it must not be readable
  };
  const Row rows[] = {
      {"/etc/shadow", "tree shadow\n"},                // absolute: re-rooted, never the host's /etc/shadow
      {"../../../../../etc/shadow", "tree shadow\n"},  // `..` stops at the root
      {"../outside/secret", nullptr},                  // ../ from the top is the top: tree/outside does not exist
      {"/../outside/secret", nullptr},
      {"usr/lib/os-release", "ID=tree\n"},               // relative, inside
      {"/usr/lib/../../etc/./shadow", "tree shadow\n"},  // mixed
  };
  for (const Row& row : rows) {
    CAPTURE(row.target);
    const std::string name = "link" + std::to_string(&row - rows);
    fixture.link(row.target, name);
    auto text = fixture.system()->read_file("/" + name);
    if (row.expected == nullptr) {
      CHECK_FALSE(text);
      CHECK_FALSE(fixture.system()->exists("/" + name));
    } else {
      REQUIRE(text);
      CHECK(*text == row.expected);
    }
  }
}

TEST_CASE("a directory symlink under --root is followed inside the root too", "[system][root]") {
  const FixtureTree fixture;
  fixture.link("/", "etc/up");          // /etc/up -> the tree's top
  fixture.link("/usr/lib", "etc/lib");  // /etc/lib -> the tree's /usr/lib
  auto system = fixture.system();
  CHECK(*system->read_file("/etc/up/etc/up/etc/shadow") == "tree shadow\n");
  CHECK(*system->read_file("/etc/lib/os-release") == "ID=tree\n");
  CHECK(system->list_directory("/etc/lib") == std::vector<std::string>{"os-release"});
  CHECK_FALSE(system->read_file("/etc/up/../outside/secret"));
}

TEST_CASE("a symlink loop under --root is an error, not a hang", "[system][root]") {
  const FixtureTree fixture;
  fixture.link("/b", "a");
  fixture.link("/a", "b");
  fixture.link("self", "self");
  auto system = fixture.system();
  auto loop = system->read_file("/a");
  REQUIRE_FALSE(loop);
  CHECK(loop.error().message.find("too many levels of symbolic links") != std::string::npos);
  CHECK_FALSE(system->read_file("/self/x"));
  CHECK_FALSE(system->exists("/a"));
}
