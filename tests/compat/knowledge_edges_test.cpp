// Issue 25: rules that compare at the precision people write and tables complete where they say they are. Each rule
// is a table with both sides of its edge; the facts are data/compat/*.toml rows (sources cited there), and the three
// cases the issue names (driver "580.65", B300 on CUDA 12.8, torch 2.10 with Python 3.14) are whole reports.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/rule_rows.hpp"

using namespace gpuenv::testing::rule_rows;  // NOLINT: the tables below are written in its vocabulary

namespace {

const Field pytorch_name{"framework.name", "pytorch"};
const Field python311{"framework.python", "3.11"};
const Field arm64{"os.arch", "arm64"};

Field cuda(const char* version) { return {"cuda.version", version}; }
Field cc(const char* value) { return {"gpu.compute_capabilities", value}; }
Field model(const char* value) { return {"gpu.models", value}; }
Field driver_min(const char* value) { return {"driver.min", value}; }
Field variant(const char* value) { return {"framework.variant", value}; }

/// The findings of a whole report and its verdict.
std::vector<Finding> report_of(const std::vector<Field>& fields) {
  return gpuenv::compat::check_profile(make_profile(fields), kb(), Purpose::check);
}

bool has(const std::vector<Finding>& findings, const std::string& id, gpuenv::report::Status status) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.id == id && f.status == status; });
}

}  // namespace

// Rule 1: a patch newer than the newest known update of a known minor warns, naming that update and the overlay; a
// minor that never existed inside the known range stays a failure. cuda.toml holds 12.8.0-12.8.2 and 12.9.0-12.9.2
// (NVIDIA's installers, rwgk/rwgk_config's catalog); images.toml ends 12.8 at 12.8.2 and 12.9 at 12.9.2 (NVIDIA's
// supported-tags.md through a mirror), and 13.2.2 shipped without images (the 13.2 images stay at 13.2.1).
TEST_CASE("issue 25 rule 1: the horizon of each CUDA minor", "[compat][issue25]") {
  check_rows({
      row("12.9.2 shipped (cuda_12.9.2_575.57.08_linux.run)", {cuda("12.9.2")}, "cuda.release", Expect::pass),
      row("12.8.2 shipped (cuda_12.8.2_570.211.01_linux.run)", {cuda("12.8.2")}, "cuda.release", Expect::pass),
      row("13.0.3, 13.1.2 and 13.2.2 shipped", {cuda("13.0.3")}, "cuda.release", Expect::pass),
      row("13.1.2", {cuda("13.1.2")}, "cuda.release", Expect::pass),
      row("13.2.2", {cuda("13.2.2")}, "cuda.release", Expect::pass),
      row("12.9.3 is past the newest 12.9 update known", {cuda("12.9.3")}, "cuda.release", Expect::warn,
          "gpuenv's data ends at CUDA 12.9 updates, newest 12.9.2"),
      row("the warning names the overlay", {cuda("12.9.3")}, "cuda.release", Expect::warn, "data overlay (cuda.toml"),
      row("12.7 never existed", {cuda("12.7.0")}, "cuda.release", Expect::fail, "the nearest are 12.6.3 and 12.8.0"),
      row("12.7.1 never existed either", {cuda("12.7.1")}, "cuda.release", Expect::fail, "12.6.3 and 12.8.0"),
      // nvidia/cuda tags: the same horizon per minor
      row("12.9.2 images are listed", {cuda("12.9.2"), {"os.version", "24.04"}}, "image.tag", Expect::pass),
      row("12.8.2 images are listed", {cuda("12.8.2"), {"os.version", "24.04"}}, "image.tag", Expect::pass),
      row("12.8.3 images are past the newest 12.8 image known", {cuda("12.8.3")}, "image.tag", Expect::warn,
          "gpuenv's data ends at nvidia/cuda images of CUDA 12.8, newest 12.8.2"),
      // The 13.2.2 toolkit is real: a bare-metal profile is fine; only `gpuenv dockerfile` needs the image.
      row("13.2.2 shipped without images: fine for a node", {cuda("13.2.2")}, "image.tag", Expect::skip,
          "NVIDIA released the CUDA 13.2.2 toolkit without nvidia/cuda images (the CUDA 13.2 images stay at 13.2.1); "
          "fine for install"),
      row("13.2.2 for a Dockerfile: fail", {cuda("13.2.2")}, "image.tag", Expect::fail, "was never published",
          Purpose::dockerfile),
      row("the fix names the images that exist, 13.2.1 once", {cuda("13.2.2")}, "image.tag", Expect::fail,
          "set cuda.version to 13.2.1 for the image, or to one of 13.3.1", Purpose::dockerfile),
      row("no CUDA 12.7 images", {cuda("12.7.0")}, "image.tag", Expect::fail,
          "nvidia/cuda has no images for CUDA 12.7.0"),
  });
}

