// The framework probe: the script's report parsed, arch coverage, fake interpreters on the System seam, and the
// doctor rules on the parsed facts.

#include "probe/frameworks.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "doctor/framework_rules.hpp"
#include "probe/collect.hpp"
#include "support/fake_system.hpp"

using gpuenv::probe::arch_list_covers;
using gpuenv::probe::parse_framework_report;
using gpuenv::report::Finding;
using gpuenv::report::Status;

namespace {

const std::string k_torch_report =
    "torch.installed=yes\ntorch.version=2.4.1+cu124\ntorch.cuda=12.4\ntorch.cudnn=90100\n"
    "torch.cuda_available=yes\ntorch.device_count=2\ntorch.arch_list=sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90\n"
    "torch.capabilities=12.0 12.0\ntensorflow.installed=no\n";

/// The command the probe runs: the interpreter isolated (-I: no working directory, PYTHON* variable or user site on
/// sys.path; docs/security.md), the script, and "matmul" when asked.
std::string script_key(const std::string& python) {
  return python + " -I -c " + std::string(gpuenv::probe::framework_probe_script());
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.id == id; });
  return it == findings.end() ? nullptr : &*it;
}

gpuenv::probe::HostFacts with_gpus(unsigned n) {
  gpuenv::probe::HostFacts facts;
  facts.gpus.availability.available = true;
  for (unsigned i = 0; i < n; ++i) facts.gpus.gpus.push_back(gpuenv::probe::GpuFacts{});
  return facts;
}

}  // namespace

TEST_CASE("parse_framework_report: keys per framework, junk ignored", "[probe]") {
  const auto all = parse_framework_report(k_torch_report + "warning: something\nnumpy.version=2\n");
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "torch");
  CHECK(all[0].installed);
  CHECK(all[0].version == "2.4.1+cu124");
  CHECK(all[0].cuda == "12.4");
  CHECK(all[0].cudnn == "90100");
  CHECK(all[0].cuda_available == true);
  CHECK(all[0].device_count == 2u);
  CHECK(all[0].arch_list.size() == 7);
  CHECK(all[0].device_capabilities == std::vector<std::string>{"12.0", "12.0"});
  CHECK(all[1].name == "tensorflow");
  CHECK_FALSE(all[1].installed);
  const auto broken = parse_framework_report(
      "torch.installed=yes\ntorch.import_error=ImportError: libcudnn.so.9: "
      "cannot open shared object file\n");
  CHECK(broken.at(0).import_error.find("libcudnn.so.9") != std::string::npos);
}

