// The built gpuenv must not link any NVIDIA library: libcuda, libcudart, libnvidia-ml, libcublas and libcudnn are
// dlopen'ed. Reads the ELF dynamic section's DT_NEEDED entries directly (no readelf needed).

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

template <typename T>
T read_at(const std::string& bytes, std::uint64_t offset) {
  T value{};
  REQUIRE(offset + sizeof(T) <= bytes.size());
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// DT_NEEDED names of a little-endian ELF64 file.
std::vector<std::string> needed_libraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 64);
  REQUIRE(bytes.compare(0, 4,
                        "\x7f"
                        "ELF") == 0);
  REQUIRE(bytes[4] == 2);  // ELFCLASS64
  const auto phoff = read_at<std::uint64_t>(bytes, 0x20);
  const auto phentsize = read_at<std::uint16_t>(bytes, 0x36);
  const auto phnum = read_at<std::uint16_t>(bytes, 0x38);
  struct Load {
    std::uint64_t vaddr, offset, size;
  };
  std::vector<Load> loads;
  std::uint64_t dynamic_offset = 0, dynamic_size = 0;
  for (std::uint16_t i = 0; i < phnum; ++i) {
    const std::uint64_t header = phoff + std::uint64_t{i} * phentsize;
    const auto type = read_at<std::uint32_t>(bytes, header);
    const auto offset = read_at<std::uint64_t>(bytes, header + 0x08);
    const auto vaddr = read_at<std::uint64_t>(bytes, header + 0x10);
    const auto filesz = read_at<std::uint64_t>(bytes, header + 0x20);
    if (type == 1) loads.push_back({vaddr, offset, filesz});  // PT_LOAD
    if (type == 2) {                                          // PT_DYNAMIC
      dynamic_offset = offset;
      dynamic_size = filesz;
    }
  }
  REQUIRE(dynamic_size > 0);
  std::uint64_t strtab = 0;
  std::vector<std::uint64_t> needed;
  for (std::uint64_t entry = dynamic_offset; entry + 16 <= dynamic_offset + dynamic_size; entry += 16) {
    const auto tag = read_at<std::int64_t>(bytes, entry);
    const auto value = read_at<std::uint64_t>(bytes, entry + 8);
    if (tag == 0) break;                    // DT_NULL
    if (tag == 1) needed.push_back(value);  // DT_NEEDED
    if (tag == 5) strtab = value;           // DT_STRTAB (a virtual address)
  }
  std::uint64_t strtab_offset = 0;
  for (const Load& load : loads) {
    if (strtab >= load.vaddr && strtab < load.vaddr + load.size) strtab_offset = strtab - load.vaddr + load.offset;
  }
  REQUIRE(strtab_offset != 0);
  std::vector<std::string> out;
  for (const std::uint64_t name : needed) out.emplace_back(bytes.c_str() + strtab_offset + name);
  return out;
}

}  // namespace

TEST_CASE("smoke: the gpuenv binary has no NEEDED entry for any NVIDIA library", "[smoke][elf][system-test]") {
  const std::vector<std::string> needed = needed_libraries(GPUENV_BINARY);
  REQUIRE_FALSE(needed.empty());  // libc at least: the parser works
  bool libc = false;
  for (const std::string& name : needed) {
    CAPTURE(name);
    libc = libc || name.rfind("libc.so", 0) == 0;
    for (const char* forbidden : {"libcuda", "libcudart", "libnvidia-ml", "libcublas", "libcudnn"}) {
      CHECK(name.rfind(forbidden, 0) != 0);
    }
  }
  CHECK(libc);
}
