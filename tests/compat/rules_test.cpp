// Table-driven tests of compat::check_profile against the builtin knowledge base. Every expected verdict
// follows from shared/reference/*.md (cited per row group), not from what the rules happen to print.

#include "compat/rules.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/rule_rows.hpp"

using namespace gpuenv::testing::rule_rows;  // NOLINT: the tables below are written in its vocabulary

// cuda-driver.md Table 1: the toolkit releases (no 12.7 release exists).
TEST_CASE("compat: cuda.release accepts real releases and names the nearest for others", "[compat][rules]") {
  check_rows({
      row("12.4.1 is CUDA 12.4 Update 1", {{"cuda.version", "12.4.1"}}, "cuda.release", Expect::pass),
      row("11.8.0 is CUDA 11.8 GA", {{"cuda.version", "11.8.0"}}, "cuda.release", Expect::pass),
      row("13.1.0 is CUDA 13.1 GA", {{"cuda.version", "13.1.0"}}, "cuda.release", Expect::pass),
      row("12.3.2 exists (driver row unverified)", {{"cuda.version", "12.3.2"}}, "cuda.release", Expect::pass),
      row("11.0.1 is the 11.0 RC", {{"cuda.version", "11.0.1"}}, "cuda.release", Expect::pass),
      row("10.2.89 is CUDA 10.2", {{"cuda.version", "10.2.89"}}, "cuda.release", Expect::pass),
      row("no CUDA 12.7 release", {{"cuda.version", "12.7.0"}}, "cuda.release", Expect::fail, "12.6.3 and 12.8.0"),
      // Issue 25, rule 1: a patch past the newest known update of its minor may have shipped since the data.
      row("12.4.2 is past the newest 12.4 update known", {{"cuda.version", "12.4.2"}}, "cuda.release", Expect::warn,
          "newest 12.4.1"),
      row("11.8.1 is past the newest 11.8 update known", {{"cuda.version", "11.8.1"}}, "cuda.release", Expect::warn,
          "newest 11.8.0"),
      row("11.0.0 is below 11.0's first release (the 11.0.1 RC)", {{"cuda.version", "11.0.0"}}, "cuda.release",
          Expect::fail, "10.2.89 and 11.0.1"),
  });
}

// The newest releases (data/compat/cuda.toml): 13.4.1 (13.4 GA), 13.4.2 (Update 1), 13.4.3 (NVIDIA's documentation
// archive) and 13.5.0 (the 13.5 release notes; its X.Y.Z name inferred), none with a driver minimum NVIDIA's table
// was read for. The data ends at 13.5.0: one patch past it warns, a hole inside 13.4 fails.
TEST_CASE("compat: CUDA 13.4 and 13.5 releases, and the horizon at 13.5.0", "[compat][rules]") {
  const std::string id = "cuda.release";
  const Field cuda_13_5{"cuda.version", "13.5.0"};
  check_rows({
      row("13.4.1 is CUDA 13.4 GA", {{"cuda.version", "13.4.1"}}, id, Expect::pass),
      row("13.4.3 is archived by NVIDIA", {{"cuda.version", "13.4.3"}}, id, Expect::pass),
      row("13.5.0 is CUDA 13.5", {cuda_13_5}, id, Expect::pass),
      row("13.5 at minor precision names the release", {{"cuda.version", "13.5"}}, id, Expect::pass),
      row("13.5.1 is past the data", {{"cuda.version", "13.5.1"}}, id, Expect::warn,
          "gpuenv's data ends at CUDA 13.5.0"),
      row("13.6.0 is past the data", {{"cuda.version", "13.6.0"}}, id, Expect::warn, "13.6.0 is newer"),
      row("13.4.9 is past the newest 13.4 update known", {{"cuda.version", "13.4.9"}}, id, Expect::warn,
          "newest 13.4.3"),
      row("13.4.0 (the developer preview) is below 13.4's GA: not a release", {{"cuda.version", "13.4.0"}}, id,
          Expect::fail, "13.3.1 and 13.4.1"),
      // No 13.5 minimum driver is known: the 13.x minor-version floor judges the driver.
      row("13.5.0 above the 13.x floor: its own minimum unknown", {cuda_13_5, {"driver.min", "590.44.01"}},
          "driver.cuda_minimum", Expect::pass, "not in the knowledge base"),
      row("13.5.0 below the 13.x floor", {cuda_13_5, {"driver.min", "575.57.08"}}, "driver.cuda_minimum", Expect::fail,
          "580.65.06"),
  });
}

// cuda-driver.md Table 1 (release minimum) and Table 2 (minor-version floors 450.80.02 / 525.60.13 / 580.65.06).
TEST_CASE("compat: driver.cuda_minimum passes, warns above the minor-version floor, fails below it",
          "[compat][rules]") {
  const std::string id = "driver.cuda_minimum";
  check_rows({
      row("12.4.1 needs >= 550.54.15", {{"driver.min", "550.54.15"}}, id, Expect::pass),
      row("newer than 12.4.1's minimum", {{"driver.min", "570.124.06"}}, id, Expect::pass),
      row("550.54.14 is one below 12.4.1's minimum, above the 12.x floor", {{"driver.min", "550.54.14"}}, id,
          Expect::warn, "550.54.15"),
      row("535 is between the 12.x floor and 12.4.1's minimum", {{"driver.min", "535.104.05"}}, id, Expect::warn,
          "cuda-compat"),
      row("exactly the 12.x floor 525.60.13", {{"driver.min", "525.60.13"}}, id, Expect::warn, "525.60.13"),
      row("below the 12.x floor", {{"driver.min", "520.61.05"}}, id, Expect::fail, "525.60.13"),
      row("11.8.0 needs >= 520.61.05", {{"cuda.version", "11.8.0"}, {"driver.min", "520.61.05"}}, id, Expect::pass),
      row("11.x floor 450.80.02", {{"cuda.version", "11.8.0"}, {"driver.min", "450.80.02"}}, id, Expect::warn),
      row("below the 11.x floor", {{"cuda.version", "11.8.0"}, {"driver.min", "450.51.06"}}, id, Expect::fail,
          "450.80.02"),
      row("11.0.1 RC shipped below the 11.x floor", {{"cuda.version", "11.0.1"}, {"driver.min", "450.36.06"}}, id,
          Expect::pass),
      row("13.0.0 needs >= 580.65.06", {{"cuda.version", "13.0.0"}, {"driver.min", "580.65.06"}}, id, Expect::pass),
      row("13.1.0 needs 590.44.01; 580.65.06 is the 13.x floor",
          {{"cuda.version", "13.1.0"}, {"driver.min", "580.65.06"}}, id, Expect::warn, "590.44.01"),
      row("a 12.x-era driver cannot run CUDA 13", {{"cuda.version", "13.1.0"}, {"driver.min", "575.57.08"}}, id,
          Expect::fail, "580.65.06"),
      // 12.3.2 has no row in NVIDIA's table; its runfile bundles 545.23.08 (cuda_12.3.2_545.23.08_linux.run).
      row("12.3.2 below its bundled driver, above the 12.x floor",
          {{"cuda.version", "12.3.2"}, {"driver.min", "530.30.02"}}, id, Expect::warn, "545.23.08"),
      row("12.3.2 with its bundled driver", {{"cuda.version", "12.3.2"}, {"driver.min", "545.23.08"}}, id,
          Expect::pass),
      row("12.3.2 below the 12.x floor", {{"cuda.version", "12.3.2"}, {"driver.min", "520.61.05"}}, id, Expect::fail),
      row("no driver.min: nothing to judge", {}, id, Expect::absent),
  });
}