TEST_CASE("arch_list_covers: SASS within a major, PTX forward, arch-specific exactly", "[probe]") {
  const std::vector<std::string> cu124 = {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"};
  CHECK(arch_list_covers(cu124, "8.0"));
  CHECK(arch_list_covers(cu124, "8.9"));  // sm_86 SASS runs on 8.9
  CHECK(arch_list_covers(cu124, "9.0"));
  CHECK_FALSE(arch_list_covers(cu124, "12.0"));  // RTX 50xx on a cu124 wheel
  CHECK_FALSE(arch_list_covers(cu124, "10.0"));
  CHECK_FALSE(arch_list_covers({"sm_80", "sm_90"}, "7.5"));
  CHECK(arch_list_covers({"sm_80", "compute_90"}, "12.0"));  // PTX JIT-compiles forward
  CHECK_FALSE(arch_list_covers({"compute_90"}, "8.6"));
  CHECK(arch_list_covers({"sm_90a"}, "9.0"));
  CHECK_FALSE(arch_list_covers({"sm_90a"}, "10.0"));
  CHECK(arch_list_covers({}, ""));  // unknown capability: nothing to judge
}

TEST_CASE("probe_frameworks: fake interpreters on the System seam", "[probe]") {
  gpuenv::testing::FakeSystem system;
  system.commands[script_key("/venv/bin/python")] = {0, false, false, k_torch_report, ""};
  auto probe = gpuenv::probe::probe_frameworks(system, "/venv/bin/python", std::chrono::milliseconds(500), false);
  CHECK(probe.availability.available);
  REQUIRE(probe.frameworks.size() == 2);
  CHECK(probe.frameworks[0].version == "2.4.1+cu124");

  probe = gpuenv::probe::probe_frameworks(system, "python3", std::chrono::milliseconds(500), false);  // not scripted
  CHECK_FALSE(probe.availability.available);
  CHECK(probe.availability.reason == "python3 is not installed");

  system.commands[script_key("slow")] = {-1, true, false, "", ""};
  probe = gpuenv::probe::probe_frameworks(system, "slow", std::chrono::milliseconds(500), false);
  CHECK(probe.availability.reason == "slow did not finish within 500 ms");

  system.commands[script_key("old")] = {1, false, false, "", "  File \"<string>\", line 2\nSyntaxError: bad\n"};
  probe = gpuenv::probe::probe_frameworks(system, "old", std::chrono::milliseconds(500), false);
  CHECK(probe.availability.reason == "old failed with exit code 1: SyntaxError: bad");

  // Under --root nothing runs: a skip with the reason, and no command.
  gpuenv::testing::FakeSystem rooted;
  gpuenv::probe::CollectOptions options;
  options.live = false;
  options.frameworks = true;
  const auto facts = gpuenv::probe::collect_host_facts(rooted, options);
  REQUIRE(facts.frameworks);
  CHECK(facts.frameworks->availability.reason.find("not run under --root") != std::string::npos);
  CHECK(std::none_of(rooted.commands_run.begin(), rooted.commands_run.end(),
                     [](const std::string& c) { return c.find("python") != std::string::npos; }));
}

TEST_CASE("check_frameworks: arch mismatch, import errors, CPU builds, nothing installed", "[doctor]") {
  gpuenv::probe::HostFacts facts = with_gpus(2);
  facts.frameworks = gpuenv::probe::FrameworkProbe{};
  facts.frameworks->availability = {true, "python3", ""};
  facts.frameworks->frameworks = parse_framework_report(k_torch_report);
  std::vector<Finding> out;
  gpuenv::doctor::check_frameworks(facts, out);
  REQUIRE(find(out, "framework.torch") != nullptr);
  CHECK(find(out, "framework.torch")->status == Status::pass);
  REQUIRE(find(out, "framework.torch_arch") != nullptr);
  CHECK(find(out, "framework.torch_arch")->status == Status::fail);
  CHECK(find(out, "framework.torch_arch")->message.find("no kernel image and no PTX for sm_120") != std::string::npos);
  CHECK(find(out, "framework.torch_arch")->remedy.find("cu128") != std::string::npos);

  facts.frameworks->frameworks = parse_framework_report(
      "torch.installed=yes\ntorch.version=2.4.1\ntorch.cuda=12.4\ntorch.cuda_available=yes\ntorch.device_count=2\n"
      "torch.arch_list=sm_80 sm_90\ntorch.capabilities=9.0 9.0\n");
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.torch_arch")->status == Status::pass);

  facts.frameworks->frameworks =
      parse_framework_report("torch.installed=yes\ntorch.import_error=OSError: libcudnn.so.9: cannot open\n");
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.torch")->status == Status::fail);
  CHECK(find(out, "framework.torch")->message == "import torch failed: OSError: libcudnn.so.9: cannot open");

  facts.frameworks->frameworks = parse_framework_report(
      "torch.installed=yes\ntorch.version=2.4.1+cpu\ntorch.cuda=\ntorch.cuda_available=no\ntorch.device_count=0\n");
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.torch")->status == Status::fail);
  CHECK(find(out, "framework.torch")->message.find("CPU-only build") != std::string::npos);

  facts.frameworks->frameworks = parse_framework_report(
      "tensorflow.installed=yes\ntensorflow.version=2.17.0\ntensorflow.cuda=12.3\ntensorflow.cudnn=8\n"
      "tensorflow.cuda_available=no\ntensorflow.device_count=0\n");
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.tensorflow")->status == Status::fail);
  CHECK(find(out, "framework.tensorflow")->message.find("sees no GPU") != std::string::npos);

  facts.frameworks->frameworks = parse_framework_report("torch.installed=no\ntensorflow.installed=no\n");
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.installed")->status == Status::skip);

  facts.frameworks->availability = {false, "python3", "python3 is not installed"};
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(find(out, "framework.python")->status == Status::skip);

  facts.frameworks.reset();  // not probed: no finding
  out.clear();
  gpuenv::doctor::check_frameworks(facts, out);
  CHECK(out.empty());
}

TEST_CASE("the tiny matmul: asked for with `matmul`, parsed per device, judged ok / mismatch / error", "[probe]") {
  gpuenv::testing::FakeSystem system;
  system.commands[script_key("python3") + " matmul"] = {
      0, false, false,
      "torch.installed=yes\ntorch.version=2.4.1\ntorch.cuda=12.4\ntorch.cuda_available=yes\ntorch.device_count=3\n"
      "torch.matmul=0 ok\ntorch.matmul=1 mismatch: the sum is 131072.0, expected 262144.0\n"
      "torch.matmul=2 error: RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
      "torch.matmul=x ok\ntorch.matmul=3 maybe\ntensorflow.installed=yes\ntensorflow.version=2.17.0\n"
      "tensorflow.cuda=12.3\ntensorflow.cuda_available=yes\ntensorflow.device_count=1\ntensorflow.matmul=0 ok\n",
      ""};
  const auto probe = gpuenv::probe::probe_frameworks(system, "python3", std::chrono::milliseconds(500), true);
  REQUIRE(probe.availability.available);
  REQUIRE(probe.frameworks.size() == 2);
  const auto& torch = probe.frameworks[0];
  REQUIRE(torch.matmul.size() == 3);  // "x ok" and "3 maybe" are junk
  CHECK(torch.matmul[1].device == 1);
  CHECK(torch.matmul[1].outcome == gpuenv::probe::MatmulResult::Outcome::mismatch);
  CHECK(torch.matmul[2].outcome == gpuenv::probe::MatmulResult::Outcome::error);
  CHECK(torch.matmul[2].detail == "RuntimeError: CUDA error: no kernel image is available for execution on the device");
  // Without `matmul` the same interpreter is asked a different command line (the fake answers nothing to it).
  CHECK_FALSE(
      gpuenv::probe::probe_frameworks(system, "python3", std::chrono::milliseconds(500), false).availability.available);

  gpuenv::probe::HostFacts facts = with_gpus(3);
  facts.frameworks = probe;
  std::vector<Finding> out;
  gpuenv::doctor::check_frameworks(facts, out);
  const Finding* torch_matmul = find(out, "framework.torch_matmul");
  REQUIRE(torch_matmul != nullptr);
  CHECK(torch_matmul->status == Status::fail);
  CHECK(torch_matmul->message ==
        "a 64x64 matmul in torch 2.4.1: cuda:1 computed a wrong result (the sum is 131072.0, expected 262144.0); "
        "cuda:2 failed (RuntimeError: CUDA error: no kernel image is available for execution on the device)");
  const Finding* tf_matmul = find(out, "framework.tensorflow_matmul");
  REQUIRE(tf_matmul != nullptr);
  CHECK(tf_matmul->status == Status::pass);
  CHECK(tf_matmul->message == "a 64x64 matmul in tensorflow 2.17.0 gave the right result on 1 device");
}
