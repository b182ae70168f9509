// Issue 30 item 1: doctor's kernel-log findings (xid.events, driver.probe) name the bus and the Xid number and say
// the rest in gpuenv's own words: the log's text (a message tail, a process name a job chose) never reaches a
// finding, and so never --oneline, a Slurm reason or NHC (docs/security.md, "Kernel log").

#include <catch2/catch.hpp>
#include <string>

#include "compat/knowledge_base.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "probe/facts.hpp"
#include "probe/xid.hpp"

namespace {

using gpuenv::probe::KernelEvent;
using gpuenv::probe::KernelEventKind;

const std::string k_hostile = "$(reboot) `id` ; DRAIN: hostile text | shutdown -h now";

/// doctor's findings for a live node whose /dev/kmsg holds `event` and nothing else of note.
std::vector<gpuenv::report::Finding> judge(const KernelEvent& event) {
  gpuenv::probe::HostFacts facts;
  facts.live = true;
  facts.kernel_log_source = "/dev/kmsg";
  facts.kernel_events.push_back(event);
  const auto thresholds = gpuenv::doctor::builtin_thresholds();
  REQUIRE(thresholds);
  const auto kb = gpuenv::compat::builtin_knowledge_base();
  REQUIRE(kb);
  return gpuenv::doctor::evaluate(facts, **thresholds, **kb, {});
}

const gpuenv::report::Finding& only(const std::vector<gpuenv::report::Finding>& findings, const std::string& id) {
  const gpuenv::report::Finding* found = nullptr;
  for (const auto& finding : findings) {
    if (finding.id == id) {
      REQUIRE(found == nullptr);
      found = &finding;
    }
  }
  REQUIRE(found != nullptr);
  return *found;
}

}  // namespace

TEST_CASE("doctor: an Xid gpuenv does not know is named by number, its log text left out", "[doctor][security]") {
  KernelEvent event;
  event.kind = KernelEventKind::xid;
  event.xid = 9999;
  event.pci_bus_id = "0000:3b:00";
  event.process_name = k_hostile;
  event.message = k_hostile;
  const auto findings = judge(event);
  const auto& finding = only(findings, "xid.events");
  CHECK(finding.message == "Xid 9999 on 0000:3b:00 (not in gpuenv's Xid table) (/dev/kmsg)");
  CHECK(finding.remedy.find("reboot") == std::string::npos);
}

TEST_CASE("doctor: the driver's probe failure is said in gpuenv's words with the device count", "[doctor][security]") {
  KernelEvent event;
  event.kind = KernelEventKind::probe_not_called;
  event.device_count = 3;
  event.message = "The NVIDIA probe routine was not called for 3 device(s). " + k_hostile;
  const auto findings = judge(event);
  const auto& finding = only(findings, "driver.probe");
  CHECK(finding.message == "kernel log: The NVIDIA probe routine was not called for 3 device(s)");
}
