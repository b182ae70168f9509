// deploy/kubernetes manifests validated offline against the Kubernetes API schemas (npm kubernetes-models 5.1.0,
// installed with `npm ci` from tests/fleet/kubernetes/package-lock.json into the build directory), plus the
// node-problem-detector plugin contract inside the ConfigMap. A known-bad manifest must be rejected, so the
// validator is shown to validate.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "fleet/fleet_support.hpp"
#include "support/npm_packages.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::fleet;

const fs::path k_source = GPUENV_SOURCE_DIR;

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
  if (modules.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  std::vector<fs::path> manifests;
  for (const auto& entry : fs::directory_iterator(k_source / "deploy/kubernetes"))
    if (entry.path().extension() == ".yaml") manifests.push_back(entry.path());
  REQUIRE(manifests.size() == 2);
  const auto result = validate(modules, manifests);
  INFO(result.dump(2));
  CHECK(result.at("problems").empty());
  const auto kinds = result.at("kinds").get<std::vector<std::string>>();
  CHECK(std::count(kinds.begin(), kinds.end(), "apps/v1/DaemonSet") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "v1/ConfigMap") == 1);

  const auto invalid = validate(modules, {gpuenv::testing::fixture_path("fleet/invalid-daemonset.yaml")});
  const std::string problems = invalid.at("problems").dump();
  CHECK(gpuenv::util::contains(problems, "hostPID must be boolean"));
  CHECK(gpuenv::util::contains(problems, "must have required property mountPath"));
  WARN("kubernetes-models 5.1.0: " << result.at("objects") << " objects valid; the invalid fixture rejected");
}

TEST_CASE("kubernetes: the DaemonSet mounts host paths read-only except the two it writes, and has limits",
          "[fleet][kubernetes][system-test][engine]") {
  std::string why;
  const fs::path modules = ensure_validator(why);
  if (modules.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  const auto result = validate(modules, {k_source / "deploy/kubernetes/gpuenv-daemonset.yaml"});
  INFO(result.dump(2));
  REQUIRE(result.at("pods").size() == 1);
  const auto& pod = result.at("pods").at(0);
  CHECK(pod.at("hostPID") == true);
  REQUIRE(pod.at("containers").size() == 1);
  const auto& container = pod.at("containers").at(0);
  CHECK(container.at("privileged") == false);
  CHECK(container.at("readOnlyRootFilesystem") == true);
  CHECK(container.at("limits").contains("cpu"));
  CHECK(container.at("limits").contains("memory"));
  const std::set<std::string> writable{"/var/lib/node_exporter/textfile",
                                       "/etc/kubernetes/node-feature-discovery/features.d"};
  std::set<std::string> written;
  for (const auto& mount : container.at("mounts")) {
    INFO(mount.dump());
    REQUIRE(mount.at("hostPath").is_string());
    const std::string host_path = mount.at("hostPath");
    if (writable.count(host_path) == 1) {
      written.insert(host_path);
      // doctor writes its file into this mount.
      const std::string mount_path = mount.at("mountPath");
      const std::string flag = gpuenv::util::contains(host_path, "textfile") ? "--prometheus " : "--nfd ";
      CHECK(gpuenv::util::contains(container.at("command").get<std::string>(), flag + mount_path + "/"));
    } else {
      CHECK(mount.at("readOnly") == true);
    }
  }
  CHECK(written == writable);
}
