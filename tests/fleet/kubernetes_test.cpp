// deploy/kubernetes manifests validated offline against the Kubernetes API schemas (npm kubernetes-models 5.1.0,
// installed with `npm ci` from tests/fleet/kubernetes/package-lock.json into the build directory), the readiness
// taint against NFD's own CRD schema (tests/fleet/kubernetes/crds/), plus the node-problem-detector plugin contract
// inside the ConfigMap. Known-bad manifests must be rejected, so the validator is shown to validate.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "fleet/fleet_support.hpp"
#include "nccl/data.hpp"
#include "nccl/job.hpp"
#include "support/npm_packages.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::fleet;

using gpuenv::testing::k_source;

/// node_modules with kubernetes-models and yaml, installed once per build directory; empty and `why` when it cannot.
fs::path ensure_validator(std::string& why) {
  return gpuenv::testing::npm_ci_once(k_source / "tests/fleet/kubernetes",
                                      fs::path(GPUENV_BINARY).parent_path().parent_path() / "npm-kubernetes", why);
}

nlohmann::json validate(const fs::path& modules, const std::vector<fs::path>& files) {
  std::vector<std::string> argv{"node", (k_source / "tests/fleet/kubernetes/validate.js").string(), modules.string()};
  for (const fs::path& file : files) argv.push_back(file.string());
  const auto run = run_tool(argv, std::chrono::seconds(120));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto result = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE_FALSE(result.is_discarded());
  return result;
}

}  // namespace

TEST_CASE("kubernetes: the DaemonSet and the NPD plugin ConfigMap pass the Kubernetes API schemas",
          "[fleet][kubernetes][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  GPUENV_SKIP_UNLESS(!modules.empty(), why);
  std::vector<fs::path> manifests;
  for (const auto& entry : fs::directory_iterator(k_source / "deploy/kubernetes"))
    if (entry.path().extension() == ".yaml") manifests.push_back(entry.path());
  REQUIRE(manifests.size() == 3);
  const auto result = validate(modules, manifests);
  INFO(result.dump(2));
  CHECK(result.at("problems").empty());
  const auto kinds = result.at("kinds").get<std::vector<std::string>>();
  CHECK(std::count(kinds.begin(), kinds.end(), "apps/v1/DaemonSet") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "v1/ConfigMap") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "nfd.k8s-sigs.io/v1alpha1/NodeFeatureRule") == 1);

  const auto invalid = validate(modules, {gpuenv::testing::fixture_path("fleet/invalid-daemonset.yaml"),
                                          gpuenv::testing::fixture_path("fleet/invalid-nodefeaturerule.yaml")});
  const std::string problems = invalid.at("problems").dump();
  CHECK(gpuenv::util::contains(problems, "hostPID must be boolean"));
  CHECK(gpuenv::util::contains(problems, "must have required property mountPath"));
  CHECK(gpuenv::util::contains(problems, "NodeFeatureRule bad: /spec/rules/0 must have required property 'name'"));
  WARN("kubernetes-models 5.1.0: " << result.at("objects") << " objects valid; the invalid fixture rejected");
}

TEST_CASE("kubernetes: the DaemonSet mounts host paths read-only except the three it writes, and has limits",
          "[fleet][kubernetes][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  GPUENV_SKIP_UNLESS(!modules.empty(), why);
  const auto result = validate(modules, {k_source / "deploy/kubernetes/gpuenv-daemonset.yaml"});
  INFO(result.dump(2));
  REQUIRE(result.at("pods").size() == 1);
  const auto& pod = result.at("pods").at(0);
  CHECK(pod.at("hostPID") == false);  // NVML reports the GPU processes' host PIDs without it
  // The kernel log through the adm group (Debian and Ubuntu: gid 4, /var/log/kern.log root:adm 0640), no capability.
  CHECK(pod.at("supplementalGroups") == nlohmann::json::array({4}));
  REQUIRE(pod.at("containers").size() == 1);
  const auto& container = pod.at("containers").at(0);
  CHECK(container.at("privileged") == false);
  CHECK(container.at("capabilitiesAdded").empty());
  CHECK(container.at("readOnlyRootFilesystem") == true);
  CHECK(container.at("limits").contains("cpu"));
  CHECK(container.at("limits").contains("memory"));
  const std::string command = container.at("command");
  // The health tier, SIGTERM handled (the shell is PID 1: without a trap it would ignore it), the feature file
  // removed on the way out and expiring if the pod dies without a preStop, the toolkit's ready file awaited.
  for (const char* part :
       {"gpuenv doctor --tier health", "trap 'rm -f /nfd/gpuenv; exit 0' TERM", "sleep 300 & wait $!",
        "--nfd-expiry 900", "--report /state/doctor.json", "[ ! -e \"$GPUENV_WAIT_FOR\" ]"}) {
    INFO(part);
    CHECK(gpuenv::util::contains(command, part));
  }
  CHECK(container.at("preStop") == nlohmann::json::array({"/bin/rm", "-f", "/nfd/gpuenv"}));
  CHECK(container.at("env").at("GPUENV_WAIT_FOR") == "/run/nvidia/validations/toolkit-ready");
  const std::set<std::string> writable{"/var/lib/node_exporter/textfile",
                                       "/etc/kubernetes/node-feature-discovery/features.d", "/var/lib/gpuenv"};
  std::set<std::string> written;
  for (const auto& mount : container.at("mounts")) {
    INFO(mount.dump());
    REQUIRE(mount.at("hostPath").is_string());
    const std::string host_path = mount.at("hostPath");
    if (writable.count(host_path) == 1) {
      written.insert(host_path);
      // doctor writes its file into this mount.
      const std::string mount_path = mount.at("mountPath");
      const std::string flag = gpuenv::util::contains(host_path, "textfile")     ? "--prometheus "
                               : gpuenv::util::contains(host_path, "features.d") ? "--nfd "
                                                                                 : "--report ";
      CHECK(gpuenv::util::contains(container.at("command").get<std::string>(), flag + mount_path + "/"));
    } else {
      CHECK(mount.at("readOnly") == true);
    }
  }
  CHECK(written == writable);
}