// A driver branch NNN holds only NNN.x drivers (cuda-driver.md Tables 1 and 2).
TEST_CASE("compat: driver.branch judges the branch against driver.min and the CUDA release", "[compat][rules]") {
  const std::string id = "driver.branch";
  check_rows({
      row("R550 reaches 550.54.15", {{"driver.branch", "550"}}, id, Expect::pass),
      row("R560 is newer", {{"driver.branch", "560"}}, id, Expect::pass),
      row("R525 reaches 12.0.0's 525.60.13", {{"cuda.version", "12.0.0"}, {"driver.branch", "525"}}, id, Expect::pass),
      row("R535 is below 12.4.1's minimum but above the 12.x floor", {{"driver.branch", "535"}}, id, Expect::warn),
      row("R470 is below the 12.x floor", {{"driver.branch", "470"}}, id, Expect::fail),
      row("R575 is below the 13.x floor", {{"cuda.version", "13.0.0"}, {"driver.branch", "575"}}, id, Expect::fail),
      row("R580 for CUDA 13.0.2", {{"cuda.version", "13.0.2"}, {"driver.branch", "580"}}, id, Expect::pass),
      row("R535 cannot satisfy driver.min 550.54.15", {{"driver.min", "550.54.15"}, {"driver.branch", "535"}}, id,
          Expect::fail, "550"),
      row("R550 satisfies driver.min 550.54.15", {{"driver.min", "550.54.15"}, {"driver.branch", "550"}}, id,
          Expect::pass),
      row("12.3.2: R470 is below the 12.x floor", {{"cuda.version", "12.3.2"}, {"driver.branch", "470"}}, id,
          Expect::fail, "525.60.13"),
      row("12.3.2: R535 is below the bundled 545.23.08 but meets the 12.x floor",
          {{"cuda.version", "12.3.2"}, {"driver.branch", "535"}}, id, Expect::warn, "545.23.08"),
      row("no driver.branch: nothing to judge", {}, id, Expect::absent),
      // The profile schema admits three digits only; a Profile built in code is judged, not thrown on (std::stoi
      // threw invalid_argument and out_of_range on these).
      row("a branch that is not a number", {{"driver.branch", "R550"}}, id, Expect::fail, "not a driver branch"),
      row("a branch past any int", {{"driver.branch", "99999999999"}}, id, Expect::fail, "not a driver branch"),
  });
}

