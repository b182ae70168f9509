#include "nccl/environment.hpp"

#include <algorithm>
#include <array>
#include <climits>

#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

/// When a rule applies to a value, as NCCL itself reads that variable.
enum class When {
  nonempty,    ///< any value but "" (ncclLoadParam and most string readers ignore an empty one)
  present,     ///< any value, "" included (NCCL_COMM_ID: an empty one is still used, and fails to parse)
  equals,      ///< the value, read as NCCL reads it (strtoll with base 0), is `number` ("" is NCCL's default: never)
  not_equals,  ///< the value read so is not `number` ("" is NCCL's default: never)
  not_text,    ///< a non-empty value other than the '|'-separated `texts` (compared case-insensitively)
};

struct Rule {
  std::string_view name;
  When when;
  long long number;
  std::string_view texts;
  SettingEffect effect;
  std::string_view why;
  std::string_view source;
};

// NCCL's documentation: the user guide's Environment Variables page, whose text is NVIDIA/nccl
// docs/userguide/source/env.rst (@ 5067397c2676d5aed50042fc39e5c8ee96eb0027, NCCL 2.30.7, the line given); code
// references are to the same commit.
#define GPUENV_NCCL_ENV_DOC "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#"

constexpr SettingEffect k_init = SettingEffect::breaks_init;
constexpr SettingEffect k_bandwidth = SettingEffect::lowers_bandwidth;
constexpr SettingEffect k_code = SettingEffect::loads_code;
constexpr SettingEffect k_file = SettingEffect::writes_file;

