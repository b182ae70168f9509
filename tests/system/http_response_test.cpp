// parse_http_response on malformed answers: a status code is three digits (RFC 9112 section 4, "status-code =
// 3DIGIT"), a chunk size hexadecimal digits with optional extensions after ";" (RFC 9112 section 7.1, "chunk-size =
// 1*HEXDIG", "chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )"). Anything else is an input
// Error, never a throw or a wrapped size.

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "system/http.hpp"

using gpuenv::system::parse_http_response;

TEST_CASE("parse_http_response: the status line's code is three digits", "[system]") {
  struct Row {
    const char* status_line;
    std::optional<int> status;
  };
  const Row rows[] = {
      {"HTTP/1.1 200 OK", 200},
      {"HTTP/1.0 404 Not Found", 404},
      {"HTTP/1.1 503 ", 503},
      {"HTTP/1.1 204", 204},  // the reason phrase is optional
      {"HTTP/1.1 abc OK", std::nullopt},
      {"HTTP/1.1 20 OK", std::nullopt},  // std::stoi read 20
      {"HTTP/1.1 2000 OK", std::nullopt},
      {"HTTP/1.1 -12 OK", std::nullopt},
      {"HTTP/1.1 2x0 OK", std::nullopt},  // std::stoi read 2
      {"HTTP/1.1  200 OK", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.status_line);
    const auto response = parse_http_response(std::string(row.status_line) + "\r\nA: b\r\n\r\nbody");
    REQUIRE(static_cast<bool>(response) == row.status.has_value());
    if (row.status) {
      CHECK(response->status == *row.status);
      CHECK(response->body == "body");
    } else {
      CHECK(response.error().message == "the answer has no status code");
    }
  }
}

TEST_CASE("parse_http_response: chunk sizes are hexadecimal digits, extensions allowed, anything else malformed",
          "[system]") {
  struct Row {
    const char* what;
    const char* body;
    std::optional<std::string> decoded;  // nullopt: "the answer's chunked body is malformed"
  };
  const Row rows[] = {
      {"two chunks", "4\r\ng2-s\r\n3\r\ntd9\r\n0\r\n\r\n", "g2-std9"},
      {"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
      {"a chunk extension", "4;name=value\r\nabcd\r\n0\r\n\r\n", "abcd"},
      {"white space before an extension", "4 ;x\r\nabcd\r\n0\r\n\r\n", "abcd"},
      {"a size past the body: what arrived so far", "40\r\nabcd\r\n", ""},
      {"no size", "\r\nabcd\r\n0\r\n\r\n", std::nullopt},
      {"not hex", "zz\r\nabcd\r\n0\r\n\r\n", std::nullopt},
      {"a 0x prefix", "0x4\r\nabcd\r\n0\r\n\r\n", std::nullopt},  // std::stoul(…, 16) read 4
      {"a sign", "-1\r\nabcd\r\n0\r\n\r\n", std::nullopt},        // std::stoul wrapped it to 2^64-1
      {"past 64 bits", "10000000000000000\r\nabcd\r\n", std::nullopt},
      {"text after the size", "4 abcd\r\nabcd\r\n0\r\n\r\n", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const auto response =
        parse_http_response(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + row.body);
    REQUIRE(static_cast<bool>(response) == row.decoded.has_value());
    if (row.decoded)
      CHECK(response->body == *row.decoded);
    else
      CHECK(response.error().message == "the answer's chunked body is malformed");
  }
}
