#include "probe/cloud_metadata.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

using Clock = std::chrono::steady_clock;

// Paths and headers per cloud (sources: AWS "Use IMDSv2" user guide; GCP "About VM metadata" (Metadata-Flavor:
// Google, instance/machine-type); Azure "Azure Instance Metadata Service" (Metadata: true, compute/vmSize,
// format=text); Alibaba ECS "instance metadata" (100.100.100.200, instance/instance-type); Tencent CVM "instance
// metadata" (metadata.tencentyun.com, instance/instance-type); Oracle "Getting Instance Metadata" (opc/v2,
// Authorization: Bearer Oracle)).
system::HttpRequest request_for(const std::string& cloud, const MetadataEndpoint& endpoint) {
  system::HttpRequest request;
  request.host = endpoint.host;
  request.port = endpoint.port;
  if (cloud == "aws") {
    request.path = "/latest/meta-data/instance-type";
  } else if (cloud == "gcp") {
    request.path = "/computeMetadata/v1/instance/machine-type";
    request.headers.emplace_back("Metadata-Flavor", "Google");
  } else if (cloud == "azure") {
    request.path = "/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text";
    request.headers.emplace_back("Metadata", "true");
  } else if (cloud == "oracle") {
    request.path = "/opc/v2/instance/";
    request.headers.emplace_back("Authorization", "Bearer Oracle");
  } else {  // alibaba, tencent
    request.path = "/latest/meta-data/instance/instance-type";
  }
  return request;
}

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

util::Expected<MetadataEndpoint> parse_metadata_endpoint(const std::string& text, const std::string& flag) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    return util::Error::usage(flag + " " + text + ": expected IPV4:PORT", "e.g. " + flag + " 127.0.0.1:8080");
  };
  if (colon == std::string::npos || colon == 0) return bad();
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return bad();
  const std::optional<unsigned long long> number = util::parse_unsigned(port, 65535);
  if (!number || *number == 0) return bad();
  return MetadataEndpoint{text.substr(0, colon), static_cast<unsigned>(*number)};
}

std::optional<MetadataEndpoint> default_metadata_endpoint(const std::string& cloud) {
  if (cloud == "aws" || cloud == "gcp" || cloud == "azure" || cloud == "oracle")
    return MetadataEndpoint{"169.254.169.254", 80};
  if (cloud == "alibaba") return MetadataEndpoint{"100.100.100.200", 80};
  if (cloud == "tencent") return MetadataEndpoint{"169.254.0.23", 80};
  return std::nullopt;
}

std::string instance_type_from_metadata(const std::string& cloud, const std::string& body) {
  const std::string text(util::trim(body));
  if (cloud == "gcp") return text.substr(text.rfind('/') == std::string::npos ? 0 : text.rfind('/') + 1);
  if (cloud == "oracle") {
    const std::size_t key = text.find("\"shape\"");
    if (key == std::string::npos) return {};
    const std::size_t open = text.find('"', text.find(':', key) + 1);
    const std::size_t close = open == std::string::npos ? open : text.find('"', open + 1);
    return close == std::string::npos ? std::string() : text.substr(open + 1, close - open - 1);
  }
  return text.find('\n') == std::string::npos ? text : std::string();
}

util::Expected<std::string> query_instance_type(system::System& system, const std::string& cloud,
                                                const MetadataEndpoint& endpoint, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  system::HttpRequest request = request_for(cloud, endpoint);
  if (cloud == "aws") {
    // IMDSv2: a session token first (PUT), then the request with it; IMDSv1-only instances are not asked.
    system::HttpRequest token{
        endpoint.host, endpoint.port, "PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "60"}}, {}};
    GPUENV_TRY_ASSIGN(auto answer, system.http_request(token, left(deadline)));
    if (answer.status != 200)
      return util::Error::input("the IMDSv2 token request answered HTTP " + std::to_string(answer.status));
    request.headers.emplace_back("X-aws-ec2-metadata-token", std::string(util::trim(answer.body)));
  }
  GPUENV_TRY_ASSIGN(auto answer, system.http_request(request, left(deadline)));
  if (answer.status != 200) return util::Error::input(request.path + " answered HTTP " + std::to_string(answer.status));
  std::string type = instance_type_from_metadata(cloud, answer.body);
  if (type.empty()) return util::Error::input(request.path + " answered no instance type");
  return type;
}

}  // namespace gpuenv::probe
