// The cloud-init renderer as a library: checked sources, every option's effect on the user-data and the per-boot
// script's settings, the profile text carried verbatim, and sh/YAML quoting (round-tripped through the real sh).

#include "cloudinit/cloudinit.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cloudinit/quoting.hpp"
#include "support/skip.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

using gpuenv::cloudinit::Options;
using gpuenv::cloudinit::Source;
using gpuenv::cloudinit::SourceKind;
using gpuenv::util::contains;

const std::string k_sha(64, 'a');
const std::string k_profile_text = "schema = 1\nname = \"t\"\n\n[os]\ndistro = \"ubuntu\"\nversion = \"24.04\"\n";

gpuenv::profile::Profile profile_on(const std::string& distro) {
  gpuenv::profile::Profile p;
  p.name = "t";
  p.os_distro = distro;
  return p;
}

Source url_source() { return {SourceKind::url, "https://example.com/gpuenv", k_sha, ""}; }
Source deb_source() { return {SourceKind::deb, "https://example.com/gpuenv_0.1.0_amd64.deb", k_sha, ""}; }
Source preinstalled_source(std::string path = "/usr/bin/gpuenv") { return {SourceKind::preinstalled, "", "", path}; }

std::string render(const std::string& distro, const Options& options, const std::string& text = k_profile_text) {
  auto out = gpuenv::cloudinit::render_user_data(profile_on(distro), text, options);
  INFO((out ? std::string() : out.error().message));
  REQUIRE(out.has_value());
  return *out;
}

/// The settings block of the per-boot script, run by sh, then `extra`: what sh makes of the quoted values.
std::string run_settings(const std::string& script, const std::string& extra) {
  const std::size_t begin = script.find("# Settings from gpuenv cloud-init.");
  const std::size_t end = script.find("\nPATH=", begin);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  auto system = gpuenv::system::make_real_system();
  const auto result =
      system->run({"sh", "-c", script.substr(begin, end - begin) + "\n" + extra}, std::chrono::seconds(10));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return result.out;
}

}  // namespace

