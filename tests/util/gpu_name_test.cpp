// util::gpu_name: GPU identity by whole product name (issue 15, rule 4), shared by compat, doctor and smoke.

#include "util/gpu_name.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using gpuenv::util::gpu_mig_profile;
using gpuenv::util::gpu_name_matches;
using gpuenv::util::normalized_gpu_name;

TEST_CASE("gpu_name: normalization folds case, spaces and the vendor prefix", "[util][gpu_name]") {
  CHECK(normalized_gpu_name("  NVIDIA   H100 80GB HBM3 ") == "h100 80gb hbm3");
  CHECK(normalized_gpu_name("Tesla T4") == "t4");
  CHECK(normalized_gpu_name("NVIDIA\tL40S") == "l40s");
  CHECK(normalized_gpu_name("") == "");
  CHECK(gpu_mig_profile("NVIDIA A100-SXM4-40GB MIG 1g.5gb") == "1g.5gb");
  CHECK(gpu_mig_profile("NVIDIA H100 80GB HBM3 MIG 3g.40gb") == "3g.40gb");
  CHECK_FALSE(gpu_mig_profile("NVIDIA H100 80GB HBM3"));
}

TEST_CASE("gpu_name: whole names only, never substrings (look-alikes)", "[util][gpu_name]") {
  struct Case {
    const char* device_name;
    std::vector<std::string> names;
    bool matches;
  };
  const Case cases[] = {
      {"Tesla T4", {"T4"}, true},
      {"NVIDIA  T4", {"T4"}, true},
      {"NVIDIA T400", {"T4"}, false},
      {"NVIDIA T400 4GB", {"T4"}, false},
      {"NVIDIA GH200 480GB", {"H200", "NVIDIA H200"}, false},
      {"NVIDIA H200", {"H200"}, true},
      {"NVIDIA GB200", {"B200", "HGX B200"}, false},
      {"NVIDIA B200", {"B200"}, true},
      {"NVIDIA L40S", {"L4", "L40"}, false},
      {"NVIDIA L4", {"L40S", "L4"}, true},
      {"NVIDIA A10G", {"A10"}, false},
      {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", {"H100 80GB HBM3"}, true},
      {"NVIDIA H100 80GB HBM3", {"H100"}, false},
      {"NVIDIA GeForce RTX 4090", {"RTX 4090", "GeForce RTX 4090"}, true},
      {"NVIDIA GeForce RTX 4090 D", {"GeForce RTX 4090"}, false},
      {"", {""}, false},
  };
  for (const Case& c : cases) {
    INFO(c.device_name);
    CHECK(gpu_name_matches(c.device_name, c.names) == c.matches);
  }
}
