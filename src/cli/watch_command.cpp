// `gpuenv watch`: the resident monitor (docs/watch.md). Settings come from /etc/gpuenv/watch.toml with the command
// line over it; SIGHUP re-reads both, SIGTERM stops after the interval in hand is stored. Messages go to stderr, which
// systemd sends to the journal (with the <N> priority prefixes it reads when JOURNAL_STREAM says it is listening).

#include <chrono>
#include <memory>
#include <tuple>

#include "cli/commands.hpp"
#include "cli/watch_output.hpp"
#include "system/http_server.hpp"
#include "system/signals.hpp"
#include "watch/daemon.hpp"

#ifndef GPUENV_VERSION
#define GPUENV_VERSION "0.0.0"
#endif

namespace gpuenv::cli {
namespace {

/// The command line, kept so that a reload applies it over the re-read file again.
struct WatchOptions {
  std::string config = watch::k_settings_file;
  bool config_given = false;
  std::string interval;
  std::string db;
  std::string prometheus;
  std::string listen;
  bool cloud_metadata = false;
  std::string cloud;
  std::string metadata_endpoint;
  std::string nvml_timeout;
  std::uint64_t count = 0;
};

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The settings file (when it exists, or when --config named it), then the command line over it.
util::Expected<watch::WatchSettings> load_settings(system::System& system, const WatchOptions& options) {
  watch::WatchSettings settings;
  if (options.config_given || system.exists(options.config)) {
    auto text = system.read_file(options.config, system::FileKind::profile);
    if (!text) return util::Error::input(text.error().message, "check --config, or create " + options.config);
    auto applied = watch::apply_settings_file(settings, *text, options.config);
    if (!applied) return applied.error();
    settings = std::move(*applied);
  }
  for (const auto& [flag, text, into] :
       {std::tuple<const char*, const std::string*, std::chrono::milliseconds*>{"--interval", &options.interval,
                                                                                &settings.interval},
        {"--nvml-timeout", &options.nvml_timeout, &settings.nvml_timeout}}) {
    if (text->empty()) continue;
    auto parsed = watch::parse_duration(*text);
    if (!parsed) return util::Error::usage(std::string(flag) + " " + *text + ": not a duration", "e.g. 10s, 500ms, 1m");
    *into = *parsed;
  }
  if (!options.db.empty()) settings.db = options.db;
  if (!options.prometheus.empty()) settings.prometheus_file = options.prometheus;
  if (!options.listen.empty()) settings.listen = options.listen;
  if (options.cloud_metadata) settings.cloud_metadata = true;
  if (!options.cloud.empty()) settings.cloud = options.cloud;
  if (!options.metadata_endpoint.empty()) {
    auto endpoint = probe::parse_metadata_endpoint(options.metadata_endpoint, "--cloud-metadata-endpoint");
    if (!endpoint) return endpoint.error();
    settings.metadata_endpoint = *endpoint;
    settings.cloud_metadata = true;
  }
  if (auto library = system.environment("GPUENV_NVML_LIBRARY"); library && !library->empty())
    settings.nvml_library = *library;
  if (auto valid = watch::validate(settings); !valid) return valid.error();
  return settings;
}

/// Where an interval's exposition goes: the textfile (written atomically) or the loopback listener.
class Publisher {
 public:
  explicit Publisher(system::System& system) : m_system(system) {}

  util::Expected<util::Ok> configure(const watch::WatchSettings& settings) {
    m_file = settings.prometheus_file;
    if (settings.listen == m_listen) return util::Ok{};
    m_server.reset();
    m_listen = settings.listen;
    if (m_listen.empty()) return util::Ok{};
    auto address = watch::parse_listen_address(m_listen);
    if (!address) return address.error();
    auto server = system::TextServer::start(address->first, address->second, "text/plain; version=0.0.4");
    if (!server) return server.error();
    m_server = std::move(*server);
    return util::Ok{};
  }

