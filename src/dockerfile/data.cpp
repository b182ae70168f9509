#include "dockerfile/data.hpp"

#include "dockerfile/host_driver.hpp"
#include "util/data_table.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::dockerfile {

std::span<const util::EmbeddedFile> embedded_dockerfile_data();  // generated from data/dockerfile/*.toml

namespace {

using util::Error;
using util::Expected;
using util::TomlRow;

}  // namespace

const OsPython* Data::python_of(const std::string& image_os) const {
  for (const OsPython& row : os_python) {
    if (row.os == image_os) return &row;
  }
  return nullptr;
}

const TorchCudnn* Data::cudnn_of_torch(const util::Version& torch, const std::string& variant) const {
  for (const TorchCudnn& row : torch_cudnn) {
    if (row.variant == variant && torch.truncated(2) == row.torch) return &row;
  }
  return nullptr;
}

const TorchCompileGap* Data::compile_gap(const util::Version& torch, const util::Version& python) const {
  const util::Version series = torch.truncated(2);
  for (const TorchCompileGap& row : torch_compile) {
    if (!(series < row.torch_min) && !(row.torch_max < series) && !(python.truncated(2) < row.python_from)) return &row;
  }
  return nullptr;
}

const std::string* Data::require_cuda_of(const util::Version& cuda, const std::string& arch) const {
  for (const RequireCuda& row : require_cuda) {
    if (row.cuda == cuda) return arch == "arm64" ? &row.arm64 : &row.x86_64;
  }
  return nullptr;
}

namespace {

std::vector<util::RowKey> row_keys(std::string_view table) {
  if (table == "base_images.toml") return {{"require_cuda", {"cuda"}}};
  if (table == "python.toml")
    return {{"os_python", {"os"}}, {"numpy", {"framework"}}, {"torch_compile", {"torch_min"}}};
  return {{"torch_cudnn", {"torch", "variant"}}};
}

}  // namespace

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_dockerfile_data())
    tables.push_back({file.name, file, row_keys(file.name)});
  return tables;
}

Expected<Data> load_data(const util::Overlay& overlay) { return parse_data(embedded_dockerfile_data(), overlay); }

Expected<Data> parse_data(std::span<const util::EmbeddedFile> files, const util::Overlay& overlay) {
  Data data;
  bool have_uv = false;
  for (const util::EmbeddedFile& file : files) {
    const std::string name(file.name);
    GPUENV_TRY_ASSIGN(const auto parsed, util::read_data_table({file.name, file, row_keys(file.name)}, overlay));
    if (const auto key = parsed.unexpected_key({"as_of", "os_python", "pip", "pip_advisory", "uv", "numpy",
                                                "torch_cudnn", "torch_compile", "require_cuda", "curl"})) {
      return Error::internal(name + ": unexpected table `" + *key + "`");
    }
    GPUENV_TRY(parsed.append_rows("os_python", data.os_python, [](TomlRow& row) {
      OsPython out;
      out.os = row.text("os");
      out.python = row.version("python");
      out.packages = row.texts("packages");
      out.interpreter = row.text("interpreter");
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    GPUENV_TRY(parsed.append_rows("numpy", data.numpy, [](TomlRow& row) {
      NumpyCap out;
      out.framework = row.text("framework");
      out.below = row.version("below");
      out.requirement = row.text("requirement");
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    GPUENV_TRY(parsed.append_rows("pip", data.pip, [](TomlRow& row) {
      PipPin out;
      out.python_min = row.version("python_min");
      out.python_max = row.version("python_max");
      out.version = row.text("version");
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    GPUENV_TRY(parsed.append_rows("torch_cudnn", data.torch_cudnn, [](TomlRow& row) {
      TorchCudnn out;
      out.torch = row.version("torch");
      out.variant = row.text("variant");
      out.cudnn = row.text("cudnn");
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    GPUENV_TRY(parsed.append_rows("torch_compile", data.torch_compile, [](TomlRow& row) {
      TorchCompileGap out;
      out.torch_min = row.version("torch_min");
      out.torch_max = row.version("torch_max");
      out.python_from = row.version("python_from");
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    GPUENV_TRY(parsed.append_rows("require_cuda", data.require_cuda, [](TomlRow& row) {
      RequireCuda out;
      out.cuda = row.version("cuda");
      out.x86_64 = row.text("x86_64");
      out.arm64 = row.optional_text("arm64");
      if (out.arm64.empty()) out.arm64 = out.x86_64;
      for (const std::string* value : {&out.x86_64, &out.arm64}) {
        if (const auto parsed_value = parse_require_cuda(*value); !parsed_value) row.fail(parsed_value.error().message);
      }
      out.provenance = compat::read_provenance(row);
      return out;
    }));
    if (parsed.contains("curl")) {
      GPUENV_TRY(parsed.read_table("curl", [&data](TomlRow& row) {
        data.curl.image = row.text("image");
        data.curl.provenance = compat::read_provenance(row);
      }));
    }
    if (parsed.contains("pip_advisory")) {
      PipAdvisory advisory;
      GPUENV_TRY(parsed.read_table("pip_advisory", [&advisory](TomlRow& row) {
        advisory.id = row.text("id");
        advisory.fixed = row.version("fixed");
        advisory.provenance = compat::read_provenance(row);
      }));
      data.pip_advisory = std::move(advisory);
    }
    if (parsed.contains("as_of")) {
      GPUENV_TRY_ASSIGN(auto as_of, parsed.top_level_text("as_of"));
      data.as_of = as_of;
    }
    if (parsed.contains("uv")) {
      if (have_uv) return Error::internal(name + ": [uv] must be one table");
      GPUENV_TRY(parsed.read_table("uv", [&data](TomlRow& row) {
        data.uv.version = row.text("version");
        data.uv.image = row.text("image");
        data.uv.python_min = row.version("python_min");
        data.uv.python_max = row.version("python_max");
        data.uv.provenance = compat::read_provenance(row);
      }));
      have_uv = true;
    }
  }
  if (!have_uv) return Error::internal("data/dockerfile: no [uv] table");
  if (data.curl.image.empty()) return Error::internal("data/dockerfile: no [curl] table");
  return data;
}

Expected<const Data*> builtin_data() { return util::builtin_table<&load_data>(); }

}  // namespace gpuenv::dockerfile
