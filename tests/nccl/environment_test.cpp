// The NCCL settings the in-process all-reduce runs with, read as NCCL reads them. The contract is NCCL's own:
// - "Environment variables can also be set statically in /etc/nccl.conf (for an administrator to set system-wide
//   values) or in ${NCCL_CONF_FILE} (since 2.23; see below)"; NCCL_CONF_FILE: "If unset or if the version is prior to
//   2.23, NCCL uses .nccl.conf in the home directory if available" (NCCL user guide, Environment Variables,
//   https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; NVIDIA/nccl@5067397
//   docs/userguide/source/env.rst:7, :531).
// - The files are read by NVIDIA/nccl@5067397 src/misc/param.cc: initEnvFunc reads NCCL_CONF_FILE when set and not
//   empty, else "$HOME/.nccl.conf", then "/etc/nccl.conf"; setEnvFile cuts "\n" then "\r", skips lines starting with
//   '#' and lines without '=', takes the name up to the first '=' and the value after it (1023 bytes each), and calls
//   ncclOsSetEnv(name, value), which is setenv(name, value, 0) (src/os/linux.cc:107): a variable already set, by the
//   environment or an earlier line or file, is never overwritten.
// - Each variable's effect and the value that has it are the user guide's (the anchor named in each row's source),
//   checked against the code where the value matters (NCCL_P2P_DISABLE disables P2P only when strtol reads 1:
//   src/graph/paths.cc:250; NCCL_SHM_DISABLE only at 1: src/transport/shm.cc:66; plugins are off at "none",
//   compared with strcasecmp: src/plugin/net.cc:266).

#include "nccl/environment.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/fake_system.hpp"

namespace {

using gpuenv::nccl::SettingEffect;

/// The effects classify_nccl_setting finds for `name`=`value`, in its order.
std::vector<SettingEffect> effects_of(const std::string& name, const std::string& value) {
  std::vector<SettingEffect> out;
  for (const auto& note : gpuenv::nccl::classify_nccl_setting(name, value)) {
    CHECK_FALSE(note.why.empty());
    // Every rule cites NCCL's documentation or its code.
    CHECK((note.source.find("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#") == 0 ||
           note.source.find("NVIDIA/nccl ") == 0));
    out.push_back(note.effect);
  }
  return out;
}

}  // namespace

TEST_CASE("nccl_config_paths: NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf", "[nccl]") {
  struct Row {
    std::optional<std::string> conf_file;
    std::optional<std::string> home;
    int version;
    std::vector<std::string> paths;
  };
  const std::vector<Row> rows = {
      {std::nullopt, "/root", 22703, {"/root/.nccl.conf", "/etc/nccl.conf"}},
      {"/opt/site/nccl.conf", "/root", 22304, {"/opt/site/nccl.conf", "/etc/nccl.conf"}},   // 2.23.4: honoured
      {"/opt/site/nccl.conf", "/root", 22203, {"/root/.nccl.conf", "/etc/nccl.conf"}},      // 2.22.3: not yet
      {"/opt/site/nccl.conf", "/root", 2803, {"/root/.nccl.conf", "/etc/nccl.conf"}},       // 2.8.3 (old code scheme)
      {"/opt/site/nccl.conf", std::nullopt, 0, {"/opt/site/nccl.conf", "/etc/nccl.conf"}},  // version unknown
      {"", "/root", 22703, {"/root/.nccl.conf", "/etc/nccl.conf"}},  // empty: "strlen(userFile) > 0" fails
      {std::nullopt, std::nullopt, 22703, {"/etc/nccl.conf"}},
  };
  for (const Row& row : rows) {
    INFO(row.conf_file.value_or("(unset)") << " " << row.home.value_or("(no home)") << " " << row.version);
    CHECK(gpuenv::nccl::nccl_config_paths(row.conf_file, row.home, row.version) == row.paths);
  }
}

