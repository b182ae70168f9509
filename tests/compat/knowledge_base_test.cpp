// Integrity of the compiled-in knowledge base (data/compat/*.toml, docs/knowledge-base.md) and the strictness
// of parse_knowledge_base on synthetic files.

#include "compat/knowledge_base.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "compat/derive.hpp"
#include "compat/rule_rows.hpp"
#include "util/embedded_file.hpp"
#include "util/gpu_name.hpp"
#include "util/version.hpp"

namespace gpuenv::compat {
std::span<const util::EmbeddedFile> embedded_compat_data();  // generated from data/compat/*.toml
}  // namespace gpuenv::compat

namespace {

using gpuenv::testing::rule_rows::kb;

using gpuenv::compat::KnowledgeBase;
using gpuenv::compat::Provenance;
using gpuenv::util::EmbeddedFile;
using gpuenv::util::Version;

bool valid_status(const std::string& status) {
  return status == "verified" || status == "secondary" || status == "unverified";
}

void check_provenance(const Provenance& p, const std::string& row) {
  INFO(row << ": status '" << p.status << "', source '" << p.source << "'");
  CHECK(valid_status(p.status));
  CHECK_FALSE(p.source.empty());
}

/// A compute capability "X.Y" (major.minor, one decimal digit).
bool is_compute_capability(const std::string& text) {
  const auto parsed = Version::parse(text);
  return parsed.has_value() && parsed->size() == 2 && parsed->minor() < 10 && text.back() != '.';
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

}  // namespace

TEST_CASE("compat: the builtin knowledge base loads and holds every table", "[compat][kb]") {
  const auto loaded = gpuenv::compat::builtin_knowledge_base();
  INFO((loaded ? std::string() : loaded.error().message));
  REQUIRE(loaded.has_value());
  const KnowledgeBase& data = **loaded;
  CHECK_FALSE(data.cuda_releases.empty());
  CHECK(data.cuda_majors.size() == 3);
  CHECK_FALSE(data.archs.empty());
  CHECK_FALSE(data.cudnn_builds.empty());
  CHECK_FALSE(data.cudnn_arch_drops.empty());
  CHECK_FALSE(data.torch_series.empty());
  CHECK_FALSE(data.torch_releases.empty());
  CHECK_FALSE(data.torch_archs.empty());
  CHECK_FALSE(data.tensorflow_releases.empty());
  CHECK_FALSE(data.images.empty());
  CHECK_FALSE(data.os_less_tags.empty());
  CHECK_FALSE(data.gpus.empty());
}

TEST_CASE("compat: every knowledge-base row has a status and a source", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  for (const auto& r : data.cuda_releases) check_provenance(r.provenance, "cuda release " + r.version.str());
  for (const auto& r : data.cuda_majors) check_provenance(r.provenance, "cuda major " + std::to_string(r.major));
  for (const auto& r : data.archs) check_provenance(r.provenance, "arch " + r.compute_capability);
  for (const auto& r : data.cudnn_builds) check_provenance(r.provenance, "cudnn " + r.cudnn.str());
  for (const auto& r : data.cudnn_arch_drops) check_provenance(r.provenance, "cudnn arch drop " + r.cudnn.str());
  for (const auto& r : data.torch_series) check_provenance(r.provenance, "torch series " + r.series.str());
  for (const auto& r : data.torch_releases) check_provenance(r.provenance, "torch release " + r.version.str());
  for (const auto& r : data.torch_archs) check_provenance(r.provenance, "torch arch " + r.variant);
  for (const auto& r : data.tensorflow_releases) check_provenance(r.provenance, "tensorflow " + r.version.str());
  for (const auto& r : data.images) check_provenance(r.provenance, "image " + r.cuda.str());
  for (const auto& r : data.gpus) check_provenance(r.provenance, "gpu " + r.model);
}

// docs/knowledge-base.md: `source` names the public document the fact was read in (title + URL, or repository + path
// + commit). Read from the raw tables, so rows the KnowledgeBase keeps no provenance for ([[os_less_tag]]) count too.
TEST_CASE("compat: every raw table row cites a public source", "[compat][kb]") {
  const auto files = gpuenv::compat::embedded_compat_data();
  REQUIRE(files.size() == 6);
  std::size_t rows = 0;
  for (const EmbeddedFile& file : files) {
    toml::parse_result parsed = toml::parse(file.contents, std::string(file.name));
    INFO(file.name);
    REQUIRE(parsed.succeeded());
    for (const auto& [key, node] : parsed.table()) {
      if (key.str() == "as_of") continue;  // the table's date (docs/knowledge-base.md "Horizon"), not a row
      // A top-level [table] (images.toml's [policy]) is one row; an array of tables is many.
      toml::array single;
      if (const toml::table* table = node.as_table()) single.push_back(*table);
      const toml::array* array = node.is_table() ? &single : node.as_array();
      REQUIRE(array != nullptr);
      for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::table* row = (*array)[i].as_table();
        REQUIRE(row != nullptr);
        ++rows;
        const std::string status = (*row)["status"].value_or(std::string());
        const std::string source = (*row)["source"].value_or(std::string());
        INFO("[[" << key.str() << "]] #" << i + 1 << " status '" << status << "' source '" << source << "'");
        CHECK(valid_status(status));
        CHECK_FALSE(source.empty());
        CHECK(source.find("shared/") == std::string::npos);
      }
    }
  }
  CHECK(rows > 100);
}