  void publish(const watch::Snapshot& snapshot, const watch::LogSink& log) {
    if (m_file.empty() && !m_server) return;
    const std::string text = watch_prometheus(snapshot, GPUENV_VERSION);
    if (m_server) m_server->set_text(text);
    if (m_file.empty()) return;
    auto written = m_system.write_file_atomic(m_file, text);
    if (!written && written.error().message != m_last_error) log(3, "exposition: " + written.error().message);
    m_last_error = written ? std::string() : written.error().message;
  }

 private:
  system::System& m_system;
  std::string m_file;
  std::string m_listen;
  std::unique_ptr<system::TextServer> m_server;
  std::string m_last_error;
};

ExitCode run_watch(Context& context, const WatchOptions& options) {
  // Before any thread starts (NVML's, the listener's, a hook's): they inherit the blocked signals.
  const std::unique_ptr<system::Wakeups> wakeups = system::make_signal_wakeups();
  const bool journal = context.system.environment("JOURNAL_STREAM").has_value();
  const watch::LogSink log = [&context, journal](int priority, const std::string& line) {
    if (journal) {
      context.err << "<" << priority << ">" << line << std::endl;
    } else {
      context.err << "gpuenv watch: " << line << std::endl;
    }
  };
  auto settings = load_settings(context.system, options);
  if (!settings) return report_error(context, settings.error());
  auto rules = watch::builtin_rule_settings();
  if (!rules) return report_error(context, rules.error());
  Publisher publisher(context.system);
  if (auto configured = publisher.configure(*settings); !configured) return report_error(context, configured.error());

  watch::Monitor monitor(context.system, context.system, unix_ms_now, log);
  if (auto started = monitor.start(*settings, *rules); !started) return report_error(context, started.error());
  log(5, "watching every " + std::to_string(settings->interval.count()) + " ms");
  watch::DaemonCallbacks callbacks;
  callbacks.load_settings = [&]() -> util::Expected<watch::WatchSettings> {
    auto reloaded = load_settings(context.system, options);
    if (!reloaded) return reloaded;
    if (auto configured = publisher.configure(*reloaded); !configured) return configured.error();
    return reloaded;
  };
  callbacks.publish = [&](const watch::Snapshot& snapshot) { publisher.publish(snapshot, log); };
  watch::run_daemon(monitor, *wakeups, callbacks, log, options.count);
  return ExitCode::ok;
}

}  // namespace

void add_watch_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* command = app.add_subcommand(
      "watch", "Stay resident: sample the GPUs and the kernel log, keep a history, raise events (docs/watch.md)");
  CLI::Option* config = command->add_option("--config", options->config,
                                            "Settings file (default /etc/gpuenv/watch.toml; the options below win)");
  command->add_option("--interval", options->interval, "Sampling interval, e.g. 10s (the default), 500ms, 1m");
  command->add_option("--db", options->db,
                      "The history database (default /var/lib/gpuenv/watch.db); `none` keeps no history");
  command->add_option("--prometheus", options->prometheus,
                      "Write the metrics to FILE each interval, atomically (node_exporter's textfile collector)");
  command->add_option("--listen", options->listen, "Serve the metrics on a loopback address, e.g. 127.0.0.1:9835");
  command->add_flag("--cloud-metadata", options->cloud_metadata,
                    "Watch the cloud's metadata service for spot and maintenance interruptions (AWS, GCP, Azure)");
  command->add_option("--cloud", options->cloud, "The cloud (aws, gcp, azure) instead of what DMI says");
  command->add_option("--cloud-metadata-endpoint", options->metadata_endpoint,
                      "Ask IPV4:PORT instead of the cloud's own metadata address (testing)");
  command->add_option("--nvml-timeout", options->nvml_timeout,
                      "Abandon an NVML read that takes longer (default 5s); the other sources are read anyway");
  command->add_option("--count", options->count, "Stop after N intervals (testing; default: run until SIGTERM)")
      ->group("");
  command->callback([options, config, &action] {
    options->config_given = config->count() > 0;
    action = [options](Context& context) { return run_watch(context, *options); };
  });
}

}  // namespace gpuenv::cli
