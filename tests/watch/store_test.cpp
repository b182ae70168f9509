// The history database on the node's real SQLite (libsqlite3.so.0, dlopen'ed), checked from outside with the
// sqlite3 command-line shell: schema and pragmas, an interval written and read back, the move aside of foreign,
// corrupt and newer files, the migration of a schema-1 and a schema-2 database, and the hourly rollup and retention.

#include "watch/store.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;
using gpuenv::testing::fleet::TempDir;
using gpuenv::watch::GpuSample;
using gpuenv::watch::NodeSample;
using gpuenv::watch::OpenNotes;
using gpuenv::watch::RuleState;
using gpuenv::watch::Store;

namespace {

constexpr std::int64_t k_hour = 3600 * 1000;
constexpr std::int64_t k_day = 24 * k_hour;
constexpr std::int64_t k_store_start = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

std::string file_in(const TempDir& dir, const std::string& name) { return (dir.path() / name).string(); }

std::shared_ptr<const gpuenv::watch::sqlite::Library> sqlite_library(gpuenv::system::System& system) {
  auto library = gpuenv::watch::sqlite::Library::load(system);
  REQUIRE(library);
  return *library;
}

/// The sqlite3 shell's output for `sql` on `db` (the engine's own view of what gpuenv wrote).
std::string sqlite3(gpuenv::system::System& system, const std::string& db, const std::string& sql) {
  const auto result = system.run({"sqlite3", db, sql}, std::chrono::seconds(30));
  if (result.not_found) FAIL("the sqlite3 shell is not installed (scripts/bootstrap installs it)");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return std::string(gpuenv::util::trim(result.out));
}

GpuSample gpu(unsigned index, double utilization, std::uint64_t ecc_uncorrected = 0) {
  GpuSample g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  g.name = "NVIDIA H100 80GB HBM3";
  g.utilization_percent = utilization;
  g.temperature_c = 40 + index;
  g.power_w = 100;
  g.ecc_uncorrected = ecc_uncorrected;
  g.remapped_uncorrectable = 0;
  return g;
}

NodeSample stored_node(std::int64_t time_ms, std::vector<GpuSample> gpus) {
  return NodeSample{time_ms, true, "", static_cast<unsigned>(gpus.size()), std::move(gpus), {}};
}

std::unique_ptr<Store> open_store(gpuenv::system::System& system, const std::string& path, OpenNotes& notes,
                                  std::int64_t now = k_store_start) {
  auto store = Store::open(system, sqlite_library(system), path, now, notes);
  INFO((store ? std::string() : store.error().message));
  REQUIRE(store);
  return std::move(*store);
}

}  // namespace

TEST_CASE("a new database: schema 3, WAL, gpuenv's application id, as the sqlite3 shell reads it", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  OpenNotes notes;
  auto store = open_store(*system, file_in(dir, "watch.db"), notes);
  CHECK(notes.lines.size() == 1);
  CHECK_FALSE(notes.moved_aside);
  CHECK(sqlite3(*system, file_in(dir, "watch.db"), "PRAGMA user_version") == "3");
  CHECK(sqlite3(*system, file_in(dir, "watch.db"), "PRAGMA application_id") == std::to_string(0x47505545));
  CHECK(sqlite3(*system, file_in(dir, "watch.db"), "PRAGMA journal_mode") == "wal");
  CHECK(sqlite3(*system, file_in(dir, "watch.db"),
                "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY "
                "name)") == "event gpu hourly interval kernel_record sample state");
}

