// Inputs the host-text fuzz target (tests/fuzz/host_text_fuzz.cpp) found: numbers in the node Python's framework
// report that std::stoul/std::stoi could not hold or read threw out of the parser, so `gpuenv doctor` ended in
// std::terminate. Each is now an unreadable value.

#include <catch2/catch.hpp>

#include "probe/frameworks.hpp"

using gpuenv::probe::arch_list_covers;
using gpuenv::probe::parse_framework_report;

TEST_CASE("parse_framework_report: a device count too large for any integer is left unknown", "[probe]") {
  const auto frameworks =
      parse_framework_report("torch.installed=yes\ntorch.device_count=99999999999999999999\ntorch.cuda=12.4\n");
  REQUIRE(frameworks.size() == 1);
  CHECK_FALSE(frameworks[0].device_count.has_value());
  CHECK(frameworks[0].cuda == "12.4");
  CHECK(parse_framework_report("torch.device_count=8\n").at(0).device_count == 8u);
}

TEST_CASE("arch_list_covers: arch numbers and capabilities that are not small numbers are not judged", "[probe]") {
  // An arch number past int: not an arch this GPU can use.
  CHECK_FALSE(arch_list_covers({"sm_99999999999999999999"}, "8.0"));
  CHECK_FALSE(arch_list_covers({"compute_99999999999"}, "8.0"));
  // Capabilities that are not "major.minor": nothing to judge.
  for (const char* capability : {"a.b", "9.", ".5", "8.x", "99999999999999999999.0", "8.99999999999999999999"}) {
    CHECK(arch_list_covers({"sm_50"}, capability));
  }
  CHECK_FALSE(arch_list_covers({"sm_50"}, "8.0"));
}
