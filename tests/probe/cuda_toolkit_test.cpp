#include "probe/cuda_toolkit.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "support/fake_system.hpp"

using gpuenv::probe::parse_cuda_version_json;
using gpuenv::probe::parse_cuda_version_txt;
using gpuenv::probe::parse_cudnn_header;
using gpuenv::probe::parse_nccl_header;
using gpuenv::testing::read_fixture;

TEST_CASE("CUDA version.json: toolkit and component versions", "[probe][cuda]") {
  struct Row {
    const char* file;
    const char* cuda;
    const char* nvcc;
    const char* cudart;
    const char* cublas;
    const char* cufft;
    const char* curand;
  };
  const Row rows[] = {
      // CRLF endings (Windows toolkit tree).
      {"version.json_cuda-12.6.3.json", "12.6.3", "12.6.85", "12.6.77", "12.6.4.1", "11.3.0.4", "10.3.7.77"},
      {"version.json_cuda-12.8.2.json", "12.8.2", "12.8.93", "12.8.90", "12.8.5.5", "11.3.3.83", "10.3.9.90"},
  };
  for (const Row& row : rows) {
    INFO(row.file);
    const auto parsed = parse_cuda_version_json(read_fixture(std::string("probe/cuda-version/") + row.file));
    INFO((parsed ? std::string() : parsed.error().message));
    REQUIRE(parsed.has_value());
    CHECK(parsed->version.str() == row.cuda);
    CHECK(parsed->component("cuda_nvcc")->str() == row.nvcc);
    CHECK(parsed->component("cuda_cudart")->str() == row.cudart);
    CHECK(parsed->component("libcublas")->str() == row.cublas);
    CHECK(parsed->component("libcufft")->str() == row.cufft);
    CHECK(parsed->component("libcurand")->str() == row.curand);
    CHECK(parsed->names.at("cuda_nvcc") == "CUDA NVCC");
    CHECK(parsed->names.at("cuda") == "CUDA SDK");
    CHECK_FALSE(parsed->component("cuda").has_value());
    CHECK_FALSE(parsed->component("libcudnn").has_value());
  }
}

TEST_CASE("CUDA version.json: every component of 12.8.2", "[probe][cuda]") {
  const auto parsed = parse_cuda_version_json(read_fixture("probe/cuda-version/version.json_cuda-12.8.2.json"));
  REQUIRE(parsed.has_value());
  CHECK(parsed->components.size() == 29);
  CHECK(parsed->component("nvidia_driver")->str() == "572.61");
  CHECK(parsed->names.at("nvidia_driver") == "NVIDIA Windows Driver");
  CHECK(parsed->component("nsight_compute")->str() == "2025.1.1.2");
  CHECK(parsed->component("cuda_profiler_api")->str() == "12.8.90");
}

TEST_CASE("CUDA version.json: malformed input is an Error", "[probe][cuda]") {
  const char* bad[] = {
      "",
      "[]",
      "{",
      "{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.6.3\"}",
      "{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": 12.6}}",
      "{\"cuda\": {\"version\": \"twelve\"}}",
      "{\"libcublas\": {\"version\": \"12.6.4.1\"}}",
      "{\"cuda\": {\"version\": \"12.6.3\"}} trailing",
      "{\"cuda\" {\"version\": \"12.6.3\"}}",
      "{\"cuda\": {\"version\": \"12.6.3\\q\"}}",
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK_FALSE(parse_cuda_version_json(text).has_value());
  }
  // Unknown shapes beside a valid "cuda" entry are tolerated.
  const auto odd = parse_cuda_version_json(
      "{\"cuda\": {\"version\": \"12.4.1\", \"extra\": [1, 2.5e3, true, null, {\"x\": \"y\"}]}, \"note\": \"text\", "
      "\"libnpp\": {\"version\": \"not-a-version\"}, \"libcusparse\": {\"version\": \"12.3.1.170\"}}");
  REQUIRE(odd.has_value());
  CHECK(odd->version.str() == "12.4.1");
  CHECK(odd->components.size() == 1);
  CHECK(odd->component("libcusparse")->str() == "12.3.1.170");
  const std::string whole = read_fixture("probe/cuda-version/version.json_cuda-12.6.3.json");
  for (std::size_t cut = 0; cut + 1 < whole.size(); cut += 7) {
    INFO("cut at byte " << cut);
    CHECK_FALSE(parse_cuda_version_json(whole.substr(0, cut)).has_value());
  }
}

TEST_CASE("CUDA version.txt (inline samples)", "[probe][cuda]") {
  // No fixture exists; the lines are the format named in the brief, with CRLF on one.
  CHECK(parse_cuda_version_txt("CUDA Version 10.2.89\n")->str() == "10.2.89");
  CHECK(parse_cuda_version_txt("CUDA Version 9.0.176\r\n")->str() == "9.0.176");
  CHECK_FALSE(parse_cuda_version_txt("").has_value());
  CHECK_FALSE(parse_cuda_version_txt("CUDA Version \n").has_value());
  CHECK_FALSE(parse_cuda_version_txt("CUDA Version ten\n").has_value());
}

TEST_CASE("cuDNN headers: version defines in cudnn.h (7) and cudnn_version.h (8, 9, CRLF)", "[probe][cuda]") {
  struct Row {
    const char* file;
    const char* version;
  };
  const Row rows[] = {
      {"cudnn.h_cudnn-7.2.1_excerpt.h", "7.2.1"},
      {"cudnn_version.h_cudnn-8.2.1_excerpt.h", "8.2.1"},
      {"cudnn_version.h_cudnn-9.6.0_excerpt.h", "9.6.0"},
  };
  for (const Row& row : rows) {
    INFO(row.file);
    const auto version = parse_cudnn_header(read_fixture(std::string("probe/cudnn-header/") + row.file));
    REQUIRE(version.has_value());
    CHECK(version->str() == row.version);
  }
  const auto missing = parse_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 6\n");
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("CUDNN_PATCHLEVEL"));
  CHECK_FALSE(parse_cudnn_header("#define CUDNN_MAJORX 9\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 0\n"));
  CHECK_FALSE(parse_cudnn_header("#define CUDNN_MAJOR nine\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 0\n"));
}

TEST_CASE("NCCL header: NCCL_MAJOR/MINOR/PATCH (inline sample: no nccl.h fixture exists)", "[probe][cuda]") {
  // Written for the test in nccl.h's define style; there is no captured nccl.h among the shared fixtures.
  const auto version = parse_nccl_header(
      "#ifndef NCCL_H_\r\n#define NCCL_H_\r\n\r\n"
      "#define NCCL_MAJOR 2\r\n#define NCCL_MINOR 21\r\n#define NCCL_PATCH 5\r\n#define NCCL_SUFFIX \"\"\r\n\r\n"
      "#define NCCL_VERSION_CODE 22105\r\n#  define NCCL_VERSION(X,Y,Z) ((X) * 10000 + (Y) * 100 + (Z))\r\n");
  REQUIRE(version.has_value());
  CHECK(version->str() == "2.21.5");
  CHECK(
      parse_nccl_header("#  define NCCL_MAJOR 2 /* major */\n#define NCCL_MINOR\t18\n#define NCCL_PATCH 1\n")->str() ==
      "2.18.1");
  CHECK_FALSE(parse_nccl_header("").has_value());
  CHECK_FALSE(parse_nccl_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n").has_value());
}
