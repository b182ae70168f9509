#include "profile/fields.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <regex>

#include "util/host_text.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::profile {
namespace {

using util::Error;

/// The field grammars are a fixed set of patterns: compile each once, not on every validation (a 1,000-cell
/// matrix validates thousands of values). Single-threaded use only, like the parser.
bool matches(std::string_view value, const char* pattern) {
  static std::map<std::string, std::regex, std::less<>> compiled;
  auto it = compiled.find(pattern);
  if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
  return std::regex_match(value.begin(), value.end(), it->second);
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

/// A scalar field: its spec, its check and where it lives in Profile.
struct FieldEntry {
  FieldSpec spec;
  std::function<bool(std::string_view)> valid;
  std::string Profile::*member = nullptr;
  /// [mirrors] fields live in Profile::mirrors (then `member` is null).
  std::string Mirrors::*mirror_member = nullptr;
  /// Why a value is refused ("" when it is fine), for grammars a pattern alone explains badly; then `valid` is unset.
  std::string (*problem)(std::string_view) = nullptr;
};

// ---- [mirrors] grammars (docs/mirrors.md). The values end up in Dockerfiles, apt sources and user-data, so
// ---- they are narrow: no quotes, spaces or shell metacharacters, no query and no credentials.

bool is_host(std::string_view host) {
  return matches(host, "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*");
}

bool is_port(std::string_view port) {
  const auto number = util::parse_int(port);
  return matches(port, "[0-9]{1,5}") && number && *number >= 1 && *number <= 65535;
}

/// "host[:port]" -> a problem, or "".
std::string authority_problem(std::string_view authority) {
  const std::size_t colon = authority.find(':');
  const std::string_view host = authority.substr(0, colon);
  if (!is_host(host)) return "`" + std::string(host) + "` is not a host name";
  if (colon != std::string_view::npos && !is_port(authority.substr(colon + 1)))
    return "`" + std::string(authority.substr(colon + 1)) + "` is not a port (1-65535)";
  return {};
}

std::string registry_problem(std::string_view value) {
  if (value.empty()) return "it is empty";
  if (value.find("://") != std::string_view::npos) return "it has a scheme; a registry is named without one";
  for (char c : value) {
    if (c >= 'A' && c <= 'Z') return "it is not lower case (image references are)";
    const bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!plain && std::string_view("._:/-").find(c) == std::string_view::npos)
      return std::string("it contains `") + c + "`, which a registry reference cannot hold";
  }
  if (value.back() == '/') return "it ends with `/`";
  const std::string_view authority = value.substr(0, value.find('/'));
  if (auto problem = authority_problem(authority); !problem.empty()) return problem;
  // Docker reads the first component as a registry only with a '.' or a port, or as localhost; anything else is a
  // Docker Hub namespace (`mirror/nvidia/cuda` is docker.io/mirror/nvidia/cuda).
  if (authority.find_first_of(".:") == std::string_view::npos && authority != "localhost")
    return "`" + std::string(authority) + "` would be read as a Docker Hub namespace, not a registry host";
  const std::string_view path = value.substr(authority.size());
  if (!path.empty() && !matches(path, "(/[a-z0-9]+([._-][a-z0-9]+)*)+"))
    return "its path `" + std::string(path) + "` is not a repository path (lower-case words separated by `/`)";
  return {};
}

/// A free-text field (`description`) is printed into Dockerfile comments and labels, user-data comments and
/// reports: one line of printable text, bounded, so it can never start a new Dockerfile instruction or YAML key.
std::string free_text_problem(std::string_view value) {
  constexpr std::size_t k_max_bytes = 1024;
  if (value.size() > k_max_bytes)
    return "it is " + std::to_string(value.size()) + " bytes; at most " + std::to_string(k_max_bytes);
  // TOML text is UTF-8 already; a --set value from the command line may not be.
  if (!util::is_valid_utf8(value)) return "it is not valid UTF-8";
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", c);
      return "it contains a control character (" + std::string(code) + ") at byte " + std::to_string(i) +
             "; a description is one line";
    }
  }
  return "";
}

/// The [mirrors] rows of the schema table.
FieldEntry mirror_url(std::string_view key, std::string_view grammar, std::string Mirrors::*member) {
  return {{key, grammar, false}, {}, nullptr, member, &https_url_problem};
}

