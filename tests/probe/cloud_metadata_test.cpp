// --cloud-metadata: each cloud's request shape on the System seam (FakeSystem), the collector's use of it, and the
// real socket client against a loopback server this test starts on 127.0.0.1 (never any other address).

#include "probe/cloud_metadata.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probe/collect.hpp"
#include "support/fake_system.hpp"
#include "system/http.hpp"

using gpuenv::probe::MetadataEndpoint;
using gpuenv::probe::query_instance_type;
using gpuenv::system::HttpResponse;
using gpuenv::testing::FakeSystem;

namespace {

std::string header(const gpuenv::system::HttpRequest& request, const std::string& name) {
  for (const auto& [key, value] : request.headers) {
    if (key == name) return value;
  }
  return {};
}

/// A one-thread HTTP server on 127.0.0.1 (ephemeral port): answers each connection with the next canned reply
/// (or holds it open without answering when the reply is empty) and keeps what each request sent.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::vector<std::string> replies) : m_replies(std::move(replies)) {
    m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(m_fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(m_fd, 4) == 0);
    socklen_t length = sizeof address;
    ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&address), &length);
    m_port = ntohs(address.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    ::shutdown(m_fd, SHUT_RDWR);
    ::close(m_fd);
    m_thread.join();
  }
  unsigned port() const { return m_port; }
  std::vector<std::string> requests;  ///< read after the client is done

 private:
  void serve() {
    for (const std::string& reply : m_replies) {
      const int client = ::accept(m_fd, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[2048];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      requests.push_back(request);
      if (reply.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));  // longer than the client waits
      } else {
        ::send(client, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      ::close(client);
    }
  }

  std::vector<std::string> m_replies;
  int m_fd = -1;
  unsigned m_port = 0;
  std::thread m_thread;
};

std::string reply(const std::string& body, int status = 200) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("instance_type_from_metadata: each cloud's answer shape", "[probe]") {
  using gpuenv::probe::instance_type_from_metadata;
  CHECK(instance_type_from_metadata("gcp", "projects/123456/machineTypes/a2-highgpu-1g") == "a2-highgpu-1g");
  CHECK(instance_type_from_metadata("aws", "p4d.24xlarge\n") == "p4d.24xlarge");
  CHECK(instance_type_from_metadata("azure", "Standard_ND96isr_H100_v5") == "Standard_ND96isr_H100_v5");
  CHECK(instance_type_from_metadata("oracle", R"({"id": "x", "shape": "BM.GPU.H100.8", "region": "r"})") ==
        "BM.GPU.H100.8");
  CHECK(instance_type_from_metadata("oracle", "{}").empty());
  CHECK(instance_type_from_metadata("aws", "<html>\n<body>captive portal</body>").empty());
  CHECK(gpuenv::probe::default_metadata_endpoint("alibaba")->host == "100.100.100.200");
  CHECK_FALSE(gpuenv::probe::default_metadata_endpoint("openstack"));
}

TEST_CASE("query_instance_type: AWS IMDSv2 token flow, GCP and Azure headers, on the System seam", "[probe]") {
  const MetadataEndpoint endpoint{"169.254.169.254", 80};
  const std::chrono::milliseconds timeout{1000};
  {
    FakeSystem system;
    system.http_answers["PUT /latest/api/token"] = HttpResponse{200, "TOKEN123"};
    system.http_answers["GET /latest/meta-data/instance-type"] = HttpResponse{200, "p5.48xlarge"};
    auto type = query_instance_type(system, "aws", endpoint, timeout);
    REQUIRE(type);
    CHECK(*type == "p5.48xlarge");
    REQUIRE(system.http_requests.size() == 2);
    CHECK(header(system.http_requests[0], "X-aws-ec2-metadata-token-ttl-seconds") == "60");
    CHECK(header(system.http_requests[1], "X-aws-ec2-metadata-token") == "TOKEN123");
  }
  {
    FakeSystem system;
    system.http_answers["GET /computeMetadata/v1/instance/machine-type"] =
        HttpResponse{200, "projects/1/machineTypes/a3-highgpu-8g"};
    auto type = query_instance_type(system, "gcp", endpoint, timeout);
    REQUIRE(type);
    CHECK(*type == "a3-highgpu-8g");
    CHECK(header(system.http_requests.at(0), "Metadata-Flavor") == "Google");
  }
  {
    FakeSystem system;
    system.http_answers["GET /metadata/instance/compute/vmSize?api-version=2021-02-01&format=text"] =
        HttpResponse{200, "Standard_NC24ads_A100_v4"};
    auto type = query_instance_type(system, "azure", endpoint, timeout);
    REQUIRE(type);
    CHECK(*type == "Standard_NC24ads_A100_v4");
    CHECK(header(system.http_requests.at(0), "Metadata") == "true");
  }
  {
    FakeSystem system;  // the token request is refused (IMDSv2 disabled by a hop limit, say)
    system.http_answers["PUT /latest/api/token"] = HttpResponse{403, ""};
    auto type = query_instance_type(system, "aws", endpoint, timeout);
    REQUIRE_FALSE(type);
    CHECK(type.error().message.find("HTTP 403") != std::string::npos);
    CHECK(system.http_requests.size() == 1);
  }
}

