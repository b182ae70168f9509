#include "compat/knowledge_base.hpp"

#include <algorithm>

#include "util/data_table.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"

namespace gpuenv::compat {

std::span<const util::EmbeddedFile> embedded_compat_data();  // generated from data/compat/*.toml

namespace {

using util::Error;
using util::Expected;
using util::TomlFile;
using util::TomlRow;
using util::Version;

bool contains_item(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

Expected<util::Ok> read_cuda(const TomlFile& file, KnowledgeBase& kb) {
  if (auto r = file.append_rows(
          "release", kb.cuda_releases,
          [](TomlRow& row) {
            CudaRelease release{row.version("version"), row.optional_version("driver_min"), read_provenance(row), {}};
            const bool images = row.optional_boolean("images").value_or(true);
            const std::string images_source = row.optional_text("images_source");
            if (!images && images_source.empty())
              row.fail("`images = false` needs `images_source`: where NVIDIA's image list was read without it");
            if (images && !images_source.empty()) row.fail("`images_source` comes with `images = false`");
            if (!images) release.no_images_source = images_source;
            return release;
          });
      !r)
    return r;
  if (auto r = file.append_rows("major", kb.cuda_majors,
                                [](TomlRow& row) {
                                  return CudaMajor{static_cast<int>(row.integer("major")),
                                                   row.version("compat_driver_min"), read_provenance(row)};
                                });
      !r)
    return r;
  return file.append_rows("arch", kb.archs, [](TomlRow& row) {
    ArchSupport arch{row.text("compute_capability"),
                     row.text("name"),
                     row.version("first_cuda"),
                     row.optional_version("last_cuda"),
                     read_provenance(row),
                     std::nullopt,
                     ""};
    arch.driver_min = row.optional_version("driver_min");
    arch.driver_modules = row.optional_text("driver_modules");
    arch.driver_min_inferred = row.optional_boolean("driver_min_inferred").value_or(false);
    if (arch.driver_min_inferred && !arch.driver_min) row.fail("`driver_min_inferred` needs a `driver_min`");
    if (!arch.driver_modules.empty() && arch.driver_modules != "open") row.fail("`driver_modules` must be \"open\"");
    return arch;
  });
}

Expected<util::Ok> read_cudnn(const TomlFile& file, KnowledgeBase& kb) {
  if (auto r = file.append_rows("build", kb.cudnn_builds,
                                [](TomlRow& row) {
                                  return CudnnBuild{row.version("cudnn"),
                                                    static_cast<int>(row.integer("cuda_major")),
                                                    row.versions("cuda_versions"),
                                                    row.optional_version("driver_min"),
                                                    row.optional_texts("compute_capabilities"),
                                                    read_provenance(row)};
                                });
      !r)
    return r;
  return file.append_rows("arch_drop", kb.cudnn_arch_drops, [](TomlRow& row) {
    return CudnnArchDrop{row.version("cudnn"), row.version("compute_capability_below"), row.text("name"),
                         read_provenance(row)};
  });
}

TorchRelease read_torch_release(TomlRow& row) {
  TorchRelease release{row.version("version"),
                       row.texts("variants"),
                       row.optional_text("torchvision"),
                       row.optional_text("torchaudio"),
                       row.text("install"),
                       read_provenance(row),
                       std::nullopt,
                       {},
                       ""};
  release.aarch64_variants = row.texts_if_present("aarch64_variants");
  release.aarch64_unknown = row.optional_texts("aarch64_unknown");
  release.aarch64_source = row.optional_text("aarch64_source");
  if (release.aarch64_variants && release.aarch64_source.empty())
    row.fail("`aarch64_variants` needs `aarch64_source`: where the Linux aarch64 wheels were read");
  if (!release.aarch64_variants && (!release.aarch64_unknown.empty() || !release.aarch64_source.empty()))
    row.fail("`aarch64_unknown` and `aarch64_source` come with `aarch64_variants`");
  return release;
}

TorchArch read_torch_arch(TomlRow& row, const char* platform) {
  std::vector<Version> series;
  for (const std::string& s : row.texts("series")) series.push_back(Version::parse(s).value_or(Version()));
  return TorchArch{
      series,  row.text("variant"), row.texts("compute_capabilities"), row.optional_text("ptx"), read_provenance(row),
      platform};
}

Expected<util::Ok> read_pytorch(const TomlFile& file, KnowledgeBase& kb) {
  if (auto r = file.append_rows(
          "series", kb.torch_series,
          [](TomlRow& row) {
            TorchSeries series{
                row.version("series"), row.version("python_min"), row.version("python_max"), read_provenance(row), {}};
            series.python_experimental = row.optional_texts("python_experimental");
            return series;
          });
      !r)
    return r;
  GPUENV_TRY(file.append_rows("release", kb.torch_releases, read_torch_release));
  if (auto r =
          file.append_rows("arch", kb.torch_archs, [](TomlRow& row) { return read_torch_arch(row, k_wheel_x86_64); });
      !r)
    return r;
  return file.append_rows("arch_aarch64", kb.torch_archs,
                          [](TomlRow& row) { return read_torch_arch(row, k_wheel_aarch64); });
}

Expected<util::Ok> read_tensorflow(const TomlFile& file, KnowledgeBase& kb) {
  return file.append_rows("release", kb.tensorflow_releases, [](TomlRow& row) {
    return TensorflowRelease{row.version("version"), row.version("python_min"), row.version("python_max"),
                             row.version("cuda"),    row.version("cudnn"),      row.boolean("and_cuda"),
                             read_provenance(row)};
  });
}

Expected<util::Ok> read_images(const TomlFile& file, KnowledgeBase& kb) {
  if (auto r = file.read_table("policy",
                               [&kb](TomlRow& row) {
                                 kb.image_policy.majors_supported = static_cast<int>(
                                     row.integer_in("majors_supported", 1, 10, "an integer from 1 to 10"));
                                 kb.image_policy.latest_update_only = row.boolean("latest_update_only");
                                 kb.image_policy.provenance = read_provenance(row);
                               });
      !r)
    return r;
  if (auto r = file.append_rows("image", kb.images,
                                [](TomlRow& row) {
                                  CudaImage image{row.version("cuda"),
                                                  row.text("lifecycle"),
                                                  row.texts("os"),
                                                  row.optional_text("cudnn_token"),
                                                  row.optional_texts("cudnn_os"),
                                                  row.optional_text("cudnn_version"),
                                                  row.optional_text("eol_date"),
                                                  row.optional_text("deletion_date"),
                                                  read_provenance(row)};
                                  const std::string listing = row.optional_text("os_listing");
                                  if (!listing.empty() && listing != "partial")
                                    row.fail("`os_listing` must be \"partial\" (or absent: the OS list is complete)");
                                  image.os_partial = listing == "partial";
                                  return image;
                                });
      !r)
    return r;
  return file.read_rows("os_less_tag", [&kb](TomlRow& row) {
    kb.os_less_tags.push_back(row.version("cuda"));
    read_provenance(row);
  });
}

Expected<util::Ok> read_gpus(const TomlFile& file, KnowledgeBase& kb) {
  return file.append_rows("gpu", kb.gpus, [](TomlRow& row) {
    return GpuModel{row.text("model"), row.optional_texts("aliases"), row.text("compute_capability"),
                    read_provenance(row)};
  });
}

/// One table: its file name, the top-level keys it may hold, how overlay rows are keyed, and its reader.
struct TableSpec {
  std::string_view name;
  std::vector<std::string_view> top_level;  ///< the arrays it may hold, and `as_of`
  std::vector<util::RowKey> keys;
  Expected<util::Ok> (*read)(const TomlFile&, KnowledgeBase&);
};

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> specs = {
      {"cuda.toml",
       {"as_of", "release", "major", "arch"},
       {{"release", {"version"}}, {"major", {"major"}}, {"arch", {"compute_capability"}}},
       read_cuda},
      {"cudnn.toml",
       {"as_of", "build", "arch_drop"},
       {{"build", {"cudnn", "cuda_major"}}, {"arch_drop", {"cudnn"}}},
       read_cudnn},
      {"pytorch.toml",
       {"as_of", "series", "release", "arch", "arch_aarch64"},
       {{"series", {"series"}},
        {"release", {"version"}},
        {"arch", {"series", "variant"}},
        {"arch_aarch64", {"series", "variant"}}},
       read_pytorch},
      {"tensorflow.toml", {"as_of", "release"}, {{"release", {"version"}}}, read_tensorflow},
      {"images.toml",
       {"as_of", "policy", "image", "os_less_tag"},
       {{"image", {"cuda"}}, {"os_less_tag", {"cuda"}}},
       read_images},
      {"gpus.toml", {"as_of", "gpu"}, {{"gpu", {"model"}}}, read_gpus},
  };
  return specs;
}

/// Reads one merged table into `kb`: its `as_of` date and its rows; no top-level key outside the spec.
Expected<util::Ok> read_table(const TableSpec& spec, const TomlFile& file, KnowledgeBase& kb) {
  if (const auto key = file.unexpected_key(spec.top_level))
    return Error::internal(std::string(spec.name) + ": unexpected top-level key `" + *key + "`");
  GPUENV_TRY_ASSIGN(auto as_of, file.top_level_text("as_of"));
  kb.as_of[std::string(spec.name)] = as_of;
  return spec.read(file, kb);
}

}  // namespace

Provenance read_provenance(TomlRow& row) {
  Provenance provenance{row.one_of("status", {"verified", "secondary", "unverified"}), row.text("source"),
                        row.optional_text("note")};
  // Every finding that cites the row says it came from the user's overlay, not from gpuenv's data.
  if (!row.origin().empty()) provenance.source += " (from " + row.origin() + ")";
  return provenance;
}

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_compat_data()) {
    for (const TableSpec& spec : table_specs()) {
      if (spec.name == file.name) tables.push_back({spec.name, file, spec.keys});
    }
  }
  return tables;
}

