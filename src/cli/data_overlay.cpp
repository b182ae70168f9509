#include "cli/data_overlay.hpp"

#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "doctor/thresholds.hpp"
#include "install/data.hpp"
#include "nccl/data.hpp"
#include "probe/sxid.hpp"
#include "probe/xid.hpp"
#include "smoke/expectations.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {

namespace {

std::vector<std::string> table_names(const std::vector<util::DataTable>& tables) {
  std::vector<std::string> names;
  for (const util::DataTable& table : tables) names.emplace_back(table.name);
  return names;
}

/// Turns a module's parse result into Ok or its Error.
template <typename T>
util::Expected<util::Ok> checked(const util::Expected<T>& parsed) {
  if (!parsed) return parsed.error();
  return util::Ok{};
}

}  // namespace

std::vector<util::DataTable> all_data_tables() {
  std::vector<util::DataTable> tables;
  for (auto&& module : {compat::data_tables(), probe::data_tables(), doctor::data_tables(), smoke::data_tables(),
                        dockerfile::data_tables(), install::data_tables(), nccl::data_tables()}) {
    tables.insert(tables.end(), module.begin(), module.end());
  }
  return tables;
}

util::Expected<util::Overlay> read_overlay_directory(system::System& system, const std::string& directory,
                                                     const std::vector<util::DataTable>& tables) {
  util::Overlay overlay;
  for (const std::string& name : system.list_directory(directory)) {
    if (!util::ends_with(name, ".toml")) continue;
    const std::string path = (util::ends_with(directory, "/") ? directory : directory + "/") + name;
    if (util::find_table(tables, name) == nullptr) {
      std::string fix = "name the file after the table it extends: " + util::join(table_names(tables), ", ");
      if (auto near = util::closest_match(name, table_names(tables))) fix = "rename it to " + *near + " (" + fix + ")";
      return util::Error::input(path + ":1: `" + name + "` is not a gpuenv data table", fix);
    }
    auto text = system.read_file(path);
    if (!text) return text.error();
    overlay.push_back({name, path, *text});
  }
  return overlay;
}

util::Expected<util::Overlay> find_overlay(system::System& system, const std::string& data_dir) {
  std::vector<std::string> directories;
  if (system.exists(k_system_overlay_dir)) directories.emplace_back(k_system_overlay_dir);
  if (const auto env = system.environment(k_overlay_env); env && !env->empty()) {
    if (!system.exists(*env))
      return util::Error::input(std::string(k_overlay_env) + "=" + *env + ": no such directory",
                                "point it at a directory of overlay files, or unset it");
    directories.push_back(*env);
  }
  if (!data_dir.empty()) {
    if (!system.exists(data_dir))
      return util::Error::usage("--data-dir " + data_dir + ": no such directory", "name a directory of overlay files");
    directories.push_back(data_dir);
  }
  const std::vector<util::DataTable> tables = all_data_tables();
  util::Overlay overlay;
  for (const std::string& directory : directories) {
    auto files = read_overlay_directory(system, directory, tables);
    if (!files) return files.error();
    overlay.insert(overlay.end(), files->begin(), files->end());
  }
  return overlay;
}

util::Expected<util::Ok> check_overlay(const util::Overlay& overlay) {
  if (auto r = checked(compat::load_knowledge_base(overlay)); !r) return r;
  if (auto r = checked(probe::load_xid_table(overlay)); !r) return r;
  if (auto r = checked(probe::load_sxid_table(overlay)); !r) return r;
  if (auto r = checked(nccl::load_data(overlay)); !r) return r;
  if (auto r = doctor::check_data(overlay); !r) return r;
  if (auto r = checked(smoke::load_expectations(overlay)); !r) return r;
  if (auto r = checked(dockerfile::load_data(overlay)); !r) return r;
  return checked(install::load_install_data(overlay));
}

}  // namespace gpuenv::cli
