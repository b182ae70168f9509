// parse_profile on inline text: required fields, did-you-mean, types, grammars, line:column and matrix keys.

#include "profile/parser.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "support/minimal_profile.hpp"

using gpuenv::profile::parse_profile;
using gpuenv::util::ErrorKind;

namespace {

/// The smallest valid profile; tests append tables to it or replace lines in it.
const std::string k_minimal = gpuenv::testing::minimal_profile();

/// Parses `text` as "t.toml" and returns the error message ("" when it parsed).
std::string error_of(const std::string& text) {
  auto parsed = parse_profile(text, "t.toml");
  if (parsed) return "";
  CHECK(parsed.error().kind == ErrorKind::input);
  return parsed.error().message;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a minimal profile parses, with no flavor (gpuenv chooses) and no matrix", "[profile][parser]") {
  auto parsed = parse_profile(k_minimal, "profiles/t.toml");
  REQUIRE(parsed.has_value());
  const auto& p = parsed->base;
  CHECK(p.name == "t");
  CHECK(p.os_distro == "ubuntu");
  CHECK(p.os_version == "22.04");
  CHECK(p.cuda_version == "12.4.1");
  CHECK(p.image_flavor.empty());  // gpuenv chooses: compat::effective_image_flavor
  CHECK(p.cudnn_version.empty());
  CHECK(p.framework_name.empty());
  CHECK(p.origin == "profiles/t.toml");
  CHECK(parsed->matrix.empty());
}

TEST_CASE("a profile with every table fills every field", "[profile][parser]") {
  const std::string text = R"(schema = 1
name = "pytorch-2.4-cu124"
description = "everything"
[os]
distro = "ubuntu"
version = "22.04"
[cuda]
version = "12.4.1"
[cudnn]
version = "9"
[driver]
min = "550.54.15"
branch = "550"
modules = "open"
[image]
flavor = "devel"
[framework]
name = "pytorch"
version = "2.4.1"
python = "3.11"
variant = "cu124"
[gpu]
compute_capabilities = ["8.0", "9.0"]
models = ["A100", "H100"]
)";
  auto parsed = parse_profile(text, "t.toml");
  REQUIRE(parsed.has_value());
  const auto& p = parsed->base;
  CHECK(p.description == "everything");
  CHECK(p.cudnn_version == "9");
  CHECK(p.driver_min == "550.54.15");
  CHECK(p.driver_branch == "550");
  CHECK(p.driver_modules == "open");
  CHECK(p.image_flavor == "devel");
  CHECK(p.framework_name == "pytorch");
  CHECK(p.framework_version == "2.4.1");
  CHECK(p.framework_python == "3.11");
  CHECK(p.framework_variant == "cu124");
  CHECK(p.gpu_compute_capabilities == std::vector<std::string>{"8.0", "9.0"});
  CHECK(p.gpu_models == std::vector<std::string>{"A100", "H100"});
}

