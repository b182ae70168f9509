#pragma once
// The knowledge base's horizon: the newest release each table knows and the date its data was checked. A version
// past the horizon is not "invalid" but "newer than gpuenv knows" (a warning); inside it the data is complete.

#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "util/version.hpp"

namespace gpuenv::compat {

/// Where one table's knowledge ends: "CUDA" ends at 13.0.2, data as of 2026-11-30 (`as_of` may be empty).
struct Horizon {
  std::string table;  ///< the data file, "cuda.toml"
  std::string what;   ///< "CUDA", "cuDNN", "torch", "TensorFlow", "nvidia/cuda image", "compute capability"
  std::optional<util::Version> newest;
  std::string as_of;
};

/// Every table's horizon, in the order `gpuenv --version --verbose` prints them.
std::vector<Horizon> horizons(const KnowledgeBase& kb);

Horizon cuda_horizon(const KnowledgeBase& kb);
Horizon cudnn_horizon(const KnowledgeBase& kb);
Horizon torch_horizon(const KnowledgeBase& kb);
Horizon tensorflow_horizon(const KnowledgeBase& kb);
Horizon image_horizon(const KnowledgeBase& kb);
Horizon compute_capability_horizon(const KnowledgeBase& kb);
/// The newest CUDA any torch wheel variant of any release is built with (cu130 -> 13.0).
Horizon torch_variant_horizon(const KnowledgeBase& kb);

/// Where the data ends inside one CUDA minor (issue 25, rule 1): the newest CUDA X.Y release in cuda.toml, or the
/// newest nvidia/cuda image of X.Y in images.toml. `newest` is absent when the data has no release of that minor.
Horizon cuda_minor_horizon(const KnowledgeBase& kb, const util::Version& version);
Horizon image_minor_horizon(const KnowledgeBase& kb, const util::Version& version);
/// The same for PyTorch: the newest X.Y.Z torch release of the data; absent when it knows no patch release of X.Y
/// (or only the series row "X.Y", which covers every patch).
Horizon torch_minor_horizon(const KnowledgeBase& kb, const util::Version& version);

/// Whether `version` is past the horizon, compared at `version`'s own precision ("13.1" is past 13.0.2; "13.0" is
/// not).
bool beyond(const Horizon& horizon, const util::Version& version);

/// "gpuenv's data ends at CUDA 13.0.2 (data as of 2026-11-30); 13.4.1 is newer".
std::string beyond_message(const Horizon& horizon, const std::string& version);
/// The remedy of every past-the-horizon warning.
std::string beyond_remedy(const Horizon& horizon);

/// "(data as of 2026-11-30)" for `table`, or "" when its date is unknown.
std::string as_of_note(const KnowledgeBase& kb, const std::string& table);

}  // namespace gpuenv::compat
