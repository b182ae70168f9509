#include "cli/trusted_paths.hpp"

#include "profile/catalog.hpp"

namespace gpuenv::cli {

util::Expected<util::Ok> require_trusted(system::System& system, const std::string& path, const std::string& named_by) {
  const auto problem = system.trust_problem(path);
  if (!problem) return util::Ok{};
  return util::Error::input(
      named_by + ": not trusted: " + *problem + ", so someone other than root could change what gpuenv loads",
      "make it and the directories above it owned by root (or by you) and not writable by group "
      "or others (`chown root: PATH && chmod go-w PATH`), or point to a copy that is");
}

util::Expected<std::string> library_from_environment(system::System& system, const std::string& name,
                                                     const std::string& fallback) {
  const auto value = system.environment(name);
  if (!value || value->empty()) return fallback;
  if (value->find('/') != std::string::npos) {
    GPUENV_TRY(require_trusted(system, *value, name + "=" + *value));
  }
  return *value;
}

util::Expected<profile::ProfileDocument> load_trusted_profile(system::System& system, const std::string& name_or_path,
                                                              const std::string& named_by) {
  if (profile::names_a_file(name_or_path) && system.exists(name_or_path)) {
    GPUENV_TRY(require_trusted(system, name_or_path, named_by + " " + name_or_path));
  }
  return profile::load_profile(name_or_path, system);
}

}  // namespace gpuenv::cli
