#include "watch/publisher.hpp"

namespace gpuenv::watch {

Publisher::Publisher(system::System& system, std::function<std::string(const Snapshot&)> render)
    : m_system(system), m_render(std::move(render)) {}

util::Expected<util::Ok> Publisher::configure(const WatchSettings& settings) {
  m_file = settings.prometheus_file;
  if (settings.listen == m_listen) return util::Ok{};
  m_server.reset();
  m_listen = settings.listen;
  if (m_listen.empty()) return util::Ok{};
  GPUENV_TRY_ASSIGN(auto address, parse_listen_address(m_listen));
  // Text format 0.0.4's content type (prometheus.io/docs/instrumenting/exposition_formats/).
  auto server = system::TextServer::start(address.first, address.second, "text/plain; version=0.0.4");
  if (!server) {
    m_listen.clear();
    return server.error();
  }
  m_server = std::move(*server);
  return util::Ok{};
}

void Publisher::publish(const Snapshot& snapshot, const LogSink& log) {
  if (m_file.empty() && !m_server) return;
  const std::string text = m_render(snapshot);
  if (m_server) m_server->set_text(text);
  if (m_file.empty()) return;
  auto written = m_system.write_file_atomic(m_file, text);
  if (!written && written.error().message != m_last_error) log(3, "exposition: " + written.error().message);
  m_last_error = written ? std::string() : written.error().message;
}

unsigned Publisher::port() const { return m_server ? m_server->port() : 0; }

}  // namespace gpuenv::watch
