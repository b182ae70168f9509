#include "watch/settings.hpp"

#include <arpa/inet.h>

#include <tuple>

#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::watch {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  text = util::trim(text);
  std::size_t digits = 0;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) ++digits;
  if (digits == 0) return std::nullopt;
  const auto value = util::parse_double(text.substr(0, digits));
  if (!value || *value < 0) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  double ms = 0;
  if (unit.empty() || unit == "s") {
    ms = *value * 1000;
  } else if (unit == "ms") {
    ms = *value;
  } else if (unit == "m" || unit == "min") {
    ms = *value * 60'000;
  } else if (unit == "h") {
    ms = *value * 3'600'000;
  } else if (unit == "d") {
    ms = *value * 86'400'000;
  } else {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

util::Expected<WatchSettings> apply_settings_file(WatchSettings settings, std::string_view text,
                                                  const std::string& path) {
  auto file = util::TomlFile::parse(text, path);
  if (!file) return util::Error::input(file.error().message, "fix the TOML syntax (docs/watch.md \"Settings\")");
  if (const auto key = file->unexpected_key({"watch"}))
    return util::Error::input(path + ": unknown table or key `" + *key + "`", "put the settings in a [watch] table");
  auto read = file->read_table("watch", [&settings](util::TomlRow& row) {
    const auto duration = [&row](std::string_view key, std::chrono::milliseconds& into) {
      const std::string value = row.optional_text(key);
      if (value.empty()) return;
      if (auto parsed = parse_duration(value)) {
        into = *parsed;
      } else {
        row.fail("`" + std::string(key) + "` = \"" + value + "\" is not a duration (\"10s\", \"500ms\", \"5m\")");
      }
    };
    duration("interval", settings.interval);
    duration("nvml_timeout", settings.nvml_timeout);
    for (const auto& [key, into] : {std::pair<const char*, std::string*>{"db", &settings.db},
                                    {"prometheus", &settings.prometheus_file},
                                    {"listen", &settings.listen},
                                    {"cloud", &settings.cloud},
                                    {"ready_marker", &settings.ready_marker},
                                    {"slurm_node", &settings.slurm_node},
                                    {"nvml_library", &settings.nvml_library}}) {
      const std::string value = row.optional_text(key);
      if (!value.empty()) *into = value;
    }
    for (const auto& [key, into] : {std::pair<const char*, bool*>{"cloud_metadata", &settings.cloud_metadata},
                                    {"slurm_drain", &settings.slurm_drain},
                                    {"azure_acknowledge", &settings.azure_acknowledge}}) {
      if (auto value = row.optional_boolean(key)) *into = *value;
    }
    if (auto hook = row.texts_if_present("on_interruption")) settings.on_interruption = *hook;
  });
  if (!read) {
    return util::Error::input(read.error().message,
                              "see docs/watch.md \"Settings\" for the keys of [watch] and their types");
  }
  return settings;
}

util::Expected<std::pair<std::string, unsigned>> parse_listen_address(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return util::Error::usage("--listen " + std::string(text) + ": no port", "give 127.0.0.1:PORT");
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto port = util::parse_int(text.substr(colon + 1));
  if (!port || *port < 1 || *port > 65535)
    return util::Error::usage("--listen " + std::string(text) + ": the port must be 1-65535", "give 127.0.0.1:PORT");
  in_addr v4{};
  in6_addr v6{};
  const bool loopback = (::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
                        (::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
  if (!loopback) {
    return util::Error::usage("--listen " + std::string(text) + ": only a loopback address is served",
                              "listen on 127.0.0.1:PORT and let a local Prometheus or node_exporter scrape it; "
                              "fleet-wide collection is Prometheus's job");
  }
  return std::pair<std::string, unsigned>{host, static_cast<unsigned>(*port)};
}

util::Expected<util::Ok> validate(const WatchSettings& settings) {
  if (settings.interval < std::chrono::milliseconds(10))
    return util::Error::usage("the interval must be at least 10ms", "use --interval 10s (the default)");
  if (!settings.prometheus_file.empty() && !settings.listen.empty())
    return util::Error::usage("--prometheus and --listen are both set",
                              "expose the metrics one way: a textfile for "
                              "node_exporter, or a loopback port");
  if (!settings.listen.empty()) {
    GPUENV_TRY(parse_listen_address(settings.listen));
  }
  if (!settings.on_interruption.empty() && !util::starts_with(settings.on_interruption.front(), "/")) {
    return util::Error::input(
        "on_interruption = [\"" + settings.on_interruption.front() + "\", ...]: the program must be an absolute path",
        "name the hook by its full path, e.g. [\"/usr/local/bin/checkpoint\", \"--now\"]: "
        "root never looks a hook up in a search path");
  }
  if (!settings.cloud.empty() && settings.cloud != "aws" && settings.cloud != "gcp" && settings.cloud != "azure")
    return util::Error::input("cloud = \"" + settings.cloud + "\": interruptions are watched on aws, gcp or azure");
  return util::Ok{};
}

util::Expected<WatchSettings> load_settings(system::System& system, const SettingsOverrides& overrides) {
  WatchSettings settings;
  if (overrides.config_given || system.exists(overrides.config)) {
    // The file names the hook root runs: it must be one only root can change, like the hook itself.
    if (auto problem = system.trust_problem(overrides.config))
      return util::Error::input(overrides.config + ": not trusted: " + *problem +
                                    ", so someone other than root could choose what watch runs as root",
                                "make it and the directories above it owned by root and not writable by group or "
                                "others (`chown root: FILE && chmod go-w FILE`)");
    auto text = system.read_file(overrides.config, system::FileKind::profile);
    if (!text) return util::Error::input(text.error().message, "check --config, or create " + overrides.config);
    GPUENV_TRY_ASSIGN(auto applied, apply_settings_file(settings, *text, overrides.config));
    settings = std::move(applied);
  }
  for (const auto& [flag, text, into] : {std::tuple<const char*, const std::string*, std::chrono::milliseconds*>{
                                             "--interval", &overrides.interval, &settings.interval},
                                         {"--nvml-timeout", &overrides.nvml_timeout, &settings.nvml_timeout}}) {
    if (text->empty()) continue;
    auto parsed = parse_duration(*text);
    if (!parsed) return util::Error::usage(std::string(flag) + " " + *text + ": not a duration", "e.g. 10s, 500ms, 1m");
    *into = *parsed;
  }
  for (const auto& [given, into] : {std::pair<const std::string*, std::string*>{&overrides.db, &settings.db},
                                    {&overrides.prometheus, &settings.prometheus_file},
                                    {&overrides.listen, &settings.listen},
                                    {&overrides.cloud, &settings.cloud}}) {
    if (!given->empty()) *into = *given;
  }
  if (overrides.cloud_metadata) settings.cloud_metadata = true;
  if (!overrides.metadata_endpoint.empty()) {
    GPUENV_TRY_ASSIGN(auto endpoint,
                      probe::parse_metadata_endpoint(overrides.metadata_endpoint, "--cloud-metadata-endpoint"));
    settings.metadata_endpoint = endpoint;
    settings.cloud_metadata = true;
  }
  if (auto library = system.environment("GPUENV_NVML_LIBRARY"); library && !library->empty()) {
    // A path root loads must be one only root can change, as for doctor (cli's library_from_environment); a bare
    // soname is the dynamic loader's own search.
    if (library->find('/') != std::string::npos) {
      if (auto problem = system.trust_problem(*library))
        return util::Error::input("GPUENV_NVML_LIBRARY=" + *library + ": not trusted: " + *problem +
                                      ", so someone other than root could change what watch loads as root",
                                  "make it and the directories above it owned by root and not writable by group or "
                                  "others, or unset GPUENV_NVML_LIBRARY");
    }
    settings.nvml_library = *library;
  }
  GPUENV_TRY(validate(settings));
  GPUENV_TRY(hook_trusted(system, settings.on_interruption));
  return settings;
}

util::Expected<util::Ok> hook_trusted(system::System& system, const std::vector<std::string>& hook) {
  if (hook.empty()) return util::Ok{};
  // System::trust_problem is the check every path root loads or runs from a setting passes (docs/security.md,
  // "Named files"): the hook runs as root, so nobody but root may be able to replace it.
  const auto problem = system.trust_problem(hook.front());
  if (!problem) return util::Ok{};
  return util::Error::input("on_interruption = [\"" + hook.front() + "\", ...]: not trusted: " + *problem +
                                ", so someone other than root could change what watch runs as root",
                            "make the hook and the directories above it owned by root and not writable by group or "
                            "others (`chown root: PATH && chmod go-w PATH`), or point to a copy that is");
}

}  // namespace gpuenv::watch
