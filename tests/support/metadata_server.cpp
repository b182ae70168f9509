#include "support/metadata_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace gpuenv::testing {

std::string MetadataServer::Request::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

MetadataServer::MetadataServer() {
  m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(m_fd, 16) != 0)
    throw std::runtime_error("the metadata server cannot listen on 127.0.0.1");
  socklen_t length = sizeof address;
  ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&address), &length);
  m_port = ntohs(address.sin_port);
  m_thread = std::thread([this] { serve(); });
}

MetadataServer::~MetadataServer() {
  ::shutdown(m_fd, SHUT_RDWR);
  ::close(m_fd);
  m_thread.join();
}

void MetadataServer::answer(const std::string& method_and_path, int status, const std::string& body) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_answers[method_and_path] = {status, body};
}

std::vector<MetadataServer::Request> MetadataServer::requests() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_requests;
}

void MetadataServer::serve() {
  for (;;) {
    const int client = ::accept(m_fd, nullptr, nullptr);
    if (client < 0) return;  // shut down
    handle(client);
    ::close(client);
  }
}

void MetadataServer::handle(int client) {
  std::string data;
  char buffer[4096];
  std::size_t header_end = std::string::npos;
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  Request request;
  const std::string head = data.substr(0, header_end);
  std::size_t line_end = head.find("\r\n");
  const std::string first = head.substr(0, line_end);
  request.line = first.substr(0, first.rfind(' '));  // "GET /path" without " HTTP/1.1"
  while (line_end != std::string::npos && line_end < head.size()) {
    const std::size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      request.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    line_end = next;
  }
  const std::size_t length = std::stoul(request.header("content-length").empty() ? "0" : request.header("content-length"));
  request.body = data.substr(header_end + 4);
  while (request.body.size() < length) {
    const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    request.body.append(buffer, static_cast<std::size_t>(n));
  }
  std::pair<int, std::string> answer{404, "Not Found"};
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    if (const auto it = m_answers.find(request.line); it != m_answers.end()) answer = it->second;
    m_requests.push_back(request);
  }
  const std::string reply = "HTTP/1.1 " + std::to_string(answer.first) +
                            " X\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(answer.second.size()) +
                            "\r\nConnection: close\r\n\r\n" + answer.second;
  ::send(client, reply.data(), reply.size(), MSG_NOSIGNAL);
}

}  // namespace gpuenv::testing
