// doctor with watch's history: when the database `gpuenv watch` writes is there, doctor adds the error counters'
// growth over the last 24 hours (history.error_rates), a rate where its own facts hold only counts since the driver
// loaded. Read-only, beside a running watch (WAL readers never block the writer).

#include <chrono>

#include "cli/watch_output.hpp"
#include "watch/history.hpp"

namespace gpuenv::cli {

void add_history_findings(system::System& system, const std::string& db, doctor::DoctorReport& report) {
  if (db.empty() || db == "none" || !system.exists(db)) return;
  constexpr std::int64_t k_window_ms = 24 * 3600 * 1000;
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const auto skip = [&](const std::string& why) {
    report.findings.push_back({"history.error_rates", report::Status::skip, "gpuenv watch's history not read: " + why,
                               {}, {}});
  };
  auto library = watch::sqlite::Library::load(system);
  if (!library) return skip(library.error().message);
  auto store = watch::Store::open_read_only(*library, db);
  if (!store) return skip(store.error().message);
  auto samples = (*store)->samples_since(now - k_window_ms);
  if (!samples) return skip(samples.error().message);
  report.findings.push_back(watch::history_error_rates(*samples, now));
  report.verdict = report::verdict_of(report.findings);
}

}  // namespace gpuenv::cli
