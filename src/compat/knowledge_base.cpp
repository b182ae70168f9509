#include "compat/knowledge_base.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "util/strings.hpp"

namespace gpuenv::compat {

std::span<const util::EmbeddedFile> embedded_compat_data();  // generated from data/compat/*.toml

namespace {

using util::Error;
using util::Expected;
using util::Version;

/// Reads one [[row]] strictly: required and optional keys are declared, anything else is an error,
/// so a typo in the data fails the build's tests instead of silently dropping a fact.
class Row {
 public:
  Row(const toml::table& table, std::string where) : m_table(table), m_where(std::move(where)) {}

  std::string text(const char* key, bool required = true) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr) {
      if (required) fail(std::string("missing `") + key + "`");
      return {};
    }
    if (!node->is_string()) fail(std::string("`") + key + "` must be a string");
    return node->as_string()->get();
  }

  Version version(const char* key) {
    const std::string value = text(key);
    auto parsed = Version::parse(value);
    if (!parsed) fail(std::string("`") + key + "` = \"" + value + "\" is not a version");
    return parsed.value_or(Version());
  }

  std::optional<Version> optional_version(const char* key) {
    const std::string value = text(key, false);
    if (value.empty()) return std::nullopt;
    auto parsed = Version::parse(value);
    if (!parsed) fail(std::string("`") + key + "` = \"" + value + "\" is not a version");
    return parsed;
  }

  std::vector<std::string> texts(const char* key, bool required = true) {
    m_known.insert(key);
    std::vector<std::string> out;
    const toml::node* node = m_table.get(key);
    if (node == nullptr) {
      if (required) fail(std::string("missing `") + key + "`");
      return out;
    }
    const toml::array* array = node->as_array();
    if (array == nullptr) {
      fail(std::string("`") + key + "` must be an array");
      return out;
    }
    for (const toml::node& item : *array) {
      if (!item.is_string()) {
        fail(std::string("`") + key + "` must hold strings");
        continue;
      }
      out.push_back(item.as_string()->get());
    }
    return out;
  }

  std::vector<Version> versions(const char* key) {
    std::vector<Version> out;
    for (const std::string& value : texts(key)) {
      auto parsed = Version::parse(value);
      if (!parsed) fail(std::string("`") + key + "` holds \"" + value + "\", not a version");
      out.push_back(parsed.value_or(Version()));
    }
    return out;
  }

  long long integer(const char* key) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr || !node->is_integer()) {
      fail(std::string("`") + key + "` must be an integer");
      return 0;
    }
    return node->as_integer()->get();
  }

  bool boolean(const char* key) {
    m_known.insert(key);
    const toml::node* node = m_table.get(key);
    if (node == nullptr || !node->is_boolean()) {
      fail(std::string("`") + key + "` must be true or false");
      return false;
    }
    return node->as_boolean()->get();
  }

  Provenance provenance() {
    Provenance out{text("status"), text("source"), text("note", false)};
    if (out.status != "verified" && out.status != "secondary" && out.status != "unverified") {
      fail("`status` must be verified, secondary or unverified");
    }
    return out;
  }

  /// The first problem with the row, after checking that every key was expected.
  std::optional<Error> finish() {
    for (const auto& [key, node] : m_table) {
      if (!m_known.contains(std::string(key.str()))) fail("unexpected key `" + std::string(key.str()) + "`");
    }
    return m_error;
  }

 private:
  void fail(const std::string& message) {
    if (!m_error) m_error = Error::internal(m_where + ": " + message);
  }

  const toml::table& m_table;
  std::string m_where;
  std::set<std::string> m_known;
  std::optional<Error> m_error;
};

/// Calls `read(Row&)` for each [[array]] entry of `root`; stops at the first bad row.
template <typename T, typename Read>
Expected<util::Ok> read_rows(const toml::table& root, const std::string& file, const char* array_name,
                             std::vector<T>& out, Read read) {
  const toml::array* rows = root[array_name].as_array();
  if (rows == nullptr) return util::Ok{};
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const toml::table* table = (*rows)[i].as_table();
    const std::string where = file + ": [[" + array_name + "]] #" + std::to_string(i + 1);
    if (table == nullptr) return Error::internal(where + ": not a table");
    Row row(*table, where + " (line " + std::to_string(table->source().begin.line) + ")");
    T value = read(row);
    if (auto error = row.finish()) return *error;
    out.push_back(std::move(value));
  }
  return util::Ok{};
}

Expected<util::Ok> read_cuda(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  if (auto r =
          read_rows(root, file, "release", kb.cuda_releases,
                    [](Row& row) {
                      return CudaRelease{row.version("version"), row.optional_version("driver_min"), row.provenance()};
                    });
      !r)
    return r;
  if (auto r = read_rows(root, file, "major", kb.cuda_majors,
                         [](Row& row) {
                           return CudaMajor{static_cast<int>(row.integer("major")), row.version("compat_driver_min"),
                                            row.provenance()};
                         });
      !r)
    return r;
  return read_rows(root, file, "arch", kb.archs, [](Row& row) {
    return ArchSupport{row.text("compute_capability"), row.text("name"), row.version("first_cuda"),
                       row.optional_version("last_cuda"), row.provenance()};
  });
}

