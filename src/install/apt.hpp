#pragma once
// What apt.cpp and apt_repository.cpp share (internal to the install module).

#include <string>
#include <vector>

#include "install/backend.hpp"

namespace gpuenv::install {

/// `apt-get update` fails with exit 100 while another process holds the lists lock (DPkg::Lock::Timeout covers only
/// dpkg's lock): the steps that refresh the lists retry this often, retry_delay apart.
constexpr int k_update_retries = 30;

/// `env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 <arguments>`.
std::vector<std::string> apt_get(std::vector<std::string> arguments);
/// "deb [signed-by=KEY] URL /", or [trusted=yes] for a local file: repository (checked before planning).
std::string deb_line(const std::string& url, const std::string& key);
/// NVIDIA's CUDA repository: its key (the keyring package, or the key itself) and its source and pin.
std::vector<Step> apt_cuda_repository(const PlanContext& context, const Backend& backend);
/// Whether the Ubuntu archive has Canonical-signed modules for the running kernel (true when unknown).
bool signed_modules_available(const PlanContext& context);

}  // namespace gpuenv::install