// The variables that can change a single-node all-reduce of one process over every GPU (ncclCommInitAll, group
// calls), and what each does. Left out on purpose, reported only: the InfiniBand/RoCE, socket-transport, PXN, GDR,
// CollNet and MNNVL-UUID settings (between nodes, not between the GPUs of one node), NCCL_TOPO_FILE (describes the
// machine rather than restricting NCCL; Azure's floors were measured with their topology file), NCCL_CUMEM_ENABLE
// (no documented effect on bandwidth or initialisation on one node), NCCL_DEBUG and its subsystems, the checks
// (NCCL_CHECK_MODE: latency only), NCCL_RUNTIME_CONNECT (when peers connect, not how).
constexpr std::array k_rules = {
    Rule{"NCCL_SOCKET_IFNAME", When::nonempty, 0, "", k_init,
         "names the interfaces NCCL's bootstrap may use, even for one process: with none of them up, ncclCommInitAll "
         "fails (\"Bootstrap : no socket interface found\")",
         GPUENV_NCCL_ENV_DOC "nccl-socket-ifname (env.rst:26); NVIDIA/nccl src/misc/socket.cc:196, "
                             "src/bootstrap.cc:126"},
    Rule{"NCCL_SOCKET_FAMILY", When::nonempty, 0, "", k_init,
         "restricts the bootstrap to IPv4 or IPv6 interfaces: with none of that family, ncclCommInitAll fails",
         GPUENV_NCCL_ENV_DOC "nccl-socket-family (env.rst:55)"},
    Rule{"NCCL_COMM_ID", When::present, 0, "", k_init,
         "is the bootstrap root's address: ncclCommInitAll's first rank listens on it, so another host's address or a "
         "malformed one makes initialisation fail",
         "NVIDIA/nccl src/init.cc:2625 (ncclCommInitAll calls ncclGetUniqueId), src/bootstrap.cc:433 (the unique id "
         "takes NCCL_COMM_ID's address), src/init.cc:2533 (rank 0 starts the bootstrap root there)"},
    Rule{"NCCL_NET", When::nonempty, 0, "", k_init,
         "forces one network module: where it is missing, initialisation fails (\"Failed to initialize any NET "
         "plugin\")",
         GPUENV_NCCL_ENV_DOC "nccl-net (env.rst:441); NVIDIA/nccl src/plugin/net.cc:349"},
    Rule{"NCCL_OOB_NET_ENABLE", When::not_equals, 0, "", k_init,
         "moves the initialisation's allgather onto NCCL's network, which must then work",
         GPUENV_NCCL_ENV_DOC "nccl-oob-net-enable (env.rst:381)"},
    Rule{"NCCL_COMM_BLOCKING", When::equals, 0, "", k_init,
         "makes communicators nonblocking: ncclCommInitAll returns ncclInProgress, which this blocking sweep takes "
         "for a failure",
         GPUENV_NCCL_ENV_DOC "nccl-comm-blocking (env.rst:1594); NVIDIA/nccl src/init.cc:1998, "
                             "src/include/checks.h:161"},
    Rule{"NCCL_MNNVL_ENABLE", When::equals, 1, "", k_init,
         "requires Multi-Node NVLink: initialisation fails where it is not supported",
         GPUENV_NCCL_ENV_DOC "nccl-mnnvl-enable (env.rst:1718); NVIDIA/nccl src/init.cc:1072"},
    Rule{"NCCL_NVLS_ENABLE", When::equals, 1, "", k_init,
         "forces NVLink SHARP on, skipping NCCL's check that the GPU supports multicast: initialisation fails "
         "when its resources cannot be allocated",
         GPUENV_NCCL_ENV_DOC "nccl-nvls-enable (env.rst:1678); NVIDIA/nccl src/transport/nvls.cc:276"},
    Rule{"NCCL_NVLS_ENABLE", When::equals, 0, "", k_bandwidth,
         "turns NVLink SHARP off, which offloads the all-reduce to the NVSwitches (Hopper and later)",
         GPUENV_NCCL_ENV_DOC "nccl-nvls-enable (env.rst:1678)"},
    Rule{"NCCL_ALGO", When::nonempty, 0, "", k_bandwidth, "restricts the algorithms NCCL may choose",
         GPUENV_NCCL_ENV_DOC "nccl-algo (env.rst:1251)"},
    Rule{"NCCL_ALGO", When::nonempty, 0, "", k_init,
         "from NCCL 2.24 a value it cannot parse, or one that leaves an operation no algorithm, fails",
         GPUENV_NCCL_ENV_DOC "nccl-algo (env.rst:1290)"},
    Rule{"NCCL_PROTO", When::nonempty, 0, "", k_bandwidth, "restricts the protocols (LL, LL128, Simple) NCCL may use",
         GPUENV_NCCL_ENV_DOC "nccl-proto (env.rst:1315)"},
    Rule{"NCCL_PROTO", When::nonempty, 0, "", k_init,
         "from NCCL 2.24 parsed as NCCL_ALGO is: a value it cannot parse fails",
         GPUENV_NCCL_ENV_DOC "nccl-proto (env.rst:1337)"},
    Rule{"NCCL_P2P_DISABLE", When::equals, 1, "", k_bandwidth,
         "disables the P2P transport (NVLink or PCIe directly between the GPUs)",
         GPUENV_NCCL_ENV_DOC "nccl-p2p-disable (env.rst:797); NVIDIA/nccl src/graph/paths.cc:250"},
    Rule{"NCCL_P2P_LEVEL", When::nonempty, 0, "", k_bandwidth,
         "limits how far apart two GPUs may be to use P2P (LOC: never)",
         GPUENV_NCCL_ENV_DOC "nccl-p2p-level (env.rst:808)"},
    Rule{"NCCL_P2P_DIRECT_DISABLE", When::not_equals, 0, "", k_bandwidth,
         "stops the GPUs of one process (this sweep's) from accessing each other's buffers directly",
         GPUENV_NCCL_ENV_DOC "nccl-p2p-direct-disable (env.rst:841); NVIDIA/nccl src/transport/p2p.cc:414"},
    Rule{"NCCL_SHM_DISABLE", When::equals, 1, "", k_bandwidth,
         "disables the shared-memory transport, used between GPUs that cannot use P2P",
         GPUENV_NCCL_ENV_DOC "nccl-shm-disable (env.rst:849); NVIDIA/nccl src/transport/shm.cc:66"},
    Rule{"NCCL_NVB_DISABLE", When::not_equals, 0, "", k_bandwidth, "disables NVLink paths through an intermediate GPU",
         GPUENV_NCCL_ENV_DOC "nccl-nvb-disable (env.rst:1341); NVIDIA/nccl src/graph/paths.cc:80"},
    Rule{"NCCL_BUFFSIZE", When::nonempty, 0, "", k_bandwidth,
         "changes the buffer used between each pair of GPUs (default 4 MiB)",
         GPUENV_NCCL_ENV_DOC "nccl-buffsize (env.rst:857)"},
    Rule{"NCCL_NTHREADS", When::nonempty, 0, "", k_bandwidth, "changes the CUDA threads per block of NCCL's kernels",
         GPUENV_NCCL_ENV_DOC "nccl-nthreads (env.rst:870)"},
    Rule{"NCCL_MAX_NCHANNELS", When::nonempty, 0, "", k_bandwidth, "caps the channels (CUDA blocks) NCCL uses",
         GPUENV_NCCL_ENV_DOC "nccl-max-nchannels (env.rst:884)"},
    Rule{"NCCL_MAX_NRINGS", When::nonempty, 0, "", k_bandwidth,
         "caps the channels (CUDA blocks) NCCL uses (the old name of NCCL_MAX_NCHANNELS)",
         GPUENV_NCCL_ENV_DOC "nccl-max-nchannels (env.rst:891)"},
    Rule{"NCCL_MAX_CTAS", When::nonempty, 0, "", k_bandwidth, "caps the CTAs (channels) NCCL uses",
         GPUENV_NCCL_ENV_DOC "nccl-max-ctas (env.rst:1619)"},
    Rule{"NCCL_MIN_NCHANNELS", When::nonempty, 0, "", k_bandwidth,
         "forces a number of channels; more than needed can lower performance",
         GPUENV_NCCL_ENV_DOC "nccl-min-nchannels (env.rst:901)"},
    Rule{"NCCL_MIN_NRINGS", When::nonempty, 0, "", k_bandwidth,
         "forces a number of channels (the old name of NCCL_MIN_NCHANNELS)",
         GPUENV_NCCL_ENV_DOC "nccl-min-nchannels (env.rst:911)"},
    Rule{"NCCL_MIN_CTAS", When::nonempty, 0, "", k_bandwidth,
         "forces a number of CTAs; more than necessary can decrease performance",
         GPUENV_NCCL_ENV_DOC "nccl-min-ctas (env.rst:1647)"},
    Rule{"NCCL_CGA_CLUSTER_SIZE", When::nonempty, 0, "", k_bandwidth,
         "overrides the thread block cluster size NCCL would choose",
         GPUENV_NCCL_ENV_DOC "nccl-cga-cluster-size (env.rst:1604)"},
    Rule{"NCCL_CTA_POLICY", When::not_text, 0, "DEFAULT|0", k_bandwidth,
         "asks NCCL for fewer CTAs than maximal performance needs (EFFICIENCY, ZERO)",
         GPUENV_NCCL_ENV_DOC "nccl-cta-policy (env.rst:688); NVIDIA/nccl docs/userguide/source/api/flags.rst:41"},
    Rule{"NCCL_TUNER_PLUGIN", When::not_text, 0, "none", k_bandwidth,
         "lets a tuner plugin choose each collective's algorithm, protocol and channels",
         GPUENV_NCCL_ENV_DOC "nccl-tuner-plugin (env.rst:468)"},
    Rule{"NCCL_TUNER_PLUGIN", When::not_text, 0, "none", k_code, "makes NCCL load that tuner plugin into this process",
         GPUENV_NCCL_ENV_DOC "nccl-tuner-plugin (env.rst:468); NVIDIA/nccl src/plugin/tuner.cc:60"},
    Rule{"NCCL_NET_PLUGIN", When::not_text, 0, "none", k_code,
         "makes NCCL load that network plugin (or libnccl-net-<value>.so) into this process",
         GPUENV_NCCL_ENV_DOC "nccl-net-plugin (env.rst:451); NVIDIA/nccl src/plugin/net.cc:266"},
    Rule{"NCCL_PROFILER_PLUGIN", When::not_text, 0, "none", k_code,
         "makes NCCL load that profiler plugin into this process",
         GPUENV_NCCL_ENV_DOC "nccl-profiler-plugin (env.rst:485); NVIDIA/nccl src/plugin/profiler.cc:60"},
    Rule{"NCCL_ENV_PLUGIN", When::not_text, 0, "none", k_code,
         "makes NCCL load that environment plugin into this process, which then answers every NCCL variable",
         GPUENV_NCCL_ENV_DOC "nccl-env-plugin (env.rst:502); NVIDIA/nccl src/plugin/env.cc:44"},
    Rule{"NCCL_DEBUG_FILE", When::nonempty, 0, "", k_file, "makes NCCL create or overwrite that file",
         GPUENV_NCCL_ENV_DOC "nccl-debug-file (env.rst:561)"},
    Rule{"NCCL_TOPO_DUMP_FILE", When::nonempty, 0, "", k_file,
         "makes NCCL write the topology it detected to that file, overwriting it",
         GPUENV_NCCL_ENV_DOC "nccl-topo-dump-file (env.rst:764)"},
};