TEST_CASE("compat: CUDA releases are sorted and unique", "[compat][kb]") {
  const auto& releases = kb().cuda_releases;
  for (std::size_t i = 1; i < releases.size(); ++i) {
    INFO(releases[i - 1].version.str() << " then " << releases[i].version.str());
    CHECK(releases[i - 1].version < releases[i].version);
  }
  for (const auto& r : releases) {
    INFO(r.version.str());
    CHECK(r.version.size() == 3);
  }
  // No 12.7 toolkit exists (cuda-driver.md Table 1).
  for (const auto& r : releases) CHECK_FALSE(r.version.truncated(2) == Version({12, 7}));
}

TEST_CASE("compat: other knowledge-base keys are unique", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  std::set<std::string> seen;
  for (const auto& r : data.torch_releases) CHECK(seen.insert("torch " + r.version.str()).second);
  for (const auto& r : data.torch_series) CHECK(seen.insert("series " + r.series.str()).second);
  for (const auto& r : data.tensorflow_releases) CHECK(seen.insert("tf " + r.version.str()).second);
  for (const auto& r : data.images) CHECK(seen.insert("image " + r.cuda.str()).second);
  for (const auto& r : data.archs) CHECK(seen.insert("arch " + r.compute_capability).second);
  for (const auto& r : data.cuda_majors) CHECK(seen.insert("major " + std::to_string(r.major)).second);
  for (const auto& r : data.cudnn_builds) {
    std::string key = "cudnn " + r.cudnn.str() + " cuda " + std::to_string(r.cuda_major);
    for (const auto& cv : r.cuda_versions) key += " " + cv.str();
    CHECK(seen.insert(key).second);
  }
  for (const auto& g : data.gpus) {
    CHECK(seen.insert("gpu " + g.model).second);
    for (const auto& alias : g.aliases) CHECK(seen.insert("gpu " + alias).second);
  }
}

TEST_CASE("compat: every nvidia/cuda image version is a CUDA release", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  for (const auto& image : data.images) {
    INFO("image " << image.cuda.str());
    CHECK(data.cuda_release(image.cuda) != nullptr);
  }
  for (const auto& tag : data.os_less_tags) {
    INFO("os-less tag " << tag.str());
    CHECK(data.cuda_release(tag) != nullptr);
    CHECK(data.image(tag) != nullptr);
  }
}