TEST_CASE("an interval is written in one transaction and read back", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  OpenNotes notes;
  auto store = open_store(*system, file_in(dir, "watch.db"), notes);
  GpuSample lost;
  lost.index = 2;
  lost.access_error = "GPU is lost";
  NodeSample sample = stored_node(k_store_start, {gpu(0, 97.5), gpu(1, 3), lost});
  sample.gpus[0].throttle = gpuenv::watch::k_hw_slowdown;
  sample.gpus[0].pcie_replays = 7;
  sample.gpus[1].nvlink5_errors = 4;  // NVLink5 (schema 3)
  sample.gpus[1].nvlink5_warnings = 9;
  sample.gpus[1].nvlink5_ecc_errors = 3;  // NVLink5's ECC data error total: judged as read, not stored
  gpuenv::watch::Event event;
  event.time_ms = k_store_start;
  event.finding = {"watch.gpu_lost", gpuenv::report::Status::fail, "GPU 2: GPU is lost", "reboot", "src"};
  event.action = "reboot";
  event.gpu_index = 2;
  RuleState state;
  state.most_gpus = 3;
  REQUIRE(store->record(sample, {{k_store_start, "xid", 79, "0000:12:00", "fell off"}}, {event}, state));

  CHECK(sqlite3(*system, file_in(dir, "watch.db"), "SELECT count(*) FROM sample") == "3");
  CHECK(sqlite3(*system, file_in(dir, "watch.db"), "SELECT uuid FROM gpu WHERE gpu_index = 2") == "index-2");
  auto samples = store->samples_since(k_store_start);
  REQUIRE(samples);
  REQUIRE(samples->size() == 1);
  const NodeSample& back = samples->front();
  REQUIRE(back.gpus.size() == 3);
  CHECK(back.gpus[0].utilization_percent == 97.5);
  CHECK(back.gpus[0].throttle == gpuenv::watch::k_hw_slowdown);
  CHECK(back.gpus[0].pcie_replays == 7u);
  CHECK_FALSE(back.gpus[0].nvlink5_errors);
  CHECK(back.gpus[1].nvlink5_errors == 4u);
  CHECK(back.gpus[1].nvlink5_warnings == 9u);
  CHECK_FALSE(back.gpus[1].nvlink5_ecc_errors);  // not in the schema: read back without it
  CHECK(back.gpus[2].lost());
  CHECK(back.gpus[2].uuid.empty());
  auto events = store->events_since(k_store_start - 1);
  REQUIRE(events);
  REQUIRE(events->size() == 1);
  CHECK(events->front().event.finding.id == "watch.gpu_lost");
  CHECK(events->front().event.gpu_index == 2u);
  auto restored = store->rule_state();
  REQUIRE(restored);
  CHECK(restored->most_gpus == 3u);
}

