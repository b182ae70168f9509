// The tensor GEMM as the embedded kernel images carry it (issue 11 defect 7): on sm_80+ the 16-bit WMMA kernels load
// their tiles with cp.async (SASS LDGSTS) and spill nothing to local memory (no STL, LOCAL:0) within
// __launch_bounds__(256, 2)'s 128 registers; sm_70/sm_75 keep the single-stage path (no LDGSTS there). Read with
// cuobjdump from a toolkit at least as new as the image's (an 11.8 cuobjdump cannot read a CUDA 13 fatbin); an image
// no such cuobjdump can read is not checked, and with none at all the test is skipped.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "smoke/smoke.hpp"
#include "support/skip.hpp"
#include "system/system.hpp"

using gpuenv::smoke::embedded_kernels_info;
using gpuenv::smoke::KernelImage;

namespace {

/// What cuobjdump says about one function in one architecture's SASS.
struct KernelCode {
  int ldgsts = 0;      ///< cp.async instructions
  int stl = 0;         ///< stores to local memory (spills)
  int registers = -1;  ///< -res-usage REG
  int local = -1;      ///< -res-usage LOCAL (bytes of local memory)
};
using CodeMap = std::map<std::pair<std::string, std::string>, KernelCode>;  // (sm_80, function) -> code

/// Walks cuobjdump output: a line matching `arch_line` starts an architecture, one matching `function_line` a
/// function; every later line matching `body` is handed to `add` with the code entry of that (arch, function).
template <typename Add>
void scan_functions(CodeMap& out, const std::string& text, const std::regex& arch_line, const std::regex& function_line,
                    const std::regex& body, Add add) {
  std::istringstream in(text);
  std::string line, arch, function;
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, arch_line)) {
      arch = match[1];
    } else if (std::regex_search(line, match, function_line)) {
      function = match[1];
    } else if (!function.empty() && std::regex_search(line, match, body)) {
      add(out[{arch, function}], match);
    }
  }
}

/// Adds `cuobjdump -sass` counts: "arch = sm_80" / "code for sm_80" start an architecture, "Function : name" a
/// function.
void add_sass(CodeMap& out, const std::string& text) {
  static const std::regex arch_line(R"((?:arch = |code for )(sm_[0-9]+[a-z]?))");
  static const std::regex function_line(R"(Function : (\S+))");
  static const std::regex opcode(R"(\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)[.\s])");
  scan_functions(out, text, arch_line, function_line, opcode, [](KernelCode& code, const std::smatch& match) {
    if (match[1] == "LDGSTS") ++code.ldgsts;
    if (match[1] == "STL") ++code.stl;
  });
}

/// Adds `cuobjdump -res-usage`: "arch = sm_80", then " Function name:" and its "REG:123 STACK:0 SHARED:… LOCAL:0" line.
void add_resource_usage(CodeMap& out, const std::string& text) {
  static const std::regex arch_line(R"(arch = (sm_[0-9]+[a-z]?))");
  static const std::regex function_line(R"(^\s*Function (\S+):)");
  static const std::regex usage(R"(REG:([0-9]+).*\bLOCAL:([0-9]+))");
  scan_functions(out, text, arch_line, function_line, usage, [](KernelCode& code, const std::smatch& match) {
    code.registers = std::stoi(match[1]);
    code.local = std::stoi(match[2]);
  });
}

/// "release 13.0" of `--version` as {13, 0}; nullopt when the program is missing or says no release.
std::optional<std::pair<int, int>> release_of(gpuenv::system::System& system, const std::string& program) {
  if (!std::filesystem::exists(program)) return std::nullopt;
  const auto result = system.run({program, "--version"}, std::chrono::seconds(30));
  static const std::regex release(R"(release ([0-9]+)\.([0-9]+))");
  std::smatch match;
  if (result.exit_code != 0 || !std::regex_search(result.out, match, release)) return std::nullopt;
  return std::make_pair(std::stoi(match[1]), std::stoi(match[2]));
}

/// The image's toolkit release, "11.8" -> {11, 8}.
std::pair<int, int> toolkit_release(const KernelImage& image) {
  const auto dot = image.cuda_version.find('.');
  return {std::stoi(image.cuda_version.substr(0, dot)),
          dot == std::string::npos ? 0 : std::stoi(image.cuda_version.substr(dot + 1))};
}

/// cuobjdumps this machine may have: CUDA 13's, scripts/bootstrap's 11.8, Debian's nvidia-cuda-toolkit.
const std::vector<std::string> k_cuobjdumps = {
    "/usr/local/cuda/bin/cuobjdump", "/opt/gpuenv/nvidia-cuda-toolkit-11.8/usr/bin/cuobjdump", "/usr/bin/cuobjdump"};

int arch_number(const std::string& sm) { return std::stoi(sm.substr(3)); }

}  // namespace