// cudnn.md Table 1 (builds per CUDA major, toolkit minors, compute capabilities) and Table 2 (cuDNN in images).
TEST_CASE("compat: cudnn.cuda_major needs a cuDNN build for the CUDA major", "[compat][rules]") {
  const std::string id = "cudnn.cuda_major";
  check_rows({
      row("cuDNN 9 has CUDA 12.x builds", {{"cudnn.version", "9"}}, id, Expect::pass),
      row("cuDNN 9.17 has a CUDA 13.x build", {{"cuda.version", "13.0.2"}, {"cudnn.version", "9.17"}}, id,
          Expect::pass),
      row("cuDNN 8.9.6 has a CUDA 11.x build", {{"cuda.version", "11.8.0"}, {"cudnn.version", "8.9.6"}}, id,
          Expect::pass),
      row("cuDNN 9.17.0 has no CUDA 11.x package", {{"cuda.version", "11.8.0"}, {"cudnn.version", "9.17"}}, id,
          Expect::fail, "11.x"),
      row("cuDNN 8 has no CUDA 13.x build", {{"cuda.version", "13.0.2"}, {"cudnn.version", "8"}}, id, Expect::fail),
      row("cuDNN 7.6.5 stops at CUDA 10.x", {{"cudnn.version", "7.6.5"}}, id, Expect::fail),
      row("cuDNN 9.99 is newer than the data: a warning naming its horizon", {{"cudnn.version", "9.99"}}, id,
          Expect::warn, "gpuenv's data ends at cuDNN"),
      row("cuDNN 8.99 is unknown inside the known range", {{"cudnn.version", "8.99"}}, id, Expect::warn,
          "not in the knowledge base"),
      row("no cuDNN: nothing to judge", {}, id, Expect::absent),
      // NVIDIA's redistributable manifests: cuda12 and cuda13 archives for 9.21.0 - 9.26.0, none for CUDA 11.
      row("cuDNN 9.22 has a CUDA 13.x build", {{"cuda.version", "13.2.1"}, {"cudnn.version", "9.22"}}, id,
          Expect::pass),
      row("cuDNN 9.26.0 has a CUDA 12.x build", {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.26.0"}}, id,
          Expect::pass),
      row("cuDNN 9.24.1 on CUDA 13.5", {{"cuda.version", "13.5.0"}, {"cudnn.version", "9.24.1"}}, id, Expect::pass),
      row("cuDNN 9.23 has no CUDA 11.x build", {{"cuda.version", "11.8.0"}, {"cudnn.version", "9.23"}}, id,
          Expect::fail, "11.x"),
      row("cuDNN 9.27 is past the data's 9.26.0", {{"cuda.version", "13.2.1"}, {"cudnn.version", "9.27"}}, id,
          Expect::warn, "gpuenv's data ends at cuDNN 9.26.0"),
      row("cuDNN 9.16.5 is inside the data, not in it", {{"cuda.version", "13.2.1"}, {"cudnn.version", "9.16.5"}}, id,
          Expect::warn, "not in the knowledge base"),
  });
}

TEST_CASE("compat: cudnn.cuda_version warns when the support matrix does not list the CUDA minor", "[compat][rules]") {
  const std::string id = "cudnn.cuda_version";
  check_rows({
      row("cuDNN 9 lists CUDA 12.4", {{"cudnn.version", "9"}}, id, Expect::absent),
      row("cuDNN 9.5.1 lists 12.0 - 12.6", {{"cuda.version", "12.6.3"}, {"cudnn.version", "9.5.1"}}, id,
          Expect::absent),
      row("cuDNN 9.17 for 12.x lists 12.8", {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.17"}}, id,
          Expect::absent),
      row("cuDNN 9.5.1 does not list 12.8", {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.5.1"}}, id, Expect::warn,
          "12.8"),
      row("cuDNN 8.9.6 lists 12.0 - 12.2 only", {{"cudnn.version", "8.9.6"}}, id, Expect::warn, "12.4"),
      row("cuDNN 9.0.0 lists 12.0 - 12.3 only", {{"cudnn.version", "9.0.0"}}, id, Expect::warn),
      row("cuDNN 9.24.1's manifest names no toolkit minors: not judged",
          {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.24.1"}}, id, Expect::skip, "not checked"),
  });
}

// cuDNN 9.11.0 dropped the GPUs below compute capability 7.5 (data/compat/cudnn.toml [[arch_drop]]): a release at or
// past it fails on them; a list that leaves out an architecture the drop does not explain only warns.
TEST_CASE("compat: cudnn.compute_capability fails past the arch drop, warns for unlisted architectures",
          "[compat][rules]") {
  const std::string id = "cudnn.compute_capability";
  check_rows({
      row("cuDNN 9.17 lists 8.0",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.17"}, {"gpu.compute_capabilities", "8.0"}}, id,
          Expect::absent),
      row("cuDNN 9.17 for 13.x lists 12.0",
          {{"cuda.version", "13.0.2"}, {"cudnn.version", "9.17"}, {"gpu.compute_capabilities", "12.0"}}, id,
          Expect::absent),
      row("cuDNN 9.17 is past the 9.11.0 drop: no 7.0",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.17"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::fail, "cuDNN 9.11.0 dropped Maxwell, Pascal and Volta"),
      row("cuDNN 9.17 is past the 9.11.0 drop: no 6.1",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.17"}, {"gpu.compute_capabilities", "6.1"}}, id,
          Expect::fail, "6.1"),
      row("a V100 (7.0) resolved from gpu.models",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.17"}, {"gpu.models", "V100"}}, id, Expect::fail, "7.0"),
      row("cuDNN 9.22 on a V100: the fix names the newest release before the drop",
          {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.22"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::fail, "use cuDNN 9.10.2"),
      row("cuDNN 9.11.0 itself on a V100",
          {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.11.0"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::fail, "compute capability below 7.5"),
      row("a cuDNN newer than the data is past the drop too",
          {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.30"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::fail, "7.0"),
      row("cuDNN 9.22 on Turing (7.5): not dropped",
          {{"cuda.version", "12.9.1"}, {"cudnn.version", "9.22"}, {"gpu.compute_capabilities", "7.5"}}, id,
          Expect::absent),
      row("cuDNN 9.10 is before the drop",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.10"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::absent),
      row("cuDNN \"9\" also names releases before the drop: not judged by it",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::absent),
      row("cuDNN 9.10.2 lists 7.0 (footnote [5])",
          {{"cuda.version", "12.8.1"}, {"cudnn.version", "9.10.2"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::absent),
      row("cuDNN 9.10.2 lists 12.0 only in its Blackwell row, which covers CUDA 12.8-12.9, not 12.4",
          {{"cuda.version", "12.4.1"}, {"cudnn.version", "9.10.2"}, {"gpu.compute_capabilities", "12.0"}}, id,
          Expect::warn, "12.0"),
  });
}

// pytorch.md Table 2 (releases and variants).
TEST_CASE("compat: pytorch.release accepts known releases and series", "[compat][rules]") {
  const std::string id = "pytorch.release";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  check_rows({
      row("2.4.1 is a release", {pt, torch("2.4.1"), py}, id, Expect::pass),
      row("2.11.0 is a release", {pt, torch("2.11.0"), py, {"cuda.version", "12.8.1"}}, id, Expect::pass),
      row("2.13 is known at series level", {pt, torch("2.13.0"), py, {"cuda.version", "13.0.2"}}, id, Expect::pass,
          "series"),
      // A patch past its minor's newest known one may have shipped since the data was read (issue 25 rule 1); a
      // minor that never existed inside the table's range fails.
      row("2.4.3 is past 2.4's newest known patch", {pt, torch("2.4.3"), py}, id, Expect::warn, "newest 2.4.1"),
      row("1.14.0 does not exist (1.13 was followed by 2.0)", {pt, torch("1.14.0"), py}, id, Expect::fail,
          "not a PyTorch release"),
      row("3.0.0 is newer than the data: a warning, not a failure", {pt, torch("3.0.0"), py}, id, Expect::warn,
          "gpuenv's data ends at torch"),
      row("1.8.1 predates the table", {pt, torch("1.8.1"), {"framework.python", "3.8"}, {"cuda.version", "11.1.1"}}, id,
          Expect::fail),
      row("1.10.2 is a release (pytorch.org's selector data)",
          {pt, torch("1.10.2"), {"framework.python", "3.9"}, {"cuda.version", "11.3.1"}}, id, Expect::pass),
  });
}

// pytorch.github.io published_versions.json (the selector's commands): 1.10.x has cu113 wheels; 1.11.0 cu115 from the
// release-candidate note (secondary).
TEST_CASE("compat: pytorch.variant knows the 1.10 and 1.11 CUDA 11.x wheels", "[compat][rules]") {
  const std::string id = "pytorch.variant";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.9"};
  check_rows({
      row("1.10.0 has cu113", {pt, torch("1.10.0"), py, {"cuda.version", "11.3.1"}}, id, Expect::pass),
      row("1.10.1 has cu113", {pt, torch("1.10.1"), py, {"cuda.version", "11.3.1"}}, id, Expect::pass),
      row("1.10.2 has cu113", {pt, torch("1.10.2"), py, {"cuda.version", "11.3.1"}}, id, Expect::pass),
      row("1.10.2 has cu102", {pt, torch("1.10.2"), py, {"framework.variant", "cu102"}, {"cuda.version", "10.2.89"}},
          id, Expect::pass),
      row("1.11.0 has cu115", {pt, torch("1.11.0"), py, {"cuda.version", "11.5.2"}}, id, Expect::pass),
      row("1.10.2 has no cu115", {pt, torch("1.10.2"), py, {"cuda.version", "11.5.2"}}, id, Expect::fail, "cu113"),
      row("1.11.0 has no cu111", {pt, torch("1.11.0"), py, {"cuda.version", "11.1.1"}}, id, Expect::fail, "cu115"),
  });
}

TEST_CASE("compat: pytorch.variant needs the +cuXYZ wheel to exist", "[compat][rules]") {
  const std::string id = "pytorch.variant";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  check_rows({
      row("2.4.1 has cu124", {pt, torch("2.4.1"), py}, id, Expect::pass),
      row("2.4.1 has cu118", {pt, torch("2.4.1"), py, {"cuda.version", "11.8.0"}}, id, Expect::pass),
      row("2.9.1 has cu130", {pt, torch("2.9.1"), py, {"cuda.version", "13.0.2"}}, id, Expect::pass),
      row("explicit cu121 exists for 2.4.1", {pt, torch("2.4.1"), py, {"framework.variant", "cu121"}}, id,
          Expect::pass),
      row("2.3.1 has cu118 and cu121 only", {pt, torch("2.3.1"), py}, id, Expect::fail, "cu124"),
      row("2.8.0's cu118 is unverified", {pt, torch("2.8.0"), py, {"cuda.version", "11.8.0"}}, id, Expect::fail,
          "cu118"),
      row("2.6.0 has no cu130", {pt, torch("2.6.0"), py, {"framework.variant", "cu130"}}, id, Expect::fail, "cu130"),
  });
}

TEST_CASE("compat: pytorch.variant_cuda warns when an explicit variant bundles another CUDA major", "[compat][rules]") {
  const std::string id = "pytorch.variant_cuda";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  check_rows({
      row("derived variant matches cuda.version", {pt, torch("2.4.1"), py}, id, Expect::absent),
      row("cu121 and CUDA 12.4.1 share the major", {pt, torch("2.4.1"), py, {"framework.variant", "cu121"}}, id,
          Expect::absent),
      row("cu118 in a CUDA 12 image", {pt, torch("2.4.1"), py, {"framework.variant", "cu118"}}, id, Expect::warn,
          "11.8"),
      row("cu130 in a CUDA 12 image",
          {pt, torch("2.9.1"), py, {"cuda.version", "12.8.1"}, {"framework.variant", "cu130"}}, id, Expect::warn),
  });
}

// pytorch.md Table 1 (Python range per series); no range is known before 1.12.
TEST_CASE("compat: pytorch.python checks the series' Python range", "[compat][rules]") {
  const std::string id = "pytorch.python";
  const Field pt{"framework.name", "pytorch"};
  check_rows({
      row("2.4 supports 3.8", {pt, torch("2.4.1"), {"framework.python", "3.8"}}, id, Expect::pass),
      row("2.4 supports 3.12", {pt, torch("2.4.1"), {"framework.python", "3.12"}}, id, Expect::pass),
      row("2.4 stops at 3.12", {pt, torch("2.4.1"), {"framework.python", "3.13"}}, id, Expect::fail, "3.8-3.12"),
      row("2.4 starts at 3.8", {pt, torch("2.4.1"), {"framework.python", "3.7"}}, id, Expect::fail),
      row("2.11 supports 3.13", {pt, torch("2.11.0"), {"framework.python", "3.13"}, {"cuda.version", "12.8.1"}}, id,
          Expect::pass),
      row("2.11 starts at 3.10", {pt, torch("2.11.0"), {"framework.python", "3.9"}, {"cuda.version", "12.8.1"}}, id,
          Expect::fail),
      row("2.1 is not 2.10: 2.1 stops at 3.11",
          {pt, torch("2.1.2"), {"framework.python", "3.12"}, {"cuda.version", "12.1.1"}}, id, Expect::fail, "3.8-3.11"),
      row("1.11 has no Python range in the reference",
          {pt, torch("1.11.0"), {"framework.python", "3.9"}, {"cuda.version", "11.3.1"}}, id, Expect::warn),
      // PyTorch's matrix marks experimental Pythons: judged one way, a WARN "experimental wheels", whatever the range.
      row("2.2 with 3.12: experimental wheels",
          {pt, torch("2.2.2"), {"framework.python", "3.12"}, {"cuda.version", "12.1.1"}}, id, Expect::warn,
          "experimental wheels"),
      row("2.3 with 3.12: experimental wheels",
          {pt, torch("2.3.1"), {"framework.python", "3.12"}, {"cuda.version", "12.1.1"}}, id, Expect::warn,
          "experimental wheels"),
      row("2.5 with 3.13: experimental wheels", {pt, torch("2.5.1"), {"framework.python", "3.13"}}, id, Expect::warn,
          "experimental wheels"),
      row("2.3 with 3.11: supported", {pt, torch("2.3.1"), {"framework.python", "3.11"}, {"cuda.version", "12.1.1"}},
          id, Expect::pass),
      row("2.5 with 3.12: supported", {pt, torch("2.5.1"), {"framework.python", "3.12"}}, id, Expect::pass),
  });
}

// RELEASE.md's matrix: "<=(3.14, 3.14t experimental)" for 2.9-2.12 and "<=(3.15, 3.15t experimental)" for 2.13-2.14,
// "(3.12 experimental)" for 2.2-2.3, "(3.13 experimental)" for 2.5. From 2.10 on Python 3.14 is supported and only
// the free-threaded 3.14t is experimental (pytorch/pytorch issue 169875, the 2.10 release feature; issue 25): 2.10-2.12
// pass 3.14 and fail 3.15. 2.9 shipped 3.14 wheels without torch.compile (its support came with 2.10), and 2.13-2.14
// shipped before Python 3.15's release: those stay experimental. Every experimental mark is judged the same way: a
// WARN naming experimental wheels, never a FAIL and never a PASS; the newest supported Python just below it passes,
// the one just above it fails.
TEST_CASE("compat: pytorch.python judges every experimental Python one way", "[compat][rules]") {
  const std::string id = "pytorch.python";
  const Field pt{"framework.name", "pytorch"};
  const Field cuda121{"cuda.version", "12.1.1"};
  const Field cuda124{"cuda.version", "12.4.1"};
  const Field cuda126{"cuda.version", "12.6.3"};
  const Field cuda130{"cuda.version", "13.0.2"};
  struct Case {
    const char* torch;
    Field cuda;
    const char* experimental;  ///< marked experimental: WARN (nullptr: no plain Python is)
    const char* supported;     ///< the newest supported Python: PASS
    const char* beyond;        ///< past the experimental one: FAIL
  };
  const Case cases[] = {
      {"2.2.2", cuda121, "3.12", "3.11", "3.13"},   {"2.3.1", cuda121, "3.12", "3.11", "3.13"},
      {"2.5.1", cuda124, "3.13", "3.12", "3.14"},   {"2.9.1", cuda126, "3.14", "3.13", "3.15"},
      {"2.10.0", cuda126, nullptr, "3.14", "3.15"}, {"2.11.0", cuda126, nullptr, "3.14", "3.15"},
      {"2.12.0", cuda130, nullptr, "3.14", "3.15"}, {"2.13.0", cuda130, "3.15", "3.14", "3.16"},
      {"2.14.0", cuda130, "3.15", "3.14", "3.16"},
  };
  std::vector<Row> rows;
  for (const Case& c : cases) {
    const std::string t = c.torch;
    if (c.experimental != nullptr)
      rows.push_back(row(t + " with " + c.experimental + ": experimental wheels",
                         {pt, torch(c.torch), c.cuda, {"framework.python", c.experimental}}, id, Expect::warn,
                         "experimental wheels"));
    rows.push_back(row(t + " with " + c.supported + ": supported",
                       {pt, torch(c.torch), c.cuda, {"framework.python", c.supported}}, id, Expect::pass));
    rows.push_back(row(t + " with " + c.beyond + ": unsupported",
                       {pt, torch(c.torch), c.cuda, {"framework.python", c.beyond}}, id, Expect::fail));
  }
  check_rows(rows);
}

// pytorch.md: the host needs a driver new enough for the wheel's CUDA (cuda-driver.md Tables 1 and 2).
TEST_CASE("compat: pytorch.driver judges the driver floor against the wheel's CUDA", "[compat][rules]") {
  const std::string id = "pytorch.driver";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  check_rows({
      row("CUDA 12.4.1's driver runs cu124 (needs 550.54.14)", {pt, torch("2.4.1"), py}, id, Expect::pass),
      row("driver 550.54.14 runs cu124", {pt, torch("2.4.1"), py, {"driver.min", "550.54.14"}}, id, Expect::pass),
      row("CUDA 12.2.2's driver under cu124: minor-version compatibility only",
          {pt, torch("2.4.1"), py, {"cuda.version", "12.2.2"}, {"framework.variant", "cu124"}}, id, Expect::warn),
      row("CUDA 12.8.1's driver (570) cannot run cu130 (needs 580)",
          {pt, torch("2.9.1"), py, {"cuda.version", "12.8.1"}, {"framework.variant", "cu130"}}, id, Expect::fail,
          "580.65.06"),
      row("CUDA 11.8.0's driver (520) cannot run cu121 (12.x floor 525.60.13)",
          {pt, torch("2.4.1"), py, {"cuda.version", "11.8.0"}, {"framework.variant", "cu121"}}, id, Expect::fail,
          "525.60.13"),
      row("no wheel, no driver judgement", {pt, torch("2.3.1"), py}, id, Expect::absent),
  });
}

// pytorch.md Table 3 (architectures per wheel variant; 2.11 cu128 dropped sm_70); gpus.md cross-checks.
TEST_CASE("compat: pytorch.compute_capability checks the wheel's architecture list", "[compat][rules]") {
  const std::string id = "pytorch.compute_capability";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  const Field t211 = torch("2.11.0");
  check_rows({
      row("2.11 cu128 is built for 9.0",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.compute_capabilities", "9.0"}}, id, Expect::pass),
      row("2.11 cu128 is built for 12.0",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.compute_capabilities", "12.0"}}, id, Expect::pass),
      row("2.11 cu128 dropped Volta sm_70",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.compute_capabilities", "7.0"}}, id, Expect::fail, "7.0"),
      row("V100 (7.0) from gpu.models on 2.11 cu128",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.models", "V100"}}, id, Expect::fail),
      row("2.11 cu126 keeps sm_70", {pt, t211, py, {"cuda.version", "12.6.3"}, {"gpu.compute_capabilities", "7.0"}}, id,
          Expect::pass),
      row("cu126 wheels have no sm_100",
          {pt, t211, py, {"cuda.version", "12.6.3"}, {"gpu.compute_capabilities", "10.0"}}, id, Expect::fail),
      row("2.12 cu130 runs its 12.0 cubins on 12.1 (binary compatible within a major)",
          {pt, torch("2.12.0"), py, {"cuda.version", "13.0.2"}, {"gpu.compute_capabilities", "12.1"}}, id, Expect::pass,
          "12.0 kernels"),
      row("2.11 cu128 runs its 8.6 cubins on an L4 (8.9)",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.compute_capabilities", "8.9"}}, id, Expect::pass,
          "8.6 kernels"),
      row("2.12 cu130 runs its 10.0 cubins on a B300 (10.3)",
          {pt, torch("2.12.0"), py, {"cuda.version", "13.0.2"}, {"gpu.models", "B300"}}, id, Expect::pass,
          "10.0 kernels"),
      row("2.11 cu128 has nothing for Jetson Thor (11.0): no same-major cubin, older PTX",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.compute_capabilities", "11.0"}}, id, Expect::fail),
      row("2.12 cu130 is built for 10.0",
          {pt, torch("2.12.0"), py, {"cuda.version", "13.0.2"}, {"gpu.compute_capabilities", "10.0"}}, id,
          Expect::pass),
      row("2.5 cu124 (conda list) has sm_90", {pt, torch("2.5.1"), py, {"gpu.compute_capabilities", "9.0"}}, id,
          Expect::pass),
      row("no architecture list for 2.4 cu124", {pt, torch("2.4.1"), py, {"gpu.compute_capabilities", "8.0"}}, id,
          Expect::skip, "not checked"),
      row("2.7 cu126 is judged by the conda build's list (no pip list in the data)",
          {pt, torch("2.7.1"), py, {"cuda.version", "12.6.3"}, {"gpu.compute_capabilities", "9.0"}}, id, Expect::pass),
      row("no GPU named: nothing to judge", {pt, t211, py, {"cuda.version", "12.8.1"}}, id, Expect::absent),
      row("2.11 cu128 on a V100: the fix names 2.11's cu126 wheel",
          {pt, t211, py, {"cuda.version", "12.8.1"}, {"gpu.models", "V100"}}, id, Expect::fail,
          "torch 2.11.0's cu126 wheel"),
      row("a GPU no variant of the release runs: the generic fix",
          {pt, t211, py, {"cuda.version", "12.6.3"}, {"gpu.compute_capabilities", "3.7"}}, id, Expect::fail,
          "another wheel variant or PyTorch release"),
  });
}

// RELEASE.md's "PyTorch CUDA Support Matrix" for 2.9 and 2.10 (PRs 164471, 175253), build_cuda.sh of the 2.8 line,
// the release/2.6 script as copied by nixpkgs: cu128 keeps Volta through 2.10, cu130 starts at Turing 7.5.
TEST_CASE("compat: pytorch.compute_capability knows the 2.6, 2.8, 2.9 and 2.10 wheels", "[compat][rules]") {
  const std::string id = "pytorch.compute_capability";
  const Field pt{"framework.name", "pytorch"};
  const Field py{"framework.python", "3.11"};
  const Field cuda126{"cuda.version", "12.6.3"};
  const Field cuda128{"cuda.version", "12.8.1"};
  const Field cuda130{"cuda.version", "13.0.2"};
  const Field v100{"gpu.models", "V100"};
  check_rows({
      row("2.10 cu130 on a V100: not built for 7.0, and the arch list is named",
          {pt, torch("2.10.0"), py, cuda130, v100}, id, Expect::fail, "built for 7.5, 8.0, 8.6, 9.0, 10.0, 12.0"),
      row("2.10 cu130 on a V100: the fix is 2.10's cu126 or cu128 wheel", {pt, torch("2.10.0"), py, cuda130, v100}, id,
          Expect::fail, "torch 2.10.0's cu126 or cu128 wheel"),
      row("2.10 cu128 keeps Volta", {pt, torch("2.10.0"), py, cuda128, v100}, id, Expect::pass),
      row("2.10 cu126 keeps Volta", {pt, torch("2.10.0"), py, cuda126, v100}, id, Expect::pass),
      row("2.9 cu128 keeps Volta", {pt, torch("2.9.1"), py, cuda128, v100}, id, Expect::pass),
      row("2.9 cu130 has no Volta", {pt, torch("2.9.0"), py, cuda130, v100}, id, Expect::fail, "cu126 or cu128"),
      row("2.9 cu130 runs Blackwell 12.0", {pt, torch("2.9.1"), py, cuda130, {"gpu.compute_capabilities", "12.0"}}, id,
          Expect::pass),
      row("2.9 cu126 has no Blackwell: the fix is cu128 or cu130",
          {pt, torch("2.9.1"), py, cuda126, {"gpu.compute_capabilities", "10.0"}}, id, Expect::fail, "cu128 or cu130"),
      row("2.8 cu128 keeps Volta", {pt, torch("2.8.0"), py, cuda128, v100}, id, Expect::pass),
      row("2.8 cu128 has no Pascal: the fix is cu126",
          {pt, torch("2.8.0"), py, cuda128, {"gpu.compute_capabilities", "6.0"}}, id, Expect::fail,
          "torch 2.8.0's cu126 wheel"),
      row("2.8 cu129 runs a B200", {pt, torch("2.8.0"), py, {"cuda.version", "12.9.1"}, {"gpu.models", "B200"}}, id,
          Expect::pass),
      row("2.6 cu124 runs an H100", {pt, torch("2.6.0"), py, {"gpu.models", "H100"}}, id, Expect::pass),
      row("2.6 cu118 still builds Kepler 3.7",
          {pt, torch("2.6.0"), py, {"cuda.version", "11.8.0"}, {"gpu.compute_capabilities", "3.7"}}, id, Expect::pass),
      row("2.6 cu126 has no Blackwell and no 2.6 variant does",
          {pt, torch("2.6.0"), py, cuda126, {"gpu.compute_capabilities", "10.0"}}, id, Expect::fail,
          "another wheel variant or PyTorch release"),
  });
}

// tensorflow.md Table 1 (tested Linux GPU build configurations, 2.0.0 .. 2.21.0).
TEST_CASE("compat: tensorflow.release accepts the tested configurations", "[compat][rules]") {
  const std::string id = "tensorflow.release";
  const Field tf{"framework.name", "tensorflow"};
  check_rows({
      row("2.15.0 is listed",
          {tf, {"framework.version", "2.15.0"}, {"framework.python", "3.11"}, {"cuda.version", "12.2.2"}}, id,
          Expect::pass),
      row("2.16 is listed as 2.16.1",
          {tf, {"framework.version", "2.16"}, {"framework.python", "3.11"}, {"cuda.version", "12.3.2"}}, id,
          Expect::pass),
      row("2.16.2 shares 2.16.1's line",
          {tf, {"framework.version", "2.16.2"}, {"framework.python", "3.11"}, {"cuda.version", "12.3.2"}}, id,
          Expect::pass, "2.16.1"),
      row("2.99.0 is newer than the data: a warning naming its horizon",
          {tf, {"framework.version", "2.99.0"}, {"framework.python", "3.11"}, {"cuda.version", "12.5.1"}}, id,
          Expect::warn, "gpuenv's data ends at TensorFlow"),
      row("no 1.99 row exists inside the known range",
          {tf, {"framework.version", "1.99.0"}, {"framework.python", "3.11"}, {"cuda.version", "12.5.1"}}, id,
          Expect::fail),
  });
}

TEST_CASE("compat: tensorflow.cuda fails on another CUDA major and warns on another minor", "[compat][rules]") {
  const std::string id = "tensorflow.cuda";
  const Field tf{"framework.name", "tensorflow"};
  const Field py{"framework.python", "3.11"};
  check_rows({
      row("2.15 was tested with 12.2", {tf, {"framework.version", "2.15.0"}, py, {"cuda.version", "12.2.2"}}, id,
          Expect::pass),
      row("2.15 on 12.4 is untested", {tf, {"framework.version", "2.15.0"}, py, {"cuda.version", "12.4.1"}}, id,
          Expect::warn),
      row("2.15 is a CUDA 12 build", {tf, {"framework.version", "2.15.0"}, py, {"cuda.version", "11.8.0"}}, id,
          Expect::fail),
      row("2.14 was tested with 11.8", {tf, {"framework.version", "2.14.0"}, py, {"cuda.version", "11.8.0"}}, id,
          Expect::pass),
      row("2.14 is a CUDA 11 build", {tf, {"framework.version", "2.14.0"}, py, {"cuda.version", "12.2.2"}}, id,
          Expect::fail),
      row("2.18 was tested with 12.5", {tf, {"framework.version", "2.18.0"}, py, {"cuda.version", "12.5.1"}}, id,
          Expect::pass),
      row("2.18 on 12.4 is untested", {tf, {"framework.version", "2.18.0"}, py, {"cuda.version", "12.4.1"}}, id,
          Expect::warn),
      row("2.18 is not a CUDA 13 build", {tf, {"framework.version", "2.18.0"}, py, {"cuda.version", "13.0.2"}}, id,
          Expect::fail),
  });
}

TEST_CASE("compat: tensorflow.cudnn fails on another cuDNN major and warns on another minor", "[compat][rules]") {
  const std::string id = "tensorflow.cudnn";
  const Field tf{"framework.name", "tensorflow"};
  const Field py{"framework.python", "3.11"};
  const Field tf215{"framework.version", "2.15.0"};
  const Field tf218{"framework.version", "2.18.0"};
  const Field cuda122{"cuda.version", "12.2.2"};
  const Field cuda125{"cuda.version", "12.5.1"};
  check_rows({
      row("2.15: cuDNN 8.9", {tf, tf215, py, cuda122, {"cudnn.version", "8.9"}}, id, Expect::pass),
      row("2.15: cuDNN 8 (major only)", {tf, tf215, py, cuda122, {"cudnn.version", "8"}}, id, Expect::pass),
      row("2.15: cuDNN 8.6 is untested", {tf, tf215, py, cuda122, {"cudnn.version", "8.6"}}, id, Expect::warn),
      row("2.15: cuDNN 9 is another major", {tf, tf215, py, cuda122, {"cudnn.version", "9"}}, id, Expect::fail),
      row("2.18: cuDNN 9.3", {tf, tf218, py, cuda125, {"cudnn.version", "9.3"}}, id, Expect::pass),
      row("2.18: cuDNN 9.1 is untested", {tf, tf218, py, cuda125, {"cudnn.version", "9.1"}}, id, Expect::warn),
      row("2.18: cuDNN 8.9 is another major", {tf, tf218, py, cuda125, {"cudnn.version", "8.9"}}, id, Expect::fail),
      row("no cuDNN: nothing to judge", {tf, tf218, py, cuda125}, id, Expect::absent),
  });
}

TEST_CASE("compat: tensorflow.python checks the tested Python range", "[compat][rules]") {
  const std::string id = "tensorflow.python";
  const Field tf{"framework.name", "tensorflow"};
  const Field tf215{"framework.version", "2.15.0"};
  const Field tf221{"framework.version", "2.21.0"};
  const Field cuda122{"cuda.version", "12.2.2"};
  const Field cuda125{"cuda.version", "12.5.1"};
  check_rows({
      row("2.15: 3.9", {tf, tf215, cuda122, {"framework.python", "3.9"}}, id, Expect::pass),
      row("2.15: 3.11", {tf, tf215, cuda122, {"framework.python", "3.11"}}, id, Expect::pass),
      row("2.15: 3.12 is outside 3.9-3.11", {tf, tf215, cuda122, {"framework.python", "3.12"}}, id, Expect::fail,
          "3.9-3.11"),
      row("2.15: 3.8 is outside 3.9-3.11", {tf, tf215, cuda122, {"framework.python", "3.8"}}, id, Expect::fail),
      row("2.21: 3.13", {tf, tf221, cuda125, {"framework.python", "3.13"}}, id, Expect::pass),
      row("2.21 dropped 3.9", {tf, tf221, cuda125, {"framework.python", "3.9"}}, id, Expect::fail),
  });
}

// nvidia-cuda-images.md: no debian images; OS matrix, cuDNN tokens, EOL chart.
TEST_CASE("compat: image.os is an error only when an image is needed", "[compat][rules]") {
  const std::string id = "image.os";
  const Field debian{"os.distro", "debian"};
  const Field bookworm{"os.version", "12"};
  check_rows({
      row("debian for check: skip", {debian, bookworm}, id, Expect::skip, "debian"),
      row("debian for a Dockerfile: fail", {debian, bookworm}, id, Expect::fail, "debian", Purpose::dockerfile),
      row("ubuntu has images", {}, id, Expect::absent, {}, Purpose::dockerfile),
      row("rhel maps to ubi", {{"os.distro", "rhel"}, {"os.version", "9"}}, id, Expect::absent, {},
          Purpose::dockerfile),
  });
}

TEST_CASE("compat: image.tag needs a published, current nvidia/cuda tag", "[compat][rules]") {
  const std::string id = "image.tag";
  const Field cudnn9{"cudnn.version", "9"};
  check_rows({
      // published
      row("12.4.1-runtime-ubuntu22.04", {}, id, Expect::pass, "12.4.1-runtime-ubuntu22.04"),
      row("12.4.1-cudnn-runtime-ubuntu22.04", {cudnn9}, id, Expect::pass, "12.4.1-cudnn-runtime-ubuntu22.04"),
      row("12.4.1-cudnn-devel-ubi9", {{"os.distro", "rhel"}, {"os.version", "9"}, {"image.flavor", "devel"}, cudnn9},
          id, Expect::pass, "ubi9"),
      row("12.2.2-cudnn8-runtime-ubuntu22.04", {{"cuda.version", "12.2.2"}, {"cudnn.version", "8"}}, id, Expect::pass),
      row("12.5.1 has ubuntu24.04 (base/runtime/devel)", {{"cuda.version", "12.5.1"}, {"os.version", "24.04"}}, id,
          Expect::pass),
      row("12.6.3 has amzn2023", {{"cuda.version", "12.6.3"}, {"os.distro", "amzn"}, {"os.version", "2023"}}, id,
          Expect::pass),
      row("12.0.1 has rockylinux9", {{"cuda.version", "12.0.1"}, {"os.distro", "rockylinux"}, {"os.version", "9"}}, id,
          Expect::pass),
      // CUDA 13 images published after NVIDIA's repository snapshot (rapidsai/ci-imgs, replicate/cog listings)
      // (published, and superseded by a later update of the same minor: issue 25, rule 6)
      // 13.2.2 shipped without images: 13.2.1's stay the supported 13.2 images (NVIDIA's supported-tags.md)
      row("13.2.1-cudnn-devel-ubuntu24.04 is published and still supported",
          {{"cuda.version", "13.2.1"}, {"os.version", "24.04"}, {"image.flavor", "devel"}, cudnn9}, id, Expect::pass,
          "13.2.1-cudnn-devel-ubuntu24.04 is published"),
      row("13.1.1-cudnn-runtime-ubuntu22.04, superseded by 13.1.2", {{"cuda.version", "13.1.1"}, cudnn9}, id,
          Expect::warn,
          "superseded by 13.1.2 (only the latest update of a CUDA release is supported, and CUDA 13.1.2 "
          "images are published)"),
      row("13.1.2-cudnn-runtime-ubuntu22.04", {{"cuda.version", "13.1.2"}, cudnn9}, id, Expect::pass),
      row("13.0.3-cudnn-runtime-ubuntu24.04", {{"cuda.version", "13.0.3"}, {"os.version", "24.04"}, cudnn9}, id,
          Expect::pass, "13.0.3-cudnn-runtime-ubuntu24.04 is published"),
      row("13.3.0-base-rockylinux8 is end-of-life (dist/end-of-life/13.3.0)",
          {{"cuda.version", "13.3.0"}, {"os.distro", "rockylinux"}, {"os.version", "8"}, {"image.flavor", "base"}}, id,
          Expect::warn, "13.3.0-base-rockylinux8 is end-of-life"),
      row("13.3.0 moves to 13.3.1", {{"cuda.version", "13.3.0"}, {"os.version", "24.04"}}, id, Expect::warn,
          "move cuda.version to 13.3.1"),
      row("12.8.1, superseded by 12.8.2 (its images not in the data before)", {{"cuda.version", "12.8.1"}}, id,
          Expect::warn, "move cuda.version to 12.8.2"),
      row("12.8.2 has no cuDNN image", {{"cuda.version", "12.8.2"}, cudnn9}, id, Expect::fail,
          "CUDA 12.8.2 has no cuDNN image for ubuntu22.04"),
      row("and the fix names versions that have one, not 12.8.2", {{"cuda.version", "12.8.2"}, cudnn9}, id,
          Expect::fail, "pick a CUDA version with cuDNN images for ubuntu22.04 (12.9.2, "),
      row("12.8.1 with cuDNN: its successor has no cuDNN image, so the fix names others",
          {{"cuda.version", "12.8.1"}, cudnn9}, id, Expect::warn,
          "move cuda.version to one of 12.9.2, 12.6.3, 12.5.1 (CUDA 12.8.2 has no cuDNN image for ubuntu22.04)"),
      row("13.3.1-cudnn-runtime-ubuntu26.04", {{"cuda.version", "13.3.1"}, {"os.version", "26.04"}, cudnn9}, id,
          Expect::pass),
      row("13.3.0 has ubuntu26.04", {{"cuda.version", "13.3.0"}, {"os.version", "26.04"}}, id, Expect::warn,
          "13.3.0-runtime-ubuntu26.04 is end-of-life"),
      // a partial OS listing: an OS it does not name is unknown, not unpublished
      row("13.1.2 on ubi9: not in the partial listing",
          {{"cuda.version", "13.1.2"}, {"os.distro", "rhel"}, {"os.version", "9"}}, id, Expect::warn,
          "partial listing"),
      row("13.0.3 cuDNN on rockylinux8: not in the partial listing",
          {{"cuda.version", "13.0.3"}, {"os.distro", "rockylinux"}, {"os.version", "8"}, cudnn9}, id, Expect::warn,
          "cuDNN images for ubuntu22.04, ubuntu24.04 only"),
      // 13.2.1's row is NVIDIA's full list (supported-tags.md at a later mirror commit)
      row("13.2.1 on ubi9 is published", {{"cuda.version", "13.2.1"}, {"os.distro", "rhel"}, {"os.version", "9"}}, id,
          Expect::pass),
      row("13.2.1 cuDNN on rockylinux8 is published",
          {{"cuda.version", "13.2.1"}, {"os.distro", "rockylinux"}, {"os.version", "8"}, cudnn9}, id, Expect::pass),
      // NVIDIA's support policy: only the latest update of a release, and two CUDA majors, are supported
      row("11.4.3 is due for deletion (two majors: 12 and 13)", {{"cuda.version", "11.4.3"}, {"os.version", "20.04"}},
          id, Expect::warn, "NVIDIA supports images of 2 CUDA majors at a time (12 and 13)"),
      row("11.8.0 may vanish", {{"cuda.version", "11.8.0"}}, id, Expect::warn, "may vanish; unpatched"),
      row("11.8.0 moves to a supported major", {{"cuda.version", "11.8.0"}}, id, Expect::warn,
          "move to a CUDA 12 or 13 image"),
      row("13.2.0 is superseded by 13.2.1, the newest 13.2 image", {{"cuda.version", "13.2.0"}}, id, Expect::warn,
          "move cuda.version to 13.2.1"),
      row("13.2.0 may vanish", {{"cuda.version", "13.2.0"}}, id, Expect::warn, "may vanish; unpatched"),
      row("13.1.0 is superseded by 13.1.1", {{"cuda.version", "13.1.0"}, {"os.version", "24.04"}}, id, Expect::warn,
          "only the latest update of a CUDA release is supported"),
      row("12.9.1 is superseded by 12.9.2", {{"cuda.version", "12.9.1"}}, id, Expect::warn, "superseded by 12.9.2"),
      row("12.9.2 is the latest 12.9 update known", {{"cuda.version", "12.9.2"}}, id, Expect::pass),
      // OS not published
      row("12.4.1 has no ubuntu24.04", {{"os.version", "24.04"}}, id, Expect::fail, "ubuntu24.04"),
      row("13.x has no ubuntu20.04", {{"cuda.version", "13.0.2"}, {"os.version", "20.04"}}, id, Expect::fail),
      row("11.8.0 has no ubi9", {{"cuda.version", "11.8.0"}, {"os.distro", "rhel"}, {"os.version", "9"}}, id,
          Expect::fail),
      row("rockylinux9 starts with 12.0.1",
          {{"cuda.version", "12.0.0"}, {"os.distro", "rockylinux"}, {"os.version", "9"}}, id, Expect::fail),
      row("amzn2023 starts with 12.6.0", {{"os.distro", "amzn"}, {"os.version", "2023"}}, id, Expect::fail),
      // no cuDNN variant
      row("12.4.0 has no cuDNN images", {{"cuda.version", "12.4.0"}, cudnn9}, id, Expect::fail, "12.4.1"),
      row("13.1.0 has no cuDNN images", {{"cuda.version", "13.1.0"}, cudnn9}, id, Expect::fail),
      row("12.2.0 has no cuDNN images", {{"cuda.version", "12.2.0"}, {"cudnn.version", "8"}}, id, Expect::fail),
      row("12.5.1 ubuntu24.04 has no cuDNN variant", {{"cuda.version", "12.5.1"}, {"os.version", "24.04"}, cudnn9}, id,
          Expect::fail),
      row("cuDNN is never offered for base", {{"image.flavor", "base"}, cudnn9}, id, Expect::fail, "base"),
      // end of life
      row("12.4.0 EOL 2024-05-31, deletion 2024-11-30", {{"cuda.version", "12.4.0"}}, id, Expect::warn, "2024-05-31"),
      row("12.4.0's deletion date", {{"cuda.version", "12.4.0"}}, id, Expect::warn, "2024-11-30"),
      // A deletion date long past is not "scheduled" (stale words a reviewer found in issue 12).
      row("12.4.0's deletion date is a date, not a schedule", {{"cuda.version", "12.4.0"}}, id, Expect::warn,
          "NVIDIA's deletion date 2024-11-30"),
      row("12.4.0's successor", {{"cuda.version", "12.4.0"}}, id, Expect::warn, "12.4.1"),
      row("12.4.0 is past its deletion date (the table's as_of is later)", {{"cuda.version", "12.4.0"}}, id,
          Expect::warn, "past NVIDIA's deletion date 2024-11-30"),
      row("12.4.0 may vanish", {{"cuda.version", "12.4.0"}}, id, Expect::warn, "may vanish; unpatched"),
      row("11.2.2 EOL 2023-07-01", {{"cuda.version", "11.2.2"}, {"os.version", "20.04"}}, id, Expect::warn,
          "2023-07-01"),
      row("12.1.0 EOL, 12.1.1 active", {{"cuda.version", "12.1.0"}}, id, Expect::warn, "12.1.1"),
      row("13.0.0 EOL without chart dates", {{"cuda.version", "13.0.0"}}, id, Expect::warn, "13.0.3"),
      // no image at all
      row("no 12.7.0 images", {{"cuda.version", "12.7.0"}}, id, Expect::fail),
      row("no 11.0.1 images", {{"cuda.version", "11.0.1"}, {"os.version", "20.04"}}, id, Expect::fail),
      row("no 12.2.1 images, below the newest 12.2 image: the nearest supported ones", {{"cuda.version", "12.2.1"}}, id,
          Expect::fail, "e.g. 12.2.2"),
      row("13.2.5 is past the newest 13.2 image: not known either way", {{"cuda.version", "13.2.5"}}, id, Expect::warn,
          "gpuenv's data ends at nvidia/cuda images of CUDA 13.2, newest 13.2.1"),
      row("13.3.2 is newer than the newest image: warn naming the horizon", {{"cuda.version", "13.3.2"}}, id,
          Expect::warn, "gpuenv's data ends at nvidia/cuda images at CUDA 13.3.1"),
      row("13.4.1 is newer than the newest image: warn naming the horizon", {{"cuda.version", "13.4.1"}}, id,
          Expect::warn, "gpuenv's data ends at nvidia/cuda images at CUDA 13.3.1"),
  });
}

TEST_CASE("compat: image.cudnn compares the cuDNN inside the image", "[compat][rules]") {
  const std::string id = "image.cudnn";
  check_rows({
      row("12.4.1 carries 9.1.0.70", {{"cudnn.version", "9"}}, id, Expect::absent),
      row("12.4.1 carries 9.1", {{"cudnn.version", "9.1"}}, id, Expect::absent),
      row("12.3.2 carries 9.0.0.312", {{"cuda.version", "12.3.2"}, {"cudnn.version", "9"}}, id, Expect::absent),
      row("12.2.2 carries cuDNN 8.9.6.50", {{"cuda.version", "12.2.2"}, {"cudnn.version", "9"}}, id, Expect::fail,
          "8.9.6.50"),
      row("12.3.2 carries cuDNN 9", {{"cuda.version", "12.3.2"}, {"cudnn.version", "8"}}, id, Expect::fail),
      row("12.4.1 carries 9.1, not 9.5", {{"cudnn.version", "9.5"}}, id, Expect::warn, "9.1.0.70"),
  });
}

// gpus.md Tables 1 and 2.
TEST_CASE("compat: gpu.model knows the catalog and suggests near misses", "[compat][rules]") {
  const std::string id = "gpu.model";
  check_rows({
      row("H100 is known", {{"gpu.models", "H100"}}, id, Expect::absent),
      row("aliases match case-insensitively", {{"gpu.models", "nvidia h100 80gb hbm3"}}, id, Expect::absent),
      row("A10G is known", {{"gpu.models", "A10G"}}, id, Expect::absent),
      row("H100X is unknown", {{"gpu.models", "H100X"}}, id, Expect::fail, "did you mean `H100`"),
      row("L40SS is unknown", {{"gpu.models", "L40SS"}}, id, Expect::fail, "did you mean `L40S`"),
      row("an unrelated name is unknown", {{"gpu.models", "Instinct MI300X"}}, id, Expect::fail,
          "not in the knowledge base"),
  });
}

// cuda-driver.md Table 3 (first / last CUDA per SM) and gpus.md cross-checks.
TEST_CASE("compat: gpu.cuda_support checks that the CUDA release can target each GPU", "[compat][rules]") {
  const std::string id = "gpu.cuda_support";
  const auto cc = [](const char* value) { return Field{"gpu.compute_capabilities", value}; };
  check_rows({
      row("CUDA 13 dropped Volta", {{"cuda.version", "13.0.2"}, cc("7.0")}, id, Expect::fail, "12.9"),
      row("CUDA 13 keeps Turing", {{"cuda.version", "13.0.2"}, cc("7.5")}, id, Expect::pass),
      row("CUDA 12.9 still has Volta", {{"cuda.version", "12.9.1"}, cc("7.0")}, id, Expect::pass),
      row("CUDA 13 dropped Maxwell", {{"cuda.version", "13.1.0"}, cc("5.0")}, id, Expect::fail),
      row("CUDA 12 has Maxwell", {{"cuda.version", "12.0.0"}, cc("5.0")}, id, Expect::pass),
      row("CUDA 12 dropped Kepler 3.7", {cc("3.7")}, id, Expect::fail, "11.8"),
      row("CUDA 11.8 still has 3.7", {{"cuda.version", "11.8.0"}, cc("3.7")}, id, Expect::pass),
      row("CUDA 11 dropped 3.0", {{"cuda.version", "11.0.3"}, cc("3.0")}, id, Expect::fail),
      row("Hopper from 11.8", {{"cuda.version", "11.8.0"}, cc("9.0")}, id, Expect::pass),
      row("Hopper not before 11.8", {{"cuda.version", "11.7.1"}, cc("9.0")}, id, Expect::fail, "11.8"),
      // Issue 25, rule 3: a CUDA that cannot target a GPU itself still runs there through a same-major, lower-minor
      // architecture it does target (binary compatibility); with none, it fails.
      row("8.6 from 11.1; CUDA 11.0's 8.0 code runs there", {{"cuda.version", "11.0.3"}, cc("8.6")}, id, Expect::pass,
          "its 8.0 code runs there"),
      row("10.0 needs 12.8", {{"cuda.version", "12.6.3"}, cc("10.0")}, id, Expect::fail, "12.8"),
      row("10.0 with 12.8", {{"cuda.version", "12.8.0"}, cc("10.0")}, id, Expect::pass),
      row("12.0 needs 12.8", {{"cuda.version", "12.6.3"}, cc("12.0")}, id, Expect::fail),
      row("12.0 with 12.8.1", {{"cuda.version", "12.8.1"}, cc("12.0")}, id, Expect::pass),
      row("10.3 from 12.9; CUDA 12.8's 10.0 code runs there", {{"cuda.version", "12.8.1"}, cc("10.3")}, id,
          Expect::pass, "its 10.0 code runs there"),
      row("10.3 on CUDA 12.6: no 10.x target at all", {{"cuda.version", "12.6.3"}, cc("10.3")}, id, Expect::fail,
          "support starts with CUDA 12.9"),
      row("10.3 with 12.9", {{"cuda.version", "12.9.0"}, cc("10.3")}, id, Expect::pass),
      row("sm_101 is invalid in 13.x", {{"cuda.version", "13.0.2"}, cc("10.1")}, id, Expect::fail),
      row("sm_101 in 12.9", {{"cuda.version", "12.9.1"}, cc("10.1")}, id, Expect::pass),
      row("sm_110 from 13.0", {{"cuda.version", "12.9.1"}, cc("11.0")}, id, Expect::fail),
      row("sm_110 with 13.0", {{"cuda.version", "13.0.0"}, cc("11.0")}, id, Expect::pass),
      row("9.9 is no architecture", {cc("9.9")}, id, Expect::fail, "not a known"),
      row("V100 on CUDA 13", {{"cuda.version", "13.0.2"}, {"gpu.models", "V100"}}, id, Expect::fail),
      row("B200 on CUDA 12.6", {{"cuda.version", "12.6.3"}, {"gpu.models", "B200"}}, id, Expect::fail),
      row("B200 on CUDA 12.8", {{"cuda.version", "12.8.1"}, {"gpu.models", "B200"}}, id, Expect::pass),
      row("H100 on CUDA 11.8", {{"cuda.version", "11.8.0"}, {"gpu.models", "H100 PCIe"}}, id, Expect::pass),
      row("no GPU named: nothing to judge", {}, id, Expect::absent),
  });
}

TEST_CASE("compat: a consistent profile passes every rule", "[compat][rules]") {
  const Profile profile = make_profile({{"cudnn.version", "9"},
                                        {"driver.min", "550.54.15"},
                                        {"driver.branch", "550"},
                                        {"framework.name", "pytorch"},
                                        {"framework.version", "2.4.1"},
                                        {"framework.python", "3.11"},
                                        {"gpu.models", "H100"}});
  const std::vector<Finding> findings = gpuenv::compat::check_profile(profile, kb(), Purpose::dockerfile);
  INFO(describe(findings));
  CHECK(gpuenv::report::verdict_of(findings) == gpuenv::report::Verdict::ok);
  for (const char* id : {"cuda.release", "driver.cuda_minimum", "driver.branch", "cudnn.cuda_major", "pytorch.release",
                         "pytorch.variant", "pytorch.python", "pytorch.driver", "image.tag", "gpu.cuda_support"}) {
    INFO(id);
    CHECK(std::any_of(findings.begin(), findings.end(), [id](const Finding& f) { return f.id == id; }));
  }
  // pytorch.compute_capability: no architecture list is known for 2.4 cu124.
  CHECK(std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.id == "pytorch.compute_capability" && f.status == gpuenv::report::Status::skip;
  }));
}

// Minimum driver per GPU generation and module flavour (data/compat/cuda.toml [[arch]] driver_min, driver_modules):
// Blackwell needs R570 and the open kernel modules; Rubin (10.7) needs R615.
TEST_CASE("compat: gpu.driver holds the pinned driver to each targeted generation", "[compat][rules]") {
  const std::string id = "gpu.driver";
  const Field cuda{"cuda.version", "12.8.1"};
  const auto cc = [](const char* value) { return Field{"gpu.compute_capabilities", value}; };
  check_rows({
      row("Blackwell with R565", {cuda, cc("10.0"), {"driver.branch", "565"}}, id, Expect::fail, "570.26"),
      row("Blackwell with driver.min 560.35.03", {cuda, cc("12.0"), {"driver.min", "560.35.03"}}, id, Expect::fail,
          "570.26"),
      row("Blackwell with R570", {cuda, cc("10.0"), {"driver.branch", "570"}}, id, Expect::absent),
      row("Blackwell with proprietary modules", {cuda, cc("10.0"), {"driver.modules", "proprietary"}}, id, Expect::fail,
          "open kernel modules"),
      row("Blackwell with open modules", {cuda, cc("10.0"), {"driver.modules", "open"}}, id, Expect::absent),
      row("Hopper with proprietary modules", {cuda, cc("9.0"), {"driver.modules", "proprietary"}}, id, Expect::absent),
      row("Ampere with R535", {{"cuda.version", "12.2.2"}, cc("8.0"), {"driver.branch", "535"}}, id, Expect::absent),
      row("B200 by model with R565", {cuda, {"gpu.models", "B200"}, {"driver.branch", "565"}}, id, Expect::fail),
      row("no driver pinned: not judged", {cuda, cc("10.0")}, id, Expect::absent),
      row("Rubin with R610", {{"cuda.version", "13.4.1"}, cc("10.7"), {"driver.branch", "610"}}, id, Expect::fail,
          "615"),
      // 10.3 and 12.1's 575.51.03 is inferred (the driver of CUDA 12.9.0, the first toolkit that targets them), not
      // read in a driver's notes: below it warns, at or above it is silent (issue 25, "settle or mark it").
      row("B300 with R570: an inferred minimum warns",
          {{"cuda.version", "12.9.1"}, cc("10.3"), {"driver.branch", "570"}}, id, Expect::warn, "inferred"),
      row("GB10 with R575", {{"cuda.version", "12.9.1"}, cc("12.1"), {"driver.branch", "575"}}, id, Expect::absent),
  });
}
