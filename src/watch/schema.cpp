// The store's schema, one migration per version (PRAGMA user_version holds the version reached). A migration is
// only ever added, never edited: a database written by an older gpuenv is brought forward step by step.

#include "watch/store.hpp"

namespace gpuenv::watch {

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = {
      {1, R"sql(
-- Every GPU seen, by its UUID ("index-N" when NVML gives none); samples refer to it by id.
CREATE TABLE gpu (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  gpu_index INTEGER NOT NULL,
  pci_bus_id TEXT NOT NULL,
  name TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
);
-- One row per interval: did NVML answer, and how many GPUs it listed.
CREATE TABLE interval (
  time_ms INTEGER PRIMARY KEY,
  nvml INTEGER NOT NULL,
  nvml_reason TEXT NOT NULL,
  attached_gpus INTEGER
);
-- Raw samples, one row per GPU per interval (kept for the raw retention window). Counters are cumulative as NVML
-- reports them; NULL: not reported.
CREATE TABLE sample (
  gpu INTEGER NOT NULL REFERENCES gpu(id),
  time_ms INTEGER NOT NULL,
  gpu_index INTEGER NOT NULL,
  access_error TEXT NOT NULL,
  utilization REAL,
  memory_used_mib REAL,
  memory_total_mib REAL,
  temperature_c REAL,
  power_w REAL,
  sm_clock_mhz REAL,
  throttle INTEGER NOT NULL,
  processes INTEGER,
  ecc_corrected INTEGER,
  ecc_uncorrected INTEGER,
  remapped_correctable INTEGER,
  remapped_uncorrectable INTEGER,
  remap_pending INTEGER NOT NULL,
  remap_failure INTEGER NOT NULL,
  nvlink_replay INTEGER,
  nvlink_recovery INTEGER,
  nvlink_crc INTEGER,
  nvlink_inactive INTEGER,
  PRIMARY KEY (gpu, time_ms)
) WITHOUT ROWID;
-- One row per GPU per complete hour (kept for the hourly retention window).
CREATE TABLE hourly (
  gpu INTEGER NOT NULL REFERENCES gpu(id),
  hour_ms INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  utilization_avg REAL,
  utilization_max REAL,
  temperature_max REAL,
  power_avg REAL,
  memory_used_max REAL,
  busy_samples INTEGER NOT NULL,
  throttled_samples INTEGER NOT NULL,
  ecc_uncorrected_growth INTEGER,
  remapped_growth INTEGER,
  nvlink_errors_growth INTEGER,
  PRIMARY KEY (gpu, hour_ms)
) WITHOUT ROWID;
-- Kernel-log records about GPU health (Xid, SXid, fallen off the bus), as watch saw them appear.
CREATE TABLE kernel_record (
  id INTEGER PRIMARY KEY,
  time_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  code INTEGER,
  pci_bus_id TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX kernel_record_time ON kernel_record(time_ms);
-- Events the rules derived (docs/rules.md "watch").
CREATE TABLE event (
  id INTEGER PRIMARY KEY,
  time_ms INTEGER NOT NULL,
  rule TEXT NOT NULL,
  status TEXT NOT NULL,
  action TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER,
  message TEXT NOT NULL,
  remedy TEXT NOT NULL,
  source TEXT NOT NULL
);
CREATE INDEX event_time ON event(time_ms);
-- What watch carries between runs: the rules' open conditions, the kernel-log cursor, notices handled, the hour
-- rolled up to.
CREATE TABLE state (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
)sql"},
      // 2: the PCIe replay counter (nvmlDeviceGetPcieReplayCounter, read by the fabric probe) and its hourly growth.
      {2, R"sql(
ALTER TABLE sample ADD COLUMN pcie_replays INTEGER;
ALTER TABLE hourly ADD COLUMN pcie_replays_growth INTEGER;
)sql"},
      // 3: NVLink5 (Blackwell), whose links refuse the replay/recovery/CRC counters above: its error counters summed
      // over the active links in the two judgements of probe/nvlink5.hpp's table (a rise of the first fails, of the
      // second warns), and their hourly growth.
      {3, R"sql(
ALTER TABLE sample ADD COLUMN nvlink5_errors INTEGER;
ALTER TABLE sample ADD COLUMN nvlink5_warnings INTEGER;
ALTER TABLE hourly ADD COLUMN nvlink5_errors_growth INTEGER;
ALTER TABLE hourly ADD COLUMN nvlink5_warnings_growth INTEGER;
)sql"},
  };
  return all;
}

}  // namespace gpuenv::watch