Expected<util::Ok> read_cudnn(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  return read_rows(root, file, "build", kb.cudnn_builds, [](Row& row) {
    return CudnnBuild{row.version("cudnn"),
                      static_cast<int>(row.integer("cuda_major")),
                      row.versions("cuda_versions"),
                      row.optional_version("driver_min"),
                      row.texts("compute_capabilities", false),
                      row.provenance()};
  });
}

Expected<util::Ok> read_pytorch(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  if (auto r = read_rows(root, file, "series", kb.torch_series,
                         [](Row& row) {
                           return TorchSeries{row.version("series"), row.version("python_min"),
                                              row.version("python_max"), row.provenance()};
                         });
      !r)
    return r;
  if (auto r = read_rows(root, file, "release", kb.torch_releases,
                         [](Row& row) {
                           return TorchRelease{
                               row.version("version"),        row.texts("variants"), row.text("torchvision", false),
                               row.text("torchaudio", false), row.text("install"),   row.provenance()};
                         });
      !r)
    return r;
  return read_rows(root, file, "arch", kb.torch_archs, [](Row& row) {
    std::vector<Version> series;
    for (const std::string& s : row.texts("series")) series.push_back(Version::parse(s).value_or(Version()));
    return TorchArch{series, row.text("variant"), row.texts("compute_capabilities"), row.text("ptx", false),
                     row.provenance()};
  });
}

Expected<util::Ok> read_tensorflow(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  return read_rows(root, file, "release", kb.tensorflow_releases, [](Row& row) {
    return TensorflowRelease{row.version("version"), row.version("python_min"), row.version("python_max"),
                             row.version("cuda"),    row.version("cudnn"),      row.boolean("and_cuda"),
                             row.provenance()};
  });
}

Expected<util::Ok> read_images(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  if (auto r = read_rows(root, file, "image", kb.images,
                         [](Row& row) {
                           return CudaImage{row.version("cuda"),
                                            row.text("lifecycle"),
                                            row.texts("os"),
                                            row.text("cudnn_token", false),
                                            row.texts("cudnn_os", false),
                                            row.text("cudnn_version", false),
                                            row.text("eol_date", false),
                                            row.text("deletion_date", false),
                                            row.provenance()};
                         });
      !r)
    return r;
  std::vector<CudaRelease> os_less;
  if (auto r = read_rows(root, file, "os_less_tag", os_less,
                         [](Row& row) {
                           return CudaRelease{row.version("cuda"), std::nullopt, row.provenance()};
                         });
      !r)
    return r;
  for (const CudaRelease& row : os_less) kb.os_less_tags.push_back(row.version);
  return util::Ok{};
}

Expected<util::Ok> read_gpus(const toml::table& root, const std::string& file, KnowledgeBase& kb) {
  return read_rows(root, file, "gpu", kb.gpus, [](Row& row) {
    return GpuModel{row.text("model"), row.texts("aliases", false), row.text("compute_capability"), row.provenance()};
  });
}

}  // namespace

Expected<KnowledgeBase> parse_knowledge_base(std::span<const util::EmbeddedFile> files) {
  using Reader = Expected<util::Ok> (*)(const toml::table&, const std::string&, KnowledgeBase&);
  const std::pair<std::string_view, Reader> readers[] = {
      {"cuda.toml", read_cuda},       {"cudnn.toml", read_cudnn},
      {"pytorch.toml", read_pytorch}, {"tensorflow.toml", read_tensorflow},
      {"images.toml", read_images},   {"gpus.toml", read_gpus},
  };
  KnowledgeBase kb;
  for (const util::EmbeddedFile& file : files) {
    const std::string name(file.name);
    toml::parse_result parsed = toml::parse(file.contents, name);
    if (!parsed) {
      return Error::internal(name + ":" + std::to_string(parsed.error().source().begin.line) + ": " +
                             std::string(parsed.error().description()));
    }
    const auto reader =
        std::find_if(std::begin(readers), std::end(readers), [&name](const auto& r) { return r.first == name; });
    if (reader == std::end(readers)) return Error::internal("unexpected knowledge-base file " + name);
    if (auto read = reader->second(parsed.table(), name, kb); !read) return read.error();
  }
  std::sort(kb.cuda_releases.begin(), kb.cuda_releases.end(),
            [](const CudaRelease& a, const CudaRelease& b) { return a.version < b.version; });
  return kb;
}

Expected<const KnowledgeBase*> builtin_knowledge_base() {
  static const Expected<KnowledgeBase> kb = parse_knowledge_base(embedded_compat_data());
  if (!kb) return kb.error();
  return &kb.value();
}

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

const TorchArch* KnowledgeBase::torch_arch(const Version& torch, const std::string& variant) const {
  // Prefer non-conda rows: they describe the pip wheels gpuenv installs.
  const TorchArch* fallback = nullptr;
  for (const TorchArch& row : torch_archs) {
    if (row.variant != variant) continue;
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
  const std::string wanted = util::to_lower(name);
  for (const GpuModel& row : gpus) {
    if (util::to_lower(row.model) == wanted) return &row;
    for (const std::string& alias : row.aliases) {
      if (util::to_lower(alias) == wanted) return &row;
    }
  }
  return nullptr;
}

}  // namespace gpuenv::compat
