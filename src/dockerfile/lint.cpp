#include "dockerfile/lint.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "dockerfile/reproducible.hpp"
#include "dockerfile/text.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

/// Whitespace-separated words.
std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

/// The value of `--name=value` among leading flags ("" when absent).
std::string flag_value(const std::vector<std::string>& args, std::string_view name) {
  const std::string prefix = "--" + std::string(name) + "=";
  for (const std::string& arg : args) {
    if (!util::starts_with(arg, "--")) break;
    if (util::starts_with(arg, prefix)) return arg.substr(prefix.size());
  }
  return {};
}

/// `from=` inside each RUN --mount=... flag.
std::vector<std::string> mount_sources(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    if (!util::starts_with(arg, "--")) break;
    if (!util::starts_with(arg, "--mount=")) continue;
    for (std::string_view part : util::split(std::string_view(arg).substr(8), ',')) {
      if (util::starts_with(part, "from=")) out.emplace_back(part.substr(5));
    }
  }
  return out;
}

bool is_stage_name(std::string_view name) {
  static const std::regex re("[a-z][a-z0-9_.-]*");
  return std::regex_match(name.begin(), name.end(), re);
}

/// A Docker image reference spelled in lower case with an explicit tag other than latest.
bool is_pinned_reference(std::string_view image) {
  const std::size_t slash = image.rfind('/');
  const std::size_t colon = image.rfind(':');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash)) return false;
  return image.substr(colon + 1) != "latest" && colon + 1 < image.size();
}

class Checker {
 public:
  Checker(const std::vector<std::string>& allowed, bool root_allowed, bool syntax)
      : m_allowed(allowed), m_root_allowed(root_allowed), m_syntax(syntax) {}

  void check(const std::vector<Instruction>& instructions) {
    bool final_user_set = false;
    std::string final_user;
    std::size_t stage_count = 0;
    for (const Instruction& in : instructions) {
      const std::vector<std::string> args = words(in.arguments);
      if (in.keyword == "FROM") {
        ++stage_count;
        m_debian_frontend = false;
        m_user.clear();
        final_user_set = false;
        from(in, args);
      } else if (stage_count == 0 && in.keyword != "ARG") {
        problem(in, in.keyword + " before the first FROM");
      } else if (in.keyword == "COPY" || in.keyword == "ADD") {
        const std::string source = flag_value(args, "from");
        if (!source.empty()) reference(in, source, "COPY --from");
      } else if (in.keyword == "RUN") {
        for (const std::string& source : mount_sources(args)) reference(in, source, "RUN --mount from");
        run(in, args);
      } else if (in.keyword == "ARG") {
        if (stage_count == 0) global_arg(in.arguments);
        if (util::contains(in.arguments, "DEBIAN_FRONTEND=noninteractive")) m_debian_frontend = true;
      } else if (in.keyword == "ENV") {
        if (util::contains(in.arguments, "DEBIAN_FRONTEND")) {
          problem(in, "DEBIAN_FRONTEND set with ENV leaks into the image; use ARG");
        }
      } else if (in.keyword == "USER") {
        final_user_set = true;
        final_user = in.arguments;
        m_user = in.arguments.substr(0, in.arguments.find(':'));
      }
    }
    if (stage_count == 0) {
      m_problems.push_back("line 1: no FROM instruction");
      return;
    }
    if (!final_user_set) {
      m_problems.push_back("the final stage sets no USER: the image would run as root");
    } else {
      const std::string user = final_user.substr(0, final_user.find(':'));
      if ((user == "root" || user == "0") && !m_root_allowed) m_problems.push_back("the final stage's USER is root");
    }
  }

  std::vector<std::string> take() { return std::move(m_problems); }

 private:
  void problem(const Instruction& in, const std::string& what) {
    m_problems.push_back("line " + std::to_string(in.line) + ": " + what);
  }

