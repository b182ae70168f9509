#include "install/data.hpp"

#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::install {

std::span<const util::EmbeddedFile> embedded_install_data();  // generated from data/install/*.toml

namespace {

using util::Error;
using util::Expected;
using util::TomlRow;

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

bool enterprise_linux(const std::string& distro) { return distro == "rockylinux" || distro == "rhel"; }

TargetRow read_target(TomlRow& row) {
  TargetRow out;
  out.distro = row.text("distro");
  out.version = row.text("version");
  out.manager = row.one_of("manager", {"apt", "dnf"});
  out.repo_dir = row.text("repo_dir");
  out.arches = row.texts("arches");
  out.headers = row.texts("headers");
  out.prerequisites = row.optional_texts("prerequisites");
  out.driver_lock = row.optional_text("driver_lock");
  out.source = row.text("source");
  if (out.manager == "dnf" && out.driver_lock != "module-stream" && out.driver_lock != "versionlock") {
    row.fail("`driver_lock` must be module-stream or versionlock for dnf targets");
  }
  return out;
}

DriverRow read_driver(TomlRow& row) {
  DriverRow out;
  out.manager = row.one_of("manager", {"apt", "dnf"});
  out.origin = row.one_of("origin", {"nvidia", "distro"});
  out.first_branch = static_cast<int>(row.integer_in("first_branch", 100, 999, "a driver branch"));
  out.last_branch = static_cast<int>(row.integer_in("last_branch", 100, 999, "a driver branch"));
  out.modules = row.one_of("modules", {"open", "proprietary"});
  out.lock = row.one_of("lock", {"hold", "pinning-package", "target"});
  out.stream = row.optional_text("stream");
  out.packages = row.texts("packages");
  out.source = row.text("source");
  if (out.lock == "target" && out.stream.empty()) row.fail("a dnf row (`lock` = target) needs `stream`");
  return out;
}

}  // namespace

const TargetRow* InstallData::find_target(const std::string& distro, const std::string& version) const {
  for (const TargetRow& row : targets) {
    if (row.distro != distro) continue;
    if (row.version == version || (enterprise_linux(distro) && row.version == major_of(version))) return &row;
  }
  return nullptr;
}

std::string InstallData::supported_list() const {
  std::vector<std::string> names;
  for (const TargetRow& row : targets) names.push_back(row.distro + " " + row.version);
  return util::join(names, ", ");
}

namespace {

const std::vector<util::RowKey> k_install_keys = {{"target", {"distro", "version"}},
                                                  {"driver", {"origin", "first_branch"}}};

}  // namespace

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
  bool have_repository = false;
  bool have_packages = false;
  for (const util::EmbeddedFile& file : files) {
    const std::string name(file.name);
    const auto parsed = util::read_data_table({file.name, file, k_install_keys}, overlay);
    if (!parsed) return parsed.error();
    if (const auto key = parsed->unexpected_key({"repository", "target", "driver", "packages"})) {
      return Error::internal(name + ": unexpected table `" + *key + "`");
    }
    if (auto rows = parsed->append_rows("target", data.targets, read_target); !rows) return rows.error();
    if (auto rows = parsed->append_rows("driver", data.drivers, read_driver); !rows) return rows.error();
    if (parsed->contains("repository")) {
      have_repository = true;
      auto read = parsed->read_table("repository", [&data](TomlRow& row) {
        Repository& r = data.repository;
        r.cuda_base_url = row.text("cuda_base_url");
        r.apt_keyring_file = row.text("apt_keyring_file");
        r.apt_keyring_path = row.text("apt_keyring_path");
        r.rpm_key_file = row.text("rpm_key_file");
        r.toolkit_base_url = row.text("toolkit_base_url");
        r.toolkit_deb_path = row.text("toolkit_deb_path");
        r.toolkit_key_path = row.text("toolkit_key_path");
        r.toolkit_rpm_path = row.text("toolkit_rpm_path");
        r.source = row.text("source");
      });
      if (!read) return read.error();
    }
    if (parsed->contains("packages")) {
      have_packages = true;
      auto read = parsed->read_table("packages", [&data](TomlRow& row) {
        PackageNames& p = data.packages;
        p.cuda_toolkit = row.text("cuda_toolkit");
        p.cuda_compat = row.text("cuda_compat");
        p.cudnn = row.text("cudnn");
        p.distro_cuda_toolkit = row.text("distro_cuda_toolkit");
        p.container_toolkit = row.text("container_toolkit");
        p.source = row.text("source");
      });
      if (!read) return read.error();
    }
  }
  if (!have_repository || !have_packages)
    return Error::internal("data/install: [repository] and [packages] are required");
  return data;
}

Expected<const InstallData*> builtin_install_data() {
  static const Expected<InstallData> data = parse_install_data(embedded_install_data(), util::installed_overlay());
  if (!data) return data.error();
  return &*data;
}

}  // namespace gpuenv::install
