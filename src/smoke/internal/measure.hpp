#pragma once
// Pure arithmetic of the smoke tests: summaries of repeated timings, and byte/FLOP accounting.

#include <cstddef>
#include <vector>

namespace gpuenv::smoke {

/// The median, minimum and maximum of a set of samples (all zero for none).
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  std::size_t count = 0;
  /// Copy timing: samples left out because the spin kernel timed out before the host released it (the copies then
  /// started while the host was still queueing them, so launch gaps were timed too).
  std::size_t discarded = 0;
  /// Every sample timed out: the statistics are of those samples, a lower bound only, and are not judged.
  bool invalid = false;
};

/// Median (mean of the middle two for an even count), min and max.
Summary summarize(std::vector<double> samples);

/// GB/s (1e9 bytes per second) for `bytes` moved in `seconds`; 0 when seconds <= 0.
double gigabytes_per_second(double bytes, double seconds);

/// TFLOP/s of an M×N×K matrix multiply (2·M·N·K floating-point operations) in `seconds`; 0 when seconds <= 0.
double teraflops(double m, double n, double k, double seconds);

}  // namespace gpuenv::smoke