TEST_CASE("checked_source accepts https URLs with a SHA-256 and absolute preinstalled paths", "[cloudinit]") {
  struct Row {
    const char* what;
    Source source;
    bool ok;
    const char* message;  // a part of the error, or of nothing when ok
  };
  const std::vector<Row> rows = {
      {"https binary", url_source(), true, ""},
      {"https deb", deb_source(), true, ""},
      {"plain http", {SourceKind::url, "http://example.com/gpuenv", k_sha, ""}, false, "not an https URL"},
      {"no host", {SourceKind::deb, "https:///gpuenv.deb", k_sha, ""}, false, "not an https URL"},
      {"space in URL", {SourceKind::url, "https://example.com/a b", k_sha, ""}, false, "not allowed in a URL"},
      {"newline in URL", {SourceKind::url, "https://example.com/a\nb", k_sha, ""}, false, "not allowed in a URL"},
      {"short sha", {SourceKind::url, "https://example.com/g", "abc", ""}, false, "not a SHA-256"},
      {"non-hex sha", {SourceKind::url, "https://example.com/g", std::string(64, 'g'), ""}, false, "not a SHA-256"},
      {"sha with quote",
       {SourceKind::url, "https://example.com/g", "'" + std::string(63, 'a'), ""},
       false,
       "not a SHA-256"},
      // Credentials in the URL would sit in the user-data, the script, its log and `ps` (issue 30, item 7).
      {"user and password",
       {SourceKind::url, "https://ci:t0ken@example.com/gpuenv", k_sha, ""},
       false,
       "the URL carries credentials"},
      {"user only", {SourceKind::deb, "https://ci@example.com/g.deb", k_sha, ""}, false, "carries credentials"},
      {"@ in the path is not userinfo", {SourceKind::url, "https://example.com/a@b/gpuenv", k_sha, ""}, true, ""},
      {"@ in the query is not userinfo", {SourceKind::url, "https://example.com/g?x=a@b", k_sha, ""}, true, ""},
      {"curl config", {SourceKind::url, "https://example.com/g", k_sha, "", "/etc/gpuenv/curl.conf"}, true, ""},
      {"relative curl config",
       {SourceKind::url, "https://example.com/g", k_sha, "", "curl.conf"},
       false,
       "--gpuenv-curl-config"},
      {"curl config with a quote",
       {SourceKind::url, "https://example.com/g", k_sha, "", "/etc/a\"b"},
       false,
       "--gpuenv-curl-config"},
      {"preinstalled default", preinstalled_source(""), true, ""},
      {"preinstalled custom", preinstalled_source("/opt/gpuenv/bin/gpuenv"), true, ""},
      {"preinstalled relative", preinstalled_source("bin/gpuenv"), false, "not an absolute path"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    auto checked = gpuenv::cloudinit::checked_source(row.source);
    CHECK(checked.has_value() == row.ok);
    if (!checked) CHECK(contains(checked.error().message, row.message));
  }
  CHECK(gpuenv::cloudinit::checked_source(preinstalled_source(""))->path == "/usr/bin/gpuenv");
  auto upper = gpuenv::cloudinit::checked_source({SourceKind::url, "https://e.com/g", std::string(64, 'A'), ""});
  REQUIRE(upper.has_value());
  CHECK(upper->sha256 == k_sha);
}

TEST_CASE("a signed URL is warned about and shown without its query in the node's log", "[cloudinit]") {
  const Source signed_url{SourceKind::url, "https://b.example.com/gpuenv?X-Amz-Signature=abc#f", k_sha, ""};
  const auto warnings = gpuenv::cloudinit::source_warnings(signed_url);
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings.front(), "query string"));
  CHECK_FALSE(contains(warnings.front(), "abc"));
  CHECK(gpuenv::cloudinit::source_warnings(url_source()).empty());
  CHECK(gpuenv::cloudinit::redacted_url(signed_url.url) == "https://b.example.com/gpuenv?(query hidden)");
  CHECK(gpuenv::cloudinit::redacted_url("https://e.com/g") == "https://e.com/g");
  Options options;
  options.source = signed_url;
  const auto script = gpuenv::cloudinit::render_per_boot_script(options);
  REQUIRE(script);
  CHECK(contains(*script, "GPUENV_URL_SHOWN='https://b.example.com/gpuenv?(query hidden)'"));
  CHECK(contains(*script, "GPUENV_CURL_CONFIG=''"));
}