#undef GPUENV_NCCL_ENV_DOC

/// `text` read as C's strtoll with base 0 reads it (leading white space, a sign, 0x for hexadecimal, 0 for octal,
/// digits up to the first other character; no digits reads 0); nullopt on overflow, where NCCL keeps its default.
std::optional<long long> c_integer(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
  };
  int base = 10;
  if (i + 2 < text.size() && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X') && digit(text[i + 2]) < 16) {
    base = 16;
    i += 2;
  } else if (i < text.size() && text[i] == '0') {
    base = 8;
  }
  long long value = 0;
  for (; i < text.size() && digit(text[i]) < base; ++i) {
    if (value > (LLONG_MAX - digit(text[i])) / base) return std::nullopt;
    value = value * base + digit(text[i]);
  }
  return negative ? -value : value;
}

bool applies(const Rule& rule, std::string_view value) {
  switch (rule.when) {
    case When::present:
      return true;
    case When::nonempty:
      return !value.empty();
    case When::equals:
    case When::not_equals: {
      if (value.empty()) return false;
      const auto number = c_integer(value);
      if (!number) return false;
      return (*number == rule.number) == (rule.when == When::equals);
    }
    case When::not_text: {
      if (value.empty()) return false;
      const std::string lower = util::to_lower(value);
      for (const std::string_view text : util::split(rule.texts, '|')) {
        if (lower == util::to_lower(text)) return false;
      }
      return true;
    }
  }
  return false;
}

