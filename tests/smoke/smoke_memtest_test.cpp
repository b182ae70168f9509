// `gpuenv smoke --memtest` against the fake libcuda (issue 11 review): the value a failure reports is the one the
// kernel read, a region the L2 cache could serve is not a pass, and wrong words are counted per pass.

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;

namespace {

SmokeOptions memtest_options() {
  SmokeOptions options = small_options();
  options.memtest_fraction = 0.5;  // of the fake's 4 MiB free: one 2 MiB chunk
  return options;
}

/// The hex number after `label` in `message` ("expected 0x1f, read 0x1b").
std::uint32_t hex_after(const std::string& message, const std::string& label) {
  const auto at = message.find(label);
  REQUIRE(at != std::string::npos);
  return static_cast<std::uint32_t>(std::strtoull(message.c_str() + at + label.size(), nullptr, 16));
}

}  // namespace

TEST_CASE("smoke: --memtest reports the word the kernel read, not the complement a moving inversion wrote over it",
          "[smoke][memtest]") {
  // The 2nd fill is the moving inversions pass's: its first launch reads the flipped word and writes its complement. A
  // host re-read after that launch (the old diagnostic) saw the complement, ~expected, as the "read" value.
  const SmokeReport report =
      run_fake("free_memory = 4194304\nmemtest_flip_word = 1000\nmemtest_flip_fill = 2\n", memtest_options());
  const Finding* memtest = find(report.devices.at(0).findings, "smoke.memtest");
  REQUIRE(memtest != nullptr);
  CHECK(memtest->status == Status::fail);
  CHECK(memtest->message.find("the first in the moving inversions pass at byte offset 0xfa0 ") != std::string::npos);
  const std::uint32_t expected = hex_after(memtest->message, "expected 0x");
  const std::uint32_t read = hex_after(memtest->message, ", read 0x");
  CHECK(read == (expected ^ 0x4u));  // the fake flips bit 2
  CHECK(read != static_cast<std::uint32_t>(~expected));
}

TEST_CASE("smoke: --memtest counts wrong words per pass", "[smoke][memtest]") {
  const SmokeReport every = run_fake("free_memory = 4194304\nmemtest_flip_word = 1000\n", memtest_options());
  const Finding* all = find(every.devices.at(0).findings, "smoke.memtest");
  REQUIRE(all != nullptr);
  CHECK(all->message.find("GPU memory returned wrong data: 5 wrong reads in 5 of 5 passes (address hash 1, moving "
                          "inversions 1, walking ones 1, walking zeros 1, second hash 1) after writing ") == 0);

  // Two 1 MiB chunks, two fills a pass: the 7th is the walking zeros pass's first chunk, the only wrong word.
  SmokeOptions options = memtest_options();
  options.memtest_chunk_bytes = 1 << 20;
  const SmokeReport walking =
      run_fake("free_memory = 4194304\nmemtest_flip_word = 3\nmemtest_flip_fill = 7\n", options);
  const Finding* one = find(walking.devices.at(0).findings, "smoke.memtest");
  REQUIRE(one != nullptr);
  CHECK(one->status == Status::fail);
  CHECK(one->message.find("GPU memory returned wrong data: 1 wrong read in 1 of 5 passes (walking zeros 1) ") == 0);
  CHECK(one->message.find("the first in the walking zeros pass at byte offset 0xc ") != std::string::npos);
}

TEST_CASE("smoke: --memtest over less than 4 x the L2 cache is not a pass", "[smoke][memtest][system-test]") {
  // 2 MiB tested: a 1 MiB L2 could hold half of it, so a clean result says nothing about DRAM; a 512 KiB L2 is covered.
  const SmokeReport small = run_fake("free_memory = 4194304\nl2_bytes = 1048576\n", memtest_options());
  const Finding* skipped = find(small.devices.at(0).findings, "smoke.memtest");
  REQUIRE(skipped != nullptr);
  CHECK(skipped->status == Status::skip);
  CHECK(skipped->message.find("no wrong words, but 2 MiB is below 4 x the 1 MiB L2 cache (4 MiB)") !=
        std::string::npos);
  CHECK(skipped->remedy.find("at least 4 MiB") != std::string::npos);

  const SmokeReport covered = run_fake("free_memory = 4194304\nl2_bytes = 524288\n", memtest_options());
  const Finding* passed = find(covered.devices.at(0).findings, "smoke.memtest");
  REQUIRE(passed != nullptr);
  CHECK(passed->status == Status::pass);
  CHECK(passed->message.find("(at least 4 x the 512 KiB L2 cache: read back from DRAM)") != std::string::npos);

  // Wrong words fail whatever the size: the memory returned wrong data.
  const SmokeReport faulty =
      run_fake("free_memory = 4194304\nl2_bytes = 1048576\nmemtest_flip_word = 1000\n", memtest_options());
  CHECK(find(faulty.devices.at(0).findings, "smoke.memtest")->status == Status::fail);
}
