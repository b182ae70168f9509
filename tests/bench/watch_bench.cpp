// The cost of `gpuenv watch` (scripts/bench, never a timed test): N simulated days of intervals run back to back on
// the real machine (the real System: `dmesg` followed, the real SQLite) with the fake libnvidia-ml standing in for the
// GPUs, the wall clock simulated so that a day takes minutes. Prints the CPU time per interval and as a share of one
// core at the simulated interval, the peak RSS, and the database's size.
//
//   watch_bench --days 1 --interval 10 --db /tmp/x/watch.db        (GPUENV_FAKE_NVML names the fixture; the fake
//                                                                   library is GPUENV_NVML_LIBRARY)

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "system/system.hpp"
#include "watch/monitor.hpp"

namespace {

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::uintmax_t size_of(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

}  // namespace

int main(int argc, char** argv) {
  double days = 1;
  double interval_s = 10;
  std::string db = "/tmp/gpuenv-watch-bench.db";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--days") days = std::atof(argv[i + 1]);
    if (flag == "--interval") interval_s = std::atof(argv[i + 1]);
    if (flag == "--db") db = argv[i + 1];
  }
  const char* library = std::getenv("GPUENV_NVML_LIBRARY");
  if (library == nullptr || std::getenv("GPUENV_FAKE_NVML") == nullptr) {
    std::fprintf(stderr, "watch_bench: set GPUENV_NVML_LIBRARY (the fake) and GPUENV_FAKE_NVML (its fixture)\n");
    return 2;
  }
  auto system = gpuenv::system::make_real_system();
  const auto step = static_cast<std::int64_t>(interval_s * 1000);
  const auto intervals = static_cast<std::int64_t>(days * 86400 / interval_s);
  std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() -
                     intervals * step;
  std::size_t messages = 0;
  gpuenv::watch::Monitor monitor(*system, *system, [&now] { return now; },
                                 [&messages](int priority, const std::string& line) {
                                   if (priority <= 4 && messages++ < 20) std::fprintf(stderr, "%s\n", line.c_str());
                                 });
  gpuenv::watch::WatchSettings settings;
  settings.db = db;
  settings.nvml_library = library;
  settings.ready_marker.clear();
  settings.interval = std::chrono::milliseconds(step);
  auto rules = gpuenv::watch::builtin_rule_settings();
  if (!rules || !monitor.start(settings, *rules)) {
    std::fprintf(stderr, "watch_bench: cannot start\n");
    return 3;
  }
  const double cpu_before = cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  double worst = 0;
  for (std::int64_t i = 0; i < intervals; ++i) {
    const double before = cpu_seconds();
    const gpuenv::watch::Snapshot snapshot = monitor.run_interval();
    worst = std::max(worst, cpu_seconds() - before);
    if (!snapshot.sample.nvml || !snapshot.history) {
      std::fprintf(stderr, "watch_bench: interval %lld: nvml %d history %d\n", static_cast<long long>(i),
                   snapshot.sample.nvml, snapshot.history);
      return 1;
    }
    now += step;
  }
  const double cpu = cpu_seconds() - cpu_before;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  monitor.stop(std::chrono::seconds(1));
  std::printf("simulated %.1f day(s): %lld intervals of %.0f s, %.1f s of wall time\n", days,
              static_cast<long long>(intervals), interval_s, wall);
  std::printf("cpu per interval: mean %.2f ms, worst %.2f ms (the hourly rollup)\n", cpu * 1000 / static_cast<double>(intervals),
              worst * 1000);
  std::printf("share of one core at a %.0f s interval: %.3f %%\n", interval_s,
              100 * cpu / (static_cast<double>(intervals) * interval_s));
  std::printf("peak RSS: %.1f MiB\n", static_cast<double>(peak_rss_kib()) / 1024);
  std::printf("database: %.1f MiB (+ WAL %.1f MiB)\n", static_cast<double>(size_of(db)) / (1 << 20),
              static_cast<double>(size_of(db + "-wal")) / (1 << 20));
  return 0;
}