Expected<KnowledgeBase> parse_knowledge_base(std::span<const util::EmbeddedFile> files, const util::Overlay& overlay) {
  KnowledgeBase kb;
  for (const util::EmbeddedFile& file : files) {
    const auto spec = std::find_if(table_specs().begin(), table_specs().end(),
                                   [&file](const TableSpec& s) { return s.name == file.name; });
    if (spec == table_specs().end()) return Error::internal("unexpected knowledge-base file " + std::string(file.name));
    GPUENV_TRY_ASSIGN(auto parsed, util::read_data_table({spec->name, file, spec->keys}, overlay));
    GPUENV_TRY(read_table(*spec, parsed, kb));
  }
  std::sort(kb.cuda_releases.begin(), kb.cuda_releases.end(),
            [](const CudaRelease& a, const CudaRelease& b) { return a.version < b.version; });
  return kb;
}

Expected<KnowledgeBase> load_knowledge_base(const util::Overlay& overlay) {
  return parse_knowledge_base(embedded_compat_data(), overlay);
}

Expected<const KnowledgeBase*> builtin_knowledge_base() { return util::builtin_table<&load_knowledge_base>(); }

const CudaRelease* KnowledgeBase::cuda_release(const Version& version) const {
  for (const CudaRelease& release : cuda_releases) {
    if (release.version == version) return &release;
  }
  return nullptr;
}

