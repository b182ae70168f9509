#pragma once
// A page of text served over HTTP/1.1 on a loopback address (`gpuenv watch --listen`: the metrics for a local
// Prometheus or node_exporter to scrape), with Boost.Beast on one thread of its own. GET and HEAD of any path answer
// the latest text; other methods get 405. No TLS, no authentication: it listens on loopback only.

#include <memory>
#include <string>

#include "util/expected.hpp"

namespace gpuenv::system {

class TextServer {
 public:
  /// Listens on `host` (a numeric loopback address) and `port` (0: any free port) and starts serving.
  static util::Expected<std::unique_ptr<TextServer>> start(const std::string& host, unsigned port,
                                                           std::string content_type);
  virtual ~TextServer() = default;
  /// Replaces the page (thread-safe).
  virtual void set_text(std::string text) = 0;
  /// The port it listens on.
  virtual unsigned port() const = 0;
};

}  // namespace gpuenv::system