TEST_CASE("collect_host_facts: --cloud-metadata fills the instance type DMI lacks, live only", "[probe]") {
  FakeSystem system;
  system.add_tree(gpuenv::testing::fixture_path("clouds/gcp"));
  system.http_answers["GET /computeMetadata/v1/instance/machine-type"] =
      HttpResponse{200, "projects/1/machineTypes/a2-ultragpu-8g"};
  gpuenv::probe::CollectOptions options;
  options.timeout = std::chrono::milliseconds(200);
  options.cloud_metadata = true;
  auto facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(facts.host.cloud == "gcp");
  CHECK(facts.host.instance_type == "a2-ultragpu-8g");
  CHECK(facts.host.cloud_source.find("instance type from the metadata service") != std::string::npos);
  REQUIRE(system.http_requests.size() == 1);
  CHECK(system.http_requests[0].host == "169.254.169.254");

  options.live = false;  // under --root nothing is asked
  system.http_requests.clear();
  facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(facts.host.instance_type.empty());
  CHECK(system.http_requests.empty());

  options.live = true;  // opt-in: without the option nothing is asked either
  options.cloud_metadata = false;
  facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(system.http_requests.empty());

  FakeSystem silent;  // no answer: the reason is kept, no instance type
  silent.add_tree(gpuenv::testing::fixture_path("clouds/azure"));
  options.cloud_metadata = true;
  facts = gpuenv::probe::collect_host_facts(silent, options);
  CHECK(facts.host.cloud == "azure");
  CHECK(facts.host.instance_type.empty());
  CHECK(facts.host.cloud_source.find("the metadata service did not answer") != std::string::npos);
}

TEST_CASE("send_http_request: the real socket client against a loopback server", "[probe]") {
  auto real = gpuenv::system::make_real_system();
  {
    LoopbackServer server({reply("AQAEXAMPLETOKEN"), reply("g6e.48xlarge")});
    const MetadataEndpoint endpoint{"127.0.0.1", server.port()};
    auto type = query_instance_type(*real, "aws", endpoint, std::chrono::milliseconds(1000));
    REQUIRE(type);
    CHECK(*type == "g6e.48xlarge");
    REQUIRE(server.requests.size() == 2);
    CHECK(server.requests[0].rfind("PUT /latest/api/token HTTP/1.1\r\n", 0) == 0);
    CHECK(server.requests[0].find("X-aws-ec2-metadata-token-ttl-seconds: 60\r\n") != std::string::npos);
    CHECK(server.requests[1].rfind("GET /latest/meta-data/instance-type HTTP/1.1\r\n", 0) == 0);
    CHECK(server.requests[1].find("X-aws-ec2-metadata-token: AQAEXAMPLETOKEN\r\n") != std::string::npos);
  }
  {
    LoopbackServer server(
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         "1c\r\nprojects/42/machineTypes/g2-\r\n9\r\nstandard-\r\n2\r\n96\r\n0\r\n\r\n"});
    auto type = query_instance_type(*real, "gcp", {"127.0.0.1", server.port()}, std::chrono::milliseconds(1000));
    REQUIRE(type);
    CHECK(*type == "g2-standard-96");
    CHECK(server.requests.at(0).find("Metadata-Flavor: Google\r\n") != std::string::npos);
  }
  {
    // Accepts, never answers: the client gives up at its timeout and says so (one without would never return).
    LoopbackServer server({""});
    auto type = query_instance_type(*real, "azure", {"127.0.0.1", server.port()}, std::chrono::milliseconds(300));
    REQUIRE_FALSE(type);
    CHECK(type.error().message.find("no complete answer within") != std::string::npos);
  }
  auto refused = real->http_request({"127.0.0.1", 1, "GET", "/", {}, ""}, std::chrono::milliseconds(300));
  CHECK_FALSE(refused);
  auto named = real->http_request({"metadata.google.internal", 80, "GET", "/", {}, ""}, std::chrono::milliseconds(300));
  REQUIRE_FALSE(named);
  CHECK(named.error().message.find("numeric IPv4") != std::string::npos);
}

TEST_CASE("parse_http_response: status, body, and what is not HTTP", "[probe]") {
  auto ok = gpuenv::system::parse_http_response("HTTP/1.0 404 Not Found\r\nA: b\r\n\r\nnope");
  REQUIRE(ok);
  CHECK(ok->status == 404);
  CHECK(ok->body == "nope");
  CHECK_FALSE(gpuenv::system::parse_http_response("SSH-2.0-OpenSSH\r\n"));
  CHECK(gpuenv::system::format_http_request({"10.0.0.1", 80, "PUT", "/t", {{"K", "v"}}, ""}) ==
        "PUT /t HTTP/1.1\r\nHost: 10.0.0.1\r\nK: v\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST_CASE("parse_metadata_endpoint: IPV4:PORT with a port in 1..65535, anything else bad usage", "[probe]") {
  struct Row {
    const char* text;
    std::optional<unsigned> port;
  };
  const Row rows[] = {
      {"127.0.0.1:8080", 8080},       {"169.254.169.254:80", 80},
      {"10.0.0.1:65535", 65535},      {"10.0.0.1:65536", std::nullopt},
      {"10.0.0.1:0", std::nullopt},   {"10.0.0.1:", std::nullopt},
      {":80", std::nullopt},          {"10.0.0.1", std::nullopt},
      {"10.0.0.1:8o", std::nullopt},  {"10.0.0.1:-80", std::nullopt},
      {"10.0.0.1: 80", std::nullopt}, {"10.0.0.1:123456", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    const auto endpoint = gpuenv::probe::parse_metadata_endpoint(row.text, "--cloud-metadata-endpoint");
    REQUIRE(static_cast<bool>(endpoint) == row.port.has_value());
    if (row.port) {
      CHECK(endpoint->port == *row.port);
      CHECK(endpoint->host == std::string(row.text).substr(0, std::string(row.text).rfind(':')));
    } else {
      CHECK(endpoint.error().message == std::string("--cloud-metadata-endpoint ") + row.text + ": expected IPV4:PORT");
    }
  }
}
