#include "watch/store.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::watch {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

namespace {

/// The reason to move a database aside that SQLite's last failure on `db` gives: SQLITE_CORRUPT or SQLITE_NOTADB
/// (https://www.sqlite.org/rescode.html); otherwise (SQLITE_BUSY, SQLITE_IOERR, SQLITE_FULL, ...) the failure says
/// nothing about the file and `failure` is handed on.
util::Expected<std::optional<std::string>> judged_failure(const Database& db, const util::Error& failure) {
  if (db.last_code() == sqlite::Code::not_a_database) return std::optional<std::string>("not-a-database");
  if (db.last_code() == sqlite::Code::corrupt) return std::optional<std::string>("corrupt");
  return failure;
}

/// Why a database cannot be used as it is (a reason to move it aside), or nullopt; an Error when SQLite could not
/// tell because of something other than the file (busy, an I/O error, a full disk): a healthy database that another
/// process holds, or that a full disk keeps from being read, is never moved aside.
util::Expected<std::optional<std::string>> unusable(Database& db) {
  auto application_id = db.query_integer("PRAGMA application_id");
  if (!application_id) return judged_failure(db, application_id.error());
  auto version = db.query_integer("PRAGMA user_version");
  if (!version) return judged_failure(db, version.error());
  auto tables = db.query_integer("SELECT count(*) FROM sqlite_master");
  if (!tables) return judged_failure(db, tables.error());
  if (*application_id == 0 && *tables == 0) return std::optional<std::string>();  // a new, empty database
  if (*application_id != k_application_id) return std::optional<std::string>("foreign");
  if (*version > k_schema_version) return std::optional<std::string>("schema-v" + std::to_string(*version));
  // quick_check reads every page (O(N)), skipping only the index-to-table cross checks of integrity_check; the
  // problems it finds are rows of text, a failure to run it is SQLite's code.
  auto check = db.query_text("PRAGMA quick_check");
  if (!check) return judged_failure(db, check.error());
  if (*check != "ok") return std::optional<std::string>("corrupt");
  return std::optional<std::string>();
}

std::string reason_text(const std::string& reason) {
  if (reason == "foreign") return "is not a gpuenv watch database";
  if (reason == "not-a-database") return "is not an SQLite database";
  if (reason == "corrupt") return "is corrupt";
  return "was written by a newer gpuenv (" + reason + ")";
}

/// Renames the database and its -wal and -shm files to "<path>.<reason>-<seconds>" (so SQLite can still read it).
util::Expected<std::string> move_aside(system::System& system, const std::string& path, const std::string& reason,
                                       std::int64_t now_ms) {
  const std::string aside = path + "." + reason + "-" + std::to_string(now_ms / 1000);
  GPUENV_TRY(system.rename_file(path, aside));
  for (const char* suffix : {"-wal", "-shm"}) {
    if (system.exists(path + suffix)) (void)system.rename_file(path + suffix, aside + suffix);
  }
  return aside;
}

util::Expected<util::Ok> migrate(Database& db, OpenNotes& notes) {
  GPUENV_TRY_ASSIGN(auto version, db.query_integer("PRAGMA user_version"));
  for (const Migration& migration : migrations()) {
    if (migration.version <= version) continue;
    Transaction transaction(db);
    GPUENV_TRY(transaction.begun());
    GPUENV_TRY(db.exec(migration.sql));
    GPUENV_TRY(db.exec("PRAGMA user_version = " + std::to_string(migration.version)));
    GPUENV_TRY(db.exec("PRAGMA application_id = " + std::to_string(k_application_id)));
    GPUENV_TRY(transaction.commit());
    if (version > 0) {
      notes.lines.push_back(db.path() + ": schema migrated from version " + std::to_string(migration.version - 1) +
                            " to " + std::to_string(migration.version));
    }
  }
  if (version == 0)
    notes.lines.push_back(db.path() + ": new database, schema version " + std::to_string(k_schema_version));
  return util::Ok{};
}

report::Status status_from(const std::string& text) {
  if (text == "fail") return report::Status::fail;
  if (text == "warn") return report::Status::warn;
  if (text == "skip") return report::Status::skip;
  return report::Status::pass;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ statements

struct Store::Statements {
  Statement insert_interval;
  Statement insert_gpu;
  Statement select_gpu;
  Statement update_gpu;
  Statement insert_sample;
  Statement insert_record;
  Statement insert_event;
  Statement set_state;
};

namespace {

util::Expected<std::unique_ptr<Store::Statements>> prepare_statements(Database& db) {
  const char* const sql[] = {
      "INSERT OR REPLACE INTO interval (time_ms, nvml, nvml_reason, attached_gpus) VALUES (?1, ?2, ?3, ?4)",
      "INSERT OR IGNORE INTO gpu (uuid, gpu_index, pci_bus_id, name, first_seen_ms, last_seen_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
      "SELECT id FROM gpu WHERE uuid = ?1",
      "UPDATE gpu SET gpu_index = ?2, pci_bus_id = ?3, name = ?4, last_seen_ms = ?5 WHERE id = ?1",
      "INSERT OR REPLACE INTO sample (gpu, time_ms, gpu_index, access_error, utilization, memory_used_mib, "
      "memory_total_mib, temperature_c, power_w, sm_clock_mhz, throttle, processes, ecc_corrected, ecc_uncorrected, "
      "remapped_correctable, remapped_uncorrectable, remap_pending, remap_failure, nvlink_replay, nvlink_recovery, "
      "nvlink_crc, nvlink_inactive, pcie_replays, nvlink5_errors, nvlink5_warnings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
      "INSERT INTO kernel_record (time_ms, kind, code, pci_bus_id, message) VALUES (?1, ?2, ?3, ?4, ?5)",
      "INSERT INTO event (time_ms, rule, status, action, gpu_uuid, gpu_index, message, remedy, source) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
      "INSERT OR REPLACE INTO state (key, value) VALUES (?1, ?2)",
  };
  std::vector<Statement> prepared;
  for (const char* text : sql) {
    GPUENV_TRY_ASSIGN(auto statement, db.prepare(text));
    prepared.push_back(std::move(statement));
  }
  return std::unique_ptr<Store::Statements>(new Store::Statements{
      std::move(prepared[0]), std::move(prepared[1]), std::move(prepared[2]), std::move(prepared[3]),
      std::move(prepared[4]), std::move(prepared[5]), std::move(prepared[6]), std::move(prepared[7])});
}

}  // namespace

// ------------------------------------------------------------------------------------------------ open

Store::Store(std::unique_ptr<Database> database) : m_db(std::move(database)) {}
Store::~Store() {
  m_statements.reset();  // finalized before the connection closes
}

util::Expected<std::unique_ptr<Store>> Store::open(system::System& system,
                                                   std::shared_ptr<const sqlite::Library> library,
                                                   const std::string& path, std::int64_t now_ms, OpenNotes& notes) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    GPUENV_TRY_ASSIGN(auto db, Database::open(library, path, Database::Mode::read_write_create));
    const auto judged = unusable(*db);
    if (!judged) return util::Error::input(judged.error().message, "gpuenv watch tries again each minute");
    if (const std::optional<std::string>& reason = *judged) {
      db.reset();
      auto aside = move_aside(system, path, *reason, now_ms);
      if (!aside)
        return util::Error::input(path + " " + reason_text(*reason) +
                                  " and cannot be moved aside: " + aside.error().message);
      notes.lines.push_back(path + " " + reason_text(*reason) + ": moved aside to " + *aside +
                            "; a new database is started");
      notes.moved_aside = true;
      continue;
    }
    // WAL: readers (`gpuenv events`) never block the writer; NORMAL: a commit is not fsync'ed, the WAL is at each
    // checkpoint, so a crash of gpuenv loses nothing committed and a power loss at most the last commits
    // (https://www.sqlite.org/pragma.html#pragma_synchronous, https://www.sqlite.org/wal.html).
    GPUENV_TRY_ASSIGN(auto mode, db->query_text("PRAGMA journal_mode = WAL"));
    if (mode != "wal") notes.lines.push_back(path + ": WAL is not available here (journal mode " + mode + ")");
    for (const char* pragma : {"PRAGMA synchronous = NORMAL", "PRAGMA journal_size_limit = 8388608"}) {
      GPUENV_TRY(db->exec(pragma));
    }
    GPUENV_TRY(migrate(*db, notes));
    std::unique_ptr<Store> store(new Store(std::move(db)));
    GPUENV_TRY_ASSIGN(auto statements, prepare_statements(*store->m_db));
    store->m_statements = std::move(statements);
    return store;
  }
  return util::Error::input(path + ": the new database could not be used either");
}

