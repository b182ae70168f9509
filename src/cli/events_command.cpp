// `gpuenv events [--since 6h] [--json] [--db PATH]`: the events `gpuenv watch` derived, from its database (read-only:
// it runs beside the service without disturbing it).

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/watch_output.hpp"
#include "probe/kernel_log_window.hpp"
#include "util/host_text.hpp"
#include "watch/settings.hpp"

namespace gpuenv::cli {
namespace {

struct EventsOptions {
  std::string since = "24h";
  bool json = false;
  std::string db = watch::k_default_db;
};

std::string time_text(std::int64_t ms) { return probe::iso_utc(ms / 1000); }

std::string gpu_text(const watch::Event& event) {
  if (!event.gpu_index) return "node";
  return "GPU " + std::to_string(*event.gpu_index);
}

util::Expected<ExitCode> run_events(Context& context, const EventsOptions& options) {
  const auto since = watch::parse_duration(options.since);
  if (!since) {
    return util::Error::usage("--since " + options.since + ": not a duration",
                              "e.g. --since 6h, --since 30m, --since 7d");
  }
  if (!context.system.exists(options.db)) {
    return util::Error::input(options.db + ": no such database",
                              "is `gpuenv watch` running (systemctl status gpuenv-watch)? "
                              "Name its database with --db");
  }
  GPUENV_TRY_ASSIGN(auto library, watch::sqlite::Library::load(context.system));
  GPUENV_TRY_ASSIGN(auto store, watch::Store::open_read_only(library, options.db));
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  GPUENV_TRY_ASSIGN(auto events, store->events_since(now - since->count()));
  context.out << (options.json ? events_json(events) : events_text(events));
  return ExitCode::ok;
}

}  // namespace

std::string events_text(const std::vector<watch::StoredEvent>& events) {
  if (events.empty()) return "no events\n";
  std::string out;
  util::TextRepairs repairs;
  const util::CleanOptions clean{true, 2048};
  for (const watch::StoredEvent& stored : events) {
    const watch::Event& event = stored.event;
    out += time_text(event.time_ms) + "  " + std::string(report::to_string(event.finding.status)) + "  " +
           event.finding.id + "  " + gpu_text(event) + "  " +
           util::clean_host_text(event.finding.message, clean, repairs) + "\n";
    if (!event.finding.remedy.empty())
      out += "    fix: " + util::clean_host_text(event.finding.remedy, clean, repairs) + "\n";
  }
  return out;
}

std::string events_json(const std::vector<watch::StoredEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  for (const watch::StoredEvent& stored : events) {
    const watch::Event& event = stored.event;
    out.push_back({{"id", event.finding.id},
                   {"time", time_text(event.time_ms)},
                   {"time_ms", event.time_ms},
                   {"status", std::string(report::to_string(event.finding.status))},
                   {"action", event.action},
                   {"gpu", event.gpu_index ? nlohmann::json(*event.gpu_index) : nlohmann::json(nullptr)},
                   {"uuid", event.gpu_uuid},
                   {"message", event.finding.message},
                   {"remedy", event.finding.remedy},
                   {"source", event.finding.source}});
  }
  // Host text (an Xid line) that is not UTF-8 is replaced, never allowed to break the document.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void add_events_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<EventsOptions>();
  CLI::App* command =
      app.add_subcommand("events", "List the events `gpuenv watch` derived from its history (docs/watch.md)");
  command->add_option("--since", options->since, "How far back, e.g. 6h, 30m, 7d (default 24h)");
  command->add_flag("--json", options->json, "Print the events as a JSON array");
  command->add_option("--db", options->db, "The history database (default /var/lib/gpuenv/watch.db)");
  command->callback([&action, options] { action = [options](Context& c) { return run_events(c, *options); }; });
}

}  // namespace gpuenv::cli
