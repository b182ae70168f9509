#include "install/data.hpp"

#include <algorithm>

#include "util/data_table.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"
#include "util/version.hpp"

namespace gpuenv::install {

std::span<const util::EmbeddedFile> embedded_install_data();  // generated from data/install/*.toml

namespace {

using util::Error;
using util::Expected;
using util::TomlRow;

bool enterprise_linux(const std::string& distro) { return distro == "rockylinux" || distro == "rhel"; }

/// A row's status: verified (a primary source), secondary (a record of one, or derived), unverified.
std::string status_of(TomlRow& row) { return row.one_of("status", {"verified", "secondary", "unverified"}); }

int branch_in(TomlRow& row, std::string_view key) {
  return static_cast<int>(row.integer_in(key, 100, 999, "a driver branch"));
}

TargetRow read_target(TomlRow& row) {
  TargetRow out;
  out.distro = row.text("distro");
  out.version = row.text("version");
  out.manager = row.one_of("manager", {"apt", "dnf"});
  out.repo_dir = row.text("repo_dir");
  out.arches = row.texts("arches");
  out.key = row.text("key");
  out.headers = row.texts("headers");
  out.future_headers = row.texts("future_headers");
  out.ga_kernel = row.optional_text("ga_kernel");
  out.distro_cuda_toolkit = row.optional_text("distro_cuda_toolkit");
  out.driver_lock = row.optional_text("driver_lock");
  out.crb = row.optional_texts("crb");
  out.crb_repo = row.optional_text("crb_repo");
  out.crb_rhui = row.optional_text("crb_rhui");
  out.archive_origin = row.optional_text("archive_origin");
  out.epel = row.optional_texts("epel");
  out.cuda_first = row.version("cuda_first");
  out.cuda_last = row.optional_version("cuda_last");
  out.branch_first = branch_in(row, "branch_first");
  if (row.optional_number("branch_last")) out.branch_last = branch_in(row, "branch_last");
  out.cudnn = row.boolean("cudnn");
  out.status = status_of(row);
  out.source = row.text("source");
  if (out.manager == "dnf" && out.driver_lock != "module-stream" && out.driver_lock != "versionlock") {
    row.fail("`driver_lock` must be module-stream or versionlock for dnf targets");
  }
  if (out.crb.empty() != out.crb_repo.empty()) row.fail("`crb` and `crb_repo` go together");
  if (out.manager == "apt" && out.archive_origin.empty())
    row.fail("an apt target needs `archive_origin` (its archive's Release Origin), which the branch pin keeps low");
  return out;
}

DriverRow read_driver(TomlRow& row) {
  DriverRow out;
  out.manager = row.one_of("manager", {"apt", "dnf"});
  out.distro = row.optional_text("distro");
  out.origin = row.one_of("origin", {"nvidia", "distro"});
  out.first_branch = branch_in(row, "first_branch");
  out.last_branch = branch_in(row, "last_branch");
  out.modules = row.one_of("modules", {"open", "proprietary"});
  out.stream = row.optional_text("stream");
  out.pinning_package = row.optional_text("pinning_package");
  out.packages = row.texts("packages");
  out.compute_only = row.optional_texts("compute_only");
  out.verify = row.texts("verify");
  out.signed_modules = row.optional_text("signed_modules");
  out.signed_modules_abi = row.optional_text("signed_modules_abi");
  out.dkms = row.optional_text("dkms");
  out.status = status_of(row);
  out.source = row.text("source");
  if (out.manager == "dnf" && out.stream.empty()) row.fail("a dnf row needs `stream`");
  if (out.origin == "distro" && (out.signed_modules.empty() || out.dkms.empty()))
    row.fail("a distro row needs `signed_modules`, `signed_modules_abi` and `dkms`");
  return out;
}

BranchRow read_branch(TomlRow& row) {
  BranchRow out;
  out.branch = branch_in(row, "branch");
  out.kind = row.one_of("kind", {"lts", "production", "feature"});
  out.end_of_life = row.text("end_of_life");
  out.status = status_of(row);
  out.source = row.text("source");
  if (!out.end_of_life.empty() && out.end_of_life != "ended" &&
      (out.end_of_life.size() != 7 || out.end_of_life[4] != '-'))
    row.fail("`end_of_life` must be \"YYYY-MM\", \"ended\" (NVIDIA lists it as end of life, no date) or \"\"");
  return out;
}

FabricRow read_fabric(TomlRow& row) {
  FabricRow out;
  out.manager = row.one_of("manager", {"apt", "dnf"});
  out.origin = row.one_of("origin", {"nvidia", "distro"});
  out.first_branch = branch_in(row, "first_branch");
  out.last_branch = branch_in(row, "last_branch");
  out.packages = row.texts("packages");
  out.status = status_of(row);
  out.source = row.text("source");
  return out;
}

bool hex_digits(const std::string& text, std::size_t count) {
  return text.size() == count && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

KeyRow read_key(TomlRow& row) {
  KeyRow out;
  out.id = row.text("id");
  out.file = row.text("file");
  out.fingerprint = row.text("fingerprint");
  out.status = status_of(row);
  out.source = row.text("source");
  if (!out.fingerprint.empty() && !hex_digits(out.fingerprint, 40))
    row.fail("`fingerprint` must be 40 hex digits (or \"\" when none is published)");
  if (out.fingerprint.empty() && out.status == "verified") row.fail("a key without a fingerprint cannot be verified");
  return out;
}

KeyringRow read_keyring(TomlRow& row) {
  KeyringRow out;
  out.repo_dir = row.text("repo_dir");
  out.arch = row.text("arch");
  out.sha256 = row.text("sha256");
  out.status = status_of(row);
  out.source = row.text("source");
  if (!hex_digits(out.sha256, 64)) row.fail("`sha256` must be 64 hex digits");
  return out;
}

GpuRow read_gpu(TomlRow& row) {
  GpuRow out;
  out.first = static_cast<std::uint16_t>(row.integer_in("first", 0, 0xffff, "a PCI device id"));
  out.last = static_cast<std::uint16_t>(row.integer_in("last", 0, 0xffff, "a PCI device id"));
  out.name = row.text("name");
  out.compute_capability = row.text("compute_capability");
  out.open_only = row.boolean("open_only");
  status_of(row);
  out.source = row.text("source");
  if (out.last < out.first) row.fail("`last` is below `first`");
  return out;
}

const std::vector<util::RowKey> k_install_keys = {
    {"target", {"distro", "version"}},
    {"driver", {"manager", "distro", "origin", "modules", "first_branch"}},
    {"branch", {"branch"}},
    {"fabric", {"manager", "origin", "first_branch"}},
    {"key", {"id"}},
    {"keyring", {"repo_dir", "arch"}},
    {"gpu", {"first"}},
};

const std::vector<std::string_view> k_tables = {"as_of",  "repository",     "target", "driver", "branch",
                                                "fabric", "fabric_service", "limits", "key",    "keyring",
                                                "gpu",    "packages"};

/// What a file contributes besides its rows: [repository], [packages], [limits], [fabric_service], as_of.
Expected<util::Ok> read_tables(const util::TomlFile& parsed, InstallData& data, std::vector<std::string>& seen) {
  const auto once = [&seen](std::string_view name) { seen.emplace_back(name); };
  if (parsed.contains("as_of")) {
    GPUENV_TRY_ASSIGN(auto as_of, parsed.top_level_text("as_of"));
    data.as_of = as_of;
    once("as_of");
  }
  const std::vector<std::pair<std::string_view, std::function<void(TomlRow&)>>> tables = {
      {"repository",
       [&data](TomlRow& row) {
         Repository& r = data.repository;
         r.cuda_base_url = row.text("cuda_base_url");
         r.keyring_file = row.text("keyring_file");
         r.keyring_path = row.text("keyring_path");
         r.apt_pin_label = row.text("apt_pin_label");
         r.apt_driver_packages = row.text("apt_driver_packages");
         r.toolkit_base_url = row.text("toolkit_base_url");
         r.toolkit_deb_path = row.text("toolkit_deb_path");
         r.toolkit_key_path = row.text("toolkit_key_path");
         r.toolkit_rpm_path = row.text("toolkit_rpm_path");
         r.source = row.text("source");
       }},
      {"packages",
       [&data](TomlRow& row) {
         PackageNames& p = data.packages;
         p.cuda_toolkit = row.text("cuda_toolkit");
         p.cuda_compat = row.text("cuda_compat");
         p.cudnn = row.text("cudnn");
         p.distro_cuda_toolkit = row.text("distro_cuda_toolkit");
         p.container_toolkit = row.text("container_toolkit");
         p.dcgm = row.text("dcgm");
         p.dcgm_service = row.text("dcgm_service");
         p.persistenced_service = row.text("persistenced_service");
         p.source = row.text("source");
       }},
      {"limits",
       [&data](TomlRow& row) {
         Limits& l = data.limits;
         l.open_first_branch = branch_in(row, "open_first_branch");
         l.open_default_from = branch_in(row, "open_default_from");
         l.pre_turing_last_branch = branch_in(row, "pre_turing_last_branch");
         l.compute_only_from = branch_in(row, "compute_only_from");
         status_of(row);
         l.source = row.text("source");
       }},
      {"fabric_service",
       [&data](TomlRow& row) {
         FabricService& f = data.fabric_service;
         f.service = row.text("service");
         f.nvlink5_packages = row.texts("nvlink5_packages");
         f.nvlink5_modules = row.texts("nvlink5_modules");
         status_of(row);
         f.source = row.text("source");
       }},
  };
  for (const auto& [name, read] : tables) {
    if (!parsed.contains(name)) continue;
    GPUENV_TRY(parsed.read_table(name, read));
    once(name);
  }
  return util::Ok{};
}

}  // namespace

const TargetRow* InstallData::find_target(const std::string& distro, const std::string& version) const {
  for (const TargetRow& row : targets) {
    if (row.distro != distro) continue;
    if (row.version == version || (enterprise_linux(distro) && row.version == util::major_of(version))) return &row;
  }
  return nullptr;
}

std::string InstallData::supported_list() const {
  std::vector<std::string> names;
  for (const TargetRow& row : targets) names.push_back(row.distro + " " + row.version);
  return util::join(names, ", ");
}

const BranchRow* InstallData::find_branch(int branch) const {
  for (const BranchRow& row : branches) {
    if (row.branch == branch) return &row;
  }
  return nullptr;
}

const KeyRow* InstallData::find_key(const std::string& id) const {
  for (const KeyRow& row : keys) {
    if (row.id == id) return &row;
  }
  return nullptr;
}

const KeyringRow* InstallData::find_keyring(const std::string& repo_dir, const std::string& arch) const {
  for (const KeyringRow& row : keyrings) {
    if (row.repo_dir == repo_dir && row.arch == arch) return &row;
  }
  return nullptr;
}

const GpuRow* InstallData::find_gpu(std::uint16_t device) const {
  for (const GpuRow& row : gpus) {
    if (device >= row.first && device <= row.last) return &row;
  }
  return nullptr;
}

bool InstallData::past_end_of_life(const BranchRow& branch) const {
  if (branch.end_of_life == "ended") return true;
  return !branch.end_of_life.empty() && branch.end_of_life < as_of.substr(0, 7);
}

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_install_data()) tables.push_back({file.name, file, k_install_keys});
  return tables;
}

