// [mirrors]: each field's grammar with good and bad values (the error names file:line:column, the field and why),
// the pytorch/pytorch_style pairing, and the table's own keys.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "profile/fields.hpp"
#include "profile/parser.hpp"
#include "support/minimal_profile.hpp"

using gpuenv::profile::parse_profile;
using gpuenv::util::ErrorKind;

namespace {

/// A minimal profile; the [mirrors] table starts on line 8, so its first key is on line 9.
const std::string k_head = gpuenv::testing::minimal_profile() + "[mirrors]\n";

/// One value of one field and what parsing it must say.
struct Case {
  const char* key;      ///< inside [mirrors]
  const char* value;    ///< written as a TOML basic string
  const char* excerpt;  ///< nullptr: accepted; otherwise part of the error message
};

// clang-format off
const Case k_cases[] = {
    // ---- https URLs: cuda_repo, container_toolkit, pypi, pytorch, python_downloads ----
    {"cuda_repo", "https://mirrors.aliyun.com/nvidia-cuda", nullptr},
    {"cuda_repo", "https://mirrors.aliyun.com/nvidia-cuda/", nullptr},
    {"cuda_repo", "https://mirror.internal:8443/nvidia/cuda", nullptr},
    {"cuda_repo", "http://mirrors.aliyun.com/nvidia-cuda", "it is plain http; a mirror must be https"},
    {"cuda_repo", "mirrors.aliyun.com/nvidia-cuda", "it is not an https URL"},
    {"cuda_repo", "https://", "it names no host"},
    {"container_toolkit", "https://mirrors.ustc.edu.cn/libnvidia-container", nullptr},
    {"container_toolkit", "https://user:secret@mirrors.ustc.edu.cn/libnvidia-container", "it carries credentials"},
    {"container_toolkit", "https://mirrors.ustc.edu.cn/libnvidia-container?token=1", "it has a query or fragment"},
    {"container_toolkit", "https://mirrors.ustc.edu.cn:0/x", "`0` is not a port (1-65535)"},
    {"container_toolkit", "https://mirrors.ustc.edu.cn:99999/x", "`99999` is not a port (1-65535)"},
    {"pypi", "https://pypi.tuna.tsinghua.edu.cn/simple", nullptr},
    {"pypi", "https://mirrors.aliyun.com/pypi/simple/", nullptr},
    {"pypi", "https://pypi.tuna.tsinghua.edu.cn/simple; rm -rf /", "it contains white space"},
    {"pypi", "https://pypi.tuna.tsinghua.edu.cn/simple;reboot", "it contains `;`"},
    {"pypi", "https://pypi.tuna.tsinghua.edu.cn/$(id)", "it contains `$`"},
    {"pypi", "https://pypi.tuna.tsinghua.edu.cn/simple'", "it contains a quote"},
    {"pypi", "https://-bad-.example.com/simple", "`-bad-.example.com` is not a host name"},
    {"pytorch", "https://mirrors.aliyun.com/pytorch-wheels", nullptr},
    {"pytorch", "https://mirrors.aliyun.com/pytorch-wheels#cu128", "it has a query or fragment"},
    {"pytorch", "https://mirrors.aliyun.com/a:b", "its path contains `:`"},
    {"python_downloads", "https://mirror.example.com/python-build-standalone", nullptr},
    {"python_downloads", "ftp://mirror.example.com/pbs", "it is not an https URL"},
    {"python_downloads", "", "it is empty"},
    // ---- pytorch_style ----
    {"pytorch_style", "find-links", nullptr},
    {"pytorch_style", "index", nullptr},
    {"pytorch_style", "flat", "one of find-links"},
    // ---- registry ----
    {"registry", "docker.m.daocloud.io", nullptr},
    {"registry", "m.daocloud.io/docker.io", nullptr},
    {"registry", "registry.internal:5000/mirror", nullptr},
    {"registry", "localhost:5000", nullptr},
    {"registry", "https://docker.m.daocloud.io", "it has a scheme"},
    {"registry", "Docker.M.DaoCloud.io", "it is not lower case"},
    {"registry", "docker.m.daocloud.io/", "it ends with `/`"},
    {"registry", "mirror/nvidia", "would be read as a Docker Hub namespace"},
    {"registry", "docker.m.daocloud.io/a//b", "is not a repository path"},
    {"registry", "docker.m.daocloud.io/x?y", "it contains `?`"},
    {"registry", "docker.m.daocloud.io:http", "`http` is not a port"},
};
// clang-format on

}  // namespace

TEST_CASE("mirrors: every field accepts its grammar and refuses the rest with file:line, field and reason",
          "[profile][mirrors]") {
  for (const Case& c : k_cases) {
    // pytorch and pytorch_style come together; add the partner so only the value under test can fail.
    std::string text = k_head + c.key + " = \"" + c.value + "\"\n";
    if (std::string(c.key) == "pytorch") text += "pytorch_style = \"find-links\"\n";
    if (std::string(c.key) == "pytorch_style") text += "pytorch = \"https://mirrors.aliyun.com/pytorch-wheels\"\n";
    INFO(text);
    auto parsed = parse_profile(text, "t.toml");
    if (c.excerpt == nullptr) {
      INFO((parsed ? std::string() : parsed.error().message));
      REQUIRE(parsed.has_value());
      CHECK(gpuenv::profile::get_field(parsed->base, std::string("mirrors.") + c.key) == c.value);
      continue;
    }
    REQUIRE_FALSE(parsed.has_value());
    const auto& error = parsed.error();
    CHECK(error.kind == ErrorKind::input);
    CHECK(error.message.find("t.toml:9:") == 0);
    CHECK(error.message.find(std::string("`mirrors.") + c.key + "` = \"" + c.value + "\" is not valid") !=
          std::string::npos);
    CHECK((error.message + "\n" + error.remedy).find(c.excerpt) != std::string::npos);
    CHECK(error.remedy.find("write ") == 0);
  }
}

