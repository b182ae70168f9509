// The built binary on hostile input (issue 16): devices, FIFOs and huge files as profiles exit 2 at once, and a
// description full of shell metacharacters reaches Dockerfiles and user-data only as quoted text, never a command.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_binary.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::run_gpuenv;

struct Scratch {
  fs::path path;
  Scratch() {
    path = fs::temp_directory_path() / ("gpuenv-hostile-in-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const char* const k_marker = "$(touch /tmp/pwned) `id` ; | & ' \\\" \xEF\xBC\x84HOME";

}  // namespace

TEST_CASE("profile check on a device, a FIFO or a huge file exits 2 within a second", "[cli][limits][e2e]") {
  const Scratch scratch;
  const std::string fifo = (scratch.path / "fifo.toml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string big = (scratch.path / "big.toml").string();
  {
    std::ofstream out(big, std::ios::binary);
    const std::string block(1 << 20, '\x9C');
    for (int i = 0; i < 20; ++i) out << block;  // 20 MiB: over the 1 MiB limit of a profile
  }
  struct Row {
    std::string path;
    const char* excerpt;
  };
  const Row rows[] = {{"/dev/zero", "/dev/zero is a character device, not a regular file"},
                      {fifo, "is a FIFO (named pipe), not a regular file"},
                      {big, "is 20971520 bytes, over the 1 MiB limit"}};
  for (const Row& row : rows) {
    CAPTURE(row.path);
    // Refused by its type and size: reading /dev/zero or a FIFO with no writer would never end.
    const auto result = run_gpuenv({"profile", "check", row.path});
    CHECK(result.exit_code == 2);
    CHECK(result.err.find(row.excerpt) != std::string::npos);
  }
}

TEST_CASE("a description with shell metacharacters reaches generated files only as quoted text",
          "[cli][hostile][e2e]") {
  const Scratch scratch;
  const fs::path profile = scratch.path / "hostile.toml";
  std::ofstream(profile) << "schema = 1\nname = \"hostile\"\ndescription = \"" << k_marker
                         << "\"\n[os]\ndistro = \"ubuntu\"\nversion = \"22.04\"\n[cuda]\nversion = \"12.4.1\"\n"
                         << "[image]\nflavor = \"runtime\"\n";
  const auto dockerfile = run_gpuenv({"dockerfile", profile.string()});
  INFO(dockerfile.err);
  REQUIRE(dockerfile.exit_code == 0);
  int seen = 0;
  for (std::string_view line : gpuenv::util::split_lines(dockerfile.out)) {
    if (line.find("touch /tmp/pwned") == std::string_view::npos) continue;
    ++seen;
    // Only a comment, or a LABEL value with `$` and quotes escaped (Docker does no substitution there).
    const bool comment = gpuenv::util::starts_with(line, "#");
    const bool label = line.find("org.opencontainers.image.description=\"\\$(touch /tmp/pwned) `id` ; | & ' \\\"") !=
                       std::string_view::npos;
    CHECK((comment || label));
    CHECK(line.find("RUN") != 0);
  }
  CHECK(seen >= 2);

  const auto user_data = run_gpuenv({"cloud-init", profile.string(), "--gpuenv-preinstalled"});
  INFO(user_data.err);
  REQUIRE(user_data.exit_code == 0);
  // The profile travels as file content (a YAML literal block or base64), never in runcmd or the per-boot script.
  bool in_content = false;
  for (std::string_view line : gpuenv::util::split_lines(user_data.out)) {
    if (line.find("touch /tmp/pwned") == std::string_view::npos) continue;
    CHECK(gpuenv::util::starts_with(gpuenv::util::trim(line), "description = "));
    in_content = true;
  }
  CHECK((in_content || user_data.out.find("touch /tmp/pwned") == std::string::npos));
  CHECK_FALSE(fs::exists("/tmp/pwned"));
}

TEST_CASE("a profile value with a newline or a NUL is refused with file:line and the field", "[cli][hostile][e2e]") {
  const Scratch scratch;
  const fs::path profile = scratch.path / "nul.toml";
  std::ofstream(profile) << "schema = 1\nname = \"nul\"\ndescription = \"a\\u0000b\\nRUN id\"\n[os]\ndistro = "
                            "\"ubuntu\"\nversion = \"22.04\"\n[cuda]\nversion = \"12.4.1\"\n";
  for (const char* command : {"dockerfile", "cloud-init", "profile"}) {
    std::vector<std::string> args = {command, profile.string()};
    if (std::string(command) == "profile") args = {"profile", "check", profile.string()};
    if (std::string(command) == "cloud-init") args.push_back("--gpuenv-preinstalled");
    const auto result = run_gpuenv(args);
    CAPTURE(command);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("nul.toml:3:15: `description`") != std::string::npos);
    CHECK(result.err.find("control character (U+0000)") != std::string::npos);
    CHECK(result.err.find('\0') == std::string::npos);
  }
}
