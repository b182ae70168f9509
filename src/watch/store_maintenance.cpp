// The store's hourly upkeep: complete hours rolled up per GPU, then everything past its retention deleted, in one
// transaction (so a crash leaves either both or neither). Deleted pages go to SQLite's free list and are reused by
// the next inserts: the file stays about as large as the retention windows need (docs/watch.md measures it).

#include <algorithm>
#include <initializer_list>
#include <tuple>

#include "util/strings.hpp"
#include "watch/store.hpp"

namespace gpuenv::watch {

using sqlite::Statement;

namespace {

/// Sums a cumulative counter's growth over consecutive readings; a reading below the one before is a reset (the
/// growth is then the reading itself). nullopt when fewer than two readings have the counter.
class Growth {
 public:
  void add(std::optional<std::int64_t> value) {
    if (!value) return;
    if (m_last) m_total = m_total.value_or(0) + (*value >= *m_last ? *value - *m_last : *value);
    m_last = value;
  }
  std::optional<std::int64_t> total() const { return m_total; }

 private:
  std::optional<std::int64_t> m_last;
  std::optional<std::int64_t> m_total;
};

/// Adds the counters' columns, or nullopt when none is reported.
std::optional<std::int64_t> sum(const Statement& row, std::initializer_list<int> columns) {
  std::optional<std::int64_t> total;
  for (int column : columns) {
    if (auto value = row.optional_integer(column)) total = total.value_or(0) + *value;
  }
  return total;
}

struct HourAggregate {
  std::int64_t samples = 0;
  double utilization_sum = 0;
  std::int64_t utilization_count = 0;
  std::optional<double> utilization_max, temperature_max, memory_used_max;
  double power_sum = 0;
  std::int64_t power_count = 0;
  std::int64_t busy = 0;
  std::int64_t throttled = 0;
  Growth ecc, remapped, nvlink, pcie, nvlink5_errors, nvlink5_warnings;