util::Expected<std::unique_ptr<Store>> Store::open_read_only(std::shared_ptr<const sqlite::Library> library,
                                                             const std::string& path) {
  GPUENV_TRY_ASSIGN(auto db, Database::open(std::move(library), path, Database::Mode::read_only));
  GPUENV_TRY_ASSIGN(const auto judged, unusable(*db));
  if (const std::optional<std::string>& reason = judged)
    return util::Error::input(path + " " + reason_text(*reason), "point --db at the database `gpuenv watch` writes");
  auto version = db->query_integer("PRAGMA user_version");
  if (!version || *version < k_schema_version) {
    return util::Error::input(path + " has schema version " + std::to_string(version ? *version : 0) +
                                  " (this gpuenv reads " + std::to_string(k_schema_version) + ")",
                              "run `gpuenv watch` once to migrate it");
  }
  return std::unique_ptr<Store>(new Store(std::move(db)));
}

bool Store::corrupt() const {
  return m_db->last_code() == sqlite::Code::corrupt || m_db->last_code() == sqlite::Code::not_a_database;
}

const std::string& Store::path() const { return m_db->path(); }

// ------------------------------------------------------------------------------------------------ record

util::Expected<util::Ok> Store::record(const NodeSample& sample, const std::vector<KernelRecord>& records,
                                       const std::vector<Event>& events, const RuleState& state) {
  Transaction transaction(*m_db);
  GPUENV_TRY(transaction.begun());
  Statements& s = *m_statements;
  s.insert_interval.bind(1, sample.time_ms);
  s.insert_interval.bind(2, std::int64_t{sample.nvml ? 1 : 0});
  s.insert_interval.bind(3, sample.nvml_reason);
  s.insert_interval.bind(4, sample.attached_gpus);
  GPUENV_TRY(s.insert_interval.run());
  for (const GpuSample& gpu : sample.gpus) {
    const std::string key = gpu_key(gpu);
    auto known = m_gpu_ids.find(key);
    if (known == m_gpu_ids.end()) {
      s.insert_gpu.bind(1, key);
      s.insert_gpu.bind(2, std::int64_t{gpu.index});
      s.insert_gpu.bind(3, gpu.pci_bus_id);
      s.insert_gpu.bind(4, gpu.name);
      s.insert_gpu.bind(5, sample.time_ms);
      GPUENV_TRY(s.insert_gpu.run());
      s.select_gpu.bind(1, key);
      GPUENV_TRY_ASSIGN(auto row, s.select_gpu.step());
      const std::int64_t id = row ? s.select_gpu.integer(0) : 0;
      s.select_gpu.reset();
      known = m_gpu_ids.emplace(key, id).first;
    }
    const std::int64_t id = known->second;
    s.update_gpu.bind(1, id);
    s.update_gpu.bind(2, std::int64_t{gpu.index});
    s.update_gpu.bind(3, gpu.pci_bus_id);
    s.update_gpu.bind(4, gpu.name);
    s.update_gpu.bind(5, sample.time_ms);
    GPUENV_TRY(s.update_gpu.run());
    Statement& row = s.insert_sample;
    row.bind(1, id);
    row.bind(2, sample.time_ms);
    row.bind(3, std::int64_t{gpu.index});
    row.bind(4, gpu.access_error);
    row.bind(5, gpu.utilization_percent);
    row.bind(6, gpu.memory_used_mib);
    row.bind(7, gpu.memory_total_mib);
    row.bind(8, gpu.temperature_c);
    row.bind(9, gpu.power_w);
    row.bind(10, gpu.sm_clock_mhz);
    row.bind(11, std::int64_t{gpu.throttle});
    row.bind(12, gpu.processes);
    row.bind(13, gpu.ecc_corrected);
    row.bind(14, gpu.ecc_uncorrected);
    row.bind(15, gpu.remapped_correctable);
    row.bind(16, gpu.remapped_uncorrectable);
    row.bind(17, std::int64_t{gpu.remap_pending ? 1 : 0});
    row.bind(18, std::int64_t{gpu.remap_failure ? 1 : 0});
    row.bind(19, gpu.nvlink_replay);
    row.bind(20, gpu.nvlink_recovery);
    row.bind(21, gpu.nvlink_crc);
    row.bind(22, gpu.nvlink_inactive);
    row.bind(23, gpu.pcie_replays);
    row.bind(24, gpu.nvlink5_errors);
    row.bind(25, gpu.nvlink5_warnings);
    GPUENV_TRY(row.run());
  }
  for (const KernelRecord& record : records) {
    s.insert_record.bind(1, record.time_ms);
    s.insert_record.bind(2, record.kind);
    s.insert_record.bind(3, record.code);
    s.insert_record.bind(4, record.pci_bus_id);
    s.insert_record.bind(5, record.message);
    GPUENV_TRY(s.insert_record.run());
  }
  for (const Event& event : events) {
    s.insert_event.bind(1, event.time_ms);
    s.insert_event.bind(2, event.finding.id);
    s.insert_event.bind(3, report::to_string(event.finding.status));
    s.insert_event.bind(4, event.action);
    s.insert_event.bind(5, event.gpu_uuid);
    s.insert_event.bind(6, event.gpu_index);
    s.insert_event.bind(7, event.finding.message);
    s.insert_event.bind(8, event.finding.remedy);
    s.insert_event.bind(9, event.finding.source);
    GPUENV_TRY(s.insert_event.run());
  }
  s.set_state.bind(1, std::string_view("rules"));
  s.set_state.bind(2, state.to_json());
  GPUENV_TRY(s.set_state.run());
  return transaction.commit();
}

