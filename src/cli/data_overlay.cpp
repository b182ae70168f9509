#include "cli/data_overlay.hpp"

#include <regex>

#include "cli/trusted_paths.hpp"
#include "compat/knowledge_base.hpp"
#include "dockerfile/data.hpp"
#include "doctor/thresholds.hpp"
#include "install/data.hpp"
#include "nccl/data.hpp"
#include "probe/sxid.hpp"
#include "probe/xid.hpp"
#include "profile/fields.hpp"
#include "smoke/smoke.hpp"
#include "util/strings.hpp"
#include "watch/rules.hpp"

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
  GPUENV_TRY(parsed);
  return util::Ok{};
}

/// A value of the install table that reaches a root command or file: its key and the problem, or nullopt.
struct BadValue {
  std::string key;
  std::string value;
  std::string problem;
};

std::optional<BadValue> grammar_problem(const std::string& key, const std::string& value, const char* pattern,
                                        const char* what) {
  if (std::regex_match(value, std::regex(pattern)) && value.find("..") == std::string::npos) return std::nullopt;
  return BadValue{key, value, std::string("it is not ") + what};
}

/// The first value of the install data that an overlay may have set and that is not the shape gpuenv accepts from a
/// profile: repository URLs as profile mirrors (https, no credentials, query, quotes or spaces: profile/fields.cpp),
/// paths and file names, package names that could pass for options (a leading '-') or carry shell text.
std::optional<BadValue> install_data_problem(const install::InstallData& data) {
  const install::Repository& r = data.repository;
  for (const auto& [key, field, value] :
       {std::tuple{"cuda_base_url", "mirrors.cuda_repo", r.cuda_base_url},
        std::tuple{"toolkit_base_url", "mirrors.container_toolkit", r.toolkit_base_url}}) {
    if (auto valid = profile::validate_field(field, value); !valid) {
      // The profile's words name its own key ("`mirrors.cuda_repo` = ... is not valid: <why>"): keep the why.
      const std::string& message = valid.error().message;
      const std::size_t why = message.find("is not valid: ");
      return BadValue{std::string("[repository] ") + key, value,
                      why == std::string::npos ? message : message.substr(why + 14)};
    }
  }
  constexpr const char* k_file = "[A-Za-z0-9_][A-Za-z0-9._+~-]*";
  constexpr const char* k_path = "(/[A-Za-z0-9._+~$()-]+)+";
  constexpr const char* k_package = "[A-Za-z0-9{][A-Za-z0-9.+_:{}~=*-]*";
  const std::pair<const char*, const std::string*> files[] = {{"keyring_file", &r.keyring_file}};
  for (const auto& [key, value] : files) {
    if (auto bad = grammar_problem(std::string("[repository] ") + key, *value, k_file, "a plain file name")) return bad;
  }
  const std::pair<const char*, const std::string*> paths[] = {{"keyring_path", &r.keyring_path},
                                                              {"toolkit_deb_path", &r.toolkit_deb_path},
                                                              {"toolkit_key_path", &r.toolkit_key_path},
                                                              {"toolkit_rpm_path", &r.toolkit_rpm_path}};
  for (const auto& [key, value] : paths) {
    if (auto bad = grammar_problem(std::string("[repository] ") + key, *value, k_path, "an absolute path")) return bad;
  }
  std::vector<std::pair<std::string, std::string>> packages = {
      {"[packages] cuda_toolkit", data.packages.cuda_toolkit},
      {"[packages] cuda_compat", data.packages.cuda_compat},
      {"[packages] cudnn", data.packages.cudnn},
      {"[packages] distro_cuda_toolkit", data.packages.distro_cuda_toolkit},
      {"[packages] container_toolkit", data.packages.container_toolkit}};
  for (const install::TargetRow& target : data.targets) {
    if (auto bad = grammar_problem("[[target]] repo_dir", target.repo_dir, k_file, "a plain directory name"))
      return bad;
    for (const std::string& name : target.headers) packages.emplace_back("[[target]] headers", name);
    for (const std::string& name : target.future_headers) packages.emplace_back("[[target]] future_headers", name);
  }
  for (const install::DriverRow& driver : data.drivers) {
    for (const std::string& name : driver.packages) packages.emplace_back("[[driver]] packages", name);
  }
  for (const auto& [key, name] : packages) {
    if (auto bad = grammar_problem(key, name, k_package, "a package name")) return bad;
  }
  return std::nullopt;
}