Expected<InstallData> load_install_data(const util::Overlay& overlay) {
  return parse_install_data(embedded_install_data(), overlay);
}

Expected<InstallData> parse_install_data(std::span<const util::EmbeddedFile> files, const util::Overlay& overlay) {
  InstallData data;
  std::vector<std::string> seen;
  for (const util::EmbeddedFile& file : files) {
    const std::string name(file.name);
    GPUENV_TRY_ASSIGN(const auto parsed, util::read_data_table({file.name, file, k_install_keys}, overlay));
    if (const auto key = parsed.unexpected_key(k_tables)) {
      return Error::internal(name + ": unexpected table `" + *key + "`");
    }
    GPUENV_TRY(parsed.append_rows("target", data.targets, read_target));
    GPUENV_TRY(parsed.append_rows("driver", data.drivers, read_driver));
    GPUENV_TRY(parsed.append_rows("branch", data.branches, read_branch));
    GPUENV_TRY(parsed.append_rows("fabric", data.fabric, read_fabric));
    GPUENV_TRY(parsed.append_rows("key", data.keys, read_key));
    GPUENV_TRY(parsed.append_rows("keyring", data.keyrings, read_keyring));
    GPUENV_TRY(parsed.append_rows("gpu", data.gpus, read_gpu));
    GPUENV_TRY(read_tables(parsed, data, seen));
  }
  for (std::string_view required : {"as_of", "repository", "packages", "limits", "fabric_service"}) {
    if (std::find(seen.begin(), seen.end(), required) == seen.end())
      return Error::internal("data/install: `" + std::string(required) + "` is required");
  }
  std::sort(data.branches.begin(), data.branches.end(),
            [](const BranchRow& a, const BranchRow& b) { return a.branch < b.branch; });
  for (const TargetRow& target : data.targets) {
    if (data.find_key(target.key) == nullptr)
      return Error::internal("data/install: target " + target.distro + " " + target.version + " names key `" +
                             target.key + "`, which no [[key]] row has");
  }
  return data;
}

Expected<const InstallData*> builtin_install_data() { return util::builtin_table<&load_install_data>(); }

}  // namespace gpuenv::install