TEST_CASE("compat: image rows are consistent", "[compat][kb]") {
  for (const auto& image : kb().images) {
    INFO("image " << image.cuda.str());
    CHECK((image.lifecycle == "active" || image.lifecycle == "eol"));
    CHECK((image.cudnn_token.empty() || image.cudnn_token == "cudnn8" || image.cudnn_token == "cudnn9" ||
           image.cudnn_token == "cudnn"));
    CHECK_FALSE(image.os.empty());
    for (const auto& os : image.cudnn_os) {
      INFO("cudnn_os " << os);
      CHECK(contains(image.os, os));
    }
    // No cuDNN token means no cuDNN OS and no bundled cuDNN, and the other way round.
    CHECK(image.cudnn_token.empty() == image.cudnn_os.empty());
    if (image.cudnn_token.empty()) CHECK(image.cudnn_version.empty());
    if (!image.cudnn_version.empty()) {
      const auto bundled = Version::parse(image.cudnn_version);
      REQUIRE(bundled.has_value());
      if (image.cudnn_token == "cudnn8") CHECK(bundled->major() == 8);
      if (image.cudnn_token == "cudnn9" || image.cudnn_token == "cudnn") CHECK(bundled->major() == 9);
    }
    if (!image.eol_date.empty() || !image.deletion_date.empty()) CHECK(image.lifecycle == "eol");
  }
}

TEST_CASE("compat: every compute capability in the knowledge base parses", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  for (const auto& arch : data.archs) {
    INFO("arch " << arch.compute_capability);
    CHECK(is_compute_capability(arch.compute_capability));
    if (arch.last_cuda) CHECK(arch.first_cuda <= *arch.last_cuda);
  }
  for (const auto& build : data.cudnn_builds) {
    for (const auto& cc : build.compute_capabilities) {
      INFO("cudnn " << build.cudnn.str() << " cc " << cc);
      CHECK(is_compute_capability(cc));
      CHECK(data.arch(cc) != nullptr);
    }
  }
  for (const auto& row : data.torch_archs) {
    for (const auto& cc : row.compute_capabilities) {
      INFO("torch arch " << row.variant << " cc " << cc);
      CHECK(is_compute_capability(cc));
      CHECK(data.arch(cc) != nullptr);
    }
    if (!row.ptx.empty()) {
      INFO("ptx " << row.ptx);
      CHECK(is_compute_capability(row.ptx));
      CHECK(contains(row.compute_capabilities, row.ptx));
    }
  }
  for (const auto& gpu : data.gpus) {
    INFO("gpu " << gpu.model << " cc " << gpu.compute_capability);
    CHECK(is_compute_capability(gpu.compute_capability));
    CHECK(data.arch(gpu.compute_capability) != nullptr);
  }
}

TEST_CASE("compat: every PyTorch wheel variant names a CUDA version", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  for (const auto& release : data.torch_releases) {
    CHECK_FALSE(release.variants.empty());
    CHECK((release.install == "index-url" || release.install == "extra-index-url" || release.install == "find-links"));
    for (const auto& variant : release.variants) {
      INFO("torch " << release.version.str() << " " << variant);
      const auto cuda = gpuenv::compat::cuda_of_variant(variant);
      REQUIRE(cuda.has_value());
      CHECK(gpuenv::compat::torch_variant_for(*cuda) == variant);
    }
  }
  for (const auto& row : data.torch_archs) {
    INFO("torch arch " << row.variant);
    CHECK(gpuenv::compat::cuda_of_variant(row.variant).has_value());
    for (const auto& series : row.series) {
      // The variant exists for a release of that series.
      const auto* release = data.torch_release(series);
      const bool series_row = release != nullptr;
      bool listed = false;
      for (const auto& r : data.torch_releases) {
        if (r.version.starts_with(series) && contains(r.variants, row.variant)) listed = true;
      }
      INFO("series " << series.str());
      CHECK((listed || series_row));
    }
  }
}

TEST_CASE("compat: cuDNN builds and TensorFlow rows are well formed", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  for (const auto& build : data.cudnn_builds) {
    INFO("cudnn " << build.cudnn.str() << " for CUDA " << build.cuda_major);
    // A redistributable manifest names only the CUDA major; the row's note says so.
    if (build.cuda_versions.empty()) CHECK_FALSE(build.provenance.note.empty());
    for (const auto& cv : build.cuda_versions) CHECK(cv.major() == build.cuda_major);
  }
  for (const auto& drop : data.cudnn_arch_drops) {
    INFO("cudnn arch drop " << drop.cudnn.str());
    CHECK(drop.cudnn.size() == 3);
    CHECK(data.arch(drop.compute_capability_below.str()) != nullptr);
    CHECK_FALSE(drop.name.empty());
  }
  for (const auto& tf : data.tensorflow_releases) {
    INFO("tensorflow " << tf.version.str());
    CHECK(tf.python_min <= tf.python_max);
    CHECK(tf.cuda.size() == 2);
    CHECK(tf.cudnn.size() == 2);
  }
  for (const auto& series : data.torch_series) {
    INFO("torch series " << series.series.str());
    CHECK(series.python_min <= series.python_max);
  }
}