TEST_CASE("a file that is not a gpuenv database is moved aside and a new one started", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  SECTION("not SQLite at all") {
    std::ofstream(path) << "this is a text file, not a database\n";
    OpenNotes notes;
    auto store = open_store(*system, path, notes);
    CHECK(notes.moved_aside);
    CHECK_THAT(notes.lines.front(),
               Catch::Contains("is not an SQLite database: moved aside to " + path + ".not-a-database-"));
  }
  SECTION("another program's SQLite database") {
    sqlite3(*system, path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
    OpenNotes notes;
    auto store = open_store(*system, path, notes);
    CHECK(notes.moved_aside);
    CHECK_THAT(notes.lines.front(), Catch::Contains("is not a gpuenv watch database"));
  }
  SECTION("a newer gpuenv's schema") {
    sqlite3(*system, path, "PRAGMA application_id = 1196447045; PRAGMA user_version = 99; CREATE TABLE t(x);");
    OpenNotes notes;
    auto store = open_store(*system, path, notes);
    CHECK_THAT(notes.lines.front(), Catch::Contains("newer gpuenv (schema-v99)"));
  }
  SECTION("a gpuenv database with damaged pages") {
    {
      OpenNotes notes;
      auto store = open_store(*system, path, notes);
      for (int i = 0; i < 200; ++i)
        REQUIRE(store->record(stored_node(k_store_start + i * 10000, {gpu(0, 50), gpu(1, 50)}), {}, {}, {}));
    }
    sqlite3(*system, path, "PRAGMA wal_checkpoint(TRUNCATE)");
    {
      // Overwrites the middle of the file (b-tree pages), leaving the header: SQLite opens it and finds it corrupt.
      std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
      const std::string garbage(8192, '\x5a');
      file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    }
    OpenNotes notes;
    auto store = open_store(*system, path, notes, k_store_start + k_day);
    CHECK_THAT(notes.lines.front(), Catch::Contains("is corrupt: moved aside to " + path + ".corrupt-"));
  }
  // Whatever it was, the new database works and the old file is kept beside it.
  CHECK(sqlite3(*system, path, "PRAGMA integrity_check") == "ok");
  std::size_t kept = 0;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    kept += entry.path().filename().string().find("watch.db.") == 0;
  CHECK(kept >= 1);
}

// https://www.sqlite.org/rescode.html: SQLITE_BUSY "the database file could not be written (or in some cases read)
// because of concurrent activity by some other database connection"; SQLITE_IOERR and SQLITE_FULL are the operating
// system's. Only SQLITE_CORRUPT ("the database file has been corrupted") and SQLITE_NOTADB say the file is bad.
// Another connection in EXCLUSIVE locking mode keeps every other connection out of a WAL database
// (https://www.sqlite.org/wal.html, "Use of WAL Without Shared-Memory"): SQLite answers SQLITE_BUSY once the busy
// timeout (5 s) is spent, hence [system-test].
TEST_CASE("a healthy database that another connection holds is not moved aside: an Error to try again",
          "[watch][system-test]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  {
    OpenNotes notes;
    auto store = open_store(*system, path, notes);
    REQUIRE(store->record(stored_node(k_store_start, {gpu(0, 50)}), {}, {}, {}));
  }
  auto library = sqlite_library(*system);
  auto holder =
      gpuenv::watch::sqlite::Database::open(library, path, gpuenv::watch::sqlite::Database::Mode::read_write_create);
  REQUIRE(holder);
  REQUIRE((*holder)->exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT;"));
  OpenNotes notes;
  auto busy = Store::open(*system, library, path, k_store_start + k_hour, notes);
  REQUIRE_FALSE(busy);
  CHECK_THAT(busy.error().message, Catch::Contains("locked"));
  CHECK_FALSE(notes.moved_aside);
  for (const auto& entry : fs::directory_iterator(dir.path()))
    CHECK(entry.path().filename().string().find("watch.db.") != 0);  // nothing renamed aside
  // Read-only opening (`gpuenv events`, doctor) says the same and leaves the file alone.
  auto reader = Store::open_read_only(library, path);
  REQUIRE_FALSE(reader);
  CHECK_THAT(reader.error().message, Catch::Contains("locked"));
  holder->reset();
  // Once the other connection is gone the same database opens with its data.
  auto store = open_store(*system, path, notes, k_store_start + k_hour);
  CHECK_FALSE(notes.moved_aside);
  auto samples = store->samples_since(k_store_start);
  REQUIRE(samples);
  CHECK(samples->size() == 1);
}

TEST_CASE("a schema-1 database is migrated with its data", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  // tests/fixtures/watch/schema-v1.sql: the first schema as gpuenv created it, with a few rows, loaded by the shell's
  // .read (as an argument the script's leading "--" comment would be taken for an option).
  const std::string fixture = gpuenv::testing::fixture_path("watch/schema-v1.sql");
  REQUIRE(std::filesystem::file_size(fixture) > 0);
  sqlite3(*system, path, ".read " + fixture);
  REQUIRE(sqlite3(*system, path, "PRAGMA user_version") == "1");
  OpenNotes notes;
  auto store = open_store(*system, path, notes);
  CHECK_FALSE(notes.moved_aside);
  CHECK_THAT(gpuenv::util::join(notes.lines, "\n"), Catch::Contains("schema migrated from version 1 to 2"));
  CHECK_THAT(gpuenv::util::join(notes.lines, "\n"), Catch::Contains("schema migrated from version 2 to 3"));
  CHECK(sqlite3(*system, path, "PRAGMA user_version") == "3");
  CHECK(sqlite3(*system, path, "SELECT count(*) FROM sample") == "2");
  CHECK(sqlite3(*system, path, "SELECT count(*) FROM pragma_table_info('sample') WHERE name = 'pcie_replays'") == "1");
  auto samples = store->samples_since(0);
  REQUIRE(samples);
  REQUIRE(samples->size() == 1);
  CHECK(samples->front().gpus.at(0).utilization_percent == 88.0);
  CHECK_FALSE(samples->front().gpus.at(0).pcie_replays);
  REQUIRE(store->record(stored_node(k_store_start, {gpu(0, 10)}), {}, {}, {}));
}

// Schema 3 adds NVLink5's two sums (sample) and their hourly growth, as schema 2 added the PCIe replay counter: a
// schema-2 database (migrations 1 and 2 as gpuenv ran them, with a row) keeps its rows, the new columns NULL.
TEST_CASE("a schema-2 database is migrated with its data: NVLink5's columns added, unknown in old rows", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  const auto& all = gpuenv::watch::migrations();
  REQUIRE(all.size() == 3);
  REQUIRE(all[1].version == 2);
  sqlite3(*system, path,
          std::string(all[0].sql) + all[1].sql +
              "INSERT INTO gpu VALUES (1, 'GPU-0', 0, '00000000:10:00.0', 'NVIDIA B200', 1, 1);"
              "INSERT INTO interval VALUES (1767225600000, 1, '', 1);"
              "INSERT INTO sample (gpu, time_ms, gpu_index, access_error, throttle, remap_pending, remap_failure, "
              "pcie_replays) VALUES (1, 1767225600000, 0, '', 0, 0, 0, 5);"
              "PRAGMA application_id = 1196447045; PRAGMA user_version = 2;");
  OpenNotes notes;
  auto store = open_store(*system, path, notes);
  CHECK_FALSE(notes.moved_aside);
  CHECK_THAT(gpuenv::util::join(notes.lines, "\n"), Catch::Contains("schema migrated from version 2 to 3"));
  CHECK(sqlite3(*system, path, "PRAGMA user_version") == "3");
  for (const char* column : {"nvlink5_errors", "nvlink5_warnings"})
    CHECK(sqlite3(*system, path,
                  std::string("SELECT count(*) FROM pragma_table_info('sample') WHERE name = '") + column + "'") ==
          "1");
  for (const char* column : {"nvlink5_errors_growth", "nvlink5_warnings_growth"})
    CHECK(sqlite3(*system, path,
                  std::string("SELECT count(*) FROM pragma_table_info('hourly') WHERE name = '") + column + "'") ==
          "1");
  auto samples = store->samples_since(0);
  REQUIRE(samples);
  REQUIRE(samples->size() == 1);
  CHECK(samples->front().gpus.at(0).pcie_replays == 5u);
  CHECK_FALSE(samples->front().gpus.at(0).nvlink5_errors);
  GpuSample b200 = gpu(0, 10);
  b200.nvlink5_errors = 2;
  REQUIRE(store->record(stored_node(k_store_start + 10'000, {b200}), {}, {}, {}));
  CHECK(sqlite3(*system, path,
                "SELECT nvlink5_errors FROM sample WHERE time_ms = " + std::to_string(k_store_start + 10'000)) == "2");
}

TEST_CASE("the hourly rollup sums NVLink5's growth per judgement, a reset counted from zero", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  OpenNotes notes;
  auto store = open_store(*system, path, notes);
  // One hour of a B200 sampled every 10 minutes: 2 NVLink5 errors a sample, a driver reload at the fourth (the count
  // restarts at 1); successful recoveries 0, 0, 1, 1, 1, 3.
  const std::uint64_t errors[] = {10, 12, 14, 1, 3, 5};
  const std::uint64_t warnings[] = {0, 0, 1, 1, 1, 3};
  for (int i = 0; i < 6; ++i) {
    GpuSample b200 = gpu(0, 90);
    b200.nvlink5_errors = errors[i];
    b200.nvlink5_warnings = warnings[i];
    REQUIRE(store->record(stored_node(k_store_start + i * 10 * 60 * 1000, {b200}), {}, {}, {}));
  }
  REQUIRE(store->maintain(k_store_start + k_hour, 7 * k_day, 90 * k_day, 60, 0));
  auto rows = store->hourly_since(k_store_start);
  REQUIRE(rows);
  REQUIRE(rows->size() == 1);
  CHECK(rows->at(0).nvlink5_errors_growth == 2 + 2 + 1 + 2 + 2);
  CHECK(rows->at(0).nvlink5_warnings_growth == 3);
  CHECK_FALSE(rows->at(0).nvlink_errors_growth);  // the older counters, refused on Blackwell: unknown
}

TEST_CASE("retention: complete hours are rolled up, raw samples past 7 days and rollups past 90 days deleted",
          "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const std::string path = file_in(dir, "watch.db");
  OpenNotes notes;
  auto store = open_store(*system, path, notes);
  // Nine days of one sample per 10 minutes, two GPUs; GPU 0 busy half of each hour, GPU 1 gains one uncorrectable
  // ECC error per sample.
  const std::int64_t step = 10 * 60 * 1000;
  std::uint64_t ecc = 0;
  std::int64_t t = k_store_start;
  for (; t < k_store_start + 9 * k_day; t += step) {
    const bool busy = (t / step) % 6 < 3;
    REQUIRE(store->record(stored_node(t, {gpu(0, busy ? 90 : 10), gpu(1, 100, ecc++)}), {}, {}, {}));
  }
  const std::int64_t now = t;  // 9 days after the start
  auto done = store->maintain(now, 7 * k_day, 90 * k_day, 60, 0);
  REQUIRE(done);
  CHECK(done->hours_rolled_up == 7 * 24);           // only what the raw window still holds
  CHECK(done->raw_rows_deleted == 2 * 2 * 24 * 6);  // two days of two GPUs at six samples an hour
  CHECK(sqlite3(*system, path, "SELECT min(time_ms) >= " + std::to_string(now - 7 * k_day) + " FROM sample") == "1");
  CHECK(sqlite3(*system, path, "SELECT count(*) FROM hourly") == std::to_string(2 * 7 * 24));
  // One hour of GPU 0: 6 samples, 3 busy, mean utilisation 50 %; GPU 1: 6 errors within the hour (5 between its
  // samples and 1 from the last sample of the hour before).
  const std::int64_t hour = now - 3 * k_day;
  auto rows = store->hourly_since(hour / k_hour * k_hour);
  REQUIRE(rows);
  REQUIRE(rows->size() >= 2);
  CHECK(rows->at(0).samples == 6);
  CHECK(rows->at(0).busy_samples == 3);
  CHECK(rows->at(0).utilization_avg == Approx(50));
  CHECK(rows->at(1).ecc_uncorrected_growth == 6);
  // Maintenance again finds nothing to do; 90 days later the rollups go too.
  auto again = store->maintain(now, 7 * k_day, 90 * k_day, 60, 0);
  REQUIRE(again);
  CHECK(again->hours_rolled_up == 0);
  auto later = store->maintain(now + 100 * k_day, 7 * k_day, 90 * k_day, 60, 0);
  REQUIRE(later);
  CHECK(sqlite3(*system, path, "SELECT count(*) FROM hourly") == "0");
  CHECK(sqlite3(*system, path, "SELECT count(*) FROM sample") == "0");
  CHECK(sqlite3(*system, path, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("read-only opening refuses what is not a current gpuenv database", "[watch]") {
  TempDir dir;
  auto system = gpuenv::system::make_real_system();
  const auto library = sqlite_library(*system);
  CHECK_FALSE(Store::open_read_only(library, file_in(dir, "missing.db")));
  sqlite3(*system, file_in(dir, "other.db"), "CREATE TABLE t(x);");
  const auto foreign = Store::open_read_only(library, file_in(dir, "other.db"));
  REQUIRE_FALSE(foreign);
  CHECK_THAT(foreign.error().message, Catch::Contains("is not a gpuenv watch database"));
}

TEST_CASE("without libsqlite3 the store says how to install it", "[watch]") {
  gpuenv::testing::FakeSystem system;  // loads no library
  const auto library = gpuenv::watch::sqlite::Library::load(system);
  REQUIRE_FALSE(library);
  CHECK_THAT(library.error().remedy, Catch::Contains("libsqlite3-0"));
}
