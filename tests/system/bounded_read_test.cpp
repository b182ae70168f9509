// Bounded reads through the real System (issue 16): regular files only, a cap per kind, refused before reading.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/fake_system.hpp"
#include "support/temp_dir.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::system::FileKind;

using gpuenv::testing::TempDir;

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a character device is refused at once, not read forever", "[system][limits]") {
  auto system = gpuenv::system::make_real_system();
  auto text = system->read_file("/dev/zero", FileKind::profile);  // reading it would never end
  REQUIRE_FALSE(text);
  CHECK(text.error().kind == gpuenv::util::ErrorKind::input);
  CHECK(mentions(text.error().message, "/dev/zero is a character device, not a regular file"));
}

TEST_CASE("a FIFO without a writer is refused without blocking", "[system][limits]") {
  const TempDir dir;
  const std::string fifo = (dir.path() / "profile.toml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto text = gpuenv::system::make_real_system()->read_file(fifo, FileKind::profile);
  REQUIRE_FALSE(text);
  CHECK(mentions(text.error().message, "is a FIFO (named pipe), not a regular file"));
}

TEST_CASE("a directory is refused as a file", "[system][limits]") {
  const TempDir dir;
  auto text = gpuenv::system::make_real_system()->read_file(dir.path().string());
  REQUIRE_FALSE(text);
  CHECK(mentions(text.error().message, "is a directory, not a regular file"));
}

TEST_CASE("a file over its kind's cap is refused with the path and the limit", "[system][limits]") {
  const TempDir dir;
  const std::string big = dir.write("big.toml", std::string((1u << 20) + 1, '#'));
  auto system = gpuenv::system::make_real_system();
  auto as_profile = system->read_file(big, FileKind::profile);
  REQUIRE_FALSE(as_profile);
  CHECK(mentions(as_profile.error().message, big + " is 1048577 bytes, over the 1 MiB limit for a profile"));
  CHECK(mentions(as_profile.error().remedy, "docs/reliability.md"));
  // The same file is within the cap of a report and of host text.
  CHECK(system->read_file(big, FileKind::report));
  CHECK(system->read_file(big)->size() == (1u << 20) + 1);
  // Exactly at the cap is allowed.
  const std::string at_cap = dir.write("cap.toml", std::string(1u << 20, '#'));
  CHECK(system->read_file(at_cap, FileKind::profile));
}

TEST_CASE("a kernel log is read from its end, from a line start", "[system][limits]") {
  const TempDir dir;
  const std::string line(99, 'x');
  std::string log;
  for (int i = 0; i < 50000; ++i) log += line + "\n";  // 5,000,000 bytes, over the 4 MiB window
  log += "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n";
  const std::string path = dir.write("kern.log", log);
  auto text = gpuenv::system::make_real_system()->read_file(path, FileKind::kernel_log);
  REQUIRE(text);
  CHECK(text->size() <= (4u << 20));
  CHECK(text->size() > (4u << 20) - 200);
  CHECK(text->front() == 'x');                         // starts at a line start
  CHECK(text->find("\n", 0) == line.size());           // ... so its first line is whole
  CHECK(mentions(*text, "Xid (PCI:0000:01:00): 79"));  // and keeps the newest lines
}

TEST_CASE("/proc files, whose size stat reports as 0, are read to their end", "[system][limits]") {
  auto text = gpuenv::system::make_real_system()->read_file("/proc/self/status");
  REQUIRE(text);
  CHECK(mentions(*text, "Pid:"));
}

TEST_CASE("the fake system applies the same caps by kind", "[system][limits]") {
  gpuenv::testing::FakeSystem fake;
  fake.files["/p.toml"] = std::string((1u << 20) + 10, 'a');
  fake.files["/var/log/kern.log"] = "old line\n" + std::string(4u << 20, 'b') + "\nnew line\n";
  auto profile = fake.read_file("/p.toml", FileKind::profile);
  REQUIRE_FALSE(profile);
  CHECK(mentions(profile.error().message, "over the 1 MiB limit"));
  auto log = fake.read_file("/var/log/kern.log", FileKind::kernel_log);
  REQUIRE(log);
  CHECK(*log == "new line\n");
}
