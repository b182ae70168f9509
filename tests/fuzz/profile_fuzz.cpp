// Fuzz target: the profile loader as `gpuenv profile check FILE` runs it: TOML + schema (parse_profile), then the
// matrix expansion and each cell's label.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "profile/matrix.hpp"
#include "profile/parser.hpp"

namespace {

// Cells the product of the axes would make, saturated at `limit + 1`. The matrix-size limit itself belongs to the
// loader (docs/reliability.md); the target only keeps one input from expanding for minutes.
std::size_t product_cells(const gpuenv::profile::Matrix& matrix, std::size_t limit) {
  std::size_t cells = 1;
  for (const auto& axis : matrix.axes) {
    cells *= axis.second.empty() ? 1 : axis.second.size();
    if (cells > limit) return limit + 1;
  }
  return cells + matrix.include.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto document = gpuenv::profile::parse_profile(gpuenv::fuzz::as_text(data, size), "fuzz.toml");
  if (!document) return 0;
  constexpr std::size_t k_cell_limit = 4096;
  if (product_cells(document->matrix, k_cell_limit) > k_cell_limit) return 0;
  for (const auto& cell : gpuenv::profile::expand_matrix(*document)) {
    if (cell.label().empty() && !cell.assignments.empty()) __builtin_trap();  // a labelled cell lost its label
  }
  return 0;
}
