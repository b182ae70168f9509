// NVIDIA's CUDA repository for apt: the key comes from NVIDIA's own host whatever mirror serves the packages (a
// mirror's keyring package would run its maintainer scripts as root and trust its key), checked against
// data/install/keys.toml; the repository is preferred over the archive by its Release Label, as NVIDIA's own pin
// file does (https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-ubuntu2204.pin).

#include "install/apt.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_cache = "/var/cache/gpuenv/";
constexpr const char* k_repository_pin = "/etc/apt/preferences.d/gpuenv-cuda-repository-pin-600";

/// A step is done when the keyring holds NVIDIA's key: the check it ends with, run first.
Step done_when_key_present(Step step) {
  const Check& check = step.checks.front();
  step.done_if = check.argv;
  step.done_if_stdout = check.text;
  step.done_if_match = check.match;
  return step;
}

/// NVIDIA's keyring package, where its SHA-256 is known: downloaded from NVIDIA over https, checked, installed
/// through apt-get (which waits for the dpkg lock, unlike dpkg -i).
Step keyring_package(const PlanContext& context, const Backend& backend, const KeyringRow& pinned,
                     const KeyRow& key) {
  const Repository& repository = context.data.repository;
  const std::string deb = k_cache + repository.keyring_file;
  Step step{"install.repo.cuda_keyring",
            "NVIDIA's keyring package " + repository.keyring_file +
                " from NVIDIA's own host over https only (never a mirror), its SHA-256 checked (data/install/"
                "keys.toml), installed with apt-get; it must hold the key " +
                key.fingerprint};
  step.files.push_back({deb + ".sha256", pinned.sha256 + "  " + deb + "\n"});
  step.commands = {https_download(context.upstream_repo_url() + repository.keyring_file, deb),
                   {"sha256sum", "--check", "--strict", "--quiet", deb + ".sha256"},
                   backend.install({deb})};
  step.checks = {fingerprint_check(repository.keyring_path, key.fingerprint)};
  return done_when_key_present(step);
}

/// Where no keyring package's SHA-256 is known (sbsa): NVIDIA's key file, of which only the key with the pinned
/// fingerprint is kept as the keyring (the CUDA installation guide's manual alternative to cuda-keyring).
Step key_file(const PlanContext& context, const KeyRow& key) {
  const Repository& repository = context.data.repository;
  const std::string downloaded = k_cache + ("keys/" + key.file);
  Step step{"install.repo.cuda_key", "NVIDIA's repository key " + key.id +
                                         " from NVIDIA's own host over https only (never a mirror); only the key "
                                         "with fingerprint " +
                                         key.fingerprint + " is kept (data/install/keys.toml)"};
  const PinnedKey pinned = pin_key(downloaded, key.fingerprint, repository.keyring_path, false);
  step.commands = {https_download(context.upstream_repo_url() + key.file, downloaded)};
  step.commands.insert(step.commands.end(), pinned.commands.begin(), pinned.commands.end());
  step.checks = {pinned.check};
  return done_when_key_present(step);
}

}  // namespace

std::vector<Step> apt_cuda_repository(const PlanContext& context, const Backend& backend) {
  const Repository& repository = context.data.repository;
  const std::string& url = context.plan.repo_url;
  std::vector<Step> out;
  // The keyring package writes this list file for NVIDIA's own URL; anything else replaces it (same path).
  bool write_list = context.cuda_base_url != repository.cuda_base_url;
  if (!context.local_cuda_repository()) {
    const KeyRow* key = context.data.find_key(context.target.key);
    const KeyringRow* pinned = context.data.find_keyring(context.target.repo_dir, context.plan.target.repo_arch);
    if (pinned != nullptr) {
      out.push_back(keyring_package(context, backend, *pinned, *key));
    } else {
      out.push_back(key_file(context, *key));
      write_list = true;
    }
  }
  Step source{"install.repo.cuda", "NVIDIA's CUDA repository (" + url +
                                       ") preferred over the archive by its Release label \"" +
                                       repository.apt_pin_label + "\"; the package lists refreshed"};
  if (write_list) {
    source.files.push_back(
        {"/etc/apt/sources.list.d/cuda-" + context.target.repo_dir + "-" + context.plan.target.repo_arch + ".list",
         deb_line(url, repository.keyring_path)});
  }
  source.files.push_back({k_repository_pin, "Package: *\nPin: release l=" + repository.apt_pin_label +
                                                "\nPin-Priority: 600\n"});
  source.commands = {apt_get({"update"})};
  source.retries = k_update_retries;
  source.changes_node = false;  // files are written only when they differ; refreshing the lists changes nothing
  out.push_back(source);
  return out;
}

}  // namespace gpuenv::install
