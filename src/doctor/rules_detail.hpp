#pragma once
// Internal to doctor's rules (rules.cpp and its *_rules.cpp sections): the finding helpers they share and the
// sections evaluate() runs. Not part of doctor's interface.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/rules.hpp"
#include "probe/facts.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::doctor::rules_detail {

// The fact and finding types every section uses (this header is internal to the rules).
using probe::GpuFacts;
using probe::HostFacts;
using probe::NvLinkFacts;
using report::Finding;
using report::Status;
using util::Version;
using Findings = std::vector<report::Finding>;

/// A finding; `source` is the public document the judgement rests on.
report::Finding make(std::string id, report::Status status, std::string message, std::string remedy = {},
                     std::string source = {});

/// `value` with at most `decimals` decimals and no trailing zeros ("1.5", "2").
std::string number(double value, int decimals = 1);

/// "GPU 3 (00000000:4E:00.0)".
std::string gpu_label(const probe::GpuFacts& gpu);

/// True when NVML answered and listed at least one GPU.
bool has_gpus(const probe::HostFacts& facts);

/// Per-GPU problems folded into one finding per check, so eight healthy GPUs read as one line.
class PerGpu {
 public:
  explicit PerGpu(std::string id, std::string source = {}) : m_id(std::move(id)), m_source(std::move(source)) {}
  /// One GPU's problem; `action` when the problem is a case with its own row in data/doctor/actions.toml
  /// (case_action), else the finding takes its id's row.
  void add(report::Status status, const probe::GpuFacts& gpu, const std::string& problem, const std::string& remedy,
           std::optional<report::Action> action = std::nullopt) {
    m_status = std::max(m_status, status);
    if (action) m_action = std::max(m_action.value_or(*action), *action);
    m_problems.push_back(gpu_label(gpu) + ": " + problem);
    if (!remedy.empty() && std::find(m_remedies.begin(), m_remedies.end(), remedy) == m_remedies.end())
      m_remedies.push_back(remedy);
  }
  void note(const probe::GpuFacts& gpu, const std::string& text) { m_notes.push_back(gpu_label(gpu) + ": " + text); }
  void checked() { ++m_checked; }
  /// Pushes the finding, or a skip with `skip_reason` when no GPU reported the fact.
  void finish(Findings& out, const std::string& ok_message, const std::string& skip_reason);

 private:
  std::string m_id;
  std::string m_source;
  report::Status m_status = report::Status::pass;
  std::optional<report::Action> m_action;
  std::vector<std::string> m_problems;
  std::vector<std::string> m_remedies;
  std::vector<std::string> m_notes;
  unsigned m_checked = 0;
};

// ---- Sections, in the order evaluate() runs them ------------------------------------------------

// host_rules.cpp
void check_host(const probe::HostFacts& facts, const Thresholds& thresholds, Findings& out);
void check_kernel_driver(const probe::HostFacts& facts, Findings& out);
void check_library_mismatch(const probe::HostFacts& facts, Findings& out);
void check_kernel_log(const probe::HostFacts& facts, Findings& out);
void check_init_failures(const probe::HostFacts& facts, Findings& out);
/// `host.unreadable`: files that existed but could not be read (gone between listing and reading, no permission).
void check_unreadable(const probe::HostFacts& facts, Findings& out);

// gpu_rules.cpp
void check_gpu_count(const probe::HostFacts& facts, const Expectations& expect, Findings& out);
void check_memory_errors(const probe::HostFacts& facts, const Thresholds& thresholds, Findings& out);
void check_thermals_and_clocks(const probe::HostFacts& facts, const Thresholds& thresholds, Findings& out);
void check_pcie(const probe::HostFacts& facts, const Thresholds& thresholds, Findings& out);
void check_nvlink(const probe::HostFacts& facts, Findings& out);
void check_gpu_state(const probe::HostFacts& facts, Findings& out);

// fabric_rules.cpp (docs/fabric.md)
void check_fabric_state(const probe::HostFacts& facts, Findings& out);
void check_fabric_manager(const probe::HostFacts& facts, Findings& out);
void check_sxid(const probe::HostFacts& facts, Findings& out);
/// ib.ports: the RDMA ports, counted against the instance type's NIC count and rate when it has them.
void check_ib_ports(const probe::HostFacts& facts, const InstanceExpectation* instance, Findings& out);
void check_gpudirect(const probe::HostFacts& facts, Findings& out);
void check_affinity(const probe::HostFacts& facts, Findings& out);

// link_counter_rules.cpp: nvlink.errors, pcie.replay, ib.errors from the counters' growth during the run (nothing
// when the end reading is missing).
void check_link_counters(const probe::HostFacts& facts, const Thresholds& thresholds, Findings& out);

// software_rules.cpp
void check_cuda_driver(const probe::HostFacts& facts, Findings& out);
void check_toolkits(const probe::HostFacts& facts, const compat::KnowledgeBase& kb, Findings& out);
void check_libraries(const probe::HostFacts& facts, Findings& out);
void check_containers(const probe::HostFacts& facts, Findings& out);

// profile_rules.cpp
void check_profile_conformance(const probe::HostFacts& facts, const compat::KnowledgeBase& kb,
                               const profile::Profile& p, Findings& out);

}  // namespace gpuenv::doctor::rules_detail
