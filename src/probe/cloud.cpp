#include "probe/cloud.hpp"

#include <algorithm>
#include <cctype>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

enum class Field {
  sys_vendor,
  product_name,
  product_version,
  chassis_asset_tag,
  product_serial,
  bios_vendor,
  bios_version
};
enum class Match { equals, starts_with, contains };

/// One DMI test: when `field` matches `value` (case-insensitive), the node is on `cloud`.
struct Rule {
  Field field;
  Match match;
  std::string_view value;
  std::string_view cloud;
};

// Order matters: specific asset tags before the generic OpenStack product names (Huawei Cloud runs OpenStack Nova),
// and the Azure chassis tag before Hyper-V's generic "Microsoft Corporation" (not Azure-specific).
// Sources: cloud-init tools/ds-identify (dscheck_Ec2, dscheck_GCE, is_azure_chassis, dscheck_AliYun,
// dscheck_OpenStack, dscheck_Oracle), cloudinit/sources/DataSourceOpenStack.py (HUAWEICLOUD), chef/ohai plugins
// (ec2 bios_version "amazon", alibaba sys_vendor), bin456789/reinstall (Tencent Cloud / Huawei Cloud sys_vendor).
constexpr Rule k_rules[] = {
    {Field::sys_vendor, Match::equals, "Amazon EC2", "aws"},
    {Field::chassis_asset_tag, Match::equals, "Amazon EC2", "aws"},
    {Field::bios_vendor, Match::contains, "Amazon", "aws"},
    {Field::bios_version, Match::contains, "amazon", "aws"},  // Xen-based types (p3): "4.11.amazon"
    {Field::product_version, Match::contains, "amazon", "aws"},
    {Field::product_name, Match::equals, "Google Compute Engine", "gcp"},
    {Field::product_name, Match::equals, "Google", "gcp"},
    {Field::product_serial, Match::starts_with, "GoogleCloud-", "gcp"},
    {Field::sys_vendor, Match::equals, "Google", "gcp"},
    {Field::chassis_asset_tag, Match::equals, "7783-7084-3265-9085-8269-3286-77", "azure"},
    {Field::product_name, Match::equals, "Alibaba Cloud ECS", "alibaba"},
    {Field::sys_vendor, Match::equals, "Alibaba Cloud", "alibaba"},
    {Field::sys_vendor, Match::equals, "Tencent Cloud", "tencent"},
    {Field::chassis_asset_tag, Match::equals, "HUAWEICLOUD", "huawei"},
    {Field::sys_vendor, Match::equals, "Huawei Cloud", "huawei"},
    {Field::chassis_asset_tag, Match::equals, "OracleCloud.com", "oracle"},
    {Field::product_name, Match::equals, "OpenStack Nova", "openstack"},
    {Field::product_name, Match::equals, "OpenStack Compute", "openstack"},
    {Field::chassis_asset_tag, Match::equals, "OpenStack Nova", "openstack"},
    {Field::chassis_asset_tag, Match::equals, "OpenStack Compute", "openstack"},
    {Field::sys_vendor, Match::equals, "OpenStack Foundation", "openstack"},
};

std::string_view field_name(Field field) {
  switch (field) {
    case Field::sys_vendor:
      return "sys_vendor";
    case Field::product_name:
      return "product_name";
    case Field::product_version:
      return "product_version";
    case Field::chassis_asset_tag:
      return "chassis_asset_tag";
    case Field::product_serial:
      return "product_serial";
    case Field::bios_vendor:
      return "bios_vendor";
    case Field::bios_version:
      return "bios_version";
  }
  return "";
}

const std::string& field_value(const DmiStrings& dmi, Field field) {
  switch (field) {
    case Field::sys_vendor:
      return dmi.sys_vendor;
    case Field::product_name:
      return dmi.product_name;
    case Field::product_version:
      return dmi.product_version;
    case Field::chassis_asset_tag:
      return dmi.chassis_asset_tag;
    case Field::product_serial:
      return dmi.product_serial;
    case Field::bios_vendor:
      return dmi.bios_vendor;
    case Field::bios_version:
      return dmi.bios_version;
  }
  return dmi.sys_vendor;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool matches(const Rule& rule, std::string_view value) {
  if (value.empty()) return false;
  const std::string have = lower(util::trim(value));
  const std::string want = lower(rule.value);
  switch (rule.match) {
    case Match::equals:
      return have == want;
    case Match::starts_with:
      return util::starts_with(have, want);
    case Match::contains:
      return util::contains(have, want);
  }
  return false;
}

/// An EC2 instance type as Nitro's product_name prints it: "<family>.<size>", e.g. "p4d.24xlarge", "g4dn.metal".
bool looks_like_ec2_type(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= name.size()) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == '.' || c == '-'; });
}

}  // namespace

CloudIdentity classify_cloud(const DmiStrings& dmi) {
  CloudIdentity identity;
  for (const Rule& rule : k_rules) {
    const std::string& value = field_value(dmi, rule.field);
    if (!matches(rule, value)) continue;
    identity.cloud = std::string(rule.cloud);
    identity.evidence = std::string(field_name(rule.field)) + "=" + std::string(util::trim(value));
    break;
  }
  // On Nitro, product_name is the instance type; on Xen (p3 and older) it is "HVM domU" and says nothing.
  const std::string_view product = util::trim(dmi.product_name);
  if (identity.cloud == "aws" && looks_like_ec2_type(product)) identity.instance_type = std::string(product);
  return identity;
}

std::string_view cloud_display_name(std::string_view cloud) {
  if (cloud == "aws") return "AWS";
  if (cloud == "gcp") return "Google Cloud";
  if (cloud == "azure") return "Azure";
  if (cloud == "alibaba") return "Alibaba Cloud";
  if (cloud == "tencent") return "Tencent Cloud";
  if (cloud == "huawei") return "Huawei Cloud";
  if (cloud == "oracle") return "Oracle Cloud";
  if (cloud == "openstack") return "OpenStack";
  return cloud;
}

}  // namespace gpuenv::probe