// Rule 2: a driver written "580.65" is compared at that precision (it meets 580.65.06); a full version is compared
// fully. The 13.x floor is 580.65.06 (cuda.toml [[major]] 13).
TEST_CASE("issue 25 rule 2: drivers compared at the precision written", "[compat][issue25]") {
  const Field cuda1300 = cuda("13.0.0");
  check_rows({
      row("580.65 meets 13.0.0's 580.65.06", {cuda1300, driver_min("580.65")}, "driver.cuda_minimum", Expect::pass,
          "compared at the precision written"),
      row("580.65.06 meets it fully", {cuda1300, driver_min("580.65.06")}, "driver.cuda_minimum", Expect::pass),
      row("580.65.05 is below it", {cuda1300, driver_min("580.65.05")}, "driver.cuda_minimum", Expect::fail,
          "580.65.06"),
      row("580.64 is below it", {cuda1300, driver_min("580.64")}, "driver.cuda_minimum", Expect::fail),
      row("580 (the branch) meets it", {cuda1300, driver_min("580")}, "driver.cuda_minimum", Expect::pass),
      row("575 is below the 13.x floor", {cuda1300, driver_min("575")}, "driver.cuda_minimum", Expect::fail),
      // between the 13.x floor and 13.1.0's own minimum 590.44.01, at written precision on both edges
      row("580.65 for 13.1.0: the floor only", {cuda("13.1.0"), driver_min("580.65")}, "driver.cuda_minimum",
          Expect::warn, "590.44.01"),
      row("590.44 for 13.1.0", {cuda("13.1.0"), driver_min("590.44")}, "driver.cuda_minimum", Expect::pass),
      // a GPU generation's minimum (Blackwell 10.0: 570.26) the same way
      row("570 drives Blackwell", {cuda("12.8.1"), cc("10.0"), driver_min("570")}, "gpu.driver", Expect::absent),
      row("570.26 drives Blackwell", {cuda("12.8.1"), cc("10.0"), driver_min("570.26")}, "gpu.driver", Expect::absent),
      row("570.25 does not", {cuda("12.8.1"), cc("10.0"), driver_min("570.25")}, "gpu.driver", Expect::fail, "570.26"),
      // and the wheel's CUDA: cu130 needs the 13.x floor
      row("580.65 runs a cu130 wheel", {pytorch_name, torch("2.9.1"), python311, cuda("13.0.0"), driver_min("580.65")},
          "pytorch.driver", Expect::pass),
      row("580.64 cannot", {pytorch_name, torch("2.9.1"), python311, cuda("13.0.0"), driver_min("580.64")},
          "pytorch.driver", Expect::fail),
  });
}

// Rule 3: family-compatible code (same major, lower minor: the CUDA Programming Guide's binary compatibility) is
// supported, decided once for gpu.cuda_support and pytorch.compute_capability.
TEST_CASE("issue 25 rule 3: one answer for family-compatible GPUs", "[compat][issue25]") {
  const Field cuda1281 = cuda("12.8.1");
  check_rows({
      row("CUDA 12.8 on a B300: its 10.0 code runs there", {cuda1281, model("B300")}, "gpu.cuda_support", Expect::pass,
          "its 10.0 code runs there"),
      row("CUDA 12.8 on a GB10: its 12.0 code runs there", {cuda1281, model("GB10")}, "gpu.cuda_support", Expect::pass,
          "its 12.0 code runs there"),
      row("CUDA 12.9 targets 10.3 itself", {cuda("12.9.1"), model("B300")}, "gpu.cuda_support", Expect::pass,
          "CUDA 12.9.1 supports compute capability 10.3"),
      row("CUDA 12.6 has no Blackwell code at all", {cuda("12.6.3"), model("B300")}, "gpu.cuda_support", Expect::fail,
          "support starts with CUDA 12.9"),
      row("CUDA 12.9 has no code for Thor (11.0, a major of its own)", {cuda("12.9.1"), model("Thor")},
          "gpu.cuda_support", Expect::fail, "support starts with CUDA 13.0"),
      row("torch 2.9.1+cu128 on a B300: the 10.0 kernels",
          {pytorch_name, torch("2.9.1"), python311, cuda1281, model("B300")}, "pytorch.compute_capability",
          Expect::pass, "its 10.0 kernels run there"),
      row("torch 2.6.0+cu126 on a B300: nothing of major 10",
          {pytorch_name, torch("2.6.0"), python311, cuda("12.6.3"), model("B300")}, "pytorch.compute_capability",
          Expect::fail),
  });
}

