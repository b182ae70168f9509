#pragma once
// Profile + knowledge base -> Dockerfile text. Pure: no file access, no clock, no environment; the same input
// gives byte-identical output. `gpuenv dockerfile` (cli) decides where the text goes.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "dockerfile/reproducible.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"
#include "util/expected.hpp"

namespace gpuenv::dockerfile {

/// What the generated file says about where it came from, and optional extras.
struct Options {
  std::string gpuenv_version;  ///< "0.1.0", named in the header comment
  /// The profile argument to repeat in the "Regenerate with" line: a shipped profile's name or the user's path.
  std::string profile_argument;
  /// `--set FIELD=VALUE` pairs that select this cell (and any overrides), repeated in the "Regenerate with" line.
  profile::Assignments selection;
  /// Adds the gpuenv binary (downloaded per architecture or copied from the build context) for
  /// `gpuenv doctor --quick --oneline` as a startup/readiness probe; no HEALTHCHECK.
  bool with_doctor = false;
  /// The base image's digest ("sha256:<64 hex>"): FROM names `nvidia/cuda:<tag>@<digest>`, so docker pulls
  /// exactly that image and the tag stays for readers. Empty: the tag alone.
  std::string base_digest;
  /// How the digest was given, repeated in the "Regenerate with" line: "--digest sha256:..." or
  /// "--digest-lock FILE"; empty without a digest.
  std::string digest_argument;
  /// Digests of the other images the file names, keyed by reference as helper_images() lists them ("sha256:...");
  /// from --digest-lock. The syntax line and FROM then name <image>@<digest>; an image without one keeps its tag.
  std::map<std::string, std::string> helper_digests;
  /// A hashed requirements file that replaces the framework's pins (pip's hash-checking mode); nullopt: the
  /// pins. render() returns an input Error when it does not pin the profile's framework release.
  std::optional<HashedRequirements> hashed_requirements;
};

/// How the profile's Python gets into the image.
struct PythonPlan {
  enum class Method { none, os, uv };
  Method method = Method::none;
  std::string version;                ///< "3.11"
  std::vector<std::string> packages;  ///< OS packages (Method::os)
  std::string interpreter;            ///< "python3" (Method::os)
  std::string why;                    ///< one sentence for the Dockerfile comment
};

/// The plan for `profile` on its image OS (empty method when the profile has no framework).
PythonPlan plan_python(const profile::Profile& profile, const Data& data);

/// Findings only the Dockerfile generator can judge (ids `dockerfile.*`, docs/rules.md): whether the profile's
/// Python can be put into the image, and whether the framework finds the libraries it loads. `gpuenv dockerfile`
/// refuses a profile with a failing finding here or in compat::check_profile(..., Purpose::dockerfile).
std::vector<report::Finding> check(const profile::Profile& profile, const compat::KnowledgeBase& kb, const Data& data);

/// The Dockerfile for one resolved profile. The caller must have run the checks (an internal Error otherwise:
/// an unpublished base image, an unknown framework release, a Python with no plan). An input Error when
/// options.hashed_requirements does not pin the framework release the profile installs. The text is verified
/// with structural_problems() before it is returned.
util::Expected<std::string> render(const profile::Profile& profile, const compat::KnowledgeBase& kb, const Data& data,
                                   const Options& options);

/// A stable hash of the resolved profile: FNV-1a 64 over its canonical field list, "fnv1a64:<16 hex digits>".
/// The list is one "key=value\n" line per non-empty scalar field in schema order (profile::scalar_fields()),
/// leaving out `name`, `description` and the [mirrors] fields (they change where the bytes come from, not what
/// is built), then gpu.compute_capabilities and gpu.models joined by ','.
std::string profile_hash(const profile::Profile& profile);
/// The canonical field list hashed by profile_hash().
std::string canonical_fields(const profile::Profile& profile);
/// FNV-1a 64 of `bytes`.
std::uint64_t fnv1a64(std::string_view bytes);

/// The images besides the nvidia/cuda base that the Dockerfile for `profile` names: the syntax directive's
/// docker/dockerfile:1, uv's image when uv installs Python, the curl image with --with-doctor.
std::vector<std::string> helper_images(const profile::Profile& profile, const Data& data, bool with_doctor);

/// The file name for one matrix cell in `--all` output: "<profile>.Dockerfile" for a profile without a matrix,
/// otherwise "<profile>_<key>-<value>_....Dockerfile" with anything outside [A-Za-z0-9._-] replaced by '-'.
std::string cell_file_name(const std::string& profile_name, const profile::Assignments& assignments);

/// cell_file_name made unique among `taken` (two cells whose values differ only in unsafe characters get "-2",
/// "-3", ... before ".Dockerfile"), and added to it.
std::string unique_cell_file_name(const std::string& profile_name, const profile::Assignments& assignments,
                                  std::set<std::string>& taken);

/// How messages and the `--all` index name a cell: "key=value,key=value", or the profile's name for no assignments.
std::string cell_label(const std::string& profile_name, const profile::Assignments& assignments);

/// The `--set key=value` arguments that pick a cell, space-separated ("" for none).
std::string set_arguments(const profile::Assignments& assignments);

/// The `gpuenv dockerfile` arguments that regenerate a file: profile argument, --set pairs, --with-doctor, the
/// digest option and --hashed-requirements.
std::string regenerate_arguments(const Options& options);

}  // namespace gpuenv::dockerfile
