#include "smoke/internal/measure.hpp"

#include <algorithm>

namespace gpuenv::smoke {

Summary summarize(std::vector<double> samples) {
  Summary out;
  out.count = samples.size();
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  out.min = samples.front();
  out.max = samples.back();
  const std::size_t middle = samples.size() / 2;
  out.median = samples.size() % 2 == 1 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2;
  return out;
}

double gigabytes_per_second(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

double teraflops(double m, double n, double k, double seconds) {
  return seconds > 0 ? 2 * m * n * k / seconds / 1e12 : 0;
}

}  // namespace gpuenv::smoke