TEST_CASE("each option shows in the user-data and the per-boot settings", "[cloudinit]") {
  struct Row {
    const char* what;
    std::string distro;
    Options options;
    std::vector<std::string> present;
    std::vector<std::string> absent;
  };
  Options url;
  url.source = url_source();
  Options deb;
  deb.source = deb_source();
  Options pre;
  pre.source = preinstalled_source();
  Options pre_custom;
  pre_custom.source = preinstalled_source("/opt/gpuenv");
  Options verify_only = pre;
  verify_only.doctor_only = true;
  Options verify_deb = deb;
  verify_deb.doctor_only = true;
  Options cell = url;
  cell.selection = {{"framework.python", "3.11"}, {"cuda.version", "12.4.1"}};

  const std::string lock = "DPkg::Lock::Timeout \"600\";";
  const std::vector<Row> rows = {
      {"binary URL on ubuntu",
       "ubuntu",
       url,
       {"GPUENV_SOURCE='url'", "GPUENV_URL='https://example.com/gpuenv'", "GPUENV_SHA256='" + k_sha + "'",
        "GPUENV_BIN='/usr/local/bin/gpuenv'", "GPUENV_MODE='install'", lock, "path: /etc/apt/apt.conf.d/90gpuenv-lock"},
       {"GPUENV_MODE='doctor-only'"}},
      {"deb on debian",
       "debian",
       deb,
       {"GPUENV_SOURCE='deb'", "GPUENV_URL='https://example.com/gpuenv_0.1.0_amd64.deb'",
        "GPUENV_BIN='/usr/bin/gpuenv'", lock},
       {}},
      {"preinstalled", "ubuntu", pre, {"GPUENV_SOURCE='preinstalled'", "GPUENV_BIN='/usr/bin/gpuenv'", lock}, {}},
      {"preinstalled elsewhere", "ubuntu", pre_custom, {"GPUENV_BIN='/opt/gpuenv'"}, {}},
      {"doctor-only: no apt", "ubuntu", verify_only, {"GPUENV_MODE='doctor-only'", "Verify only"}, {lock}},
      {"doctor-only with a deb still waits for apt", "ubuntu", verify_deb, {"GPUENV_MODE='doctor-only'", lock}, {}},
      {"rockylinux: no apt lock file", "rockylinux", url, {"GPUENV_MODE='install'"}, {lock, "90gpuenv-lock"}},
      {"a matrix cell", "ubuntu", cell, {"set -- --set 'framework.python=3.11' --set 'cuda.version=12.4.1'"}, {}},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const std::string text = render(row.distro, row.options);
    CHECK(gpuenv::util::starts_with(text, "#cloud-config\n"));
    CHECK(contains(text, "  - path: /etc/gpuenv/profile.toml\n"));
    CHECK(contains(text,
                   "  - path: /var/lib/cloud/scripts/per-boot/50-gpuenv\n    owner: root:root\n    "
                   "permissions: '0700'\n"));  // it holds the download URL
    for (const std::string& part : row.present) CHECK(contains(text, part));
    for (const std::string& part : row.absent) CHECK_FALSE(contains(text, part));
  }
}

TEST_CASE("a .deb source is refused for a profile on an rpm distro", "[cloudinit]") {
  Options deb;
  deb.source = deb_source();
  auto out = gpuenv::cloudinit::render_user_data(profile_on("rockylinux"), k_profile_text, deb);
  REQUIRE_FALSE(out.has_value());
  CHECK(contains(out.error().message, "does not install on rockylinux"));
}

TEST_CASE("render_user_data checks the source itself", "[cloudinit]") {
  Options options;
  options.source = {SourceKind::url, "http://example.com/gpuenv", k_sha, ""};
  auto out = gpuenv::cloudinit::render_user_data(profile_on("ubuntu"), k_profile_text, options);
  REQUIRE_FALSE(out.has_value());
  CHECK(contains(out.error().message, "not an https URL"));
  options.source = {SourceKind::url, "https://example.com/gpuenv", std::string(64, 'C'), ""};
  CHECK(contains(render("ubuntu", options), "GPUENV_SHA256='" + std::string(64, 'c') + "'"));
}

TEST_CASE("the profile text, [mirrors] included, is carried verbatim into /etc/gpuenv/profile.toml", "[cloudinit]") {
  const std::string text = k_profile_text +
                           "\n[mirrors]\ncuda_repo = \"https://mirrors.example.cn/nvidia-cuda\"\n"
                           "pytorch_style = \"find-links\"\n";
  Options options;
  options.source = url_source();
  const std::string out = render("ubuntu", options, text);
  CHECK(contains(out, "    content: |2\n      schema = 1\n      name = \"t\"\n\n      [os]\n"));
  CHECK(contains(out,
                 "\n      [mirrors]\n      cuda_repo = \"https://mirrors.example.cn/nvidia-cuda\"\n"
                 "      pytorch_style = \"find-links\"\n"));
}

TEST_CASE("profile values reach the per-boot script only single-quoted", "[cloudinit]") {
  Options options;
  options.source = preinstalled_source("/opt/it's here/gpuenv");
  options.selection = {{"framework.python", "3.11'; touch /tmp/gpuenv-pwned; '"},
                       {"os.version", "$(id) `id` \"x\" \\n\nnext"}};
  auto script = gpuenv::cloudinit::render_per_boot_script(options);
  REQUIRE(script.has_value());
  const std::string out = run_settings(*script, "printf '<%s>\\n' \"$GPUENV_BIN\" \"$@\"");
  CHECK(out ==
        "</opt/it's here/gpuenv>\n<--set>\n<framework.python=3.11'; touch /tmp/gpuenv-pwned; '>\n<--set>\n"
        "<os.version=$(id) `id` \"x\" \\n\nnext>\n");
  CHECK(run_settings(*script, "printf '%s|%s|%s' \"$GPUENV_MODE\" \"$GPUENV_RETRIES\" \"$GPUENV_MAX_REBOOTS\"") ==
        "install|3|5");
}