  void from(const Instruction& in, const std::vector<std::string>& args) {
    std::vector<std::string> rest;
    for (const std::string& arg : args) {
      if (rest.empty() && util::starts_with(arg, "--")) continue;  // --platform=...
      rest.push_back(arg);
    }
    if (rest.size() != 1 && !(rest.size() == 3 && upper(rest[1]) == "AS")) {
      problem(in, "FROM needs `image [AS name]`");
      return;
    }
    // A registry mirror prefix (`${GPUENV_REGISTRY}/...`) is checked as a registry and left out of the name.
    const bool mirrored = util::starts_with(rest[0], "${GPUENV_REGISTRY}/");
    std::string image = resolve(in, rest[0]);
    if (const std::size_t at = image.find('@'); at != std::string::npos) {
      if (!is_digest(std::string_view(image).substr(at + 1)))
        problem(in, "`" + image.substr(at + 1) + "` is not a digest sha256:<64 hex digits>");
      image.resize(at);
    }
    if (image != util::to_lower(image)) problem(in, "image name `" + image + "` is not lower case");
    image = mirrored ? without_mirror(in, image) : without_registry(in, image);
    if (image == "scratch" || m_stages.contains(image)) {
      // a stage or the empty image
    } else if (util::starts_with(image, "nvidia/cuda:")) {
      if (!is_cuda_tag(image.substr(12)))
        problem(in, "`" + image + "` does not follow the nvidia/cuda tag grammar X.Y.Z-flavor-osVER");
    } else if (std::find(m_allowed.begin(), m_allowed.end(), image) == m_allowed.end()) {
      problem(in, "`" + image + "` is not an image gpuenv uses");
    } else if (!is_pinned_reference(image)) {
      problem(in, "`" + image + "` has no pinned tag");
    }
    if (rest.size() == 3) {
      const std::string& name = rest[2];
      if (!is_stage_name(name)) problem(in, "stage name `" + name + "` must be lower case [a-z][a-z0-9_.-]*");
      if (!m_stages.insert(name).second) problem(in, "stage `" + name + "` is defined twice");
    }
  }

  /// `NAME=default` of an ARG before the first FROM: the only variables a FROM may use.
  void global_arg(const std::string& arguments) {
    const std::size_t equals = arguments.find('=');
    if (equals != std::string::npos) m_global_args[arguments.substr(0, equals)] = arguments.substr(equals + 1);
  }

  /// `image` with each ${NAME} of a global ARG replaced by its default, as docker resolves a FROM.
  std::string resolve(const Instruction& in, const std::string& image) {
    std::string out = image;
    for (std::size_t start = out.find("${"); start != std::string::npos; start = out.find("${", start)) {
      const std::size_t end = out.find('}', start);
      const std::string name = end == std::string::npos ? std::string() : out.substr(start + 2, end - start - 2);
      const auto arg = m_global_args.find(name);
      if (arg == m_global_args.end()) {
        problem(in, "FROM uses `" + out.substr(start) + "`, which no ARG before the first FROM defines");
        return out;
      }
      out.replace(start, end - start + 1, arg->second);
      start += arg->second.size();
    }
    return out;
  }

  /// "<registry>/nvidia/cuda:<tag>" -> "nvidia/cuda:<tag>" when the registry is one (a host with '.' or ':', or
  /// localhost); other images keep their name.
  std::string without_registry(const Instruction& in, const std::string& image) {
    const std::size_t at = image.find("/nvidia/cuda:");
    if (at == std::string::npos) return image;
    const std::string registry = image.substr(0, at);
    const std::string host = registry.substr(0, registry.find('/'));
    if (host.find_first_of(".:") == std::string::npos && host != "localhost")
      problem(in, "`" + registry + "` before nvidia/cuda is not a registry host");
    return image.substr(at + 1);
  }

  /// "<registry>/<image>" -> "<image>" for a FROM behind the registry mirror ARG; the registry must be a host.
  std::string without_mirror(const Instruction& in, const std::string& image) {
    const auto registry = m_global_args.find("GPUENV_REGISTRY");
    if (registry == m_global_args.end() || !util::starts_with(image, registry->second + "/")) return image;
    const std::string host = registry->second.substr(0, registry->second.find('/'));
    if (host.find_first_of(".:") == std::string::npos && host != "localhost")
      problem(in, "`" + registry->second + "` is not a registry host");
    return image.substr(registry->second.size() + 1);
  }

  void reference(const Instruction& in, const std::string& source, const std::string& what) {
    if (m_stages.contains(source)) return;
    if (std::find(m_allowed.begin(), m_allowed.end(), source) != m_allowed.end()) return;
    problem(in, what + "=" + source + " names no earlier stage");
  }

