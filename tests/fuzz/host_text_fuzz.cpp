// Fuzz target: the small host texts doctor reads: /etc/os-release, /proc/meminfo, /proc/modules, the SecureBoot
// efivar bytes, the node Python's framework report and the cloud metadata services' answers.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"
#include "probe/cloud_metadata.hpp"
#include "probe/frameworks.hpp"
#include "probe/host_info.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuenv::fuzz::as_text(data, size);
  (void)gpuenv::probe::parse_os_release(text);
  (void)gpuenv::probe::parse_meminfo_total_kib(text);
  (void)gpuenv::probe::parse_proc_modules(text).nvidia();
  (void)gpuenv::probe::parse_secure_boot_efivar(text);
  (void)gpuenv::probe::parse_framework_report(text);
  const std::string body(text);
  for (const char* cloud : {"gcp", "oracle", "aws", "azure"})
    (void)gpuenv::probe::instance_type_from_metadata(cloud, body);
  return 0;
}
