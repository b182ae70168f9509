// The DMI cloud classifier, table-driven on the strings each cloud's firmware reports, and the collector on the
// fixture trees under tests/fixtures/clouds (read through FakeSystem, as under --root).

#include "probe/cloud.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "probe/collect.hpp"
#include "support/fake_system.hpp"

using gpuenv::probe::classify_cloud;
using gpuenv::probe::DmiStrings;

namespace {

struct Row {
  const char* name;
  DmiStrings dmi;
  const char* cloud;
  const char* instance_type;
};

DmiStrings dmi(std::string vendor, std::string product, std::string chassis = {}, std::string serial = {},
               std::string bios_version = {}) {
  DmiStrings d;
  d.sys_vendor = std::move(vendor);
  d.product_name = std::move(product);
  d.chassis_asset_tag = std::move(chassis);
  d.product_serial = std::move(serial);
  d.bios_version = std::move(bios_version);
  return d;
}

}  // namespace

TEST_CASE("classify_cloud: each cloud's DMI strings name it, and AWS Nitro's product_name is the type", "[probe]") {
  // clang-format off
  const std::vector<Row> rows = {
      {"AWS Nitro", dmi("Amazon EC2", "p4d.24xlarge", "Amazon EC2"), "aws", "p4d.24xlarge"},
      {"AWS Nitro, dashed family", dmi("Amazon EC2", "p6-b200.48xlarge"), "aws", "p6-b200.48xlarge"},
      {"AWS Nitro, chassis tag only", dmi("", "g5.xlarge", "Amazon EC2"), "aws", "g5.xlarge"},
      {"AWS Nitro, trailing newline", dmi("Amazon EC2\n", "g6e.12xlarge\n"), "aws", "g6e.12xlarge"},
      {"AWS Xen (p3): no type in DMI", dmi("Xen", "HVM domU", "", "", "4.11.amazon"), "aws", ""},
      {"GCP by product name", dmi("Google", "Google Compute Engine"), "gcp", ""},
      {"GCP by serial only", dmi("", "", "", "GoogleCloud-0123ABCD"), "gcp", ""},
      {"Azure by chassis tag", dmi("Microsoft Corporation", "Virtual Machine", "7783-7084-3265-9085-8269-3286-77"), "azure", ""},
      {"Hyper-V is not Azure", dmi("Microsoft Corporation", "Virtual Machine", "None"), "", ""},
      {"Alibaba by product", dmi("", "Alibaba Cloud ECS"), "alibaba", ""},
      {"Alibaba by vendor", dmi("Alibaba Cloud", "ECS"), "alibaba", ""},
      {"Tencent", dmi("Tencent Cloud", "CVM"), "tencent", ""},
      {"Huawei before OpenStack", dmi("OpenStack Foundation", "OpenStack Nova", "HUAWEICLOUD"), "huawei", ""},
      {"Huawei by vendor", dmi("Huawei Cloud", "OpenStack Nova"), "huawei", ""},
      {"Oracle", dmi("QEMU", "Standard PC (i440FX + PIIX, 1996)", "OracleCloud.com"), "oracle", ""},
      {"OpenStack Nova", dmi("OpenStack Foundation", "OpenStack Nova"), "openstack", ""},
      {"OpenStack Compute (Red Hat)", dmi("Red Hat", "OpenStack Compute"), "openstack", ""},
      {"Case does not matter", dmi("amazon ec2", "g4dn.xlarge"), "aws", "g4dn.xlarge"},
      {"A Dell server", dmi("Dell Inc.", "PowerEdge XE9680"), "", ""},
      {"Nothing readable", dmi("", ""), "", ""},
      {"Not an instance type on AWS", dmi("Amazon EC2", "Not Specified"), "aws", ""},
  };
  // clang-format on
  for (const Row& row : rows) {
    INFO(row.name);
    const auto identity = classify_cloud(row.dmi);
    CHECK(identity.cloud == row.cloud);
    CHECK(identity.instance_type == row.instance_type);
    CHECK(identity.evidence.empty() == std::string(row.cloud).empty());
  }
}

TEST_CASE("classify_cloud: the evidence names the field and value that decided", "[probe]") {
  CHECK(classify_cloud(dmi("Amazon EC2", "p5.48xlarge")).evidence == "sys_vendor=Amazon EC2");
  CHECK(classify_cloud(dmi("", "", "HUAWEICLOUD")).evidence == "chassis_asset_tag=HUAWEICLOUD");
  CHECK(gpuenv::probe::cloud_display_name("gcp") == "Google Cloud");
  CHECK(gpuenv::probe::cloud_display_name("other") == "other");
}

TEST_CASE("collect_host_facts: the cloud fixture trees resolve to their cloud under --root", "[probe]") {
  struct Tree {
    const char* tree;
    const char* cloud;
    const char* instance_type;
  };
  const Tree trees[] = {{"aws-nitro-g5", "aws", "g5.xlarge"},
                        {"aws-xen-p3", "aws", ""},
                        {"gcp", "gcp", ""},
                        {"azure", "azure", ""},
                        {"hyperv-not-azure", "", ""},
                        {"alibaba", "alibaba", ""},
                        {"tencent", "tencent", ""},
                        {"huawei", "huawei", ""},
                        {"oracle", "oracle", ""},
                        {"openstack", "openstack", ""},
                        {"bare-metal", "", ""}};
  for (const Tree& t : trees) {
    INFO(t.tree);
    gpuenv::testing::FakeSystem system;
    system.add_tree(gpuenv::testing::fixture_path(std::string("clouds/") + t.tree));
    gpuenv::probe::CollectOptions options;
    options.live = false;
    const auto facts = gpuenv::probe::collect_host_facts(system, options);
    CHECK(facts.host.cloud == t.cloud);
    CHECK(facts.host.instance_type == t.instance_type);
    if (std::string(t.cloud).empty()) {
      CHECK(facts.host.cloud_source.find("no cloud recognised in DMI") == 0);
    } else {
      CHECK(facts.host.cloud_source.find("DMI ") == 0);
    }
  }
  gpuenv::testing::FakeSystem empty;
  gpuenv::probe::CollectOptions options;
  options.live = false;
  const auto facts = gpuenv::probe::collect_host_facts(empty, options);
  CHECK(facts.host.cloud.empty());
  CHECK(facts.host.cloud_source == "/sys/class/dmi/id is not readable");
}