TEST_CASE("missing required keys and fields are named with where to add them", "[profile][parser]") {
  struct Row {
    std::string text;
    const char* message;
  };
  const Row rows[] = {
      {replace(k_minimal, "schema = 1\n", ""), "t.toml: missing required key `schema`"},
      {replace(k_minimal, "name = \"t\"\n", ""), "t.toml: missing required field `name`"},
      {replace(k_minimal, "distro = \"ubuntu\"\n", ""), "t.toml: missing required field `os.distro`"},
      {replace(k_minimal, "version = \"22.04\"\n", ""), "t.toml: missing required field `os.version`"},
      {replace(k_minimal, "[cuda]\nversion = \"12.4.1\"\n", ""), "t.toml: missing required field `cuda.version`"},
      {"", "t.toml: missing required key `schema`"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(error_of(row.text) == row.message);
  }
  auto missing_cuda = parse_profile(replace(k_minimal, "[cuda]\nversion = \"12.4.1\"\n", ""), "t.toml");
  REQUIRE_FALSE(missing_cuda.has_value());
  CHECK(missing_cuda.error().remedy.find("under [cuda]") != std::string::npos);
}

TEST_CASE("unknown keys get a did-you-mean from their own table, with line:column", "[profile][parser]") {
  struct Row {
    std::string text;
    const char* message;
  };
  const Row rows[] = {
      {replace(k_minimal, "[cuda]\nversion", "[cuda]\nverison"),
       "t.toml:7:11: unknown key `cuda.verison`; did you mean `version`?"},
      {replace(k_minimal, "distro =", "distr ="), "t.toml:4:9: unknown key `os.distr`; did you mean `distro`?"},
      {replace(k_minimal, "name = \"t\"", "nmae = \"t\""), "t.toml:2:8: unknown key `nmae`; did you mean `name`?"},
      {k_minimal + "[gpu]\nmodel = [\"A100\"]\n", "t.toml:9:9: unknown key `gpu.model`; did you mean `models`?"},
      {k_minimal + "[framework]\npyton = \"3.11\"\n",
       "t.toml:9:9: unknown key `framework.pyton`; did you mean `python`?"},
      {k_minimal + "[drivers]\nmin = \"550\"\n", "t.toml:8:1: unknown key `drivers`; did you mean `driver`?"},
      {k_minimal + "[image]\ntag = \"x\"\n", "t.toml:9:7: unknown key `image.tag`"},
      {replace(k_minimal, "schema = 1\n", "schema = 1\ncompletely_unrelated = 1\n"),
       "t.toml:2:24: unknown key `completely_unrelated`"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(error_of(row.text) == row.message);
  }
}

TEST_CASE("values of the wrong TOML type are refused with the type named", "[profile][parser]") {
  struct Row {
    std::string text;
    const char* message;
  };
  const Row rows[] = {
      {replace(k_minimal, "\"12.4.1\"", "12.4"), "t.toml:7:11: `cuda.version` must be a string, not a number"},
      {replace(k_minimal, "\"22.04\"", "22"), "t.toml:5:11: `os.version` must be a string, not an integer"},
      {replace(k_minimal, "name = \"t\"", "name = true"), "t.toml:2:8: `name` must be a string, not a boolean"},
      {replace(k_minimal, "schema = 1", "schema = 1.0"), "t.toml:1:10: unsupported schema a number"},
      {replace(k_minimal, "schema = 1", "schema = 2"), "t.toml:1:10: unsupported schema 2"},
      {replace(replace(k_minimal, "[cuda]\nversion = \"12.4.1\"\n", ""), "[os]", "cuda = \"12.4.1\"\n[os]"),
       "t.toml:3:8: `cuda` must be a table, not a string"},
      {k_minimal + "[gpu]\nmodels = \"A100\"\n", "t.toml:9:10: `gpu.models` must be an array of strings, not a string"},
      {k_minimal + "[gpu]\ncompute_capabilities = [8.0]\n",
       "t.toml:9:25: `gpu.compute_capabilities` must hold strings, found a number"},
      {replace(k_minimal, "[os]", "matrix = []\n[os]"), "t.toml:3:10: `matrix` must be a table, not an array"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(error_of(row.text) == row.message);
  }
  auto number = parse_profile(replace(k_minimal, "\"12.4.1\"", "12.4"), "t.toml");
  REQUIRE_FALSE(number.has_value());
  CHECK(number.error().remedy.find("versions are strings") != std::string::npos);
}

TEST_CASE("each field's grammar accepts its forms and refuses the rest", "[profile][parser]") {
  struct Row {
    const char* table;  ///< appended as [table] key = "value"
    const char* key;
    std::string value;
    bool valid;
  };
  const Row rows[] = {
      {"cudnn", "version", "9", true},      {"cudnn", "version", "8.9.7.29", true},
      {"cudnn", "version", "9.x", false},   {"driver", "min", "570.26", true},
      {"driver", "min", "550.54.15", true}, {"driver", "min", "55", false},
      {"driver", "branch", "550", true},    {"driver", "branch", "550.54", false},
      {"driver", "modules", "open", true},  {"driver", "modules", "closed", false},
      {"image", "flavor", "base", true},    {"image", "flavor", "cudnn-devel", false},
      {"gpu_cc", "", "10.0", true},         {"gpu_cc", "", "9", false},
      {"gpu_cc", "", "0.5", false},
  };
  for (const Row& row : rows) {
    INFO(row.table << "." << row.key << " = " << row.value);
    const std::string text = std::string(row.table) == "gpu_cc"
                                 ? k_minimal + "[gpu]\ncompute_capabilities = [\"" + row.value + "\"]\n"
                                 : k_minimal + "[" + row.table + "]\n" + row.key + " = \"" + row.value + "\"\n";
    CHECK(error_of(text).empty() == row.valid);
  }

  struct Top {
    std::string from;
    std::string to;
    bool valid;
  };
  const Top tops[] = {
      {"\"12.4.1\"", "\"12.4\"", false},
      {"\"12.4.1\"", "\"v12.4.1\"", false},
      {"\"12.4.1\"", "\"12.4.1.0\"", false},
      {"\"12.4.1\"", "\"13.0.2\"", true},
      {"\"22.04\"", "\"jammy\"", false},
      {"\"22.04\"", "\"2023\"", true},
      {"\"ubuntu\"", "\"Ubuntu\"", false},
      {"\"ubuntu\"", "\"amzn\"", true},
      {"\"t\"", "\"-t\"", false},
      {"\"t\"", "\"a.b_c-9\"", true},
      {"\"t\"", "\"UPPER\"", false},
      {"\"t\"", "\"" + std::string(64, 'a') + "\"", true},
      {"\"t\"", "\"" + std::string(65, 'a') + "\"", false},
  };
  for (const Top& row : tops) {
    INFO(row.from << " -> " << row.to);
    CHECK(error_of(replace(k_minimal, row.from, row.to)).empty() == row.valid);
  }

  const std::string framework = k_minimal + "[framework]\nname = \"pytorch\"\nversion = \"2.4.1\"\npython = \"3.11\"\n";
  const Top frameworks[] = {
      {"\"2.4.1\"", "\"2.4\"", true},
      {"\"2.4.1\"", "\"2\"", false},
      {"\"2.4.1\"", "\"2.4.1rc1\"", false},
      {"\"3.11\"", "\"3\"", false},
      {"\"3.11\"", "\"3.11.4\"", false},
      {"\"pytorch\"", "\"torch\"", false},
      {"\"3.11\"", "\"3.11\"\nvariant = \"cu124\"", true},
      {"\"3.11\"", "\"3.11\"\nvariant = \"cuda124\"", false},
  };
  for (const Top& row : frameworks) {
    INFO(row.from << " -> " << row.to);
    CHECK(error_of(replace(framework, row.from, row.to)).empty() == row.valid);
  }
}

TEST_CASE("a bad value names the field, the value and the expected form at its line:column", "[profile][parser]") {
  auto parsed = parse_profile(replace(k_minimal, "\"12.4.1\"", "\"12.4\""), "profiles/x.toml");
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().message == "profiles/x.toml:7:11: `cuda.version` = \"12.4\" is not valid");
  CHECK(parsed.error().remedy.find("X.Y.Z") != std::string::npos);

  CHECK(error_of(k_minimal + "[gpu]\ncompute_capabilities = [\"8.0\", \"sm_90\"]\n") ==
        "t.toml:9:24: `gpu.compute_capabilities` holds \"sm_90\", which is not a compute capability");
  CHECK(error_of(k_minimal + "[gpu]\nmodels = []\n") == "t.toml:9:10: `gpu.models` is empty");
}

TEST_CASE("malformed TOML is reported at its line and column", "[profile][parser]") {
  const std::string message = error_of("schema = 1\nname = \"t\"\n[os\ndistro = \"ubuntu\"\n");
  CHECK(message.rfind("t.toml:3:", 0) == 0);
  CHECK(error_of("schema = 1\nname = \"unterminated\n").rfind("t.toml:2:", 0) == 0);
  CHECK(error_of("schema = 1\nschema = 1\n").rfind("t.toml:2:", 0) == 0);
}

TEST_CASE("the framework table needs name, version and python together, and variant is for pytorch only",
          "[profile][parser]") {
  struct Row {
    const char* framework;
    const char* message;  ///< "" when valid
  };
  const Row rows[] = {
      {"name = \"pytorch\"\nversion = \"2.4.1\"\npython = \"3.11\"\n", ""},
      {"name = \"pytorch\"\nversion = \"2.4.1\"\n", "t.toml: [framework] is missing `python`"},
      {"name = \"pytorch\"\npython = \"3.11\"\n", "t.toml: [framework] is missing `version`"},
      {"version = \"2.4.1\"\npython = \"3.11\"\n", "t.toml: [framework] is missing `name`"},
      {"variant = \"cu124\"\n", "t.toml: [framework] is missing `name`"},
      {"name = \"tensorflow\"\nversion = \"2.20.0\"\npython = \"3.12\"\n", ""},
      {"name = \"tensorflow\"\nversion = \"2.20.0\"\npython = \"3.12\"\nvariant = \"cu125\"\n",
       "t.toml: `framework.variant` applies to pytorch only"},
  };
  for (const Row& row : rows) {
    INFO(row.framework);
    CHECK(error_of(k_minimal + "[framework]\n" + row.framework) == row.message);
  }
}

TEST_CASE("matrix axes, exclude and include entries are read and validated", "[profile][parser][matrix]") {
  const std::string text = k_minimal + R"([framework]
name = "pytorch"
version = "2.4.1"
python = "3.11"
[matrix]
"cuda.version" = ["12.1.1", "12.4.1"]
exclude = [ { "cuda.version" = "12.1.1", "framework.python" = "3.11" } ]
include = [ { "cuda.version" = "11.8.0", "image.flavor" = "devel" } ]
)";
  auto parsed = parse_profile(text, "t.toml");
  REQUIRE(parsed.has_value());
  const auto& m = parsed->matrix;
  REQUIRE(m.axes.size() == 1);
  CHECK(m.axes[0].first == "cuda.version");
  CHECK(m.axes[0].second == std::vector<std::string>{"12.1.1", "12.4.1"});
  REQUIRE(m.exclude.size() == 1);
  CHECK(m.exclude[0] == std::map<std::string, std::string>{{"cuda.version", "12.1.1"}, {"framework.python", "3.11"}});
  REQUIRE(m.include.size() == 1);
  CHECK(m.include[0] == std::map<std::string, std::string>{{"cuda.version", "11.8.0"}, {"image.flavor", "devel"}});
}

TEST_CASE("a required field may come from a matrix axis instead of the base profile", "[profile][parser][matrix]") {
  const std::string without_cuda = replace(k_minimal, "[cuda]\nversion = \"12.4.1\"\n", "");
  auto parsed = parse_profile(without_cuda + "[matrix]\n\"cuda.version\" = [\"12.4.1\", \"12.6.3\"]\n", "t.toml");
  REQUIRE(parsed.has_value());
  CHECK(parsed->base.cuda_version.empty());
  // An include entry is not an axis: it does not supply the field to every cell.
  CHECK(error_of(without_cuda + "[matrix]\ninclude = [ { \"cuda.version\" = \"12.4.1\" } ]\n") ==
        "t.toml: missing required field `cuda.version`");
}

TEST_CASE("matrix keys must be scalar profile fields and their values valid strings", "[profile][parser][matrix]") {
  struct Row {
    const char* matrix;
    const char* message;  ///< the whole message, or its start when `prefix`
    bool prefix;
  };
  const Row rows[] = {
      {"", "t.toml:8:1: the matrix is empty", false},
      {"exclude = [ { \"cuda.version\" = \"12.4.1\" } ]\n", "t.toml:8:1: the matrix is empty", false},
      {"\"cuda.verison\" = [\"12.4.1\"]\n",
       "t.toml:9:18: matrix: `cuda.verison` is not a profile field; did you mean `cuda.version`?", false},
      {"\"name\" = [\"a\", \"b\"]\n", "t.toml:9:10: matrix: `name` cannot vary", false},
      {"\"description\" = [\"a\", \"b\"]\n", "t.toml:9:17: matrix: `description` cannot vary", false},
      {"\"gpu.models\" = [\"A100\"]\n",
       "t.toml:9:16: matrix: `gpu.models` is an array field and cannot be a matrix axis", true},
      {"\"cuda.version\" = \"12.4.1\"\n",
       "t.toml:9:18: matrix: `cuda.version` must be an array of values, not a string", false},
      {"\"cuda.version\" = []\n", "t.toml:9:18: matrix: `cuda.version` has no values", false},
      {"\"cuda.version\" = [\"12.4.1\", \"12.4.1\"]\n", "t.toml:9:29: matrix: `cuda.version` lists \"12.4.1\" twice",
       false},
      {"\"cuda.version\" = [12.4]\n", "t.toml:9:19: matrix: values of `cuda.version` must be strings, not a number",
       false},
      {"\"cuda.version\" = [\"12.4\"]\n", "t.toml:9:19: matrix: `cuda.version` = \"12.4\" is not valid", false},
      {"\"cuda.version\" = [\"12.4.1\"]\nexclude = { \"cuda.version\" = \"12.4.1\" }\n",
       "t.toml:10:11: matrix.exclude must be an array of tables", false},
      {"\"cuda.version\" = [\"12.4.1\"]\ninclude = [ \"12.4.1\" ]\n",
       "t.toml:10:13: matrix.include entries must be tables, not a string", false},
      {"\"cuda.version\" = [\"12.4.1\"]\ninclude = [ { } ]\n", "t.toml:10:13: matrix.include holds an empty entry",
       false},
      {"\"cuda.version\" = [\"12.4.1\"]\ninclude = [ { \"cuda.verison\" = \"12.4.1\" } ]\n",
       "t.toml:10:32: matrix: `cuda.verison` is not a profile field; did you mean `cuda.version`?", false},
      {"\"cuda.version\" = [\"12.4.1\"]\nexclude = [ { \"framework.python\" = \"3\" } ]\n",
       "t.toml:10:36: matrix: `framework.python` = \"3\" is not valid", false},
  };
  for (const Row& row : rows) {
    INFO(row.matrix);
    const std::string message = error_of(k_minimal + "[matrix]\n" + row.matrix);
    if (row.prefix) {
      CHECK(message.rfind(row.message, 0) == 0);
    } else {
      CHECK(message == row.message);
    }
  }
}