/// `value` for a message: at most 120 bytes.
std::string shown_value(const std::string& value) {
  constexpr std::size_t k_limit = 120;
  if (value.size() <= k_limit) return value;
  return value.substr(0, k_limit) + "...";
}

}  // namespace

bool NcclSetting::has(SettingEffect effect) const {
  return std::any_of(notes.begin(), notes.end(), [effect](const SettingNote& note) { return note.effect == effect; });
}

std::vector<std::string> nccl_config_paths(const std::optional<std::string>& conf_file,
                                           const std::optional<std::string>& home, int version_code) {
  // NCCL_CONF_FILE "(since 2.23) ... If unset or if the version is prior to 2.23, NCCL uses .nccl.conf in the home
  // directory if available" (env.rst:531); /etc/nccl.conf is read after it either way (param.cc initEnvFunc).
  constexpr int k_conf_file_since = 22300;  // NCCL_VERSION(2,23,0)
  std::vector<std::string> paths;
  const bool conf_file_read = version_code == 0 || version_code >= k_conf_file_since;
  if (conf_file_read && conf_file && !conf_file->empty()) {
    paths.push_back(*conf_file);
  } else if (home) {
    paths.push_back(*home + "/.nccl.conf");
  }
  paths.emplace_back("/etc/nccl.conf");
  return paths;
}

