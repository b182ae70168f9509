#pragma once
// A cloud metadata service on 127.0.0.1 for tests (an ephemeral port, never another address): answers each request
// by "METHOD path" as a test scripted it (404 otherwise), one connection per request as the services close them, and
// keeps what each request sent (request line, headers, body) for the test to check.

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuenv::testing {

class MetadataServer {
 public:
  struct Request {
    std::string line;  ///< "GET /path"
    std::map<std::string, std::string> headers;  ///< names in lower case
    std::string body;
    /// The header's value, or "".
    std::string header(const std::string& name) const;
  };

  MetadataServer();
  ~MetadataServer();
  MetadataServer(const MetadataServer&) = delete;
  MetadataServer& operator=(const MetadataServer&) = delete;

  /// Answers "METHOD path" with `status` and `body` from now on.
  void answer(const std::string& method_and_path, int status, const std::string& body);
  unsigned port() const { return m_port; }
  /// The requests so far, oldest first.
  std::vector<Request> requests() const;

 private:
  void serve();
  void handle(int client);

  int m_fd = -1;
  unsigned m_port = 0;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::map<std::string, std::pair<int, std::string>> m_answers;
  std::vector<Request> m_requests;
};

}  // namespace gpuenv::testing
