// `gpuenv watch`: the resident monitor (docs/watch.md). Settings come from /etc/gpuenv/watch.toml with the command
// line over it; SIGHUP re-reads both, SIGTERM stops after the interval in hand is stored. Messages go to stderr, which
// systemd sends to the journal (with the <N> priority prefixes it reads when JOURNAL_STREAM says it is listening).

#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "cli/version.hpp"
#include "cli/watch_output.hpp"
#include "system/signals.hpp"
#include "util/host_text.hpp"
#include "watch/daemon.hpp"
#include "watch/publisher.hpp"

namespace gpuenv::cli {
namespace {

/// The command line, kept so that a reload applies it over the re-read file again.
struct WatchOptions {
  watch::SettingsOverrides overrides;
  std::uint64_t count = 0;
};

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

util::Expected<ExitCode> run_watch(Context& context, const WatchOptions& options) {
  // Before any thread starts (NVML's, the listener's, a hook's): they inherit the blocked signals.
  const std::unique_ptr<system::Wakeups> wakeups = system::make_signal_wakeups();
  const bool journal = context.system.environment("JOURNAL_STREAM").has_value();
  const watch::LogSink log = [&context, journal](int priority, const std::string& line) {
    // A line may quote host text (a path, an Xid message): its control characters are escaped, so a newline in it
    // cannot start a journal line of its own with a priority it chose.
    util::TextRepairs repairs;
    const std::string clean = util::clean_host_text(line, util::CleanOptions{}, repairs);
    if (journal) {
      context.err << "<" << priority << ">" << clean << std::endl;
    } else {
      context.err << "gpuenv watch: " << clean << std::endl;
    }
  };
  GPUENV_TRY_ASSIGN(auto settings, watch::load_settings(context.system, options.overrides));
  GPUENV_TRY_ASSIGN(auto rules, watch::builtin_rule_settings());
  watch::Publisher publisher(
      context.system, [](const watch::Snapshot& snapshot) { return watch_prometheus(snapshot, gpuenv_version()); });
  GPUENV_TRY(publisher.configure(settings));

  watch::Monitor monitor(context.system, context.system, unix_ms_now, log);
  GPUENV_TRY(monitor.start(settings, rules));
  log(5, "watching every " + std::to_string(settings.interval.count()) + " ms");
  watch::DaemonCallbacks callbacks;
  callbacks.load_settings = [&]() -> util::Expected<watch::WatchSettings> {
    auto reloaded = watch::load_settings(context.system, options.overrides);
    if (!reloaded) return reloaded;
    GPUENV_TRY(publisher.configure(*reloaded));
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
  CLI::Option* config = command->add_option("--config", options->overrides.config,
                                            "Settings file (default /etc/gpuenv/watch.toml; the options below win)");
  command->add_option("--interval", options->overrides.interval,
                      "Sampling interval, e.g. 10s (the default), 500ms, 1m");
  command->add_option("--db", options->overrides.db,
                      "The history database (default /var/lib/gpuenv/watch.db); `none` keeps no history");
  command->add_option("--prometheus", options->overrides.prometheus,
                      "Write the metrics to FILE each interval, atomically (node_exporter's textfile collector)");
  command->add_option("--listen", options->overrides.listen,
                      "Serve the metrics on a loopback address, e.g. 127.0.0.1:9835");
  command->add_flag("--cloud-metadata", options->overrides.cloud_metadata,
                    "Watch the cloud's metadata service for spot and maintenance interruptions (AWS, GCP, Azure)");
  command->add_option("--cloud", options->overrides.cloud, "The cloud (aws, gcp, azure) instead of what DMI says");
  command->add_option("--cloud-metadata-endpoint", options->overrides.metadata_endpoint,
                      "Ask IPV4:PORT instead of the cloud's own metadata address (testing)");
  command->add_option("--nvml-timeout", options->overrides.nvml_timeout,
                      "Abandon an NVML read that takes longer (default 5s); the other sources are read anyway");
  command->add_option("--count", options->count, "Stop after N intervals (testing; default: run until SIGTERM)")
      ->group("");
  command->callback([options, config, &action] {
    options->overrides.config_given = config->count() > 0;
    action = [options](Context& context) { return run_watch(context, *options); };
  });
}

}  // namespace gpuenv::cli
