// Fuzz target: the HTTP/1.x answers of link-local cloud metadata services (status line, headers, chunked bodies).
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "system/http.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gpuenv::system::parse_http_response(gpuenv::fuzz::as_text(data, size));
  return 0;
}
