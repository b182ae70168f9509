#pragma once
// Internal to smoke: pure arithmetic of the smoke tests: summaries of repeated timings, and byte/FLOP accounting.

#include <cstddef>
#include <vector>

#include "smoke/smoke.hpp"

namespace gpuenv::smoke {

/// Median (mean of the middle two for an even count), min and max.
Summary summarize(std::vector<double> samples);

/// GB/s (1e9 bytes per second) for `bytes` moved in `seconds`; 0 when seconds <= 0.
double gigabytes_per_second(double bytes, double seconds);

/// TFLOP/s of an M×N×K matrix multiply (2·M·N·K floating-point operations) in `seconds`; 0 when seconds <= 0.
double teraflops(double m, double n, double k, double seconds);

}  // namespace gpuenv::smoke
