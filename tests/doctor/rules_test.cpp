// doctor::evaluate as a whole on HostFacts built in C++: the healthy base node is READY (every check passes or skips),
// so is a node that conforms to a profile, and a node and profile newer than gpuenv's data warn, never fail. Each rule
// section has its own table-driven tests (host_rules_test.cpp, gpu_rules_test.cpp, software_rules_test.cpp,
// profile_rules_test.cpp, fabric_rules_test.cpp) on the base node of rule_rows.hpp.

#include "doctor/rules.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "compat/horizon.hpp"
#include "doctor/rule_rows.hpp"
#include "probe/facts.hpp"
#include "report/finding.hpp"
#include "util/version.hpp"

using namespace gpuenv::testing::doctor_rules;  // NOLINT: the tables below are written in its vocabulary

TEST_CASE("rules: the healthy base node is READY", "[doctor][rules]") {
  for (unsigned gpus : {1u, 8u}) {
    const auto findings = judge(healthy_node(gpus));
    INFO(gpus << " GPUs:\n" << dump_findings(findings));
    CHECK(gpuenv::report::verdict_of(findings) == gpuenv::report::Verdict::ok);
    for (const Finding& f : findings) CHECK((f.status == Status::pass || f.status == Status::skip));
  }
}

TEST_CASE("rules: a node and profile newer than gpuenv's data warn, never fail", "[doctor][rules][horizon]") {
  // CUDA one patch past the newest known release: the profile wants it and the node has it.
  static const gpuenv::profile::Profile newer_cuda = [] {
    auto p = test_profile();
    const auto newest = *gpuenv::compat::cuda_horizon(kb()).newest;
    p.cuda_version = gpuenv::util::Version({newest.major(), newest.minor(), newest.component(2) + 1}).str();
    p.cudnn_version.clear();
    p.driver_min.clear();
    return p;
  }();
  // A GPU whose compute capability is newer than every architecture in the data.
  static const std::string newer_cc =
      std::to_string(gpuenv::compat::compute_capability_horizon(kb()).newest->major() + 1) + ".0";
  run_rows({
      {"the profile's CUDA is newer than the data",
       [](HostFacts& f, Expectations& e) {
         e.profile = &newer_cuda;
         f.kernel.module_version = "999.10.1";
         f.gpus.driver_version = "999.10.1";
         f.gpus.cuda_driver_version = "99.0";
         for (auto& lib : f.driver_libraries) lib.version = "999.10.1";
         f.toolkits = {toolkit(newer_cuda.cuda_version)};
       },
       "profile.cuda.release",
       Status::warn,
       {"gpuenv's data ends at CUDA", "update gpuenv"}},
      {"the node's toolkit of that CUDA is judged by the driver its minor needs, not failed",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "999.10.1";
         f.gpus.driver_version = "999.10.1";
         f.gpus.cuda_driver_version = "99.0";
         for (auto& lib : f.driver_libraries) lib.version = "999.10.1";
         f.toolkits = {toolkit(newer_cuda.cuda_version)};
       },
       "toolkit.driver_support",
       Status::pass,
       {"driver 999.10.1 meets"}},
      {"the node's GPU has a compute capability newer than the data",
       [](HostFacts& f, Expectations& e) {
         e.profile = &test_profile_ref();
         f.gpus.gpus[0].compute_capability = newer_cc;
       },
       "profile.node_cuda_support",
       Status::warn,
       {"gpuenv's data ends at compute capability"}},
  });
}

TEST_CASE("rules: a conforming node under a profile is READY", "[doctor][rules]") {
  const gpuenv::profile::Profile profile = test_profile();
  HostFacts facts = healthy_node(8);
  facts.toolkits = {toolkit("12.4.1")};
  facts.cudnn = gpuenv::probe::Library{"9.6.0", "/usr/include/cudnn_version.h", "", "", "12"};
  Expectations expectations;
  expectations.gpu_count = 8;
  expectations.profile = &profile;
  const auto findings = judge(facts, expectations);
  INFO(dump_findings(findings));
  CHECK(gpuenv::report::verdict_of(findings) == gpuenv::report::Verdict::ok);
  for (const char* id : {"profile.driver", "profile.cuda_toolkit", "profile.cudnn", "gpu.count"}) {
    INFO(id);
    const auto matching = findings_with_id(findings, id);
    REQUIRE(matching.size() == 1);
    CHECK(matching.front()->status == Status::pass);
  }
}