// ---- parse_knowledge_base on synthetic files --------------------------------------------------------

namespace {

constexpr const char* good_release = R"([[release]]
version = "12.4.1"
driver_min = "550.54.15"
status = "verified"
source = "test"
)";

gpuenv::util::Expected<KnowledgeBase> parse(std::string_view name, std::string_view contents) {
  const EmbeddedFile files[] = {{name, contents}};
  return gpuenv::compat::parse_knowledge_base(files);
}

}  // namespace

TEST_CASE("compat: parse_knowledge_base reads a well-formed row", "[compat][kb]") {
  const std::string older = R"([[release]]
version = "11.8.0"
status = "secondary"
source = "test"
note = "no driver_min: optional"
)";
  const std::string text = std::string(good_release) + "\n" + older;
  const auto parsed = parse("cuda.toml", text);
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->cuda_releases.size() == 2);
  // Sorted by version whatever the file order.
  CHECK(parsed->cuda_releases[0].version.str() == "11.8.0");
  CHECK_FALSE(parsed->cuda_releases[0].driver_min.has_value());
  CHECK(parsed->cuda_releases[1].driver_min->str() == "550.54.15");
  CHECK(parsed->cuda_releases[0].provenance.note == "no driver_min: optional");
}

TEST_CASE("compat: parse_knowledge_base rejects bad rows", "[compat][kb]") {
  struct Case {
    const char* what;
    const char* file;
    std::string contents;
    const char* message;  ///< part of the error
  };
  const Case cases[] = {
      {"unknown key", "cuda.toml", std::string(good_release) + "driver_minimum = \"550.54.15\"\n",
       "unexpected key `driver_minimum`"},
      {"missing source", "cuda.toml", "[[release]]\nversion = \"12.4.1\"\nstatus = \"verified\"\n", "missing `source`"},
      {"missing status", "gpus.toml", "[[gpu]]\nmodel = \"H100\"\ncompute_capability = \"9.0\"\nsource = \"x\"\n",
       "missing `status`"},
      {"bad status", "cuda.toml", "[[release]]\nversion = \"12.4.1\"\nstatus = \"confirmed\"\nsource = \"x\"\n",
       "verified, secondary or unverified"},
      {"not a version", "cuda.toml", "[[release]]\nversion = \"12.4.x\"\nstatus = \"verified\"\nsource = \"x\"\n",
       "not a version"},
      {"unknown key in another table", "gpus.toml",
       "[[gpu]]\nmodel = \"H100\"\ncompute_capability = \"9.0\"\nmemory = \"80 GB\"\nstatus = \"verified\"\n"
       "source = \"x\"\n",
       "unexpected key `memory`"},
      {"missing source in images", "images.toml",
       "[[image]]\ncuda = \"12.4.1\"\nlifecycle = \"active\"\nos = [\"ubuntu22.04\"]\nstatus = \"verified\"\n",
       "missing `source`"},
      {"os_listing other than partial", "images.toml",
       "[[image]]\ncuda = \"13.2.1\"\nlifecycle = \"active\"\nos = [\"ubuntu24.04\"]\nos_listing = \"some\"\n"
       "status = \"secondary\"\nsource = \"x\"\n",
       "`os_listing` must be \"partial\""},
      {"[policy] without a source", "images.toml",
       "[policy]\nmajors_supported = 2\nlatest_update_only = true\nstatus = \"verified\"\n", "missing `source`"},
      {"[policy] majors_supported out of range", "images.toml",
       "[policy]\nmajors_supported = 0\nlatest_update_only = true\nstatus = \"verified\"\nsource = \"x\"\n",
       "majors_supported"},
      {"wrong type", "tensorflow.toml",
       "[[release]]\nversion = \"2.15.0\"\npython_min = \"3.9\"\npython_max = \"3.11\"\ncuda = \"12.2\"\ncudnn = "
       "\"8.9\"\n"
       "and_cuda = \"yes\"\nstatus = \"verified\"\nsource = \"x\"\n",
       "and_cuda"},
      {"unexpected file", "drivers.toml", good_release, "drivers.toml"},
      {"aarch64 wheels without their source", "pytorch.toml",
       "[[release]]\nversion = \"2.4.1\"\nvariants = [\"cu124\"]\ninstall = \"index-url\"\naarch64_variants = []\n"
       "status = \"secondary\"\nsource = \"x\"\n",
       "`aarch64_variants` needs `aarch64_source`"},
      {"aarch64 unknowns without the list", "pytorch.toml",
       "[[release]]\nversion = \"2.4.1\"\nvariants = [\"cu124\"]\ninstall = \"index-url\"\n"
       "aarch64_unknown = [\"cu124\"]\nstatus = \"secondary\"\nsource = \"x\"\n",
       "come with `aarch64_variants`"},
      {"TOML syntax", "cuda.toml", "[[release]]\nversion = \n", "cuda.toml"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const auto parsed = parse(c.file, c.contents);
    REQUIRE_FALSE(parsed.has_value());
    CHECK(parsed.error().kind == gpuenv::util::ErrorKind::internal);
    CHECK_THAT(parsed.error().message, Catch::Contains(c.message));
    CHECK_THAT(parsed.error().message, Catch::Contains(c.file));
  }
}

TEST_CASE("compat: images.toml carries NVIDIA's support policy and marks partial OS listings", "[compat][kb]") {
  const KnowledgeBase& data = kb();
  CHECK(data.image_policy.majors_supported == 2);
  CHECK(data.image_policy.latest_update_only);
  CHECK_THAT(data.image_policy.provenance.source, Catch::Contains("support-policy.md"));
  // Rows read from NVIDIA's repository (through a GitHub mirror: secondary, issue 25) list every OS; rows from
  // third-party listings say they are partial.
  for (const auto& image : data.images) {
    INFO("image " << image.cuda.str());
    const bool from_nvidia_repository =
        image.provenance.source.find("gitlab.com/nvidia/container-images/cuda") != std::string::npos;
    CHECK(image.os_partial == !from_nvidia_repository);
    CHECK(image.provenance.status != "verified");
  }
}

// Issue 25, rule 4: Linux aarch64 wheels per release (an empty list is "none", an absent one "not known") and their
// own architecture lists, apart from the x86_64 ones.
TEST_CASE("compat: PyTorch's Linux aarch64 wheels are their own facts", "[compat][kb]") {
  const auto parsed = parse("pytorch.toml", R"([[release]]
version = "2.7.0"
variants = ["cu118", "cu126", "cu128"]
install = "index-url"
aarch64_variants = ["cu128"]
aarch64_unknown = ["cu126"]
aarch64_source = "a"
status = "secondary"
source = "x"

[[release]]
version = "2.6.0"
variants = ["cu118", "cu124", "cu126"]
install = "index-url"
status = "secondary"
source = "x"

[[arch]]
series = ["2.7"]
variant = "cu128"
compute_capabilities = ["7.5", "12.0"]
status = "secondary"
source = "x"

[[arch_aarch64]]
series = ["2.7"]
variant = "cu128"
compute_capabilities = ["9.0"]
status = "secondary"
source = "y"
)");
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  const auto& with = parsed->torch_releases[0];
  using gpuenv::compat::WheelAvailability;
  CHECK(gpuenv::compat::aarch64_wheel(with, "cu128") == WheelAvailability::published);
  CHECK(gpuenv::compat::aarch64_wheel(with, "cu126") == WheelAvailability::unknown);
  CHECK(gpuenv::compat::aarch64_wheel(with, "cu118") == WheelAvailability::absent);
  CHECK(gpuenv::compat::aarch64_wheel(parsed->torch_releases[1], "cu126") == WheelAvailability::unknown);
  const Version torch({2, 7, 0});
  REQUIRE(parsed->torch_arch(torch, "cu128") != nullptr);
  CHECK(parsed->torch_arch(torch, "cu128")->compute_capabilities == std::vector<std::string>{"7.5", "12.0"});
  REQUIRE(parsed->torch_arch(torch, "cu128", gpuenv::compat::k_wheel_aarch64) != nullptr);
  CHECK(parsed->torch_arch(torch, "cu128", gpuenv::compat::k_wheel_aarch64)->compute_capabilities ==
        std::vector<std::string>{"9.0"});
  CHECK(parsed->torch_arch(torch, "cu126", gpuenv::compat::k_wheel_aarch64) == nullptr);
}

TEST_CASE("compat: parse_knowledge_base names the offending row", "[compat][kb]") {
  const std::string text = std::string(good_release) + "\n" + good_release + "typo = \"x\"\n";
  const auto parsed = parse("cuda.toml", text);
  REQUIRE_FALSE(parsed.has_value());
  CHECK_THAT(parsed.error().message, Catch::Contains("[[release]] #2"));
  CHECK_THAT(parsed.error().message, Catch::Contains("unexpected key `typo`"));
}

// Issue 15, rule 4: gpu.models and the driver's names resolve by whole name or listed alias, never by substring.
TEST_CASE("compat: GPU models resolve by exact name and alias, look-alikes do not", "[compat][kb][gpu_name]") {
  struct Case {
    const char* name;
    const char* model;  ///< the row it resolves to; nullptr: none
  };
  const Case cases[] = {
      {"T4", "T4"},
      {"Tesla T4", "T4"},
      {"NVIDIA T400", nullptr},
      {"NVIDIA T400 4GB", nullptr},
      {"H200", "H200"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA GH200 480GB", "GH200"},
      {"B200", "B200"},
      {"NVIDIA GB200", "GB200"},
      {"NVIDIA B300", "B300"},
      // Issue 25: names as drivers report them (sources in data/compat/gpus.toml): NVIDIA/cosmos-framework PR 114,
      // tile-ai/TileOPs PR 1658, vllm-project/vllm issue 34470, GuanceCloud/datakit's nvidia-smi -q -x capture.
      {"NVIDIA B300 SXM6 AC", "B300"},
      {"NVIDIA H20-3e", "H20-3e"},
      {"NVIDIA Thor", "Thor"},
      {"Tesla V100S-PCIE-32GB", "V100"},
      {"NVIDIA A800 80GB PCIe", "A800"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA L4", "L4"},
      {"NVIDIA L20", "L20"},
      {"NVIDIA A10G", "A10G"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA A100-SXM4-80GB", "A100"},
      {"NVIDIA A100-SXM4-40GB MIG 1g.5gb", "A100"},
      {"NVIDIA A800-SXM4-80GB", "A800"},
      {"NVIDIA H800", "H800"},
      {"NVIDIA H20", "H20"},
      {"NVIDIA H100 80GB HBM3", "H100"},
      {"NVIDIA GeForce RTX 4090", "RTX 4090"},
      {"NVIDIA GeForce RTX 4090 D", nullptr},
      {"GeForce RTX 5090", "RTX 5090"},
      {"NVIDIA RTX PRO 6000 Blackwell", "RTX PRO 6000"},
      {"Jetson T5000", "Jetson T5000"},
      {"NVIDIA Future GPU", nullptr},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto* row = kb().gpu(c.name);
    if (c.model == nullptr) {
      CHECK(row == nullptr);
    } else {
      REQUIRE(row != nullptr);
      CHECK(row->model == c.model);
    }
  }
}

TEST_CASE("compat: no two GPU rows share a name or alias", "[compat][kb][gpu_name]") {
  std::map<std::string, std::string> owner;  // normalized name -> model
  for (const auto& row : kb().gpus) {
    std::vector<std::string> names = row.aliases;
    names.push_back(row.model);
    for (const std::string& name : names) {
      const auto [it, inserted] = owner.emplace(gpuenv::util::normalized_gpu_name(name), row.model);
      INFO(row.model << ": " << name << " (also " << it->second << ")");
      CHECK((inserted || it->second == row.model));
    }
  }
}