TEST_CASE("parse_nccl_config: NAME=value lines as NCCL's setEnvFile reads them", "[nccl]") {
  using Entries = std::vector<std::pair<std::string, std::string>>;
  struct Row {
    std::string text;
    Entries entries;
  };
  const std::vector<Row> rows = {
      // The user guide's example file: "NCCL_SOCKET_IFNAME==ens1f0" is the name and "=ens1f0" (an exact match).
      {"NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME==ens1f0\n", {{"NCCL_DEBUG", "WARN"}, {"NCCL_SOCKET_IFNAME", "=ens1f0"}}},
      {"# site tuning\n#NCCL_P2P_DISABLE=1\nNCCL_ALGO=Ring\n", {{"NCCL_ALGO", "Ring"}}},
      {"NCCL_PROTO=Simple\r\nNCCL_ALGO=Tree\r\n", {{"NCCL_PROTO", "Simple"}, {"NCCL_ALGO", "Tree"}}},
      {"NCCL_ALGO=Ring\nNCCL_ALGO=Tree\n", {{"NCCL_ALGO", "Ring"}}},  // setenv(..., 0): the first line stays
      {"no equals sign\n=orphan\n\n", {}},
      {"NCCL_BUFFSIZE = 1048576", {{"NCCL_BUFFSIZE ", " 1048576"}}},  // no trimming: not NCCL_BUFFSIZE
      {"NCCL_ALGO=", {{"NCCL_ALGO", ""}}},
      {" NCCL_ALGO=Ring", {{" NCCL_ALGO", "Ring"}}},
      {"", {}},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(gpuenv::nccl::parse_nccl_config(row.text) == row.entries);
  }
  const std::string long_value(2000, 'x');
  const auto cut = gpuenv::nccl::parse_nccl_config("NCCL_TOPO_FILE=" + long_value + "\n");
  REQUIRE(cut.size() == 1);
  CHECK(cut[0].second.size() == 1023);
}

