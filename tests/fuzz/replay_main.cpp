// A plain main() for a fuzz target: runs LLVMFuzzerTestOneInput once on each file it is given (a directory: every
// file below it, README and *.md notes left out), so every build's CTest replays the seeds and the regression inputs
// (tests/fuzz/README.md) without libFuzzer. A crash, a sanitizer report or a __builtin_trap() in the target fails the
// test; so does a run that found no input at all (a seed path that moved).
//
//   <target>_replay PATH...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

/// Whether `path` is an input rather than a note about the inputs.
bool is_input(const fs::path& path) { return path.extension() != ".md" && path.filename() != "README"; }

/// The files `argument` names: itself, or every regular file below it, in a stable order.
std::vector<fs::path> inputs_of(const fs::path& argument) {
  if (!fs::is_directory(argument)) return {argument};
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(argument)) {
    if (entry.is_regular_file() && is_input(entry.path())) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Runs the target on the bytes of `file`; false when the file cannot be read.
bool replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // libFuzzer hands the target its own copy: a heap block of exactly the input's size, so ASan sees a read past it.
  std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
  (void)LLVMFuzzerTestOneInput(copy.data(), copy.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    for (const fs::path& file : inputs_of(argv[i])) {
      if (!replay(file)) {
        std::cerr << file.string() << ": cannot read\n";
        return 1;
      }
      ++replayed;
    }
  }
  std::cout << argv[0] << ": " << replayed << " inputs replayed\n";
  if (replayed == 0) {
    std::cerr << "no input found: the seed paths in tests/fuzz/targets.txt name nothing\n";
    return 1;
  }
  return 0;
}
