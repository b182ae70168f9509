#pragma once
// A minimal HTTP/1.1 client over a plain socket, for link-local metadata services (RealSystem::http_request).

#include <chrono>
#include <string>
#include <string_view>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::system {

/// The request's bytes: request line, Host, the headers, `Content-Length` (for PUT, POST or a body), `Connection:
/// close`, then the body.
std::string format_http_request(const HttpRequest& request);

/// Status and body of a whole HTTP/1.x answer (chunked bodies decoded); an input Error when it is not one.
util::Expected<HttpResponse> parse_http_response(std::string_view text);

/// Connects (non-blocking), sends and reads until the server closes, all within `timeout`.
util::Expected<HttpResponse> send_http_request(const HttpRequest& request, std::chrono::milliseconds timeout);

}  // namespace gpuenv::system