// Rule 4: an arm64 profile is judged by the Linux aarch64 wheels: their availability per release (none for 2.4 at all,
// none for 2.7's cu118) and their own architecture lists ([[arch_aarch64]]: the CUDA 13.0 aarch64 build adds 11.0 for
// Thor and leaves out 7.5 and 8.6).
TEST_CASE("issue 25 rule 4: architecture-aware wheels", "[compat][issue25]") {
  const Field t241 = torch("2.4.1");
  check_rows({
      row("2.4.1+cu124 on x86_64", {pytorch_name, t241, python311, cuda("12.4.1")}, "pytorch.variant", Expect::pass),
      row("2.4.1+cu124 on arm64: no aarch64 CUDA wheel", {pytorch_name, t241, python311, cuda("12.4.1"), arm64},
          "pytorch.variant", Expect::fail,
          "publishes no Linux aarch64 cu124 wheel (its Linux aarch64 CUDA wheels: none)"),
      row("the fix names a release that has them", {pytorch_name, t241, python311, cuda("12.4.1"), arm64},
          "pytorch.variant", Expect::fail, "use a release with Linux aarch64 CUDA wheels (torch 2.14"),
      row("2.7.1+cu118 on x86_64", {pytorch_name, torch("2.7.1"), python311, cuda("11.8.0")}, "pytorch.variant",
          Expect::pass),
      row("2.7.1+cu118 on arm64: none", {pytorch_name, torch("2.7.1"), python311, cuda("11.8.0"), arm64},
          "pytorch.variant", Expect::fail, "no Linux aarch64 cu118 wheel"),
      row("2.7.0+cu128 on arm64 (in the cu128 index)", {pytorch_name, torch("2.7.0"), python311, cuda("12.8.1"), arm64},
          "pytorch.variant", Expect::pass, "exists for Linux aarch64"),
      // pytorch/test-infra#6492: "Cuda 12.6 aarch is not supported in Release 2.7. We release 12.8 aarch".
      row("2.7.0+cu126 on arm64: none", {pytorch_name, torch("2.7.0"), python311, cuda("12.6.3"), arm64},
          "pytorch.variant", Expect::fail, "no Linux aarch64 cu126 wheel (its Linux aarch64 CUDA wheels: cu128)"),
      row("2.7.1+cu128 on arm64: not known either way",
          {pytorch_name, torch("2.7.1"), python311, cuda("12.8.1"), arm64}, "pytorch.variant", Expect::warn,
          "is not in gpuenv's data"),
      // 2.8's aarch64 (sbsa) build was CUDA 12.9 only: pytorch/pytorch#155819 added it before the release,
      // pytorch/pytorch#162364 replaced it with 12.6 and 12.8 after; uv lists no aarch64 2.8.0+cu128 wheel
      // (OpenRAL/openral#88).
      row("2.8.0+cu129 on arm64 (the 2.8 sbsa build)", {pytorch_name, torch("2.8.0"), python311, cuda("12.9.1"), arm64},
          "pytorch.variant", Expect::pass, "exists for Linux aarch64"),
      row("2.8.0+cu128 on arm64: none", {pytorch_name, torch("2.8.0"), python311, cuda("12.8.1"), arm64},
          "pytorch.variant", Expect::fail, "no Linux aarch64 cu128 wheel (its Linux aarch64 CUDA wheels: cu129)"),
      // 2.9's aarch64 build matrix: CUDA_AARCH64_ARCHES = ["12.6-aarch64", "12.8-aarch64", "13.0-aarch64"].
      row("2.9.1+cu126 on arm64", {pytorch_name, torch("2.9.1"), python311, cuda("12.6.3"), arm64}, "pytorch.variant",
          Expect::pass, "exists for Linux aarch64"),
      row("2.11.0+cu130 on arm64 (RELEASE.md's Linux aarch64 line for 13.0.2)",
          {pytorch_name, torch("2.11.0"), python311, cuda("13.0.2"), arm64}, "pytorch.variant", Expect::pass,
          "exists for Linux aarch64"),
      // architecture lists per platform
      row("2.10.0+cu130 on Thor, arm64: built for 11.0",
          {pytorch_name, torch("2.10.0"), python311, cuda("13.0.2"), arm64, model("Thor")},
          "pytorch.compute_capability", Expect::pass, "built for compute capability 11.0"),
      row("2.10.0+cu130 on 11.0, x86_64: the x86 wheel has no 11.0",
          {pytorch_name, torch("2.10.0"), python311, cuda("13.0.2"), cc("11.0")}, "pytorch.compute_capability",
          Expect::fail, "built for 7.5, 8.0, 8.6, 9.0, 10.0, 12.0"),
      row("2.10.0+cu128 on a T4, x86_64", {pytorch_name, torch("2.10.0"), python311, cuda("12.8.1"), model("T4")},
          "pytorch.compute_capability", Expect::pass),
      row("2.10.0+cu128 on 7.5, arm64: the aarch64 wheel leaves Turing out",
          {pytorch_name, torch("2.10.0"), python311, cuda("12.8.1"), arm64, cc("7.5")}, "pytorch.compute_capability",
          Expect::fail, "Linux aarch64 is not built for compute capability 7.5"),
      row("2.10.0+cu128 on a GH200, arm64",
          {pytorch_name, torch("2.10.0"), python311, cuda("12.8.1"), arm64, model("GH200")},
          "pytorch.compute_capability", Expect::pass),
      row("2.11.0+cu130 on Thor, arm64",
          {pytorch_name, torch("2.11.0"), python311, cuda("13.0.2"), arm64, model("Thor")},
          "pytorch.compute_capability", Expect::pass, "built for compute capability 11.0"),
      // 2.7's aarch64 cu128 build was 9.0;10.0;12.0 (no 8.0 until pytorch/pytorch#157843, CUDA 12.9, after 2.7).
      row("2.7.0+cu128 on an A100, arm64: the 2.7 aarch64 wheel has no 8.0",
          {pytorch_name, torch("2.7.0"), python311, cuda("12.8.1"), arm64, cc("8.0")}, "pytorch.compute_capability",
          Expect::fail, "Linux aarch64 is not built for compute capability 8.0"),
      row("2.8.0+cu129, arm64: no aarch64 list, and the x86 one is not used",
          {pytorch_name, torch("2.8.0"), python311, cuda("12.9.1"), arm64, cc("9.0")}, "pytorch.compute_capability",
          Expect::skip, "no Linux aarch64 architecture list"),
  });
}

