#pragma once
// The history on disk: one SQLite database (docs/watch.md "Database"), WAL with synchronous=NORMAL so that each
// interval is one small transaction that a crash of gpuenv cannot lose once it is committed. Raw samples are kept for
// the raw retention window and rolled up per hour; rollups and events are kept for the hourly window. The schema
// has a version (PRAGMA user_version) and migrations; a file that is not a gpuenv database, or is corrupt, is moved
// aside and a new one started.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/expected.hpp"
#include "watch/event.hpp"
#include "watch/sample.hpp"
#include "watch/sqlite.hpp"

namespace gpuenv::watch {

/// "GPUE": PRAGMA application_id of a gpuenv watch database (https://www.sqlite.org/fileformat.html, offset 68).
inline constexpr std::int64_t k_application_id = 0x47505545;
/// The schema version this gpuenv writes.
inline constexpr int k_schema_version = 3;

/// What opening the store did besides opening it: messages for the journal.
struct OpenNotes {
  std::vector<std::string> lines;  ///< "moved the corrupt database aside to ...", "migrated schema 1 -> 2"
  bool moved_aside = false;
};

/// One schema step: the SQL that takes a database from `version - 1` to `version`.
struct Migration {
  int version = 0;
  std::string sql;
};
/// Every migration in order: the first creates schema 1 on an empty database.
const std::vector<Migration>& migrations();

/// What one hourly maintenance did.
struct Maintenance {
  int hours_rolled_up = 0;
  std::int64_t raw_rows_deleted = 0;
  std::int64_t hourly_rows_deleted = 0;
  std::int64_t events_deleted = 0;
};

/// An event as stored.
struct StoredEvent {
  std::int64_t id = 0;
  Event event;
};

/// One GPU's hour.
struct HourlyRow {
  std::int64_t hour_ms = 0;
  std::string gpu_uuid;
  std::int64_t samples = 0;
  std::optional<double> utilization_avg, utilization_max, temperature_max, power_avg, memory_used_max;
  std::int64_t busy_samples = 0;       ///< at or above the idle line
  std::int64_t throttled_samples = 0;  ///< with a judged throttle reason
  std::optional<std::int64_t> ecc_uncorrected_growth, remapped_growth, nvlink_errors_growth, pcie_replays_growth;
  std::optional<std::int64_t> nvlink5_errors_growth, nvlink5_warnings_growth;  ///< schema 3 (NVLink5)
};

class Store {
 public:
  /// Opens `path` for writing, creating it or migrating it to k_schema_version. A file that is not a gpuenv
  /// database, is corrupt, or has a newer schema is renamed to "<path>.<reason>-<unix seconds>" (with its -wal and
  /// -shm files) and a new database is started in its place; `notes` says so. An Error only when no database can
  /// be opened at `path` at all (its directory is missing or not writable).
  static util::Expected<std::unique_ptr<Store>> open(system::System& system,
                                                     std::shared_ptr<const sqlite::Library> library,
                                                     const std::string& path, std::int64_t now_ms, OpenNotes& notes);
  /// Opens `path` read-only (`gpuenv events`, doctor): an Error when it is missing, foreign or of a newer schema.
  static util::Expected<std::unique_ptr<Store>> open_read_only(std::shared_ptr<const sqlite::Library> library,
                                                               const std::string& path);
  ~Store();

  /// Writes one interval in one transaction: the node's reading, every GPU's, the kernel records, the events and
  /// the rules' state.
  util::Expected<util::Ok> record(const NodeSample& sample, const std::vector<KernelRecord>& records,
                                  const std::vector<Event>& events, const RuleState& state);
  /// Rolls up the complete hours not yet rolled up and deletes what is past its retention, in one transaction.
  /// `idle_below_percent` and `throttle_bits` say what the rollup counts as busy and as throttled.
  util::Expected<Maintenance> maintain(std::int64_t now_ms, std::int64_t raw_retention_ms,
                                       std::int64_t hourly_retention_ms, double idle_below_percent,
                                       unsigned throttle_bits);

  /// The node samples since `since_ms`, oldest first (the rules' window after a restart).
  util::Expected<std::vector<NodeSample>> samples_since(std::int64_t since_ms);
  /// The events since `since_ms`, oldest first.
  util::Expected<std::vector<StoredEvent>> events_since(std::int64_t since_ms);
  /// The hourly rollups since `since_ms`, by hour then GPU.
  util::Expected<std::vector<HourlyRow>> hourly_since(std::int64_t since_ms);
  /// The rules' state saved with the last interval (empty before the first).
  util::Expected<RuleState> rule_state();
  /// A value kept between runs (the kernel-log cursor, notices already handled), or "" when unset.
  util::Expected<std::string> state(const std::string& key);
  util::Expected<util::Ok> set_state(const std::string& key, const std::string& value);

  /// True when the last failure was SQLite finding the file corrupt (the caller reopens, which moves it aside).
  bool corrupt() const;
  const std::string& path() const;

  struct Statements;

 private:
  Store(std::unique_ptr<sqlite::Database> database);
  std::unique_ptr<sqlite::Database> m_db;
  std::unique_ptr<Statements> m_statements;
  std::map<std::string, std::int64_t> m_gpu_ids;  ///< UUID (or "index-N") -> gpu.id
};

}  // namespace gpuenv::watch
