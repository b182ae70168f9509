// The per-boot script's durable_move (data/cloudinit/per-boot.sh), run by a real sh under strace: the file is
// flushed before the rename, and the directory after it. fsync(2): "Calling fsync() does not necessarily ensure that
// the entry in the directory containing the file has also reached disk. For that an explicit fsync() on a file
// descriptor for the directory is also needed." Without the second, a power cut after the rename can bring back the
// old marker or doctor.json.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/skip.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;

/// The shell function `name` as the script defines it ("name() {" to the first "}" line).
std::string shell_function(const std::string& script, const std::string& name) {
  const std::size_t start = script.find("\n" + name + "() {\n");
  REQUIRE(start != std::string::npos);
  const std::size_t end = script.find("\n}\n", start + 1);
  REQUIRE(end != std::string::npos);
  return script.substr(start + 1, end + 3 - (start + 1));  // through "}\n"
}

}  // namespace

TEST_CASE("per-boot: durable_move flushes the file, renames it, then flushes the directory",
          "[cloudinit][system-test]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_UNLESS(system->run({"strace", "-V"}, std::chrono::seconds(10)).exit_code == 0,
                     "strace is not installed (scripts/bootstrap installs it)");
  std::string pattern = (fs::temp_directory_path() / "gpuenv-durable-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  const fs::path dir = pattern;
  std::ofstream(dir / "ready.tmp") << "verdict=READY\n";
  std::ofstream(dir / "ready") << "verdict=READY\nboot_id=old\n";
  const std::string function = shell_function(
      gpuenv::testing::read_text(fs::path(GPUENV_SOURCE_DIR) / "data/cloudinit/per-boot.sh"), "durable_move");
  const auto run = system->run({"strace", "-f", "-qq", "-e", "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
                                "-o", (dir / "trace").string(), "sh", "-c", function + "durable_move \"$1\" \"$2\"\n",
                                "sh", (dir / "ready.tmp").string(), (dir / "ready").string()},
                               std::chrono::seconds(30));
  const std::string trace = gpuenv::testing::read_text(dir / "trace");
  INFO(run.out << run.err << trace);
  if (gpuenv::util::contains(run.err, "ptrace")) {
    fs::remove_all(dir);
    GPUENV_SKIP("strace cannot trace here: " << run.err);
  }
  REQUIRE(run.exit_code == 0);
  CHECK(gpuenv::testing::read_text(dir / "ready") == "verdict=READY\n");

  // The order of the calls: an fsync of the file's descriptor, the rename, an fsync of the directory's descriptor.
  const std::regex open_call("openat\\(AT_FDCWD, \"([^\"]*)\", [^)]*\\) = ([0-9]+)");
  const std::regex fsync_call("fsync\\(([0-9]+)\\)");
  std::map<std::string, std::string> open_fds;  // "pid fd" -> path
  std::vector<std::string> events;
  for (std::string_view line : gpuenv::util::split_lines(trace)) {
    const std::string text(line);
    const std::string pid = text.substr(0, text.find(' '));
    std::smatch m;
    if (std::regex_search(text, m, open_call)) open_fds[pid + " " + m[2].str()] = m[1].str();
    if (std::regex_search(text, m, fsync_call)) events.push_back("fsync " + open_fds[pid + " " + m[1].str()]);
    if (gpuenv::util::contains(text, "rename") && gpuenv::util::contains(text, "= 0")) events.push_back("rename");
  }
  const std::vector<std::string> expected{"fsync " + (dir / "ready.tmp").string(), "rename", "fsync " + dir.string()};
  CHECK(events == expected);
  fs::remove_all(dir);
}