std::vector<std::pair<std::string, std::string>> parse_nccl_config(std::string_view text) {
  constexpr std::size_t k_field_limit = 1023;  // setEnvFile's envVar and envValue buffers hold 1023 bytes
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;  // no '=': skipped; no name: setenv refuses it
    std::string name(line.substr(0, std::min(equals, k_field_limit)));
    std::string value(line.substr(equals + 1, k_field_limit));
    const bool known = std::any_of(out.begin(), out.end(), [&name](const auto& entry) { return entry.first == name; });
    if (!known) out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

std::vector<SettingNote> classify_nccl_setting(std::string_view name, std::string_view value) {
  std::vector<SettingNote> notes;
  for (const Rule& rule : k_rules) {
    if (rule.name == name && applies(rule, value))
      notes.push_back({rule.effect, std::string(rule.why), std::string(rule.source)});
  }
  return notes;
}

std::vector<NcclSetting> nccl_settings(const std::vector<std::pair<std::string, std::string>>& environment,
                                       const std::vector<NcclConfigFile>& files) {
  std::vector<NcclSetting> out;
  auto add = [&out](const std::string& name, const std::string& value, const std::string& origin) {
    // NCCL_VERSION: the nvidia/cuda images' `ENV NCCL_VERSION 2.16.2-1` (the libnccl2 package they install;
    // gitlab.com/nvidia/container-images/cuda dist/12.0.0/ubuntu2204/runtime/Dockerfile); no NCCL source reads it.
    if (!util::starts_with(name, "NCCL_") || name == "NCCL_VERSION") return;
    if (std::any_of(out.begin(), out.end(), [&name](const NcclSetting& s) { return s.name == name; })) return;
    out.push_back({name, value, origin, classify_nccl_setting(name, value)});
  };
  for (const auto& [name, value] : environment) add(name, value, "environment");
  for (const NcclConfigFile& file : files) {
    for (const auto& [name, value] : parse_nccl_config(file.text)) add(name, value, file.path);
  }
  return out;
}

std::string describe_settings(const std::vector<const NcclSetting*>& settings,
                              std::optional<SettingEffect> reasons_of) {
  std::vector<std::string> items;
  for (const NcclSetting* setting : settings) {
    std::string item = setting->name + "=" + shown_value(setting->value) + " (" + setting->origin;
    std::vector<std::string> reasons;
    for (const SettingNote& note : setting->notes) {
      if (reasons_of && note.effect == *reasons_of) reasons.push_back(note.why);
    }
    if (!reasons.empty()) item += ": " + util::join(reasons, "; ");
    items.push_back(item + ")");
  }
  return util::join(items, ", ");
}

std::vector<const NcclSetting*> settings_with(const std::vector<NcclSetting>& settings, SettingEffect effect) {
  std::vector<const NcclSetting*> out;
  for (const NcclSetting& setting : settings) {
    if (setting.has(effect)) out.push_back(&setting);
  }
  return out;
}

std::string without_settings(const std::vector<const NcclSetting*>& settings) {
  std::vector<std::string> origins;  // in order of first appearance
  for (const NcclSetting* setting : settings) {
    if (std::find(origins.begin(), origins.end(), setting->origin) == origins.end()) origins.push_back(setting->origin);
  }
  std::vector<std::string> steps;
  for (const std::string& origin : origins) {
    std::vector<std::string> names;
    for (const NcclSetting* setting : settings) {
      if (setting->origin == origin) names.push_back(setting->name);
    }
    steps.push_back(origin == "environment" ? "unset " + util::join(names, ", ") + " in the environment"
                                            : "remove " + util::join(names, ", ") + " from " + origin);
  }
  return util::join(steps, "; ");
}

std::vector<NcclSetting> read_nccl_settings(system::System& system, int version_code) {
  std::vector<NcclConfigFile> files;
  for (const std::string& path :
       nccl_config_paths(system.environment("NCCL_CONF_FILE"), system.environment("HOME"), version_code)) {
    // Read, never run or loaded; a file that is missing (the usual case) or unreadable sets nothing here. NCCL
    // could still read one gpuenv cannot, which the finding cannot know.
    auto text = system.read_file(path, system::FileKind::host_text);
    if (text) files.push_back({path, std::move(*text)});
  }
  return nccl_settings(system.environment_variables(), files);
}

}  // namespace gpuenv::nccl