TEST_CASE("kubernetes: the DaemonSet names the image deploy/github/gpuenv-image.yml builds, at this version",
          "[fleet][kubernetes][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  GPUENV_SKIP_UNLESS(!modules.empty(), why);
  const auto result = validate(modules, {k_source / "deploy/kubernetes/gpuenv-daemonset.yaml"});
  const std::string image = result.at("pods").at(0).at("containers").at(0).at("image");
  const std::string workflow = read_text(k_source / "deploy/github/gpuenv-image.yml");
  CHECK(gpuenv::util::contains(workflow, "IMAGE: ghcr.io/${{ github.repository_owner }}/gpuenv\n"));
  CHECK(gpuenv::util::contains(workflow, "tags: ${{ env.IMAGE }}:${{ steps.version.outputs.version }}"));
  CHECK(gpuenv::util::contains(workflow, "file: deploy/kubernetes/Dockerfile"));
  CHECK(gpuenv::util::starts_with(image, "ghcr.io/"));
  CHECK(gpuenv::util::ends_with(image, "/gpuenv:" + std::string(GPUENV_PROJECT_VERSION)));
  // The real workflow validator, when npm could install it (tests/dockerfile/workflow).
  const fs::path validator_modules =
      gpuenv::testing::npm_ci_once(k_source / "tests/dockerfile/workflow",
                                   fs::path(GPUENV_BINARY).parent_path().parent_path() / "npm-workflow", why);
  GPUENV_SKIP_UNLESS(!validator_modules.empty(), "action-validator: " << why);
  const auto checked = run_tool(
      {(validator_modules / ".bin/action-validator").string(), (k_source / "deploy/github/gpuenv-image.yml").string()});
  INFO(checked.out << checked.err);
  CHECK(checked.exit_code == 0);
}

TEST_CASE("kubernetes: the readiness taint covers a node found not ready and one not judged yet",
          "[fleet][kubernetes][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  GPUENV_SKIP_UNLESS(!modules.empty(), why);
  const auto result = validate(modules, {k_source / "deploy/kubernetes/gpuenv-readiness-taint.yaml"});
  INFO(result.dump(2));
  CHECK(result.at("problems").empty());
  REQUIRE(result.at("custom").size() == 1);
  const auto& rules = result.at("custom").at(0).at("spec").at("rules");
  std::set<std::string> ops;
  for (const auto& rule : rules) {
    CHECK(rule.at("taints").at(0).at("key") == "gpuenv.io/not-ready");
    CHECK(rule.at("taints").at(0).at("effect") == "NoSchedule");
    // Only GPU nodes (PCI vendor 10de), and every rule reads the label doctor --nfd writes.
    CHECK(rule.at("matchFeatures").at(0).at("feature") == "pci.device");
    CHECK(rule.at("matchFeatures").at(0).at("matchExpressions").at("vendor").at("value") ==
          nlohmann::json::array({"10de"}));
    CHECK(rule.at("matchFeatures").at(1).at("feature") == "local.label");
    ops.insert(rule.at("matchFeatures").at(1).at("matchExpressions").at("gpuenv.io/ready").at("op").get<std::string>());
  }
  CHECK(ops == std::set<std::string>{"In", "DoesNotExist"});
}

TEST_CASE("kubernetes: gpuenv nccl job's MPIJob pod templates pass the Kubernetes API schemas",
          "[fleet][kubernetes][nccl][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  GPUENV_SKIP_UNLESS(!modules.empty(), why);
  auto data = gpuenv::nccl::builtin_data();
  REQUIRE(data);
  gpuenv::nccl::JobRequest request;
  request.scheduler = gpuenv::nccl::Scheduler::kubernetes;
  request.nodes = 2;
  request.instance_type = "p5.48xlarge";
  request.network = "efa";
  request.nics_per_node = 32;
  request.image = "public.ecr.aws/hpc-cloud/nccl-tests:latest";
  auto manifest = gpuenv::nccl::write_job(request, **data);
  REQUIRE(manifest);
  TempDir scratch;
  write_text(scratch.path() / "mpijob.yaml", *manifest);
  const auto result = validate(modules, {scratch.path() / "mpijob.yaml"});
  INFO(result.dump(2));
  CHECK(result.at("problems").empty());
  CHECK(result.at("kinds") == nlohmann::json::array({"v1/PodTemplate", "v1/PodTemplate"}));
  // The validator sees the worker's /dev/shm mount: without its mountPath it is rejected.
  std::string broken = *manifest;
  const std::string mount_path = "                  mountPath: /dev/shm\n";
  REQUIRE(broken.find(mount_path) != std::string::npos);
  broken.erase(broken.find(mount_path), mount_path.size());
  write_text(scratch.path() / "broken.yaml", broken);
  const std::string problems = validate(modules, {scratch.path() / "broken.yaml"}).at("problems").dump();
  CHECK(gpuenv::util::contains(problems, "gpuenv-nccl-worker"));
  CHECK(gpuenv::util::contains(problems, "must have required property mountPath"));
}
