#pragma once
// What `gpuenv watch` is asked to do: /etc/gpuenv/watch.toml's [watch] table, with the command line over it
// (docs/watch.md "Settings"). Re-read on SIGHUP.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/cloud_metadata.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::watch {

/// The settings file the service reads.
inline constexpr const char* k_settings_file = "/etc/gpuenv/watch.toml";
/// The database the service writes.
inline constexpr const char* k_default_db = "/var/lib/gpuenv/watch.db";

struct WatchSettings {
  std::chrono::milliseconds interval{10000};
  std::string db = k_default_db;  ///< "none": no history (events are still derived, from memory)
  std::string prometheus_file;    ///< the textfile written each interval ("" none)
  std::string listen;             ///< "127.0.0.1:PORT" served over HTTP ("" none)
  bool cloud_metadata = false;    ///< watch the cloud's metadata service for interruptions
  std::string cloud;              ///< "aws", "gcp", "azure"; "" detects it from DMI
  std::optional<probe::MetadataEndpoint> metadata_endpoint;  ///< instead of the cloud's own address (tests)
  std::vector<std::string> on_interruption;                  ///< the hook's argv ([0] an absolute path); empty: none
  std::string ready_marker = "/var/lib/gpuenv/ready";        ///< removed on an interruption notice ("" none)
  bool slurm_drain = true;         ///< drain this node in Slurm on an interruption notice (where scontrol answers)
  std::string slurm_node;          ///< Slurm's name for the node ("" as the Slurm health check finds it)
  bool azure_acknowledge = false;  ///< tell Azure to go ahead once the hook is done (affects every VM of the event)
  std::string nvml_library = "libnvidia-ml.so.1";
  std::chrono::milliseconds nvml_timeout{5000};  ///< an NVML read that takes longer is abandoned
};

/// "10s", "500ms", "5m", "6h", "7d" (a bare number is seconds); nullopt when it is none of these.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// Applies the [watch] table of a settings file's `text` over `settings`; an input Error naming `path`, the line
/// and the key when a key is unknown or of the wrong type. A missing table changes nothing.
util::Expected<WatchSettings> apply_settings_file(WatchSettings settings, std::string_view text,
                                                  const std::string& path);

/// Checks the combination: an interval of at least 10 ms, the hook's argv[0] absolute, a loopback listen address,
/// not both exposition targets. An input Error naming the setting and the fix.
util::Expected<util::Ok> validate(const WatchSettings& settings);

/// What the command line says (an empty field or false: not given); it wins over the settings file.
struct SettingsOverrides {
  std::string config = k_settings_file;
  bool config_given = false;  ///< --config named the file: it must exist
  std::string interval;
  std::string nvml_timeout;
  std::string db;
  std::string prometheus;
  std::string listen;
  bool cloud_metadata = false;
  std::string cloud;
  std::string metadata_endpoint;  ///< IPV4:PORT
};

/// The settings file (when it exists, or when --config named it), `overrides` over it and GPUENV_NVML_LIBRARY over
/// both (as for doctor), checked by validate(); called at start and again on SIGHUP.
util::Expected<WatchSettings> load_settings(system::System& system, const SettingsOverrides& overrides);

/// Ok when only root can change the hook's program `hook[0]` (System::trust_problem) or there is no hook; else an
/// input Error naming the setting, the problem and the fix. load_settings checks it, and the flow again before it
/// runs the hook.
util::Expected<util::Ok> hook_trusted(system::System& system, const std::vector<std::string>& hook);

/// The host and port of a listen address: "127.0.0.1:9400", "[::1]:9400" or "localhost:9400"; an input Error for
/// any address that is not loopback (the metrics are the node's: fleet-wide collection is Prometheus's job).
util::Expected<std::pair<std::string, unsigned>> parse_listen_address(std::string_view text);

}  // namespace gpuenv::watch