/// The overlay's install values checked as profile values are (docs/security.md): install runs them as root.
util::Expected<util::Ok> check_install_locations(const util::Overlay& overlay) {
  const auto data = install::load_install_data(overlay);
  if (!data) return util::Ok{};  // a schema error: check_overlay names it with file and line
  const auto bad = install_data_problem(*data);
  if (!bad) return util::Ok{};
  std::vector<std::string> files;
  for (const util::OverlayFile& file : overlay) {
    if (file.table == "targets.toml") files.push_back(file.path);
  }
  return util::Error::input(util::join(files, ", ") + ": " + bad->key + " = \"" + bad->value + "\": " + bad->problem,
                            "install runs with these values as root: give an https URL without credentials or query, "
                            "absolute paths and plain package names, as a profile's [mirrors] must");
}

}  // namespace

std::vector<util::DataTable> all_data_tables() {
  std::vector<util::DataTable> tables;
  for (auto&& module : {compat::data_tables(), probe::data_tables(), doctor::data_tables(), smoke::data_tables(),
                        dockerfile::data_tables(), install::data_tables(), nccl::data_tables(), watch::data_tables()}) {
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
    GPUENV_TRY_ASSIGN(auto text, system.read_file(path));
    overlay.push_back({name, path, text});
  }
  return overlay;
}

util::Expected<util::Overlay> find_overlay(system::System& system, const std::string& data_dir) {
  // Each directory with the words that named it, for a refusal.
  std::vector<std::pair<std::string, std::string>> directories;
  if (system.exists(k_system_overlay_dir)) directories.emplace_back(k_system_overlay_dir, k_system_overlay_dir);
  if (const auto env = system.environment(k_overlay_env); env && !env->empty()) {
    if (!system.exists(*env))
      return util::Error::input(std::string(k_overlay_env) + "=" + *env + ": no such directory",
                                "point it at a directory of overlay files, or unset it");
    directories.emplace_back(*env, std::string(k_overlay_env) + "=" + *env);
  }
  if (!data_dir.empty()) {
    if (!system.exists(data_dir))
      return util::Error::usage("--data-dir " + data_dir + ": no such directory", "name a directory of overlay files");
    directories.emplace_back(data_dir, "--data-dir " + data_dir);
  }
  const std::vector<util::DataTable> tables = all_data_tables();
  util::Overlay overlay;
  for (const auto& [directory, named_by] : directories) {
    // An overlay changes what doctor judges and what install runs as root: only root (or the user running gpuenv)
    // may be able to change it.
    GPUENV_TRY(require_trusted(system, directory, named_by));
    GPUENV_TRY_ASSIGN(auto files, read_overlay_directory(system, directory, tables));
    for (const util::OverlayFile& file : files) {
      GPUENV_TRY(require_trusted(system, file.path, named_by + ": " + file.path));
    }
    overlay.insert(overlay.end(), files.begin(), files.end());
  }
  if (!overlay.empty()) {
    GPUENV_TRY(check_install_locations(overlay));
  }
  return overlay;
}

util::Expected<util::Ok> check_overlay(const util::Overlay& overlay) {
  GPUENV_TRY(checked(compat::load_knowledge_base(overlay)));
  GPUENV_TRY(checked(probe::load_xid_table(overlay)));
  GPUENV_TRY(checked(probe::load_sxid_table(overlay)));
  GPUENV_TRY(checked(nccl::load_data(overlay)));
  GPUENV_TRY(doctor::check_data(overlay));
  GPUENV_TRY(smoke::check_data(overlay));
  GPUENV_TRY(checked(dockerfile::load_data(overlay)));
  GPUENV_TRY(checked(install::load_install_data(overlay)));
  return watch::check_data(overlay);
}

}  // namespace gpuenv::cli