std::pair<const CudaRelease*, const CudaRelease*> KnowledgeBase::neighbours(const Version& version) const {
  const CudaRelease* below = nullptr;
  const CudaRelease* above = nullptr;
  for (const CudaRelease& release : cuda_releases) {
    if (release.version < version) below = &release;
    if (release.version > version && above == nullptr) above = &release;
  }
  return {below, above};
}

std::optional<Version> KnowledgeBase::driver_for_minor(const Version& major_minor) const {
  std::optional<Version> lowest;
  for (const CudaRelease& release : cuda_releases) {
    if (release.version.truncated(2) == major_minor.truncated(2) && release.driver_min &&
        (!lowest || *release.driver_min < *lowest)) {
      lowest = release.driver_min;
    }
  }
  return lowest;
}

const CudaMajor* KnowledgeBase::cuda_major(int major) const {
  for (const CudaMajor& row : cuda_majors) {
    if (row.major == major) return &row;
  }
  return nullptr;
}

const ArchSupport* KnowledgeBase::arch(const std::string& compute_capability) const {
  for (const ArchSupport& row : archs) {
    if (row.compute_capability == compute_capability) return &row;
  }
  return nullptr;
}

const TorchSeries* KnowledgeBase::torch_series_of(const Version& torch) const {
  for (const TorchSeries& row : torch_series) {
    if (torch.starts_with(row.series)) return &row;
  }
  return nullptr;
}

const TorchRelease* KnowledgeBase::torch_release(const Version& torch) const {
  const TorchRelease* series_row = nullptr;
  for (const TorchRelease& row : torch_releases) {
    if (row.version.size() >= 3 && row.version == torch && torch.size() >= 3) return &row;
    if (row.version.size() == 2 && torch.starts_with(row.version)) series_row = &row;
  }
  return series_row;
}

WheelAvailability aarch64_wheel(const TorchRelease& release, const std::string& variant) {
  if (!release.aarch64_variants || contains_item(release.aarch64_unknown, variant)) return WheelAvailability::unknown;
  return contains_item(*release.aarch64_variants, variant) ? WheelAvailability::published : WheelAvailability::absent;
}

const TorchArch* KnowledgeBase::torch_arch(const Version& torch, const std::string& variant,
                                           std::string_view platform) const {
  // Prefer non-conda rows: they describe the pip wheels gpuenv installs.
  const TorchArch* fallback = nullptr;
  for (const TorchArch& row : torch_archs) {
    if (row.variant != variant || row.platform != platform) continue;
    const bool covers =
        std::any_of(row.series.begin(), row.series.end(), [&torch](const Version& s) { return torch.starts_with(s); });
    if (!covers) continue;
    if (!util::contains(row.provenance.note, "conda")) return &row;
    fallback = &row;
  }
  return fallback;
}

const TensorflowRelease* KnowledgeBase::tensorflow_release(const Version& tf) const {
  for (const TensorflowRelease& row : tensorflow_releases) {
    if (row.version == tf || (tf.size() == 2 && row.version.starts_with(tf))) return &row;
  }
  // "2.16.2" is covered by the 2.16.1 row's tested configuration (same minor).
  for (const TensorflowRelease& row : tensorflow_releases) {
    if (row.version.truncated(2) == tf.truncated(2)) return &row;
  }
  return nullptr;
}

const CudaImage* KnowledgeBase::image(const Version& cuda) const {
  for (const CudaImage& row : images) {
    if (row.cuda == cuda) return &row;
  }
  return nullptr;
}

const GpuModel* KnowledgeBase::gpu(const std::string& name) const {
  for (const GpuModel& row : gpus) {
    if (util::gpu_name_matches(name, std::span<const std::string>(&row.model, 1)) ||
        util::gpu_name_matches(name, row.aliases))
      return &row;
  }
  return nullptr;
}

}  // namespace gpuenv::compat
