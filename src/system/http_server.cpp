#include "system/http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <thread>

namespace gpuenv::system {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// What the sessions share with the server: the page and its type.
struct Page {
  std::mutex mutex;
  std::string text;
  std::string content_type;
};

/// One connection: read a request (headers at most 8 KiB, no body), answer, close. A client that stalls is dropped
/// after 5 s.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Page> page) : m_stream(std::move(socket)), m_page(std::move(page)) {
    m_parser.header_limit(8 * 1024);
    m_parser.body_limit(0);
  }

  void run() {
    m_stream.expires_after(std::chrono::seconds(5));
    http::async_read(m_stream, m_buffer, m_parser,
                     [self = shared_from_this()](beast::error_code error, std::size_t) { self->answer(error); });
  }

 private:
  void answer(beast::error_code error) {
    if (error) return;  // closed, timed out or malformed: the socket closes with the session
    const auto& request = m_parser.get();
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request.version());
    response->keep_alive(false);
    response->set(http::field::server, "gpuenv");
    if (request.method() == http::verb::get || request.method() == http::verb::head) {
      const std::lock_guard<std::mutex> lock(m_page->mutex);
      response->result(http::status::ok);
      response->set(http::field::content_type, m_page->content_type);
      response->body() = request.method() == http::verb::get ? m_page->text : std::string();
    } else {
      response->result(http::status::method_not_allowed);
      response->set(http::field::allow, "GET, HEAD");
    }
    response->prepare_payload();
    http::async_write(m_stream, *response, [self = shared_from_this(), response](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->m_stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream m_stream;
  beast::flat_buffer m_buffer;
  http::request_parser<http::empty_body> m_parser;
  std::shared_ptr<Page> m_page;
};

class BeastServer final : public TextServer {
 public:
  BeastServer(std::shared_ptr<Page> page) : m_page(std::move(page)), m_acceptor(asio::make_strand(m_io)) {}

  ~BeastServer() override {
    m_io.stop();
    if (m_thread.joinable()) m_thread.join();
  }

  util::Expected<util::Ok> listen(const std::string& host, unsigned port) {
    beast::error_code error;
    const auto address = asio::ip::make_address(host, error);
    if (error) return util::Error::usage("cannot listen on " + host + ": " + error.message());
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    m_acceptor.open(endpoint.protocol(), error);
    if (!error) m_acceptor.set_option(asio::socket_base::reuse_address(true), error);
    if (!error) m_acceptor.bind(endpoint, error);
    if (!error) m_acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error) {
      return util::Error::input("cannot listen on " + host + ":" + std::to_string(port) + ": " + error.message(),
                                "pick a free port, or use --prometheus FILE");
    }
    m_port = m_acceptor.local_endpoint().port();
    accept();
    m_thread = std::thread([this] { m_io.run(); });
    return util::Ok{};
  }

  void set_text(std::string text) override {
    const std::lock_guard<std::mutex> lock(m_page->mutex);
    m_page->text = std::move(text);
  }

  unsigned port() const override { return m_port; }

 private:
  void accept() {
    m_acceptor.async_accept(asio::make_strand(m_io), [this](beast::error_code error, tcp::socket socket) {
      if (!error) std::make_shared<Session>(std::move(socket), m_page)->run();
      if (m_acceptor.is_open()) accept();
    });
  }

  std::shared_ptr<Page> m_page;
  asio::io_context m_io{1};
  tcp::acceptor m_acceptor;
  std::thread m_thread;
  unsigned m_port = 0;
};

}  // namespace

util::Expected<std::unique_ptr<TextServer>> TextServer::start(const std::string& host, unsigned port,
                                                              std::string content_type) {
  auto page = std::make_shared<Page>();
  page->content_type = std::move(content_type);
  auto server = std::make_unique<BeastServer>(page);
  GPUENV_TRY(server->listen(host, port));
  return std::unique_ptr<TextServer>(std::move(server));
}

}  // namespace gpuenv::system
