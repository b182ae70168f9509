#include "doctor/rules.hpp"

#include "doctor/framework_rules.hpp"
#include "doctor/rules_detail.hpp"

namespace gpuenv::doctor {

using probe::HostFacts;
using report::Finding;
using namespace rules_detail;  // the sections and helpers this orchestration runs

namespace {

/// The fabric section: NVLink registration, fabric manager, SXids, RDMA ports, GPUDirect, affinity, link rates.
void check_fabric(const HostFacts& facts, const Thresholds& thresholds, const Expectations& expectations,
                  Findings& out) {
  check_fabric_state(facts, out);
  check_fabric_manager(facts, out);
  check_sxid(facts, out);
  check_ib_ports(facts, expectations.instance, out);
  check_gpudirect(facts, out);
  check_affinity(facts, out);
  check_link_counters(facts, thresholds, out);
}

}  // namespace

std::vector<Finding> evaluate_link_counters(const HostFacts& facts, const Thresholds& thresholds) {
  Findings out;
  check_link_counters(facts, thresholds, out);
  return out;
}

std::vector<Finding> evaluate(const HostFacts& facts, const Thresholds& thresholds, const compat::KnowledgeBase& kb,
                              const Expectations& expectations) {
  Findings out;
  out.push_back(cloud_finding(facts, expectations.instance));
  check_host(facts, thresholds, out);
  check_kernel_driver(facts, out);
  check_library_mismatch(facts, out);
  check_gpu_count(facts, expectations, out);
  if (expectations.instance != nullptr) check_instance(facts, kb, *expectations.instance, out);
  if (has_gpus(facts)) {
    check_memory_errors(facts, thresholds, out);
    check_thermals_and_clocks(facts, thresholds, out);
    check_pcie(facts, thresholds, out);
    check_nvlink(facts, out);
    check_gpu_state(facts, out);
  }
  check_kernel_log(facts, out);
  check_fabric(facts, thresholds, expectations, out);
  check_init_failures(facts, out);
  check_unreadable(facts, out);
  check_cuda_driver(facts, out);
  check_toolkits(facts, kb, out);
  check_libraries(facts, out);
  check_containers(facts, out);
  check_frameworks(facts, out);
  if (expectations.profile != nullptr) check_profile_conformance(facts, kb, *expectations.profile, out);
  return out;
}

}  // namespace gpuenv::doctor