  void add_row(const Statement& row, double idle_below_percent, unsigned throttle_bits) {
    ++samples;
    const auto max_of = [](std::optional<double>& into, std::optional<double> value) {
      if (value) into = std::max(into.value_or(*value), *value);
    };
    if (auto utilization = row.optional_real(1)) {
      utilization_sum += *utilization;
      ++utilization_count;
      if (*utilization >= idle_below_percent) ++busy;
    }
    max_of(utilization_max, row.optional_real(1));
    max_of(temperature_max, row.optional_real(2));
    if (auto power = row.optional_real(3)) {
      power_sum += *power;
      ++power_count;
    }
    max_of(memory_used_max, row.optional_real(4));
    if ((static_cast<unsigned>(row.integer(5)) & throttle_bits) != 0) ++throttled;
    add_counters(row);
  }
  void add_counters(const Statement& row) {
    ecc.add(row.optional_integer(6));
    remapped.add(sum(row, {7, 8}));
    nvlink.add(sum(row, {9, 10, 11}));
    pcie.add(row.optional_integer(12));
    nvlink5_errors.add(row.optional_integer(13));
    nvlink5_warnings.add(row.optional_integer(14));
  }
};

constexpr const char* k_columns =
    "time_ms, utilization, temperature_c, power_w, memory_used_mib, throttle, ecc_uncorrected, remapped_correctable, "
    "remapped_uncorrectable, nvlink_replay, nvlink_recovery, nvlink_crc, pcie_replays, nvlink5_errors, "
    "nvlink5_warnings";

}  // namespace

util::Expected<Maintenance> Store::maintain(std::int64_t now_ms, std::int64_t raw_retention_ms,
                                            std::int64_t hourly_retention_ms, double idle_below_percent,
                                            unsigned throttle_bits) {
  Maintenance done;
  sqlite::Transaction transaction(*m_db);
  GPUENV_TRY(transaction.begun());
  const std::int64_t complete_until = now_ms / k_hour_ms * k_hour_ms;
  GPUENV_TRY_ASSIGN(auto rolled_text, state("rolled_up_until_ms"));
  std::int64_t rolled = util::parse_int(rolled_text).value_or(0);
  if (rolled == 0) {
    GPUENV_TRY_ASSIGN(auto first, m_db->query_integer("SELECT coalesce(min(time_ms), 0) FROM interval"));
    rolled = first == 0 ? complete_until : first / k_hour_ms * k_hour_ms;
  }
  // Hours older than the raw window have no samples left to roll up (a clock that jumped, a long shutdown).
  rolled = std::max(rolled, (now_ms - raw_retention_ms) / k_hour_ms * k_hour_ms);

  GPUENV_TRY_ASSIGN(auto gpus, m_db->prepare("SELECT id FROM gpu ORDER BY id"));
  std::vector<std::int64_t> gpu_ids;
  for (;;) {
    GPUENV_TRY_ASSIGN(auto row, gpus.step());
    if (!row) break;
    gpu_ids.push_back(gpus.integer(0));
  }
  auto hour_rows = m_db->prepare(std::string("SELECT ") + k_columns +
                                 " FROM sample WHERE gpu = ?1 AND time_ms >= ?2 AND time_ms < ?3 ORDER BY time_ms");
  auto previous_row = m_db->prepare(std::string("SELECT ") + k_columns +
                                    " FROM sample WHERE gpu = ?1 AND time_ms < ?2 ORDER BY time_ms DESC LIMIT 1");
  auto insert = m_db->prepare(
      "INSERT OR REPLACE INTO hourly (gpu, hour_ms, samples, utilization_avg, utilization_max, temperature_max, "
      "power_avg, memory_used_max, busy_samples, throttled_samples, ecc_uncorrected_growth, remapped_growth, "
      "nvlink_errors_growth, pcie_replays_growth, nvlink5_errors_growth, nvlink5_warnings_growth) VALUES (?1, ?2, ?3, "
      "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  GPUENV_TRY(hour_rows);
  GPUENV_TRY(previous_row);
  GPUENV_TRY(insert);
  for (std::int64_t hour = rolled; hour < complete_until; hour += k_hour_ms) {
    for (const std::int64_t gpu : gpu_ids) {
      HourAggregate aggregate;
      previous_row->bind(1, gpu);
      previous_row->bind(2, hour);
      GPUENV_TRY_ASSIGN(auto before, previous_row->step());
      if (before) aggregate.add_counters(*previous_row);  // the reading the hour's growth starts from
      previous_row->reset();
      hour_rows->bind(1, gpu);
      hour_rows->bind(2, hour);
      hour_rows->bind(3, hour + k_hour_ms);
      for (;;) {
        GPUENV_TRY_ASSIGN(auto row, hour_rows->step());
        if (!row) break;
        aggregate.add_row(*hour_rows, idle_below_percent, throttle_bits);
      }
      hour_rows->reset();
      if (aggregate.samples == 0) continue;
      Statement& out = *insert;
      out.bind(1, gpu);
      out.bind(2, hour);
      out.bind(3, aggregate.samples);
      out.bind(
          4, aggregate.utilization_count == 0
                 ? std::nullopt
                 : std::optional<double>(aggregate.utilization_sum / static_cast<double>(aggregate.utilization_count)));
      out.bind(5, aggregate.utilization_max);
      out.bind(6, aggregate.temperature_max);
      out.bind(7, aggregate.power_count == 0
                      ? std::nullopt
                      : std::optional<double>(aggregate.power_sum / static_cast<double>(aggregate.power_count)));
      out.bind(8, aggregate.memory_used_max);
      out.bind(9, aggregate.busy);
      out.bind(10, aggregate.throttled);
      out.bind(11, aggregate.ecc.total());
      out.bind(12, aggregate.remapped.total());
      out.bind(13, aggregate.nvlink.total());
      out.bind(14, aggregate.pcie.total());
      out.bind(15, aggregate.nvlink5_errors.total());
      out.bind(16, aggregate.nvlink5_warnings.total());
      GPUENV_TRY(out.run());
    }
    ++done.hours_rolled_up;
  }
  GPUENV_TRY(set_state("rolled_up_until_ms", std::to_string(std::max(rolled, complete_until))));

  // Deletes by primary key range per GPU (sample's key is (gpu, time_ms): no scan of the whole table).
  const std::int64_t raw_before = now_ms - raw_retention_ms;
  const std::int64_t hourly_before = now_ms - hourly_retention_ms;
  const auto remove = [this](const std::string& sql, std::initializer_list<std::int64_t> values,
                             std::int64_t& counted) -> util::Expected<util::Ok> {
    GPUENV_TRY_ASSIGN(auto statement, m_db->prepare(sql));
    int index = 1;
    for (const std::int64_t value : values) statement.bind(index++, value);
    GPUENV_TRY(statement.run());
    GPUENV_TRY_ASSIGN(auto changes, m_db->query_integer("SELECT changes()"));
    counted += changes;
    return util::Ok{};
  };
  for (const std::int64_t gpu : gpu_ids) {
    GPUENV_TRY(remove("DELETE FROM sample WHERE gpu = ?1 AND time_ms < ?2", {gpu, raw_before}, done.raw_rows_deleted));
  }
  std::int64_t ignored = 0;
  for (const auto& [sql, before, counter] : std::initializer_list<std::tuple<const char*, std::int64_t, std::int64_t*>>{
           {"DELETE FROM interval WHERE time_ms < ?1", raw_before, &ignored},
           {"DELETE FROM hourly WHERE hour_ms < ?1", hourly_before, &done.hourly_rows_deleted},
           {"DELETE FROM event WHERE time_ms < ?1", hourly_before, &done.events_deleted},
           {"DELETE FROM kernel_record WHERE time_ms < ?1", hourly_before, &ignored},
       }) {
    GPUENV_TRY(remove(sql, {before}, *counter));
  }
  GPUENV_TRY(transaction.commit());
  return done;
}

}  // namespace gpuenv::watch