// Rule 5: a release the data knows is judged by its own complete lists; the horizon is for releases newer than the
// data.
TEST_CASE("issue 25 rule 5: a known release's lists are complete", "[compat][issue25]") {
  check_rows({
      row("torch 2.4.1+cu999 is no wheel of 2.4.1", {pytorch_name, torch("2.4.1"), python311, variant("cu999")},
          "pytorch.variant", Expect::fail, "torch 2.4.1 has no cu999 wheel (variants: cu118, cu121, cu124)"),
      row("torch 2.4.1+cu124 is", {pytorch_name, torch("2.4.1"), python311, variant("cu124")}, "pytorch.variant",
          Expect::pass),
      row("a series row's list is complete too: 2.14+cu134",
          {pytorch_name, torch("2.14.0"), python311, cuda("13.2.1"), variant("cu134")}, "pytorch.variant", Expect::fail,
          "variants: cu126, cu130, cu132"),
      row("a release newer than the data warns", {pytorch_name, torch("2.99.0"), python311}, "pytorch.release",
          Expect::warn, "gpuenv's data ends at torch"),
      row("2.4.1 with Python 3.13 is outside its range", {pytorch_name, torch("2.4.1"), {"framework.python", "3.13"}},
          "pytorch.python", Expect::fail, "3.8-3.12"),
  });
}

