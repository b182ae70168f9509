// Peer copies in rounds of disjoint pairs (issue 23 item 12): every pair of GPUs once, the pairs of a round at the same
// time on threads of their own. A GPU is in one pair at a time, so it never holds more than its pair's peer connection
// (without NVSwitch "each device can support a system-wide maximum of eight peer connections", CUDA C++ Programming
// Guide) and its copy engines serve one copy at a time; an NVSwitch is non-blocking between disjoint pairs.

#include <algorithm>
#include <map>
#include <thread>

#include "smoke/internal/step.hpp"

namespace gpuenv::smoke {

using report::Finding;

std::vector<std::vector<std::pair<std::size_t, std::size_t>>> disjoint_rounds(std::size_t count) {
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rounds;
  if (count < 2) return rounds;
  const std::size_t slots = count + count % 2;  // an odd count gets a resting slot
  const std::size_t rest = count;               // the resting slot's "GPU"
  std::vector<std::size_t> circle(slots);
  for (std::size_t i = 0; i < slots; ++i) circle[i] = i < count ? i : rest;
  for (std::size_t round = 0; round + 1 < slots; ++round) {
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t i = 0; i < slots / 2; ++i) {
      const std::size_t a = circle[i], b = circle[slots - 1 - i];
      if (a != rest && b != rest) pairs.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(pairs));
    std::rotate(circle.begin() + 1, circle.end() - 1, circle.end());  // the first stays, the others turn
  }
  return rounds;
}

void run_peer_pairs(const std::vector<std::shared_ptr<Gpu>>& gpus, const Expectations& expectations, int board_gpus,
                    SmokeReport& report) {
  std::map<std::pair<std::size_t, std::size_t>, PairCopies> done;
  for (const auto& round : disjoint_rounds(gpus.size())) {
    std::vector<PairCopies> copies(round.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < round.size(); ++i) {
      threads.emplace_back(
          [&, i] { copies[i] = copy_pair(gpus[round[i].first], gpus[round[i].second], expectations, board_gpus); });
    }
    for (std::thread& thread : threads) thread.join();  // each pair waits only for steps with deadlines
    for (std::size_t i = 0; i < round.size(); ++i) done[round[i]] = std::move(copies[i]);
  }
  // The report in pair order, whatever round each pair ran in: one-way copies by (source, destination).
  for (auto& [pair, copies] : done)
    report.peers.insert(report.peers.end(), copies.one_way.begin(), copies.one_way.end());
  std::sort(report.peers.begin(), report.peers.end(), [](const PeerResult& x, const PeerResult& y) {
    return std::pair{x.source, x.destination} < std::pair{y.source, y.destination};
  });
  // Findings: each pair's own, its two directions ordered by source, pairs in order.
  for (std::size_t s = 0; s < gpus.size(); ++s) {
    for (std::size_t d = 0; d < gpus.size(); ++d) {
      if (s == d) continue;
      const PairCopies& copies = done[{std::min(s, d), std::max(s, d)}];
      const std::string prefix =
          "GPU " + std::to_string(gpus[s]->ordinal) + " -> GPU " + std::to_string(gpus[d]->ordinal) + ": ";
      for (const Finding& finding : copies.one_way_findings) {
        if (finding.message.rfind(prefix, 0) == 0) report.peer_findings.push_back(finding);
      }
    }
  }
  for (auto& [pair, copies] : done) {
    report.bidirectional.insert(report.bidirectional.end(), copies.both_ways.begin(), copies.both_ways.end());
    report.bidirectional_findings.insert(report.bidirectional_findings.end(), copies.both_ways_findings.begin(),
                                         copies.both_ways_findings.end());
  }
}

}  // namespace gpuenv::smoke
