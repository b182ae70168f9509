#include "dockerfile/reproducible.hpp"

#include <regex>

#include "dockerfile/text.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

using util::Error;

bool is_hex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return !text.empty();
}

/// Why `text` is not a digest, or "" when it is one.
std::string digest_problem(std::string_view text) {
  if (!util::starts_with(text, "sha256:")) return "does not start with `sha256:`";
  const std::string_view hex = text.substr(7);
  if (hex.size() != 64) return "has " + std::to_string(hex.size()) + " hex digits after `sha256:`, not 64";
  if (!is_hex(hex)) return "has characters other than lower-case hex digits after `sha256:`";
  return {};
}

std::string located(const std::string& file, std::size_t line) { return file + ":" + std::to_string(line); }

/// PEP 503 normalization, extras dropped: "TensorFlow[and-cuda]" -> "tensorflow".
std::string normalized_name(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, name.find('['))) {
    if (c == '_' || c == '.') c = '-';
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

/// Whether `path` can be written into a COPY as a build-context path.
std::string path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "is absolute; COPY reads from the build context";
  for (std::string_view part : util::split(path, '/')) {
    if (part == "..") return "leaves the build context (`..`)";
  }
  for (char c : path) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-' || c == '/';
    if (!safe) return std::string("has the character `") + c + "` (allowed: letters, digits, . _ - /)";
  }
  return {};
}

/// `--hash=<algorithm>:<hex>` with a digest length that matches the algorithm.
bool is_hash_option(std::string_view word) {
  if (!util::starts_with(word, "--hash=")) return false;
  const std::string_view value = word.substr(7);
  const std::size_t colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view algorithm = value.substr(0, colon);
  const std::string_view hex = value.substr(colon + 1);
  const std::size_t length = algorithm == "sha256" ? 64 : algorithm == "sha384" ? 96 : algorithm == "sha512" ? 128 : 0;
  return length != 0 && hex.size() == length && is_hex(hex);
}

/// A Docker image reference with a tag and no digest: lower-case path components (a registry host among them),
/// `:tag`.
bool is_tagged_reference(std::string_view text) {
  static const std::regex re(
      "[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
  return std::regex_match(text.begin(), text.end(), re);
}

/// A PEP 440 version as it may stand in a generated RUN line.
bool is_plain_version(std::string_view text) {
  static const std::regex re("[0-9][A-Za-z0-9.!+_-]{0,63}");
  return std::regex_match(text.begin(), text.end(), re);
}

}  // namespace

bool is_digest(std::string_view text) { return digest_problem(text).empty(); }

util::Expected<std::string> parse_digest(std::string_view text) {
  const std::string problem = digest_problem(text);
  if (problem.empty()) return std::string(text);
  return Error::usage("--digest `" + std::string(text) + "` " + problem,
                      "pass the base image's digest as sha256:<64 hex digits>, e.g. from `docker buildx imagetools "
                      "inspect nvidia/cuda:<tag>` (the Digest line)");
}

const std::string* DigestLock::find(const std::string& image) const {
  const auto it = digests.find(image);
  return it == digests.end() ? nullptr : &it->second;
}

util::Expected<DigestLock> parse_digest_lock(std::string_view text, const std::string& file) {
  DigestLock lock;
  std::size_t number = 0;
  for (std::string_view raw : util::split_lines(text)) {
    ++number;
    const std::string_view line = util::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> words;
    for (std::string_view word : util::split(line, ' ')) {
      if (!util::trim(word).empty()) words.emplace_back(util::trim(word));
    }
    const std::string fix = "write one `<image>:<tag> sha256:<64 hex digits>` per line (docs/dockerfile.md)";
    if (words.size() != 2) {
      return Error::input(located(file, number) + ": expected `<image> <digest>`, found " +
                              std::to_string(words.size()) + " word" + (words.size() == 1 ? "" : "s"),
                          fix);
    }
    if (!is_tagged_reference(words[0])) {
      return Error::input(located(file, number) + ": `" + words[0] +
                              "` is not an image reference with a tag (lower case, `name:tag`, no digest)",
                          fix);
    }
    if (const std::string problem = digest_problem(words[1]); !problem.empty()) {
      return Error::input(located(file, number) + ": the digest of " + words[0] + " " + problem, fix);
    }
    const auto [it, inserted] = lock.digests.emplace(words[0], words[1]);
    if (!inserted && it->second != words[1]) {
      return Error::input(located(file, number) + ": " + words[0] + " is listed twice with different digests",
                          "keep one line per image");
    }
  }
  if (lock.digests.empty()) return Error::input(file + ": no `<image>:<tag> sha256:<hex>` line", "add one per image");
  return lock;
}

const HashedRequirement* HashedRequirements::find(std::string_view name) const {
  for (const HashedRequirement& pin : pins) {
    if (pin.name == name) return &pin;
  }
  return nullptr;
}

