#pragma once
// Which cloud a node runs on, and its instance type where the firmware says, from SMBIOS/DMI strings alone.

#include <string>
#include <string_view>

namespace gpuenv::probe {

/// The DMI strings the classifier reads (/sys/class/dmi/id/<field>, trimmed; empty when absent or unreadable).
struct DmiStrings {
  std::string sys_vendor;
  std::string product_name;
  std::string product_version;
  std::string chassis_asset_tag;
  std::string board_asset_tag;
  std::string product_serial;  ///< root-only on most kernels
  std::string bios_vendor;
  std::string bios_version;
};

/// The cloud a node is on, as far as DMI tells.
struct CloudIdentity {
  std::string cloud;          ///< "aws", "gcp", "azure", "alibaba", "tencent", "huawei", "oracle", "openstack"; empty
  std::string instance_type;  ///< "p4d.24xlarge" where DMI carries it (AWS Nitro); empty otherwise
  std::string evidence;       ///< the DMI field and value that decided it: "sys_vendor=Amazon EC2"
};

/// Classifies DMI strings by the tests cloud-init's ds-identify and Ohai use (sources in cloud.cpp's rule table).
/// Pure; an empty cloud when no rule matches.
CloudIdentity classify_cloud(const DmiStrings& dmi);

/// The display name of a cloud id: "aws" -> "AWS"; the id itself when unknown.
std::string_view cloud_display_name(std::string_view cloud);

}  // namespace gpuenv::probe
