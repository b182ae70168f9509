// CTest registers each Catch test by name (catch_discover_tests) and splits a name at ';': a test whose name holds one
// becomes two CTest entries that each match nothing and pass while running nothing. Names starting with '-' are read
// as Catch options. This keeps both out of the suite.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

TEST_CASE("test names: no semicolon (CTest splits the name) and no leading dash (Catch reads an option)", "[tests]") {
  namespace fs = std::filesystem;
  const std::regex test_case(R"re(TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+))re");
  std::size_t names = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(GPUENV_SOURCE_DIR) / "tests")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (auto it = std::sregex_iterator(source.begin(), source.end(), test_case); it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].str();
      ++names;
      INFO(entry.path().filename().string() << ": " << name);
      CHECK(name.find(';') == std::string::npos);
      CHECK(name.rfind("\"-", 0) != 0);
    }
  }
  CHECK(names > 300);
}
