#include "system/http.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "util/strings.hpp"

namespace gpuenv::system {
namespace {

using Clock = std::chrono::steady_clock;

/// The status code at the start of `text` (RFC 9112 section 4: status-code = 3DIGIT, then SP or the line's end).
std::optional<int> status_code(std::string_view text) {
  const std::string_view code = text.substr(0, 3);
  if (code.size() != 3 || code.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  if (text.size() > 3 && text[3] != ' ' && text[3] != '\r') return std::nullopt;
  return static_cast<int>(*util::parse_unsigned(code));
}

/// The size on a chunk's first line (RFC 9112 section 7.1: chunk-size = 1*HEXDIG, then optional chunk extensions
/// after ";"); nullopt for anything else, a sign, a "0x" prefix or a size past 64 bits included.
std::optional<unsigned long long> chunk_size(std::string_view line) {
  const std::string_view size = line.substr(0, line.find(';'));
  if (size.empty() || !std::isxdigit(static_cast<unsigned char>(size.front()))) return std::nullopt;
  return util::parse_unsigned(size, ~0ULL, 16);  // the white space before a ";" (BWS) is trimmed
}

/// Closes the socket when the request is done, however it ends.
class Socket {
 public:
  explicit Socket(int fd) : m_fd(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (m_fd >= 0) ::close(m_fd);
  }
  int fd() const { return m_fd; }

 private:
  int m_fd;
};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

/// Waits until `fd` is ready for `events` or the deadline passes.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready == 0 || errno != EINTR) return false;
  }
}

util::Error failure(const HttpRequest& request, const std::string& what) {
  return util::Error::input(request.method + " http://" + request.host + ":" + std::to_string(request.port) +
                            request.path + ": " + what);
}

}  // namespace

std::string format_http_request(const HttpRequest& request) {
  std::string text = request.method + " " + request.path + " HTTP/1.1\r\nHost: " + request.host + "\r\n";
  for (const auto& [name, value] : request.headers) text += name + ": " + value + "\r\n";
  if (request.method == "PUT" || request.method == "POST" || !request.body.empty())
    text += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  text += "Connection: close\r\n\r\n";
  return text + request.body;
}

util::Expected<HttpResponse> parse_http_response(std::string_view text) {
  const std::size_t header_end = text.find("\r\n\r\n");
  if (!text.starts_with("HTTP/1.") || header_end == std::string_view::npos)
    return util::Error::input("the answer is not an HTTP/1.x response");
  const std::size_t space = text.find(' ');
  HttpResponse response;
  const std::optional<int> status = status_code(text.substr(space + 1));
  if (!status) return util::Error::input("the answer has no status code");
  response.status = *status;
  std::string_view body = text.substr(header_end + 4);
  // Chunked bodies (Transfer-Encoding: chunked) are decoded; metadata services answer short texts.
  std::string headers(text.substr(0, header_end));
  for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (headers.find("transfer-encoding: chunked") != std::string::npos) {
    std::string decoded;
    while (!body.empty()) {
      const std::size_t line_end = body.find("\r\n");
      if (line_end == std::string_view::npos) break;
      const std::optional<unsigned long long> size = chunk_size(body.substr(0, line_end));
      if (!size) return util::Error::input("the answer's chunked body is malformed");
      if (*size == 0 || *size > body.size() - line_end - 2) break;
      decoded += body.substr(line_end + 2, *size);
      body.remove_prefix(std::min<std::size_t>(body.size(), line_end + 2 + *size + 2));
    }
    response.body = std::move(decoded);
  } else {
    response.body = std::string(body);
  }
  return response;
}

util::Expected<HttpResponse> send_http_request(const HttpRequest& request, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(request.port));
  if (::inet_pton(AF_INET, request.host.c_str(), &address.sin_addr) != 1)
    return failure(request, "the host must be a numeric IPv4 address");
  Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.fd() < 0) return failure(request, std::string("socket: ") + std::strerror(errno));
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS) return failure(request, std::string("connect: ") + std::strerror(errno));
    if (!wait_for(socket.fd(), POLLOUT, deadline))
      return failure(request, "no connection within " + std::to_string(timeout.count()) + " ms");
    int error = 0;
    socklen_t length = sizeof error;
    ::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) return failure(request, std::string("connect: ") + std::strerror(error));
  }
  const std::string text = format_http_request(request);
  std::size_t sent = 0;
  while (sent < text.size()) {
    if (!wait_for(socket.fd(), POLLOUT, deadline)) return failure(request, "timed out sending");
    const ssize_t n = ::send(socket.fd(), text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return failure(request, std::string("send: ") + std::strerror(errno));
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  char buffer[4096];
  constexpr std::size_t k_max_answer = 1u << 20;
  for (;;) {
    if (!wait_for(socket.fd(), POLLIN, deadline))
      return failure(request, "no complete answer within " + std::to_string(timeout.count()) + " ms");
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (n == 0) break;  // Connection: close ends the answer
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return failure(request, std::string("recv: ") + std::strerror(errno));
    }
    answer.append(buffer, static_cast<std::size_t>(n));
    if (answer.size() > k_max_answer) return failure(request, "the answer is larger than 1 MiB");
  }
  auto response = parse_http_response(answer);
  if (!response) return failure(request, response.error().message);
  return response;
}

}  // namespace gpuenv::system