util::Expected<std::string> Store::state(const std::string& key) {
  GPUENV_TRY_ASSIGN(auto statement, m_db->prepare("SELECT value FROM state WHERE key = ?1"));
  statement.bind(1, key);
  GPUENV_TRY_ASSIGN(auto row, statement.step());
  return row ? statement.text(0) : std::string();
}

util::Expected<util::Ok> Store::set_state(const std::string& key, const std::string& value) {
  Statement& set = m_statements->set_state;
  set.bind(1, key);
  set.bind(2, value);
  return set.run();
}

util::Expected<RuleState> Store::rule_state() {
  GPUENV_TRY_ASSIGN(auto text, state("rules"));
  return RuleState::from_json(text);
}

// ------------------------------------------------------------------------------------------------ queries

util::Expected<std::vector<NodeSample>> Store::samples_since(std::int64_t since_ms) {
  std::vector<NodeSample> out;
  GPUENV_TRY_ASSIGN(
      auto intervals,
      m_db->prepare(
          "SELECT time_ms, nvml, nvml_reason, attached_gpus FROM interval WHERE time_ms >= ?1 ORDER BY time_ms"));
  intervals.bind(1, since_ms);
  for (;;) {
    GPUENV_TRY_ASSIGN(auto row, intervals.step());
    if (!row) break;
    NodeSample sample;
    sample.time_ms = intervals.integer(0);
    sample.nvml = intervals.integer(1) != 0;
    sample.nvml_reason = intervals.text(2);
    if (auto count = intervals.optional_integer(3)) sample.attached_gpus = static_cast<unsigned>(*count);
    out.push_back(std::move(sample));
  }
  GPUENV_TRY_ASSIGN(
      auto samples,
      m_db->prepare(
          "SELECT s.time_ms, g.uuid, g.pci_bus_id, g.name, s.gpu_index, s.access_error, s.utilization, "
          "s.memory_used_mib, s.memory_total_mib, s.temperature_c, s.power_w, s.sm_clock_mhz, s.throttle, s.processes, "
          "s.ecc_corrected, s.ecc_uncorrected, s.remapped_correctable, s.remapped_uncorrectable, s.remap_pending, "
          "s.remap_failure, s.nvlink_replay, s.nvlink_recovery, s.nvlink_crc, s.nvlink_inactive, s.pcie_replays, "
          "s.nvlink5_errors, s.nvlink5_warnings "
          "FROM gpu g JOIN sample s ON s.gpu = g.id AND s.time_ms >= ?1 ORDER BY s.time_ms, s.gpu_index"));
  samples.bind(1, since_ms);
  std::size_t at = 0;
  const auto counter = [&](int column) -> std::optional<std::uint64_t> {
    auto value = samples.optional_integer(column);
    if (!value) return std::nullopt;
    return static_cast<std::uint64_t>(*value);
  };
  for (;;) {
    GPUENV_TRY_ASSIGN(auto row, samples.step());
    if (!row) break;
    const std::int64_t time = samples.integer(0);
    while (at < out.size() && out[at].time_ms < time) ++at;
    if (at == out.size() || out[at].time_ms != time) continue;  // a sample without its interval row
    GpuSample gpu;
    const std::string key = samples.text(1);
    gpu.uuid = util::starts_with(key, "index-") ? std::string() : key;
    gpu.pci_bus_id = samples.text(2);
    gpu.name = samples.text(3);
    gpu.index = static_cast<unsigned>(samples.integer(4));
    gpu.access_error = samples.text(5);
    gpu.utilization_percent = samples.optional_real(6);
    gpu.memory_used_mib = samples.optional_real(7);
    gpu.memory_total_mib = samples.optional_real(8);
    gpu.temperature_c = samples.optional_real(9);
    gpu.power_w = samples.optional_real(10);
    gpu.sm_clock_mhz = samples.optional_real(11);
    gpu.throttle = static_cast<unsigned>(samples.integer(12));
    if (auto processes = samples.optional_integer(13)) gpu.processes = static_cast<unsigned>(*processes);
    gpu.ecc_corrected = counter(14);
    gpu.ecc_uncorrected = counter(15);
    gpu.remapped_correctable = counter(16);
    gpu.remapped_uncorrectable = counter(17);
    gpu.remap_pending = samples.integer(18) != 0;
    gpu.remap_failure = samples.integer(19) != 0;
    gpu.nvlink_replay = counter(20);
    gpu.nvlink_recovery = counter(21);
    gpu.nvlink_crc = counter(22);
    if (auto inactive = samples.optional_integer(23)) gpu.nvlink_inactive = static_cast<unsigned>(*inactive);
    gpu.pcie_replays = counter(24);
    gpu.nvlink5_errors = counter(25);
    gpu.nvlink5_warnings = counter(26);
    out[at].gpus.push_back(std::move(gpu));
  }
  return out;
}