const std::vector<FieldEntry>& entries() {
  static const std::vector<FieldEntry> table = {
      {{"name", "[a-z0-9][a-z0-9._-]{0,63} (lower-case letters, digits, '.', '_', '-')", true},
       [](std::string_view v) { return matches(v, "[a-z0-9][a-z0-9._-]{0,63}"); },
       &Profile::name},
      {{"description", "one line of printable text, at most 1024 bytes", false},
       {},
       &Profile::description,
       nullptr,
       &free_text_problem},
      {{"os.distro", "one of ubuntu, debian, rockylinux, rhel, ubi, amzn", true},
       [](std::string_view v) {
         return one_of(v, {"ubuntu", "debian", "rockylinux", "rhel", "ubi", "amzn"});
       },
       &Profile::os_distro},
      {{"os.version", "the distribution's version, e.g. \"22.04\", \"9\", \"2023\"", true},
       [](std::string_view v) { return matches(v, "[0-9]{1,4}(\\.[0-9]{1,2})?"); },
       &Profile::os_version},
      // The CPU architecture: Docker's and Debian's names (the kernel says aarch64; pip's wheel tags say both).
      {{"os.arch", "one of x86_64, arm64 (default x86_64; aarch64 is written arm64)", false},
       [](std::string_view v) {
         return one_of(v, {"x86_64", "arm64"});
       },
       &Profile::os_arch},
      {{"cuda.version", "X.Y.Z, as NVIDIA names releases and nvidia/cuda tags (e.g. \"12.4.1\")", true},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}"); },
       &Profile::cuda_version},
      {{"cudnn.version", "a major (\"9\") or major.minor[.patch] (\"8.9\", \"9.1.0\")", false},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}(\\.[0-9]{1,3}){0,3}"); },
       &Profile::cudnn_version},
      {{"driver.min", "a driver version such as \"550.54.15\" or \"570.26\"", false},
       [](std::string_view v) { return matches(v, "[0-9]{3}(\\.[0-9]{1,3}){0,2}"); },
       &Profile::driver_min},
      {{"driver.branch", "a three-digit driver branch such as \"550\"", false},
       [](std::string_view v) { return matches(v, "[0-9]{3}"); },
       &Profile::driver_branch},
      {{"driver.modules", "one of open, proprietary", false},
       [](std::string_view v) {
         return one_of(v, {"open", "proprietary"});
       },
       &Profile::driver_modules},
      // --- install additions (docs/install.md) ---
      {{"driver.source", "one of nvidia (NVIDIA's CUDA repository), distro (the distribution's archive)", false},
       [](std::string_view v) {
         return one_of(v, {"nvidia", "distro"});
       },
       &Profile::driver_source},
      {{"install.container_toolkit", "true or false", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_container_toolkit},
      {{"install.cuda_compat", "true or false", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_cuda_compat},
      {{"install.hold_kernel", "true or false: hold the kernel packages where the driver was built", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_hold_kernel},
      {{"install.dcgm", "true or false: install NVIDIA DCGM and enable its service", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_dcgm},
      // --- end install additions ---
      {{"image.flavor", "one of base, runtime, devel", false},
       [](std::string_view v) {
         return one_of(v, {"base", "runtime", "devel"});
       },
       &Profile::image_flavor},
      // [image] build options (docs/profile-format.md, docs/dockerfile.md)
      {{"image.compiler", "true or false: gcc and the Python headers for torch.compile (default true)", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::image_compiler},
      {{"image.user", "one of nonroot (uid 10001, gid 0; the default), root (an image meant as a base)", false},
       [](std::string_view v) {
         return one_of(v, {"nonroot", "root"});
       },
       &Profile::image_user},
      {{"image.writable_venv",
        "true or false: the Python environment group-writable, so the runtime uid can pip install into it (default "
        "false: read-only to it)",
        false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::image_writable_venv},
      {{"image.rdma",
        "true or false: the InfiniBand/RoCE user-space libraries (libibverbs, its providers, librdmacm) so NCCL can "
        "use "
        "RDMA (default false)",
        false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::image_rdma},
      {{"framework.name", "one of pytorch, tensorflow", false},
       [](std::string_view v) {
         return one_of(v, {"pytorch", "tensorflow"});
       },
       &Profile::framework_name},
      {{"framework.version", "X.Y or X.Y.Z (e.g. \"2.4.1\")", false},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}\\.[0-9]{1,3}(\\.[0-9]{1,3})?"); },
       &Profile::framework_version},
      {{"framework.python", "X.Y (e.g. \"3.11\")", false},
       [](std::string_view v) { return matches(v, "[23]\\.[0-9]{1,2}"); },
       &Profile::framework_python},
      {{"framework.variant", "a PyTorch wheel variant cuXYZ (e.g. \"cu124\")", false},
       [](std::string_view v) { return matches(v, "cu[0-9]{2,3}"); },
       &Profile::framework_variant},
      // [mirrors] (docs/mirrors.md)
      mirror_url("mirrors.cuda_repo",
                 "an https URL that replaces https://developer.download.nvidia.com/compute/cuda/repos, e.g. "
                 "\"https://mirrors.aliyun.com/nvidia-cuda\" (no query, credentials, spaces or quotes)",
                 &Mirrors::cuda_repo),
      mirror_url("mirrors.container_toolkit",
                 "an https URL that replaces https://nvidia.github.io/libnvidia-container, e.g. "
                 "\"https://mirrors.ustc.edu.cn/libnvidia-container\" (no query, credentials, spaces or quotes)",
                 &Mirrors::container_toolkit),
      mirror_url("mirrors.pypi",
                 "the https URL of a PyPI simple index, e.g. \"https://pypi.tuna.tsinghua.edu.cn/simple\" (no query, "
                 "credentials, spaces or quotes)",
                 &Mirrors::pypi),
      mirror_url("mirrors.pytorch",
                 "the https URL that holds the cuXYZ wheel directories, e.g. "
                 "\"https://mirrors.aliyun.com/pytorch-wheels\" (no query, credentials, spaces or quotes)",
                 &Mirrors::pytorch),
      {{"mirrors.pytorch_style",
        "one of find-links (a flat listing of wheel files, as Aliyun serves), index (a PEP 503 index, as "
        "download.pytorch.org)",
        false},
       [](std::string_view v) {
         return one_of(v, {"find-links", "index"});
       },
       nullptr,
       &Mirrors::pytorch_style},
      {{"mirrors.registry",
        "a registry host[:port][/path] without a scheme, e.g. \"docker.m.daocloud.io\" (the base image becomes "
        "<registry>/nvidia/cuda:<tag>)",
        false},
       {},
       nullptr,
       &Mirrors::registry,
       &registry_problem},
      mirror_url(
          "mirrors.distro_archive",
          "the https URL of a mirror of the distribution's archive that replaces http://archive.ubuntu.com/ubuntu "
          "and http://security.ubuntu.com/ubuntu in an Ubuntu image's apt sources (arm64: ports.ubuntu.com's "
          "ubuntu-ports becomes <url>-ports), e.g. \"https://mirrors.tuna.tsinghua.edu.cn/ubuntu\" (no query, "
          "credentials, spaces or quotes)",
          &Mirrors::distro_archive),
      mirror_url("mirrors.python_downloads",
                 "an https URL that replaces https://github.com/astral-sh/python-build-standalone/releases/download "
                 "(uv's UV_PYTHON_INSTALL_MIRROR; no query, credentials, spaces or quotes)",
                 &Mirrors::python_downloads),
  };
  return table;
}

/// Absent when `value` fits the entry; otherwise ": <why>", or "" when the grammar alone says it.
std::optional<std::string> refusal(const FieldEntry& entry, std::string_view value) {
  if (entry.problem != nullptr) {
    std::string why = entry.problem(value);
    if (why.empty()) return std::nullopt;
    return ": " + why;
  }
  if (entry.valid(value)) return std::nullopt;
  return std::string();
}

const FieldEntry* find_entry(std::string_view key) {
  for (const FieldEntry& entry : entries()) {
    if (entry.spec.key == key) return &entry;
  }
  return nullptr;
}

constexpr std::string_view k_array_fields[] = {"gpu.compute_capabilities", "gpu.models"};

Error unknown_field(std::string_view key) {
  std::string message = "unknown field `" + std::string(key) + "`";
  if (auto suggestion = util::closest_match(key, all_field_keys())) {
    message += "; did you mean `" + *suggestion + "`?";
  }
  return Error::input(message, "see docs/profile-format.md for the fields of schema 1");
}

}  // namespace

std::string https_url_problem(std::string_view value) {
  if (value.empty()) return "it is empty";
  for (char c : value) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return "it contains white space";
    if (c == '"' || c == '\'' || c == '`') return "it contains a quote";
  }
  if (util::starts_with(value, "http://")) return "it is plain http; a mirror must be https";
  if (!util::starts_with(value, "https://")) return "it is not an https URL";
  if (value.find('@') != std::string_view::npos)
    return "it carries credentials (user@host); keep those in the tool's own configuration (pip.conf, .netrc)";
  if (value.find_first_of("?#") != std::string_view::npos) return "it has a query or fragment";
  const std::string_view rest = value.substr(8);
  for (char c : rest) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!plain && std::string_view("._~%+/:-").find(c) == std::string_view::npos)
      return std::string("it contains `") + c + "`, which gpuenv does not accept in a mirror URL";
  }
  const std::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.empty()) return "it names no host";
  if (rest.find(':', authority.size()) != std::string_view::npos) return "its path contains `:`";
  return authority_problem(authority);
}