util::Expected<HashedRequirements> parse_hashed_requirements(std::string_view text, const std::string& path) {
  if (const std::string problem = path_problem(path); !problem.empty()) {
    return Error::usage("--hashed-requirements " + path + ": the path " + problem,
                        "name the file relative to the build context (the directory `docker build` is given), "
                        "e.g. requirements.txt");
  }
  const std::string generate = "generate the file with `uv pip compile --generate-hashes` (docs/dockerfile.md)";
  HashedRequirements out;
  out.path = path;
  for (const LogicalLine& logical : logical_lines(text, CommentRule::pip)) {
    std::vector<std::string_view> words;
    for (std::string_view word : util::split(logical.text, ' ')) {
      if (!util::trim(word).empty()) words.push_back(util::trim(word));
    }
    const std::string where = located(path, logical.line);
    if (util::starts_with(words[0], "-")) {
      return Error::input(where + ": option `" + std::string(words[0]) + "` in a hashed requirements file",
                          "remove it: the Dockerfile copies only this file and passes the package index itself");
    }
    // The requirement is everything before the first --hash; markers (`; python_version ...`) are kept by pip.
    std::string requirement;
    std::vector<std::string> hashes;
    for (std::string_view word : words) {
      if (util::starts_with(word, "--hash")) {
        if (!is_hash_option(word)) {
          return Error::input(where + ": `" + std::string(word) + "` is not --hash=sha256:<64 hex digits>", generate);
        }
        hashes.emplace_back(word);
      } else if (hashes.empty()) {
        requirement += (requirement.empty() ? "" : " ") + std::string(word);
      } else {
        return Error::input(where + ": `" + std::string(word) + "` after the hashes", generate);
      }
    }
    const std::string spec = requirement.substr(0, requirement.find(';'));
    const std::size_t equals = spec.find("==");
    if (equals == std::string::npos || spec.find_first_of("<>!~,", 0) != std::string::npos) {
      return Error::input(where + ": `" + requirement + "` is not pinned with ==",
                          "pip's hash-checking mode needs every requirement pinned; " + generate);
    }
    if (hashes.empty()) return Error::input(where + ": " + requirement + " has no --hash", generate);
    HashedRequirement pin;
    pin.name = normalized_name(util::trim(std::string_view(spec).substr(0, equals)));
    std::string_view version = util::trim(std::string_view(spec).substr(equals + 2));
    if (util::starts_with(version, "=")) version = util::trim(version.substr(1));  // ===
    pin.version = std::string(version);
    pin.hashes = std::move(hashes);
    pin.line = logical.line;
    out.pins.push_back(std::move(pin));
  }
  if (out.pins.empty()) return Error::input(path + ": no requirements", generate);
  return out;
}

util::Expected<util::Ok> check_framework_pin(const HashedRequirements& requirements, const std::string& package,
                                             const std::string& version, const std::string& variant,
                                             const std::string& numpy_cap) {
  const std::string regenerate = "regenerate the file from the profile's pins (docs/dockerfile.md)";
  const HashedRequirement* pin = requirements.find(package);
  if (pin == nullptr) {
    return Error::input(
        requirements.path + ": no " + package + " pin; the profile installs " + package + "==" + version, regenerate);
  }
  const std::size_t plus = pin->version.find('+');
  const std::string release = pin->version.substr(0, plus);
  const std::string label = plus == std::string::npos ? std::string() : pin->version.substr(plus + 1);
  if (release != version || (!label.empty() && !variant.empty() && label != variant)) {
    return Error::input(located(requirements.path, pin->line) + ": " + package + "==" + pin->version +
                            ", but the profile installs " + package + "==" + version +
                            (variant.empty() ? "" : " (the " + variant + " wheel)"),
                        regenerate);
  }
  if (numpy_cap == "numpy<2") {
    if (const HashedRequirement* numpy = requirements.find("numpy")) {
      const auto numpy_version = util::Version::parse(numpy->version.substr(0, numpy->version.find('+')));
      if (!numpy_version || numpy_version->major() >= 2) {
        return Error::input(located(requirements.path, numpy->line) + ": numpy==" + numpy->version + ", but " +
                                package + " " + version + " was built against NumPy 1.x",
                            "pin numpy<2 when compiling the file");
      }
    }
  }
  return util::Ok{};
}

util::Expected<std::string> hashed_pip_requirement(const HashedRequirements& requirements) {
  const HashedRequirement* pip = requirements.find("pip");
  if (pip == nullptr) {
    return Error::input(requirements.path +
                            ": no pip pin; with --hashed-requirements pip itself is installed from the file's hashes "
                            "before the framework",
                        "add pip to the requirements you compile (uv pip compile keeps it; pip-compile needs "
                        "--allow-unsafe) and regenerate the file");
  }
  if (!is_plain_version(pip->version)) {
    return Error::input(located(requirements.path, pip->line) + ": pip==" + pip->version + " is not a plain version",
                        "pin pip with a release number, e.g. pip==26.2.1");
  }
  return "pip==" + pip->version + " " + util::join(pip->hashes, " ");
}

const PipPin* pip_for(const Data& data, const util::Version& python) {
  const util::Version mm = python.truncated(2);
  for (const PipPin& row : data.pip) {
    if (!(mm < row.python_min) && !(row.python_max < mm)) return &row;
  }
  return nullptr;
}

const PipAdvisory* pip_advisory_of(const Data& data, const PipPin& pin) {
  const auto version = util::Version::parse(pin.version);
  if (!data.pip_advisory || !version || !(*version < data.pip_advisory->fixed)) return nullptr;
  return &*data.pip_advisory;
}

}  // namespace gpuenv::dockerfile