util::Expected<std::vector<StoredEvent>> Store::events_since(std::int64_t since_ms) {
  GPUENV_TRY_ASSIGN(
      auto query,
      m_db->prepare("SELECT id, time_ms, rule, status, action, gpu_uuid, gpu_index, message, remedy, source FROM event "
                    "WHERE time_ms >= ?1 ORDER BY time_ms, id"));
  query.bind(1, since_ms);
  std::vector<StoredEvent> out;
  for (;;) {
    GPUENV_TRY_ASSIGN(auto row, query.step());
    if (!row) break;
    StoredEvent stored;
    stored.id = query.integer(0);
    Event& event = stored.event;
    event.time_ms = query.integer(1);
    event.finding =
        report::Finding{query.text(2), status_from(query.text(3)), query.text(7), query.text(8), query.text(9)};
    event.action = query.text(4);
    event.gpu_uuid = query.text(5);
    if (auto index = query.optional_integer(6)) event.gpu_index = static_cast<unsigned>(*index);
    out.push_back(std::move(stored));
  }
  return out;
}

util::Expected<std::vector<HourlyRow>> Store::hourly_since(std::int64_t since_ms) {
  GPUENV_TRY_ASSIGN(
      auto query,
      m_db->prepare(
          "SELECT h.hour_ms, g.uuid, h.samples, h.utilization_avg, h.utilization_max, h.temperature_max, h.power_avg, "
          "h.memory_used_max, h.busy_samples, h.throttled_samples, h.ecc_uncorrected_growth, h.remapped_growth, "
          "h.nvlink_errors_growth, h.pcie_replays_growth, h.nvlink5_errors_growth, h.nvlink5_warnings_growth "
          "FROM hourly h JOIN gpu g ON g.id = h.gpu "
          "WHERE h.hour_ms >= ?1 ORDER BY h.hour_ms, g.gpu_index"));
  query.bind(1, since_ms);
  std::vector<HourlyRow> out;
  for (;;) {
    GPUENV_TRY_ASSIGN(auto row, query.step());
    if (!row) break;
    HourlyRow hour;
    hour.hour_ms = query.integer(0);
    hour.gpu_uuid = query.text(1);
    hour.samples = query.integer(2);
    hour.utilization_avg = query.optional_real(3);
    hour.utilization_max = query.optional_real(4);
    hour.temperature_max = query.optional_real(5);
    hour.power_avg = query.optional_real(6);
    hour.memory_used_max = query.optional_real(7);
    hour.busy_samples = query.integer(8);
    hour.throttled_samples = query.integer(9);
    hour.ecc_uncorrected_growth = query.optional_integer(10);
    hour.remapped_growth = query.optional_integer(11);
    hour.nvlink_errors_growth = query.optional_integer(12);
    hour.pcie_replays_growth = query.optional_integer(13);
    hour.nvlink5_errors_growth = query.optional_integer(14);
    hour.nvlink5_warnings_growth = query.optional_integer(15);
    out.push_back(std::move(hour));
  }
  return out;
}

}  // namespace gpuenv::watch