TEST_CASE("mirrors: the remedy shows the expected form with an example", "[profile][mirrors]") {
  auto pypi = gpuenv::profile::validate_field("mirrors.pypi", "http://pypi.tuna.tsinghua.edu.cn/simple");
  REQUIRE_FALSE(pypi.has_value());
  CHECK(pypi.error().remedy.find("\"https://pypi.tuna.tsinghua.edu.cn/simple\"") != std::string::npos);
  auto registry = gpuenv::profile::validate_field("mirrors.registry", "https://docker.m.daocloud.io");
  REQUIRE_FALSE(registry.has_value());
  CHECK(registry.error().remedy.find("without a scheme, e.g. \"docker.m.daocloud.io\"") != std::string::npos);
}

TEST_CASE("mirrors: pytorch and pytorch_style come together, the error at the key that is alone",
          "[profile][mirrors]") {
  auto alone = parse_profile(k_head + "pypi = \"https://pypi.tuna.tsinghua.edu.cn/simple\"\n" +
                                 "pytorch = \"https://mirrors.aliyun.com/pytorch-wheels\"\n",
                             "t.toml");
  REQUIRE_FALSE(alone.has_value());
  CHECK(alone.error().message == "t.toml:10:11: `mirrors.pytorch` needs `mirrors.pytorch_style`");
  CHECK(alone.error().remedy.find("pytorch_style = \"find-links\"") != std::string::npos);

  auto style = parse_profile(k_head + "pytorch_style = \"index\"\n", "t.toml");
  REQUIRE_FALSE(style.has_value());
  CHECK(style.error().message == "t.toml:9:17: `mirrors.pytorch_style` is set without `mirrors.pytorch`");
}

TEST_CASE("mirrors: unknown keys get a suggestion, numbers are refused, an empty table sets nothing",
          "[profile][mirrors]") {
  auto typo = parse_profile(k_head + "pipy = \"https://pypi.tuna.tsinghua.edu.cn/simple\"\n", "t.toml");
  REQUIRE_FALSE(typo.has_value());
  CHECK(typo.error().message.find("t.toml:9:") == 0);
  CHECK(typo.error().message.find("unknown key `mirrors.pipy`; did you mean `pypi`?") != std::string::npos);

  auto number = parse_profile(k_head + "registry = 5000\n", "t.toml");
  REQUIRE_FALSE(number.has_value());
  CHECK(number.error().message.find("`mirrors.registry` must be a string, not an integer") != std::string::npos);

  auto not_a_table =
      parse_profile("schema = 1\nname = \"t\"\nmirrors = \"cn\"\n" +
                        k_head.substr(k_head.find("[os]"), k_head.find("[mirrors]") - k_head.find("[os]")),
                    "t.toml");
  REQUIRE_FALSE(not_a_table.has_value());
  CHECK(not_a_table.error().message == "t.toml:3:11: `mirrors` must be a table, not a string");

  auto empty = parse_profile(k_head, "t.toml");
  REQUIRE(empty.has_value());
  CHECK(empty->base.mirrors.empty());
}

TEST_CASE("mirrors: a full table fills every field and --set reaches them too", "[profile][mirrors]") {
  auto parsed = parse_profile(k_head + R"(cuda_repo = "https://mirrors.aliyun.com/nvidia-cuda"
container_toolkit = "https://mirrors.ustc.edu.cn/libnvidia-container"
pypi = "https://pypi.tuna.tsinghua.edu.cn/simple"
pytorch = "https://mirrors.aliyun.com/pytorch-wheels"
pytorch_style = "find-links"
registry = "docker.m.daocloud.io"
python_downloads = "https://mirror.example.com/pbs"
)",
                              "t.toml");
  REQUIRE(parsed.has_value());
  const auto& m = parsed->base.mirrors;
  CHECK(m.cuda_repo == "https://mirrors.aliyun.com/nvidia-cuda");
  CHECK(m.container_toolkit == "https://mirrors.ustc.edu.cn/libnvidia-container");
  CHECK(m.pypi == "https://pypi.tuna.tsinghua.edu.cn/simple");
  CHECK(m.pytorch == "https://mirrors.aliyun.com/pytorch-wheels");
  CHECK(m.pytorch_style == "find-links");
  CHECK(m.registry == "docker.m.daocloud.io");
  CHECK(m.python_downloads == "https://mirror.example.com/pbs");

  gpuenv::profile::Profile p = parsed->base;
  REQUIRE(gpuenv::profile::set_field(p, "mirrors.registry", "m.daocloud.io/docker.io").has_value());
  CHECK(p.mirrors.registry == "m.daocloud.io/docker.io");
  CHECK_FALSE(gpuenv::profile::set_field(p, "mirrors.registry", "https://x.io").has_value());
  CHECK(p.mirrors.registry == "m.daocloud.io/docker.io");
}