// Rule 6: an image whose CUDA release has a newer update of the same minor is end-of-life under NVIDIA's "latest
// update only" policy, whether or not the newer update's images are in the data (then rule 1 judges those).
TEST_CASE("issue 25 rule 6: superseded images are end-of-life", "[compat][issue25]") {
  check_rows({
      row("12.8.1 is end-of-life since 12.8.2 (dist/end-of-life/12.8.1)", {cuda("12.8.1")}, "image.tag", Expect::warn,
          "is end-of-life"),
      row("and may be deleted", {cuda("12.8.1")}, "image.tag", Expect::warn, "may vanish; unpatched"),
      row("the fix is the newest update", {cuda("12.8.1")}, "image.tag", Expect::warn, "move cuda.version to 12.8.2"),
      row("12.9.1 is superseded by 12.9.2 (its images listed)", {cuda("12.9.1")}, "image.tag", Expect::warn,
          "superseded by 12.9.2 (only the latest update of a CUDA release is supported, and CUDA 12.9.2 images are "
          "published)"),
      row("12.9.2 is the newest 12.9 update", {cuda("12.9.2")}, "image.tag", Expect::pass),
      row("13.0.2 is superseded by 13.0.3", {cuda("13.0.2")}, "image.tag", Expect::warn, "superseded by 13.0.3"),
      row("13.0.3 is the newest 13.0 update", {cuda("13.0.3")}, "image.tag", Expect::pass),
      row("12.6.3 is the newest 12.6 update", {cuda("12.6.3")}, "image.tag", Expect::pass),
  });
}

// The three cases the issue names, as whole reports: no failure, and the rule in question passes.
TEST_CASE("issue 25: driver 580.65 with CUDA 13.0 is one usable report", "[compat][issue25]") {
  const auto findings = report_of({cuda("13.0.0"), driver_min("580.65")});
  INFO(describe(findings));
  CHECK(gpuenv::report::count_status(findings, gpuenv::report::Status::fail) == 0);
  CHECK(has(findings, "driver.cuda_minimum", gpuenv::report::Status::pass));
}

TEST_CASE("issue 25: a B300 on CUDA 12.8 gives one answer in one report", "[compat][issue25]") {
  for (const char* name : {"B300", "NVIDIA B300 SXM6 AC"}) {
    const auto findings =
        report_of({cuda("12.8.1"), pytorch_name, torch("2.9.1"), python311, {"os.version", "24.04"}, model(name)});
    INFO(name << "\n" << describe(findings));
    CHECK(gpuenv::report::count_status(findings, gpuenv::report::Status::fail) == 0);
    CHECK(has(findings, "gpu.cuda_support", gpuenv::report::Status::pass));
    CHECK(has(findings, "pytorch.compute_capability", gpuenv::report::Status::pass));
  }
}

TEST_CASE("issue 25: torch 2.10 with Python 3.14 is supported", "[compat][issue25]") {
  const auto findings = report_of({pytorch_name, torch("2.10.0"), {"framework.python", "3.14"}, cuda("12.8.1")});
  INFO(describe(findings));
  CHECK(gpuenv::report::count_status(findings, gpuenv::report::Status::fail) == 0);
  CHECK(has(findings, "pytorch.python", gpuenv::report::Status::pass));
  check_rows({
      row("2.10 with 3.14", {pytorch_name, torch("2.10.0"), {"framework.python", "3.14"}, cuda("12.8.1")},
          "pytorch.python", Expect::pass, "Python 3.14 is within torch 2.10's range 3.10-3.14"),
      row("2.11 with 3.14", {pytorch_name, torch("2.11.0"), {"framework.python", "3.14"}, cuda("12.8.1")},
          "pytorch.python", Expect::pass),
      row("2.10 with 3.15", {pytorch_name, torch("2.10.0"), {"framework.python", "3.15"}, cuda("12.8.1")},
          "pytorch.python", Expect::fail),
      row("2.9 with 3.14 stays experimental (torch.compile came with 2.10)",
          {pytorch_name, torch("2.9.1"), {"framework.python", "3.14"}, cuda("12.8.1")}, "pytorch.python", Expect::warn),
  });
}