const std::vector<FieldSpec>& scalar_fields() {
  static const std::vector<FieldSpec> specs = [] {
    std::vector<FieldSpec> out;
    for (const FieldEntry& entry : entries()) out.push_back(entry.spec);
    return out;
  }();
  return specs;
}

std::vector<std::string> all_field_keys() {
  std::vector<std::string> keys;
  for (const FieldEntry& entry : entries()) keys.emplace_back(entry.spec.key);
  for (std::string_view key : k_array_fields) keys.emplace_back(key);
  return keys;
}

std::vector<std::string> keys_in_section(std::string_view section) {
  std::vector<std::string> keys;
  if (section.empty()) keys = {"schema", "matrix"};
  for (const std::string& key : all_field_keys()) {
    const std::size_t dot = key.find('.');
    const std::string_view key_section =
        dot == std::string::npos ? std::string_view() : std::string_view(key).substr(0, dot);
    if (key_section != section) continue;
    if (section.empty()) {
      keys.push_back(key);
    } else {
      keys.push_back(key.substr(dot + 1));
    }
  }
  if (section.empty()) {
    for (std::string_view table : {"os", "cuda", "cudnn", "driver", "image", "framework", "gpu", "mirrors", "install"})
      keys.emplace_back(table);
  }
  return keys;
}

