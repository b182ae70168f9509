#pragma once
// The compatibility knowledge base: data/compat/*.toml, compiled in, each row with its status and source.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"
#include "util/toml_rows.hpp"
#include "util/version.hpp"

namespace gpuenv::compat {

/// Where a fact comes from and how sure we are of it (verified | secondary | unverified).
struct Provenance {
  std::string status;
  std::string source;
  std::string note;
};

/// Reads a data row's `status` (verified | secondary | unverified), `source` and optional `note`.
Provenance read_provenance(util::TomlRow& row);

struct CudaRelease {
  util::Version version;
  std::optional<util::Version> driver_min;  ///< Linux x86_64; absent when NVIDIA does not list it
  Provenance provenance;
  /// Where NVIDIA's image list was read showing no nvidia/cuda images of this release (`images = false`: the
  /// minor's images stayed at an earlier update); empty when its images are published or not known.
  std::string no_images_source;
};

struct CudaMajor {
  int major = 0;
  util::Version compat_driver_min;  ///< minor-version compatibility floor
  Provenance provenance;
};

struct ArchSupport {
  std::string compute_capability;  ///< "7.5"
  std::string name;
  util::Version first_cuda;                ///< major.minor
  std::optional<util::Version> last_cuda;  ///< absent while still supported
  Provenance provenance;
  std::optional<util::Version> driver_min;  ///< the oldest driver that runs this generation, where sourced
  std::string driver_modules;               ///< "open" when only the open kernel modules drive it; else empty
  /// driver_min was inferred (the driver of the first toolkit that targets it), not read in a driver's notes: a
  /// profile's driver below it warns in gpu.driver instead of failing (install still picks a branch at or above it:
  /// a newer driver is the safe side of a doubtful floor).
  bool driver_min_inferred = false;
};

struct CudnnBuild {
  util::Version cudnn;
  int cuda_major = 0;
  std::vector<util::Version> cuda_versions;  ///< major.minor; empty when the source names only the CUDA major
  std::optional<util::Version> driver_min;
  std::vector<std::string> compute_capabilities;  ///< empty when the matrix states no list
  Provenance provenance;
};

/// The first cuDNN release without the GPUs below a compute capability (cuDNN 9.11.0 dropped Maxwell, Pascal and
/// Volta: below 7.5).
struct CudnnArchDrop {
  util::Version cudnn;
  util::Version compute_capability_below;
  std::string name;  ///< the generations dropped, for messages
  Provenance provenance;
};

struct TorchSeries {
  util::Version series;  ///< "2.4"
  util::Version python_min;
  util::Version python_max;
  Provenance provenance;
  /// Pythons PyTorch's compatibility matrix marks experimental for this series ("3.12", "3.13t"): wheels exist
  /// but are not supported.
  std::vector<std::string> python_experimental;
};

struct TorchRelease {
  util::Version version;              ///< "2.4.1", or a series "2.12" when patch releases are not known
  std::vector<std::string> variants;  ///< the CUDA wheels for Linux x86_64 (and Windows)
  std::string torchvision;            ///< empty when unknown
  std::string torchaudio;
  std::string install;  ///< index-url | extra-index-url | find-links
  Provenance provenance;
  /// The CUDA variants with a Linux aarch64 wheel, complete but for `aarch64_unknown`; absent when not known at all.
  std::optional<std::vector<std::string>> aarch64_variants;
  std::vector<std::string> aarch64_unknown;  ///< variants whose aarch64 wheel is not known either way
  std::string aarch64_source;                ///< where the aarch64 availability was read
};

/// Whether a torch release publishes a CUDA variant's wheel for a CPU architecture.
enum class WheelAvailability { published, absent, unknown };

/// Whether `release` publishes a Linux aarch64 wheel of `variant`: unknown where the data does not say.
WheelAvailability aarch64_wheel(const TorchRelease& release, const std::string& variant);

/// The platform whose wheels a TorchArch row describes: `[[arch]]` rows are Linux x86_64 (and Windows),
/// `[[arch_aarch64]]` rows Linux aarch64 (arm64-sbsa), whose wheels are built for other GPU architectures.
inline constexpr const char* k_wheel_x86_64 = "x86_64";
inline constexpr const char* k_wheel_aarch64 = "aarch64";

struct TorchArch {
  std::vector<util::Version> series;
  std::string variant;
  std::vector<std::string> compute_capabilities;
  std::string ptx;
  Provenance provenance;
  std::string platform = k_wheel_x86_64;  ///< k_wheel_x86_64 | k_wheel_aarch64
};

struct TensorflowRelease {
  util::Version version;
  util::Version python_min;
  util::Version python_max;
  util::Version cuda;   ///< major.minor
  util::Version cudnn;  ///< major.minor
  bool and_cuda = false;
  Provenance provenance;
};

struct CudaImage {
  util::Version cuda;
  std::string lifecycle;  ///< active | eol
  std::vector<std::string> os;
  std::string cudnn_token;  ///< cudnn8 | cudnn9 | cudnn | "" (none)
  std::vector<std::string> cudnn_os;
  std::string cudnn_version;  ///< inside the cuDNN variant; may be empty
  std::string eol_date;
  std::string deletion_date;
  Provenance provenance;
  /// `os_listing = "partial"`: the sources list some of the OSes only, so an OS missing from `os` / `cudnn_os` is
  /// unknown (a warning), not unpublished (a failure).
  bool os_partial = false;
};

/// NVIDIA's container support policy ([policy] in images.toml): when a published tag goes end-of-life.
struct ImagePolicy {
  int majors_supported = 0;         ///< CUDA majors with supported images (2: 12 and 13); 0 when unknown
  bool latest_update_only = false;  ///< a newer update of the same CUDA minor makes a tag end-of-life
  Provenance provenance;
};

struct GpuModel {
  std::string model;
  std::vector<std::string> aliases;
  std::string compute_capability;
  Provenance provenance;
};

/// All tables. Lookups return nullptr (or empty) when the knowledge base has no such row.
struct KnowledgeBase {
  std::vector<CudaRelease> cuda_releases;  ///< sorted by version
  std::vector<CudaMajor> cuda_majors;
  std::vector<ArchSupport> archs;
  std::vector<CudnnBuild> cudnn_builds;
  std::vector<CudnnArchDrop> cudnn_arch_drops;
  std::vector<TorchSeries> torch_series;
  std::vector<TorchRelease> torch_releases;
  std::vector<TorchArch> torch_archs;
  std::vector<TensorflowRelease> tensorflow_releases;
  std::vector<CudaImage> images;
  ImagePolicy image_policy;
  std::vector<util::Version> os_less_tags;
  std::vector<GpuModel> gpus;
  std::map<std::string, std::string> as_of;  ///< table file name ("cuda.toml") -> the date its data was checked