TEST_CASE("sh_quote and base64", "[cloudinit]") {
  using gpuenv::cloudinit::base64;
  using gpuenv::cloudinit::sh_quote;
  CHECK(sh_quote("") == "''");
  CHECK(sh_quote("a b") == "'a b'");
  CHECK(sh_quote("it's") == "'it'\\''s'");
  // RFC 4648 section 10 test vectors.
  const std::vector<std::pair<std::string, std::string>> vectors = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) CHECK(base64(in) == out);
}

TEST_CASE("yaml_content keeps the text exactly: literal block or base64", "[cloudinit]") {
  using gpuenv::cloudinit::yaml_content;
  struct Row {
    std::string text;
    std::string yaml;
  };
  const std::vector<Row> rows = {
      {"a\nb\n", "    content: |2\n      a\n      b\n"},
      {"a\n\nb", "    content: |2-\n      a\n\n      b\n"},
      {"  indented\n\n\n", "    content: |2+\n        indented\n\n\n"},
      {"tab\there\n", "    encoding: b64\n    content: dGFiCWhlcmUK\n"},
      {"caf\xc3\xa9\n", "    encoding: b64\n    content: Y2Fmw6kK\n"},
      {"a\n   \nb\n", "    encoding: b64\n    content: YQogICAKYgo=\n"},
      {"\n", "    encoding: b64\n    content: Cg==\n"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(yaml_content(row.text, 4) == row.yaml);
  }
}

TEST_CASE("the rendered per-boot script passes shellcheck as POSIX sh", "[cloudinit][system-test][engine]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_UNLESS(!system->run({"shellcheck", "--version"}, std::chrono::seconds(30)).not_found,
                     "shellcheck is not installed (scripts/bootstrap installs it)");
  Options options;
  options.source = url_source();
  options.selection = {{"framework.python", "3.11"}};
  auto script = gpuenv::cloudinit::render_per_boot_script(options);
  REQUIRE(script.has_value());
  std::string pattern = "/tmp/gpuenv-per-boot-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, script->data(), script->size()) == static_cast<ssize_t>(script->size()));
  ::close(fd);
  const auto result = system->run({"shellcheck", "--shell=sh", "--severity=style", pattern}, std::chrono::seconds(60));
  ::unlink(pattern.c_str());
  INFO(result.out);
  CHECK(result.exit_code == 0);
}

TEST_CASE("the per-boot script goes into user-data without its comment lines, the settings block's aside",
          "[cloudinit]") {
  // EC2 refuses user-data above 16 KB; the explanations stay in data/cloudinit/per-boot.sh.
  Options options;
  options.source = url_source();
  const auto script = gpuenv::cloudinit::render_per_boot_script(options);
  REQUIRE(script);
  std::vector<std::string> comments;
  for (std::string_view line : gpuenv::util::split_lines(*script))
    if (gpuenv::util::starts_with(gpuenv::util::trim(line), "#")) comments.emplace_back(line);
  REQUIRE(comments.size() == 4);
  CHECK(comments[0] == "#!/bin/sh");
  CHECK(contains(comments[1], "explained in data/cloudinit/per-boot.sh"));
  CHECK(comments[2] == "# Settings from gpuenv cloud-init.");
  CHECK(gpuenv::util::starts_with(comments[3], "# The matrix cell"));
  CHECK(contains(*script, "set -u\n"));
  CHECK(contains(*script, "systemctl reboot --no-block\n"));
  CHECK_FALSE(contains(*script, "--https-only"));  // wget's option applies to recursive downloads only
}
