#pragma once
// Where an interval's exposition goes (docs/watch.md "Exposition"): a textfile written atomically for node_exporter's
// textfile collector, or the page a loopback listener serves. The text itself is rendered by cli (only cli prints);
// the publisher is handed the renderer.

#include <functional>
#include <memory>
#include <string>

#include "system/http_server.hpp"
#include "system/system.hpp"
#include "watch/monitor.hpp"
#include "watch/settings.hpp"

namespace gpuenv::watch {

class Publisher {
 public:
  /// `render` turns a snapshot into the exposition's text.
  Publisher(system::System& system, std::function<std::string(const Snapshot&)> render);

  /// Takes the targets of `settings` (at start and on SIGHUP): the listener is restarted only when its address
  /// changed. An Error when the address cannot be listened on; the previous targets are then gone.
  util::Expected<util::Ok> configure(const WatchSettings& settings);
  /// Shows `snapshot` on every target; a textfile that cannot be written is logged once per distinct error.
  void publish(const Snapshot& snapshot, const LogSink& log);
  /// The port the listener serves on (0: none).
  unsigned port() const;

 private:
  system::System& m_system;
  std::function<std::string(const Snapshot&)> m_render;
  std::string m_file;
  std::string m_listen;
  std::unique_ptr<system::TextServer> m_server;
  std::string m_last_error;
};

}  // namespace gpuenv::watch
