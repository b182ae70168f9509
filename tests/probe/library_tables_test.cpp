// The one NVML table and the one libcuda table (probe/nvml_api.hpp, probe/cuda_api.hpp) bound from in-memory
// libraries: which entry points are required, which versioned name wins, and what the driver check needs.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "probe/cuda_api.hpp"
#include "probe/nvml_api.hpp"
#include "support/fake_library.hpp"

namespace {

using gpuenv::testing::FakeLibrary;

bool tables_contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Every name the libcuda table looks up, in order (what an empty library is asked for).
std::vector<std::string> every_cuda_name() {
  FakeLibrary empty(std::vector<std::string>{});
  std::vector<std::string> missing;
  gpuenv::probe::cuda::bind_all(empty, missing);
  return empty.asked;
}

}  // namespace

TEST_CASE("probe: the libcuda table requires every entry point smoke calls and names the ones a library lacks",
          "[probe][cuda][symbols]") {
  namespace cuda = gpuenv::probe::cuda;
  const std::vector<std::string> names = every_cuda_name();
  REQUIRE(names.size() == 45);  // one name each: none of them is versioned

  // The optional ones are never reported missing.
  FakeLibrary empty(std::vector<std::string>{});
  std::vector<std::string> missing;
  cuda::bind_all(empty, missing);
  CHECK(missing.size() == names.size() - 5);
  for (const char* optional :
       {"cuGetErrorName", "cuGetErrorString", "cuMemHostAlloc", "cuMemHostGetDevicePointer_v2", "cuStreamQuery"}) {
    INFO(optional);
    CHECK(tables_contains(names, optional));
    CHECK_FALSE(tables_contains(missing, optional));
  }

  std::vector<std::string> most = names;
  most.erase(std::remove_if(most.begin(), most.end(),
                            [](const std::string& name) { return name == "cuInit" || name == "cuMemAlloc_v2"; }),
             most.end());
  FakeLibrary lacking(most);
  const auto refused = cuda::resolve(lacking);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "the CUDA driver library does not export cuInit, cuMemAlloc_v2");

  FakeLibrary complete(names);
  const auto resolved = cuda::resolve(complete);
  REQUIRE(resolved);
  CHECK(resolved->init != nullptr);
  CHECK(resolved->memcpy_peer_async != nullptr);
  CHECK(resolved->stream_query != nullptr);
}

TEST_CASE("probe: the driver check's two entry points bind from a libcuda that exports nothing else",
          "[probe][cuda][symbols]") {
  FakeLibrary minimal(std::vector<std::string>{"cuInit", "cuDriverGetVersion"});
  std::vector<std::string> missing;
  const gpuenv::probe::cuda::Api api = gpuenv::probe::cuda::bind_all(minimal, missing);
  CHECK(api.init != nullptr);
  CHECK(api.driver_get_version != nullptr);
  CHECK(api.get_error_name == nullptr);
  CHECK_FALSE(missing.empty());  // smoke could not run on it
  CHECK_FALSE(tables_contains(missing, "cuInit"));
  CHECK_FALSE(tables_contains(missing, "cuDriverGetVersion"));
}

TEST_CASE("probe: the NVML table binds each versioned entry point by its newest exported name",
          "[probe][nvml][symbols]") {
  struct Row {
    const char* what;
    std::vector<std::string> exports;
    const char* init_name;  ///< nullptr: init unbound
    bool processes_v2;
    bool asked_processes_v2_name;  ///< whether _v2 was looked up (only when _v3 is absent)
  };
  const std::vector<Row> rows = {
      {"current driver",
       {"nvmlInit_v2", "nvmlInit", "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2"},
       "nvmlInit_v2",
       true,
       false},
      {"older driver", {"nvmlInit", "nvmlDeviceGetComputeRunningProcesses_v2"}, "nvmlInit", true, true},
      {"no init, unversioned processes only", {"nvmlDeviceGetComputeRunningProcesses"}, nullptr, false, true},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    FakeLibrary library(row.exports);
    const gpuenv::probe::nvml::Api api = gpuenv::probe::nvml::resolve(library);
    CHECK(std::string(api.init_name != nullptr ? api.init_name : "(none)") ==
          (row.init_name != nullptr ? row.init_name : "(none)"));
    CHECK((api.init != nullptr) == (row.init_name != nullptr));
    CHECK((api.running_processes_v2 != nullptr) == row.processes_v2);
    CHECK(tables_contains(library.asked, "nvmlDeviceGetComputeRunningProcesses_v2") == row.asked_processes_v2_name);
  }
}
