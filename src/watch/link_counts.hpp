#pragma once
// How watch's NVLink counts go on from sample to sample: the growth of a cumulative counter, of one kind of NVLink
// counter over the links read at both ends, and the per-GPU counts kept across readings (count_nvlink_errors,
// rules.hpp). Internal to watch; the rules (rules.cpp) judge what these count.

#include <cstdint>
#include <optional>
#include <vector>

#include "probe/facts.hpp"

namespace gpuenv::watch {

/// How much a cumulative counter grew from `before` to `after`; a counter that went down was reset (driver reload):
/// everything since the reset is new.
std::optional<std::uint64_t> growth(const std::optional<std::uint64_t>& before,
                                    const std::optional<std::uint64_t>& after);

using LinkCounter = std::optional<std::uint64_t> probe::NvLinkCounters::*;

/// The growth of one NVLink counter kind (`field`, and `also` for CRC: flit and data) over the links read in both
/// `before` and `now`: a link or a counter read only at one end is in neither sum.
std::uint64_t link_growth(const std::vector<probe::NvLinkCounters>& before,
                          const std::vector<probe::NvLinkCounters>& now, LinkCounter field, LinkCounter also);

/// The growth of NVLink5's counters of one judgement (`warns`, probe/nvlink5.hpp) over the links read in both
/// `before` and `now`, each counter only where it was read both times.
std::uint64_t nvlink5_link_growth(const std::vector<probe::NvLinkCounters>& before,
                                  const std::vector<probe::NvLinkCounters>& now, bool warns);

}  // namespace gpuenv::watch