TEST_CASE("smoke: cuobjdump output parsing counts LDGSTS and STL per arch and function", "[smoke][kernels]") {
  // Captured from cuobjdump 11.8 -sass / -res-usage of the legacy image (shortened).
  const std::string sass =
      "\n\tcode for sm_80\n\t\tFunction : smoke_hgemm_wmma\n"
      "        /*0310*/                   LDGSTS.E.BYPASS.128 [R3], [R4.64] ;  /* 0x0000000004037fae */\n"
      "        /*0320*/              @!P0 LDGSTS.E.BYPASS.128 [R5], [R2.64] ;  /* 0x0000000002057fae */\n"
      "        /*0330*/                   STL.64 [R1], R4 ;  /* 0x0000000401007387 */\n"
      "\t\tFunction : smoke_sgemm\n"
      "        /*0010*/                   LDG.E R4, [R2.64] ;  /* 0x0000000402047981 */\n"
      "\n\tcode for sm_75\n\t\tFunction : smoke_hgemm_wmma\n"
      "        /*0010*/                   LDG.E.128 R4, [R2.64] ;  /* 0x0000000402047981 */\n";
  const std::string usage =
      "\nFatbin elf code:\n================\narch = sm_80\ncode version = [1,7]\n\nResource usage:\n"
      " Common:\n  GLOBAL:0\n Function smoke_hgemm_wmma:\n"
      "  REG:123 STACK:0 SHARED:37888 LOCAL:0 CONSTANT[0]:388 TEXTURE:0 SURFACE:0 SAMPLER:0\n";
  CodeMap code;
  add_sass(code, sass);
  add_resource_usage(code, usage);
  const KernelCode& hgemm80 = code[{"sm_80", "smoke_hgemm_wmma"}];
  CHECK(hgemm80.ldgsts == 2);
  CHECK(hgemm80.stl == 1);
  CHECK(hgemm80.registers == 123);
  CHECK(hgemm80.local == 0);
  CHECK(code[{"sm_80", "smoke_sgemm"}].ldgsts == 0);
  CHECK(code[{"sm_75", "smoke_hgemm_wmma"}].ldgsts == 0);
}

TEST_CASE("smoke: the tensor GEMM's SASS uses cp.async on sm_80+ and spills nothing (cuobjdump)",
          "[smoke][kernels][system-test][engine]") {
  const auto kernels = embedded_kernels_info();
  GPUENV_SKIP_UNLESS(kernels.embedded, "this build carries no kernel image (no nvcc)");
  auto system = gpuenv::system::make_real_system();
  int checked = 0;
  std::vector<std::string> unchecked;
  for (const KernelImage& image : kernels.images) {
    std::string tool;
    for (const std::string& candidate : k_cuobjdumps) {
      const auto release = release_of(*system, candidate);
      if (release && *release >= toolkit_release(image)) {
        tool = candidate;
        break;
      }
    }
    if (tool.empty()) {
      unchecked.push_back(image.file + " (no cuobjdump of CUDA " + image.cuda_version + " or newer)");
      continue;
    }
    // Per process: other test runs on this machine write their images at the same moment.
    const auto path =
        std::filesystem::temp_directory_path() / ("gpuenv-sass-test-" + std::to_string(::getpid()) + "-" + image.file);
    std::ofstream(path, std::ios::binary)
        .write(image.contents.data(), static_cast<std::streamsize>(image.contents.size()));
    // System::run closes stdin; cuobjdump -sass then hands nvdisasm a temporary file on descriptor 0 that nvdisasm
    // cannot open ("Could not open input file"), so stdin is /dev/null here.
    auto run = [&](const char* what) {
      return system->run({"/bin/sh", "-c", "exec \"$0\" \"$1\" \"$2\" </dev/null", tool, what, path.string()},
                         std::chrono::seconds(600));  // ~17 s of CPU; minutes on a loaded 2-core builder
    };
    const auto sass = run("-sass");
    const auto usage = run("-res-usage");
    std::filesystem::remove(path);
    INFO(image.file << " read by " << tool);
    INFO(sass.err << usage.err);
    REQUIRE(sass.exit_code == 0);
    REQUIRE(usage.exit_code == 0);
    CodeMap code;
    add_sass(code, sass.out);
    add_resource_usage(code, usage.out);
    for (const std::string& arch : image.sass_archs) {
      for (const char* function : {"smoke_hgemm_wmma", "smoke_bf16gemm_wmma"}) {
        // BF16 WMMA needs sm_80: below it the kernel is a trap.
        if (arch_number(arch) < 80 && std::string(function) == "smoke_bf16gemm_wmma") continue;
        INFO(arch << " " << function);
        REQUIRE(code.count({arch, function}) == 1);
        const KernelCode& kernel = code.at({arch, function});
        if (arch_number(arch) >= 80) {
          CHECK(kernel.ldgsts > 0);  // the cp.async double buffer
        } else {
          CHECK(kernel.ldgsts == 0);  // sm_70/sm_75 have no cp.async: the single-stage path
        }
        CHECK(kernel.stl == 0);
        CHECK(kernel.local == 0);
        CHECK(kernel.registers > 0);
        CHECK(kernel.registers <= 128);  // __launch_bounds__(256, 2)
      }
    }
    ++checked;
  }
  for (const std::string& reason : unchecked) WARN("not checked: " << reason);
  if (checked == 0) WARN("SKIPPED: no cuobjdump can read the embedded kernel images");
}