  const CudaRelease* cuda_release(const util::Version& version) const;
  /// The releases just below and just above `version` (either may be null), for "nearest real release".
  std::pair<const CudaRelease*, const CudaRelease*> neighbours(const util::Version& version) const;
  /// The lowest driver any release of CUDA major.minor requires (its GA), if known.
  std::optional<util::Version> driver_for_minor(const util::Version& major_minor) const;
  const CudaMajor* cuda_major(int major) const;
  const ArchSupport* arch(const std::string& compute_capability) const;
  const TorchSeries* torch_series_of(const util::Version& torch) const;
  /// The exact release, or the series-level row covering it.
  const TorchRelease* torch_release(const util::Version& torch) const;
  /// The architecture list of `torch`'s `variant` wheel for `platform` (k_wheel_x86_64 | k_wheel_aarch64).
  const TorchArch* torch_arch(const util::Version& torch, const std::string& variant,
                              std::string_view platform = k_wheel_x86_64) const;
  /// The release whose version starts with `tf` ("2.16" matches "2.16.1").
  const TensorflowRelease* tensorflow_release(const util::Version& tf) const;
  const CudaImage* image(const util::Version& cuda) const;
  /// The row whose model or one of whose aliases is `name` (util::gpu_name_matches: whole names, case-insensitive,
  /// a leading "NVIDIA "/"Tesla " and a MIG suffix ignored); nullptr when none.
  const GpuModel* gpu(const std::string& name) const;
};

/// Parses the tables from their TOML files (name -> text) with `overlay`'s rows merged in; an internal Error
/// naming the file and row on bad built-in data, an input Error naming the overlay file and line on a bad overlay.
util::Expected<KnowledgeBase> parse_knowledge_base(std::span<const util::EmbeddedFile> files,
                                                   const util::Overlay& overlay = {});

/// The knowledge base's tables (data/compat/*.toml, compiled in) and how an overlay's rows replace theirs.
std::vector<util::DataTable> data_tables();

/// The compiled-in tables with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<KnowledgeBase> load_knowledge_base(const util::Overlay& overlay);

/// The knowledge base compiled into this binary with the installed overlay (util::install_overlay), parsed once.
util::Expected<const KnowledgeBase*> builtin_knowledge_base();

}  // namespace gpuenv::compat