  void run(const Instruction& in, const std::vector<std::string>& args) {
    const std::string& text = in.arguments;
    bool pip_cache = false;
    for (const std::string& arg : args) {
      if (!util::starts_with(arg, "--")) break;
      if (!util::starts_with(arg, "--mount=type=cache,")) continue;
      if (!m_syntax) problem(in, "RUN --mount without a `# syntax=docker/dockerfile:1` directive on the first line");
      // A cache under /root is only used by root: pip run by another USER would write its own cache into the layer.
      if (util::contains(arg, "target=/root/") && !m_user.empty() && m_user != "root" && m_user != "0")
        problem(in, "cache mount under /root for USER " + m_user + ", who does not use it");
      if (util::contains(arg, "target=/root/.cache/pip")) pip_cache = true;
    }
    if (util::contains(text, "apt-get upgrade") || util::contains(text, "apt-get dist-upgrade") ||
        util::contains(text, "dnf upgrade") || util::contains(text, "yum upgrade")) {
      problem(in, "upgrading the base image's packages moves NVIDIA's pinned libraries");
    }
    if (util::contains(text, "apt-get install")) {
      if (!m_debian_frontend) problem(in, "apt-get install without ARG DEBIAN_FRONTEND=noninteractive in this stage");
      if (!util::contains(text, "apt-get update"))
        problem(in, "apt-get install without apt-get update in the same RUN");
      if (!util::contains(text, "install -y --no-install-recommends"))
        problem(in, "apt-get install needs -y --no-install-recommends");
      if (!util::contains(text, "rm -rf /var/lib/apt/lists/*"))
        problem(in, "apt lists are not removed in the same RUN");
    }
    if (util::contains(text, "dnf install")) {
      if (!util::contains(text, "dnf install -y --setopt=install_weak_deps=False")) {
        problem(in, "dnf install needs -y --setopt=install_weak_deps=False");
      }
      if (!util::contains(text, "dnf clean all")) problem(in, "dnf install without dnf clean all in the same RUN");
    }
    if (util::contains(text, "yum install")) {
      if (!util::contains(text, "yum install -y")) problem(in, "yum install needs -y");
      if (!util::contains(text, "yum clean all")) problem(in, "yum install without yum clean all in the same RUN");
    }
    if (util::contains(text, "pip install") && !pip_cache && !util::contains(text, "pip install --no-cache-dir")) {
      problem(
          in,
          "pip install needs a cache mount at /root/.cache/pip or --no-cache-dir (its cache would stay in the layer)");
    }
    if (util::contains(text, "pip install") && !util::contains(text, "--require-hashes")) {
      // Every pip requirement gpuenv writes is pinned: name==version, or "name<bound" for a cap.
      const std::vector<std::string> pip_words = words(text.substr(text.find("pip install") + 11));
      for (std::size_t i = 0; i < pip_words.size() && pip_words[i] != "&&"; ++i) {
        const std::string& word = pip_words[i];
        if (word == "--index-url" || word == "--extra-index-url" || word == "--find-links" || word == "-r") {
          ++i;  // the option's value
          continue;
        }
        if (util::starts_with(word, "-") || util::contains(word, "==") || util::starts_with(word, "\"")) continue;
        problem(in, "pip requirement `" + word + "` is not pinned");
      }
    }
  }

  const std::vector<std::string>& m_allowed;
  bool m_root_allowed = false;
  std::set<std::string> m_stages;
  std::map<std::string, std::string> m_global_args;
  bool m_syntax = false;  ///< the text starts with a syntax directive naming docker/dockerfile:1
  bool m_debian_frontend = false;
  std::string m_user;  ///< the current stage's USER ("" = root)
  std::vector<std::string> m_problems;
};

}  // namespace

std::vector<Instruction> parse_instructions(std::string_view text) {
  std::vector<Instruction> out;
  for (const LogicalLine& logical : logical_lines(text, CommentRule::dockerfile)) {
    const std::string_view line = logical.text;
    const std::size_t space = line.find_first_of(" \t");
    out.push_back({upper(line.substr(0, space)),
                   space == std::string_view::npos ? std::string() : std::string(util::trim(line.substr(space))),
                   logical.line});
  }
  return out;
}

bool is_cuda_tag(std::string_view tag) {
  static const std::regex re(
      "[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}-"
      "(base|runtime|devel|cudnn[0-9]?-runtime|cudnn[0-9]?-devel)-"
      "(ubuntu[0-9]{2}\\.[0-9]{2}|ubi[0-9]{1,2}|rockylinux[0-9]{1,2}|amzn[0-9]{4}|centos[0-9]|oraclelinux[0-9]{1,2})");
  return std::regex_match(tag.begin(), tag.end(), re);
}

bool is_syntax_directive(std::string_view line) {
  // docker/dockerfile:1, behind a registry mirror (a host, then the path), pinned by digest or not.
  static const std::regex re(
      "# syntax=(([a-z0-9-]+(\\.[a-z0-9-]+)+|localhost)(:[0-9]{1,5})?(/[a-z0-9._-]+)*/)?docker/dockerfile:1"
      "(@sha256:[0-9a-f]{64})?");
  return std::regex_match(line.begin(), line.end(), re);
}

std::vector<std::string> structural_problems(std::string_view text, const std::vector<std::string>& allowed_images,
                                             bool root_allowed) {
  Checker checker(allowed_images, root_allowed, is_syntax_directive(text.substr(0, text.find('\n'))));
  checker.check(parse_instructions(text));
  return checker.take();
}

}  // namespace gpuenv::dockerfile
