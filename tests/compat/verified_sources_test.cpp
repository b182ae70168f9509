// Issue 25, "Keeping it true": `verified` means read in a primary source (docs/knowledge-base.md "Sources and
// statuses"): NVIDIA, PyTorch, TensorFlow, Docker Hub / NGC or the distribution. Every row of the knowledge base
// (data/compat/*.toml) marked verified must cite one, and must not say it was read through a third-party copy (a
// mirror, a copy, a quotation): those rows are `secondary`. A row whose source backs several facts (one clause each,
// separated by ";") is verified only when every clause names a primary source. The tables are read raw, as compiled in,
// so a row the KnowledgeBase keeps no provenance for counts too.

#include <toml++/toml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>
#include <span>
#include <string>
#include <vector>

#include "util/embedded_file.hpp"

namespace gpuenv::compat {
std::span<const util::EmbeddedFile> embedded_compat_data();  // generated from data/compat/*.toml
}  // namespace gpuenv::compat

namespace {

/// Names a primary source: an NVIDIA, PyTorch or TensorFlow site or repository, Docker Hub / NGC, or a distribution.
bool names_primary_source(const std::string& source) {
  static const std::regex primary(
      R"((docs\.nvidia\.com|developer\.nvidia\.com|developer\.download\.nvidia\.com|www\.nvidia\.com|)"
      R"(gitlab\.com/nvidia/|github\.com/NVIDIA/|(^|[^A-Za-z0-9_/-])NVIDIA/[A-Za-z0-9_.-]+|)"
      R"(pytorch\.org|pytorch/pytorch|tensorflow\.org|tensorflow/tensorflow|)"
      R"(hub\.docker\.com|nvcr\.io|catalog\.ngc\.nvidia\.com|)"
      R"(ubuntu\.com|launchpad\.net|debian\.org|redhat\.com|rockylinux\.org|fedoraproject\.org|aws\.amazon\.com))");
  return std::regex_search(source, primary);
}

/// Says the fact was read through a third-party copy of the primary source.
bool read_through_a_copy(const std::string& source) {
  // "as listed in" / "quoting": a primary URL named inside a third party's catalog or quotation (the CUDA 12.8.2 row
  // cites NVIDIA's installer URL as rwgk/rwgk_config lists it; the Blackwell rows quote NVIDIA's driver README
  // through the GLFS book).
  static const std::regex copy(R"((mirror|read via|copy of|copies of|quoted in|quoting|as listed|third-party))",
                               std::regex::icase);
  return std::regex_search(source, copy);
}

/// A row's source may back several facts, one clause each ("...; driver name from ..."): every clause must name a
/// primary source, so a fact read only in a third party's file cannot ride on another fact's primary source.
bool primary_as_verified(const std::string& source) {
  if (source.empty() || read_through_a_copy(source)) return false;
  std::size_t start = 0;
  while (start <= source.size()) {
    const std::size_t end = std::min(source.find(';', start), source.size());
    if (!names_primary_source(source.substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}

/// Every table (top-level [table] or [[array]] row) of `file` with its status and source.
struct Sourced {
  std::string where;
  std::string status;
  std::string source;
};

std::vector<Sourced> sourced_rows(const gpuenv::util::EmbeddedFile& file) {
  std::vector<Sourced> out;
  toml::parse_result parsed = toml::parse(file.contents, std::string(file.name));
  REQUIRE(parsed.succeeded());
  const std::string name(file.name);
  const auto add = [&](const toml::table& row, const std::string& where) {
    out.push_back({where, row["status"].value_or(std::string()), row["source"].value_or(std::string())});
  };
  for (const auto& [key, node] : parsed.table()) {
    const std::string table(key.str());
    if (const auto* row = node.as_table()) add(*row, name + " [" + table + "]");
    if (const auto* array = node.as_array()) {
      std::size_t index = 0;
      for (const toml::node& item : *array) {
        ++index;
        if (const auto* row = item.as_table()) add(*row, name + " [[" + table + "]] #" + std::to_string(index));
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("verified sources: the detector tells primary sources from copies", "[compat][sources]") {
  struct Case {
    const char* source;
    bool may_be_verified;
  };
  const Case cases[] = {
      {"NVIDIA CUDA Toolkit 13.1 release notes, 2.2 CUDA Driver "
       "(https://docs.nvidia.com/cuda/archive/13.1.0/cuda-toolkit-release-notes/index.html)",
       true},
      {"https://developer.nvidia.com/cuda-gpus (snapshot)", true},
      {"pytorch/pytorch RELEASE.md \"PyTorch CUDA Support Matrix\" as added in PR 164471", true},
      {"https://docs.pytorch.org/get-started/previous-versions (snapshot)", true},
      {"NVIDIA/cuDecomp#97", true},
      {"https://www.tensorflow.org/install/source#gpu", true},
      {"https://hub.docker.com/r/nvidia/cuda/tags", true},
      // a primary source read through a third party's copy
      {"https://gitlab.com/nvidia/container-images/cuda (doc/supported-tags.md; read from GitHub mirror "
       "abyss-solutions/nvidia_container_images @ 9257ca04)",
       false},
      {"pytorch/pytorch RELEASE.md (https://github.com/pytorch/pytorch/blob/main/RELEASE.md) (read via copies)", false},
      {"third-party copies of NVIDIA CUDA Toolkit 13.2 / 13.3 release notes", false},
      {"CUDA 11.0 notes quoted in alicevision/popsift#102", false},
      {"NVIDIA's CUDA 12.8.2 runfile installer cuda_12.8.2_570.211.01_linux.run "
       "(https://developer.download.nvidia.com/compute/cuda/12.8.2/local_installers/cuda_12.8.2_570.211.01_linux.run), "
       "as listed from NVIDIA's CUDA Toolkit Archive download pages in rwgk/rwgk_config @ 6119ce8a bin/"
       "ctk_download_installers.sh",
       false},
      {"open kernel modules required for Blackwell: GLFS NVIDIA-r580 page "
       "(https://glfs-book.github.io/glfs/shareddeps/nvidia-r580.html), quoting NVIDIA's driver README; NVIDIA driver "
       "installation guide (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html)",
       false},
      // no primary source at all
      {"llvm/llvm-project clang/lib/Basic/Cuda.cpp (MinVersionForCudaArch / MaxVersionForCudaArch)", false},
      {"rapidsai/ci-imgs @ 534e7520 matrix.yaml", false},
      {"https://glennklockwood.com/garden/PCIe-Gen6", false},
      {"https://github.com/moi90/pytorch_compute_capabilities table.md", false},
      // a primary source for one fact of the row, a third party's file for another
      {"NVIDIA CUDA GPU Compute Capability, https://developer.nvidia.com/cuda-gpus (GeForce RTX 4090: 8.9); "
       "nvidia-smi name from netdata/netdata src/go/plugin/go.d/collector/nvidia_smi/testdata/rtx-4090-driver-535.xml",
       false},
      {"https://developer.nvidia.com/cuda-gpus (snapshot); driver name per NVIDIA/cosmos-framework pull request 114",
       true},
  };
  for (const Case& c : cases) {
    INFO(c.source);
    CHECK(primary_as_verified(c.source) == c.may_be_verified);
  }
}

TEST_CASE("verified sources: every verified knowledge-base row cites a primary source", "[compat][sources]") {
  const auto files = gpuenv::compat::embedded_compat_data();
  REQUIRE(files.size() == 6);
  std::size_t verified = 0;
  for (const gpuenv::util::EmbeddedFile& file : files) {
    for (const Sourced& row : sourced_rows(file)) {
      if (row.status != "verified") continue;
      ++verified;
      INFO(row.where << ": " << row.source);
      CHECK(primary_as_verified(row.source));
    }
  }
  CHECK(verified > 100);
}
