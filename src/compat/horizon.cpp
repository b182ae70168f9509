#include "compat/horizon.hpp"

#include "compat/derive.hpp"

namespace gpuenv::compat {

namespace {

using util::Version;

/// The larger of `current` and `candidate`.
void keep_newest(std::optional<Version>& current, const std::optional<Version>& candidate) {
  if (candidate && (!current || *candidate > *current)) current = candidate;
}

/// The newest of `version_of(row)` over `rows` (rows without a version are skipped).
template <typename Rows, typename VersionOf>
std::optional<Version> newest_of(const Rows& rows, VersionOf version_of) {
  std::optional<Version> newest;
  for (const auto& row : rows) keep_newest(newest, version_of(row));
  return newest;
}

/// The `as_of` date a table's data file gives, or "" when it gives none.
std::string as_of_date(const KnowledgeBase& kb, const std::string& table) {
  const auto date = kb.as_of.find(table);
  return date == kb.as_of.end() ? std::string() : date->second;
}

Horizon make_horizon(const KnowledgeBase& kb, std::string table, std::string what, std::optional<Version> newest) {
  std::string date = as_of_date(kb, table);
  return Horizon{std::move(table), std::move(what), std::move(newest), std::move(date)};
}

}  // namespace

Horizon cuda_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "cuda.toml", "CUDA",
                      newest_of(kb.cuda_releases, [](const CudaRelease& row) { return row.version; }));
}

Horizon cudnn_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "cudnn.toml", "cuDNN",
                      newest_of(kb.cudnn_builds, [](const CudnnBuild& row) { return row.cudnn; }));
}

Horizon torch_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "pytorch.toml", "torch",
                      newest_of(kb.torch_releases, [](const TorchRelease& row) { return row.version; }));
}

Horizon torch_variant_horizon(const KnowledgeBase& kb) {
  std::optional<Version> newest;
  for (const TorchRelease& row : kb.torch_releases) {
    for (const std::string& variant : row.variants) keep_newest(newest, cuda_of_variant(variant));
  }
  return make_horizon(kb, "pytorch.toml", "torch wheels for CUDA", newest);
}

Horizon tensorflow_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "tensorflow.toml", "TensorFlow",
                      newest_of(kb.tensorflow_releases, [](const TensorflowRelease& row) { return row.version; }));
}

Horizon image_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "images.toml", "nvidia/cuda images at CUDA",
                      newest_of(kb.images, [](const CudaImage& row) { return row.cuda; }));
}

Horizon compute_capability_horizon(const KnowledgeBase& kb) {
  return make_horizon(kb, "cuda.toml", "compute capability", newest_of(kb.archs, [](const ArchSupport& row) {
                        return Version::parse(row.compute_capability);
                      }));
}

Horizon cuda_minor_horizon(const KnowledgeBase& kb, const Version& version) {
  const Version minor = version.truncated(2);
  return make_horizon(kb, "cuda.toml", "CUDA " + minor.str() + " updates, newest",
                      newest_of(kb.cuda_releases, [&minor](const CudaRelease& row) {
                        return row.version.truncated(2) == minor ? std::optional<Version>(row.version) : std::nullopt;
                      }));
}

Horizon image_minor_horizon(const KnowledgeBase& kb, const Version& version) {
  const Version minor = version.truncated(2);
  return make_horizon(kb, "images.toml", "nvidia/cuda images of CUDA " + minor.str() + ", newest",
                      newest_of(kb.images, [&minor](const CudaImage& row) {
                        return row.cuda.truncated(2) == minor ? std::optional<Version>(row.cuda) : std::nullopt;
                      }));
}

Horizon torch_minor_horizon(const KnowledgeBase& kb, const Version& version) {
  const Version minor = version.truncated(2);
  return make_horizon(kb, "pytorch.toml", "torch " + minor.str() + " releases, newest",
                      newest_of(kb.torch_releases, [&minor](const TorchRelease& row) {
                        return row.version.size() >= 3 && row.version.truncated(2) == minor
                                   ? std::optional<Version>(row.version)
                                   : std::nullopt;
                      }));
}

std::vector<Horizon> horizons(const KnowledgeBase& kb) {
  const std::optional<Version> newest_gpu =
      newest_of(kb.gpus, [](const GpuModel& row) { return Version::parse(row.compute_capability); });
  return {cuda_horizon(kb),          compute_capability_horizon(kb),
          cudnn_horizon(kb),         torch_horizon(kb),
          torch_variant_horizon(kb), tensorflow_horizon(kb),
          image_horizon(kb),         make_horizon(kb, "gpus.toml", "GPU models with compute capability", newest_gpu)};
}

bool beyond(const Horizon& horizon, const Version& version) {
  return horizon.newest && version > horizon.newest->truncated(version.size());
}

std::string beyond_message(const Horizon& horizon, const std::string& version) {
  return "gpuenv's data ends at " + horizon.what + " " + (horizon.newest ? horizon.newest->str() : "?") +
         (horizon.as_of.empty() ? "" : " (data as of " + horizon.as_of + ")") + "; " + version + " is newer";
}

std::string beyond_remedy(const Horizon& horizon) {
  return "update gpuenv, or add the row to a data overlay (" + horizon.table +
         " in /etc/gpuenv/data.d, $GPUENV_DATA_DIR or --data-dir; docs/knowledge-base.md)";
}

std::string as_of_note(const KnowledgeBase& kb, const std::string& table) {
  const std::string date = as_of_date(kb, table);
  return date.empty() ? std::string() : "(data as of " + date + ")";
}

}  // namespace gpuenv::compat
