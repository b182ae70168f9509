#include "watch/link_counts.hpp"

#include <algorithm>

#include "probe/nvlink5.hpp"
#include "watch/rules.hpp"

namespace gpuenv::watch {

std::optional<std::uint64_t> growth(const std::optional<std::uint64_t>& before,
                                    const std::optional<std::uint64_t>& after) {
  if (!before || !after) return std::nullopt;
  return *after >= *before ? *after - *before : *after;
}

std::uint64_t link_growth(const std::vector<probe::NvLinkCounters>& before,
                          const std::vector<probe::NvLinkCounters>& now, LinkCounter field, LinkCounter also) {
  std::uint64_t total = 0;
  for (const probe::NvLinkCounters& link : now) {
    const auto earlier =
        std::find_if(before.begin(), before.end(), [&](const probe::NvLinkCounters& b) { return b.link == link.link; });
    if (earlier == before.end()) continue;
    total += growth((*earlier).*field, link.*field).value_or(0);
    if (also != nullptr) total += growth((*earlier).*also, link.*also).value_or(0);
  }
  return total;
}

std::uint64_t nvlink5_link_growth(const std::vector<probe::NvLinkCounters>& before,
                                  const std::vector<probe::NvLinkCounters>& now, bool warns) {
  std::uint64_t total = 0;
  for (const probe::NvLinkCounters& link : now) {
    const auto earlier =
        std::find_if(before.begin(), before.end(), [&](const probe::NvLinkCounters& b) { return b.link == link.link; });
    if (earlier == before.end()) continue;
    total += probe::nvlink5_sum(probe::nvlink5_growth(earlier->nvlink5, link.nvlink5), warns).value_or(0);
  }
  return total;
}

namespace {

/// `baseline` with the values `now` read put in (a counter not read keeps its older value).
void remember_links(std::vector<probe::NvLinkCounters>& baseline, const std::vector<probe::NvLinkCounters>& now) {
  for (const probe::NvLinkCounters& link : now) {
    auto it = std::find_if(baseline.begin(), baseline.end(),
                           [&](const probe::NvLinkCounters& b) { return b.link == link.link; });
    if (it == baseline.end()) {
      baseline.push_back(link);
      continue;
    }
    for (const auto field : {&probe::NvLinkCounters::replay, &probe::NvLinkCounters::recovery,
                             &probe::NvLinkCounters::crc_flit, &probe::NvLinkCounters::crc_data}) {
      if (link.*field) (*it).*field = link.*field;
    }
    for (const probe::NvLink5Counter& counter : link.nvlink5) {
      auto kept = std::find_if(it->nvlink5.begin(), it->nvlink5.end(),
                               [&](const probe::NvLink5Counter& k) { return k.field == counter.field; });
      if (kept == it->nvlink5.end()) {
        it->nvlink5.push_back(counter);
      } else {
        kept->value = counter.value;
      }
    }
  }
}

/// How much one kind of NVLink count grew between the readings of a GPU's links, over the links read both times.
using KindGrowth = std::uint64_t (*)(const std::vector<probe::NvLinkCounters>&,
                                     const std::vector<probe::NvLinkCounters>&);
std::uint64_t replay_growth(const std::vector<probe::NvLinkCounters>& before,
                            const std::vector<probe::NvLinkCounters>& now) {
  return link_growth(before, now, &probe::NvLinkCounters::replay, nullptr);
}
std::uint64_t recovery_growth(const std::vector<probe::NvLinkCounters>& before,
                              const std::vector<probe::NvLinkCounters>& now) {
  return link_growth(before, now, &probe::NvLinkCounters::recovery, nullptr);
}
std::uint64_t crc_growth(const std::vector<probe::NvLinkCounters>& before,
                         const std::vector<probe::NvLinkCounters>& now) {
  return link_growth(before, now, &probe::NvLinkCounters::crc_flit, &probe::NvLinkCounters::crc_data);
}
std::uint64_t nvlink5_error_growth(const std::vector<probe::NvLinkCounters>& before,
                                   const std::vector<probe::NvLinkCounters>& now) {
  return nvlink5_link_growth(before, now, false);
}
std::uint64_t nvlink5_warning_growth(const std::vector<probe::NvLinkCounters>& before,
                                     const std::vector<probe::NvLinkCounters>& now) {
  return nvlink5_link_growth(before, now, true);
}

}  // namespace

void count_nvlink_errors(NodeSample& sample, RuleState& state) {
  if (!sample.nvml) return;
  for (GpuSample& gpu : sample.gpus) {
    if (gpu.lost() || (gpu.nvlink_links.empty() && !gpu.nvlink_inactive)) continue;  // no NVLink read
    auto [it, first] = state.nvlink.try_emplace(gpu_key(gpu));
    NvLinkBaseline& baseline = it->second;
    const struct {
      std::optional<std::uint64_t> GpuSample::*count;
      std::optional<std::uint64_t> NvLinkBaseline::*stored;
      KindGrowth grew;
    } kinds[] = {
        {&GpuSample::nvlink_replay, &NvLinkBaseline::replay, replay_growth},
        {&GpuSample::nvlink_recovery, &NvLinkBaseline::recovery, recovery_growth},
        {&GpuSample::nvlink_crc, &NvLinkBaseline::crc, crc_growth},
        {&GpuSample::nvlink5_errors, &NvLinkBaseline::nvlink5_errors, nvlink5_error_growth},
        {&GpuSample::nvlink5_warnings, &NvLinkBaseline::nvlink5_warnings, nvlink5_warning_growth},
    };
    // After a reboot the driver counts every link from zero again: the links read in the older boot are no baseline (a
    // lower reading would count as growth from zero, review L2). The counts go on from their stored values; growth
    // counts again from this reading on. An unknown boot id on either side keeps the links.
    if (!sample.boot_id.empty() && !baseline.boot.empty() && baseline.boot != sample.boot_id) baseline.links.clear();
    if (!sample.boot_id.empty()) baseline.boot = sample.boot_id;
    for (const auto& kind : kinds) {
      // A kind first read now starts at NVML's sum; one known goes on from its stored count.
      if (!first && baseline.*kind.stored)
        gpu.*kind.count = *(baseline.*kind.stored) + kind.grew(baseline.links, gpu.nvlink_links);
    }
    remember_links(baseline.links, gpu.nvlink_links);
    for (const auto& kind : kinds) {
      if (gpu.*kind.count) baseline.*kind.stored = gpu.*kind.count;
    }
  }
}

}  // namespace gpuenv::watch
