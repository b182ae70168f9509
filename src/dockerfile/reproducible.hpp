#pragma once
// Reproducibility options of a generated Dockerfile (docs/dockerfile.md "Reproducible builds"): the base image
// pinned by digest (--digest, --digest-lock), the framework installed from a user-supplied hashed requirements
// file (--hashed-requirements, pip's hash-checking mode), BuildKit cache mounts for pip and uv, and pip itself
// pinned. Pure parsers and text builders; the cli reads the files.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dockerfile/data.hpp"
#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// pip's cache as a BuildKit cache mount: pip runs as root (before the final USER), so its cache is /root/.cache.
inline constexpr const char* k_pip_cache_mount = "--mount=type=cache,target=/root/.cache/pip";
/// uv's cache as a BuildKit cache mount (uv runs as root too).
inline constexpr const char* k_uv_cache_mount = "--mount=type=cache,target=/root/.cache/uv";
/// Index credentials as a BuildKit secret (`docker build --secret id=netrc,src=$HOME/.netrc`): pip and uv read
/// ~/.netrc, and nothing reaches a layer or the image history, as it would through a build argument.
inline constexpr const char* k_netrc_secret_mount = "--mount=type=secret,id=netrc,target=/root/.netrc,required=false";
/// Where a --hashed-requirements file is copied in the image (kept: it records what was installed).
inline constexpr const char* k_hashed_requirements_path = "/opt/venv/requirements.hashed.txt";

/// True for "sha256:" followed by 64 lower-case hex digits, the form of an image digest.
bool is_digest(std::string_view text);

/// A --digest value, checked: a usage Error naming what is wrong and the expected form.
util::Expected<std::string> parse_digest(std::string_view text);

/// Image digests by image reference ("nvidia/cuda:<tag>", "docker/dockerfile:1", "ghcr.io/astral-sh/uv:<tag>"), from
/// a --digest-lock file.
struct DigestLock {
  std::map<std::string, std::string> digests;
  /// The digest of `image` (the reference as written, registry mirror left out), or null.
  const std::string* find(const std::string& image) const;
};

/// Parses a --digest-lock file: one `<image>:<tag> sha256:<hex>` per line (a lower-case image reference with a tag
/// and no digest); blank lines and `#` comments are skipped. An input Error names the file, the line and the fix.
util::Expected<DigestLock> parse_digest_lock(std::string_view text, const std::string& file);

/// One pinned requirement of a hashed requirements file.
struct HashedRequirement {
  std::string name;                 ///< normalized: lower case, '_' and '.' as '-', extras dropped ("tensorflow")
  std::string version;              ///< as pinned, local label included ("2.9.1+cu128")
  std::vector<std::string> hashes;  ///< "--hash=sha256:<hex>" options, as written
  std::size_t line = 0;
};

/// A requirements file in pip's hash-checking form (`uv pip compile --generate-hashes`).
struct HashedRequirements {
  std::string path;  ///< the build-context path the Dockerfile COPYs, as the user gave it
  std::vector<HashedRequirement> pins;
  /// The pin of `name` (normalized), or null.
  const HashedRequirement* find(std::string_view name) const;
};

/// Parses and checks a --hashed-requirements file: every requirement pinned with `==` and carrying at least one
/// `--hash=sha256|sha384|sha512:<hex>`; no `-r`, `-c`, `-e` or other options (the Dockerfile copies this one
/// file and passes the index itself). `path` must be relative, inside the build context, with no `..` and no
/// characters a Dockerfile would read specially. An input Error names the file, line and fix.
util::Expected<HashedRequirements> parse_hashed_requirements(std::string_view text, const std::string& path);

/// An input Error unless `requirements` pins `package` at `version` (a local label is allowed, and must be
/// `+<variant>` when `variant` is set) and, when `numpy_cap` is "numpy<2", pins a NumPy 1.x if it pins NumPy.
util::Expected<util::Ok> check_framework_pin(const HashedRequirements& requirements, const std::string& package,
                                             const std::string& version, const std::string& variant,
                                             const std::string& numpy_cap);

/// The pip line of a hashed requirements file as a one-line requirements file of its own ("pip==26.2.1
/// --hash=sha256:..."), for installing pip from its hashes before everything else; an input Error when the file pins
/// no pip or pins it with characters outside a version's.
util::Expected<std::string> hashed_pip_requirement(const HashedRequirements& requirements);

/// The pip release that pins pip itself for `python` (data/dockerfile/python.toml [[pip]]), or null.
const PipPin* pip_for(const Data& data, const util::Version& python);
/// The advisory `pin` predates ([pip_advisory]: pins below its fixed release), or null.
const PipAdvisory* pip_advisory_of(const Data& data, const PipPin& pin);

}  // namespace gpuenv::dockerfile