TEST_CASE("classify_nccl_setting: what each value does to a single-node all-reduce", "[nccl]") {
  const auto init = SettingEffect::breaks_init;
  const auto bandwidth = SettingEffect::lowers_bandwidth;
  const auto code = SettingEffect::loads_code;
  const auto file = SettingEffect::writes_file;
  struct Row {
    std::string name;
    std::string value;
    std::vector<SettingEffect> effects;
  };
  const std::vector<Row> rows = {
      // "Define and set to 1 to disable direct GPU-to-GPU (P2P) communication" (#nccl-p2p-disable); read with
      // strtol(str, NULL, 0), so 0x1 and "1 " are 1 and "" or 0 or 2 disable nothing.
      {"NCCL_P2P_DISABLE", "1", {bandwidth}},
      {"NCCL_P2P_DISABLE", "0x1", {bandwidth}},
      {"NCCL_P2P_DISABLE", " 1 ", {bandwidth}},
      {"NCCL_P2P_DISABLE", "0", {}},
      {"NCCL_P2P_DISABLE", "2", {}},
      {"NCCL_P2P_DISABLE", "", {}},
      {"NCCL_P2P_LEVEL", "LOC", {bandwidth}},  // "LOC : Never use P2P (always disabled)"
      {"NCCL_P2P_DIRECT_DISABLE", "1", {bandwidth}},
      {"NCCL_SHM_DISABLE", "1", {bandwidth}},
      {"NCCL_SHM_DISABLE", "0", {}},
      {"NCCL_NVB_DISABLE", "1", {bandwidth}},
      {"NCCL_ALGO", "Ring", {bandwidth, init}},  // since 2.24 "parsing will issue a warning and fail"
      {"NCCL_PROTO", "^LL128", {bandwidth, init}},
      {"NCCL_MAX_NCHANNELS", "4", {bandwidth}},
      {"NCCL_MAX_NRINGS", "4", {bandwidth}},
      {"NCCL_MAX_CTAS", "8", {bandwidth}},
      {"NCCL_MIN_CTAS", "32", {bandwidth}},
      {"NCCL_BUFFSIZE", "1048576", {bandwidth}},
      {"NCCL_NTHREADS", "64", {bandwidth}},
      {"NCCL_CGA_CLUSTER_SIZE", "0", {bandwidth}},
      {"NCCL_CTA_POLICY", "EFFICIENCY", {bandwidth}},
      {"NCCL_CTA_POLICY", "default", {}},
      // NVLS "0: Disable the use of NVLink SHARP"; "1: ... it will fail if the NVLink SHARP resources cannot be
      // allocated" (and skips the multicast check, src/transport/nvls.cc:276); "2: (Default)".
      {"NCCL_NVLS_ENABLE", "0", {bandwidth}},
      {"NCCL_NVLS_ENABLE", "1", {init}},
      {"NCCL_NVLS_ENABLE", "2", {}},
      {"NCCL_SOCKET_IFNAME", "=ens9", {init}},
      {"NCCL_SOCKET_IFNAME", "", {}},
      {"NCCL_SOCKET_FAMILY", "AF_INET6", {init}},
      {"NCCL_COMM_ID", "10.0.0.1:29500", {init}},
      {"NCCL_COMM_ID", "", {init}},  // `if (env)`: an empty one is parsed, and fails ("Net : string is null")
      {"NCCL_NET", "IB", {init}},
      {"NCCL_OOB_NET_ENABLE", "1", {init}},
      {"NCCL_OOB_NET_ENABLE", "0", {}},
      {"NCCL_COMM_BLOCKING", "0", {init}},  // nonblocking: ncclCommInitAll answers ncclInProgress
      {"NCCL_COMM_BLOCKING", "1", {}},
      {"NCCL_MNNVL_ENABLE", "1", {init}},  // "1: ... NCCL initialization will fail if MNNVL is not supported"
      {"NCCL_MNNVL_ENABLE", "2", {}},
      {"NCCL_TUNER_PLUGIN", "libnccl-tuner-site.so", {bandwidth, code}},
      {"NCCL_TUNER_PLUGIN", "none", {}},
      {"NCCL_NET_PLUGIN", "aws-ofi", {code}},
      {"NCCL_NET_PLUGIN", "NONE", {}},  // strcasecmp(envNetPlugin, "none")
      {"NCCL_PROFILER_PLUGIN", "inspector", {code}},
      {"NCCL_ENV_PLUGIN", "/opt/libnccl-env-site.so", {code}},
      {"NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p", {file}},
      {"NCCL_TOPO_DUMP_FILE", "/tmp/topo.xml", {file}},
      // Between nodes, or describing rather than restricting: reported only.
      {"NCCL_IB_DISABLE", "1", {}},
      {"NCCL_IB_HCA", "mlx5_0", {}},
      {"NCCL_NET_GDR_LEVEL", "PIX", {}},
      {"NCCL_TOPO_FILE", "/opt/microsoft/ndv4-topo.xml", {}},
      {"NCCL_CUMEM_ENABLE", "0", {}},
      {"NCCL_DEBUG", "INFO", {}},
      {"NCCL_P2P_DISABLE ", "1", {}},  // a name with a trailing blank (from "NCCL_P2P_DISABLE = 1") is another name
  };
  for (const Row& row : rows) {
    INFO(row.name << "=" << row.value);
    CHECK(effects_of(row.name, row.value) == row.effects);
  }
}

