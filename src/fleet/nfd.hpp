#pragma once
// node-feature-discovery "local" feature source (NFD docs, customization guide: feature files): one
// `<namespace>/<name>=<value>` line per feature in a file under /etc/kubernetes/node-feature-discovery/features.d/,
// `#` comments, at most 64 kB, hidden (dot) files ignored so a writer creates `.name` and renames it into place.
// Values become node labels, so they follow the label-value syntax (<= 63 characters of [A-Za-z0-9._-], starting and
// ending alphanumeric).

#include <cstddef>
#include <optional>
#include <string>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::fleet {

/// What gpuenv publishes about a node.
struct NodeFeatures {
  bool ready = false;          ///< doctor would exit 0 (READY or DEGRADED)
  std::string verdict;         ///< "READY", "DEGRADED", "NOT READY"
  std::string driver_version;  ///< "550.54.15"; omitted when empty
  std::string cuda_version;    ///< highest CUDA the driver supports, "12.4"; omitted when empty
  std::string gpu_model;       ///< the first GPU's name; omitted when empty
  std::size_t gpu_count = 0;
  /// Unix time after which NFD ignores the file (`# +expiry-time=`, RFC 3339): a node whose writer stopped loses the
  /// labels instead of keeping `ready=true` forever. Omitted when unset.
  std::optional<long long> expires_unix = std::nullopt;
};

/// `unix_seconds` as RFC 3339 in UTC, "2026-12-01T02:52:28Z" (what NFD's local source parses with time.RFC3339).
std::string rfc3339_utc(long long unix_seconds);

/// `text` as a label value: runs of other characters become '-', trimmed to alphanumerics at both ends, at most 63
/// characters ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"); "" when nothing is left.
std::string nfd_label_value(const std::string& text);

/// The feature file's text: a comment naming the writer, the expiry directive when set
/// (kubernetes-sigs/node-feature-discovery docs/usage/customization-guide.md "Input format": it applies to the lines
/// after it), then `gpuenv.io/<name>=<value>` lines.
std::string nfd_feature_file(const NodeFeatures& features);

/// Writes `text` to `path` as NFD requires: a hidden `.name` in the same directory, then a rename over `path`.
util::Expected<util::Ok> write_nfd_feature_file(system::System& system, const std::string& path,
                                                const std::string& text);

}  // namespace gpuenv::fleet
