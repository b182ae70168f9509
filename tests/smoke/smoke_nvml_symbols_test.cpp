// smoke's NVML monitor on probe's NVML table: it opens only a library with nvmlInit_v2, nvmlShutdown and
// nvmlDeviceGetHandleByPciBusId_v2, the three entry points it has always required (the rest are optional).

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "smoke/internal/nvml_monitor.hpp"
#include "support/fake_system.hpp"

TEST_CASE("smoke: the NVML monitor requires nvmlInit_v2, nvmlShutdown and the handle by PCI bus id",
          "[smoke][nvml][symbols]") {
  struct Row {
    const char* what;
    std::vector<std::string> exports;
    bool opens;
  };
  const std::vector<Row> rows = {
      {"all three", {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByPciBusId_v2"}, true},
      {"the unversioned init only", {"nvmlInit", "nvmlShutdown", "nvmlDeviceGetHandleByPciBusId_v2"}, false},
      {"no shutdown", {"nvmlInit_v2", "nvmlDeviceGetHandleByPciBusId_v2"}, false},
      {"no handle by bus id", {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByIndex_v2"}, false},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    gpuenv::testing::FakeSystem fake;
    fake.memory_libraries["libnvidia-ml.so.1"] = row.exports;
    const auto monitor = gpuenv::smoke::NvmlMonitor::open(fake, "libnvidia-ml.so.1");
    CHECK((monitor != nullptr) == row.opens);
  }
}