TEST_CASE("nccl_settings: the environment wins over the user's file, which wins over /etc/nccl.conf", "[nccl]") {
  const std::vector<std::pair<std::string, std::string>> environment = {
      {"PATH", "/usr/bin"},
      {"NCCL_ALGO", "Ring"},
      {"NCCL_ALGO", "Tree"},         // getenv: the first
      {"NCCL_VERSION", "2.16.2-1"},  // the nvidia/cuda images' package version; NCCL never reads it
  };
  const std::vector<gpuenv::nccl::NcclConfigFile> files = {
      {"/root/.nccl.conf", "NCCL_ALGO=NVLS\nNCCL_PROTO=Simple\n"},
      {"/etc/nccl.conf", "NCCL_PROTO=LL\nNCCL_SOCKET_IFNAME=eth0\nOTHER=1\n"},
  };
  const auto settings = gpuenv::nccl::nccl_settings(environment, files);
  REQUIRE(settings.size() == 3);
  CHECK(settings[0].name == "NCCL_ALGO");
  CHECK(settings[0].value == "Ring");
  CHECK(settings[0].origin == "environment");
  CHECK(settings[1].name == "NCCL_PROTO");
  CHECK(settings[1].value == "Simple");
  CHECK(settings[1].origin == "/root/.nccl.conf");
  CHECK(settings[2].name == "NCCL_SOCKET_IFNAME");
  CHECK(settings[2].origin == "/etc/nccl.conf");
  CHECK(settings[2].has(SettingEffect::breaks_init));
  CHECK_FALSE(settings[2].has(SettingEffect::lowers_bandwidth));

  const auto bandwidth = gpuenv::nccl::settings_with(settings, SettingEffect::lowers_bandwidth);
  REQUIRE(bandwidth.size() == 2);
  CHECK(gpuenv::nccl::describe_settings(bandwidth, std::nullopt) ==
        "NCCL_ALGO=Ring (environment), NCCL_PROTO=Simple (/root/.nccl.conf)");
  CHECK(gpuenv::nccl::describe_settings(bandwidth, SettingEffect::lowers_bandwidth) ==
        "NCCL_ALGO=Ring (environment: restricts the algorithms NCCL may choose), NCCL_PROTO=Simple "
        "(/root/.nccl.conf: restricts the protocols (LL, LL128, Simple) NCCL may use)");
  const auto all = gpuenv::nccl::settings_with(settings, SettingEffect::breaks_init);
  CHECK(gpuenv::nccl::without_settings(all) ==
        "unset NCCL_ALGO in the environment; remove NCCL_PROTO from /root/.nccl.conf; remove NCCL_SOCKET_IFNAME from "
        "/etc/nccl.conf");

  const gpuenv::nccl::NcclSetting long_one{"NCCL_TOPO_FILE", std::string(300, 'y'), "environment", {}};
  CHECK(gpuenv::nccl::describe_settings({&long_one}, std::nullopt) ==
        "NCCL_TOPO_FILE=" + std::string(120, 'y') + "... (environment)");
}

TEST_CASE("read_nccl_settings: through System, the files NCCL's version reads", "[nccl]") {
  gpuenv::testing::FakeSystem system;
  system.env = {{"HOME", "/root"}, {"NCCL_CONF_FILE", "/etc/site/nccl.conf"}, {"NCCL_DEBUG", "WARN"}};
  system.files["/etc/site/nccl.conf"] = "NCCL_P2P_DISABLE=1\n";
  system.files["/root/.nccl.conf"] = "NCCL_SHM_DISABLE=1\n";
  system.files["/etc/nccl.conf"] = "NCCL_DEBUG=INFO\nNCCL_NVLS_ENABLE=0\n";

  // NCCL 2.27.3 reads NCCL_CONF_FILE, not ~/.nccl.conf; the environment's NCCL_DEBUG wins over /etc/nccl.conf's.
  const auto current = gpuenv::nccl::read_nccl_settings(system, 22703);
  std::vector<std::string> seen;
  for (const auto& setting : current) seen.push_back(setting.name + "=" + setting.value + " @" + setting.origin);
  CHECK(seen == std::vector<std::string>{"NCCL_CONF_FILE=/etc/site/nccl.conf @environment",
                                         "NCCL_DEBUG=WARN @environment", "NCCL_P2P_DISABLE=1 @/etc/site/nccl.conf",
                                         "NCCL_NVLS_ENABLE=0 @/etc/nccl.conf"});

  // NCCL 2.22.3 predates NCCL_CONF_FILE: ~/.nccl.conf instead.
  const auto older = gpuenv::nccl::read_nccl_settings(system, 22203);
  seen.clear();
  for (const auto& setting : older) seen.push_back(setting.name + "=" + setting.value + " @" + setting.origin);
  CHECK(seen == std::vector<std::string>{"NCCL_CONF_FILE=/etc/site/nccl.conf @environment",
                                         "NCCL_DEBUG=WARN @environment", "NCCL_SHM_DISABLE=1 @/root/.nccl.conf",
                                         "NCCL_NVLS_ENABLE=0 @/etc/nccl.conf"});

  // No file at all (the usual node): only the environment.
  gpuenv::testing::FakeSystem bare;
  bare.env = {{"NCCL_IB_HCA", "mlx5"}};
  const auto plain = gpuenv::nccl::read_nccl_settings(bare, 22703);
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].notes.empty());
}
