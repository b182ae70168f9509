#pragma once
// The instance type from a cloud's link-local metadata service, for clouds whose DMI does not carry it
// (doctor --cloud-metadata; opt-in, one short request, or AWS's two-step IMDSv2 token flow).

#include <chrono>
#include <optional>
#include <string>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::probe {

/// Where to send the requests instead of the cloud's own address (tests: a loopback server).
struct MetadataEndpoint {
  std::string host;  ///< numeric IPv4
  unsigned port = 80;
};

/// "IPV4:PORT" as `flag` gives it (a loopback server in tests); a usage Error naming the flag otherwise.
util::Expected<MetadataEndpoint> parse_metadata_endpoint(const std::string& text, const std::string& flag);

/// The default metadata address of `cloud` ("aws", "gcp", "azure", "alibaba", "tencent", "oracle"); nullopt for
/// clouds without a documented link-local service gpuenv knows.
std::optional<MetadataEndpoint> default_metadata_endpoint(const std::string& cloud);

/// The instance type from a metadata answer's body: GCP's "projects/N/machineTypes/a2-highgpu-1g" -> its last
/// segment; Oracle's JSON {"shape": "..."} -> the shape; others trimmed as is. Empty when the body has none.
std::string instance_type_from_metadata(const std::string& cloud, const std::string& body);

/// Asks `cloud`'s metadata service for the instance type within `timeout` overall; an Error saying why not.
util::Expected<std::string> query_instance_type(system::System& system, const std::string& cloud,
                                                const MetadataEndpoint& endpoint, std::chrono::milliseconds timeout);

}  // namespace gpuenv::probe