bool is_boolean_field(std::string_view key) {
  const FieldEntry* entry = find_entry(key);
  return entry != nullptr && entry->spec.boolean;
}

bool is_compute_capability(std::string_view text) { return matches(text, "[1-9][0-9]?\\.[0-9]"); }

util::Expected<util::Ok> validate_field(std::string_view key, std::string_view value) {
  const FieldEntry* entry = find_entry(key);
  if (entry == nullptr) return unknown_field(key);
  if (auto why = refusal(*entry, value)) {
    // The value is quoted, cut at 80 bytes: it may be a megabyte of anything.
    const std::string_view shown = util::utf8_prefix(value, 80);
    const std::string quoted = std::string(shown) + (shown.size() < value.size() ? "..." : "");
    return Error::input("`" + std::string(key) + "` = \"" + quoted + "\" is not valid" + *why,
                        "write " + std::string(entry->spec.grammar));
  }
  return util::Ok{};
}

util::Expected<util::Ok> set_field(Profile& profile, std::string_view key, std::string_view value) {
  GPUENV_TRY(validate_field(key, value));
  const FieldEntry* entry = find_entry(key);
  (entry->member != nullptr ? profile.*(entry->member) : profile.mirrors.*(entry->mirror_member)) = std::string(value);
  return util::Ok{};
}

std::string get_field(const Profile& profile, std::string_view key) {
  const FieldEntry* entry = find_entry(key);
  if (entry == nullptr) return {};
  return entry->member != nullptr ? profile.*(entry->member) : profile.mirrors.*(entry->mirror_member);
}

}  // namespace gpuenv::profile
