// Peer copies: between every ordered pair of GPUs, the destination's copy engine reads the source's memory
// (cuMemcpyPeerAsync on the destination's stream, as nvbandwidth's device_to_device_memcpy_read_ce), timed with
// events, verified, and judged against the Azure floor where the model's GPUs are NVLink-connected SXM parts. Then,
// for every pair with peer access, both directions at once (nvbandwidth's
// device_to_device_bidirectional_memcpy_read_ce): each direction judged against the same floor, as NVLink and PCIe are
// full duplex.

#include <algorithm>
#include <optional>

#include "smoke/internal/device_check.hpp"
#include "smoke/internal/step.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

/// The GPU's expectations row for peer copies; none for a MIG instance, whose share of the NVLinks and copy engines
/// no row describes (as its own copies and matmuls, smoke.mig).
const GpuExpectation* whole_gpu_model(const Expectations& expectations, const DeviceInfo& info) {
  return info.mig_profile.empty() ? find_gpu(expectations, info.name) : nullptr;
}

/// What a copy between these two GPUs should reach: Azure's floor where both are the same SXM model with one and the
/// node has the board size it was measured on, and the operator's `p2p` override. A floor the row does not list as
/// verified is shown beside the figure, not judged. `basis` says why there is no floor when the model has one but the
/// board differs.
Expectation peer_expectation(const GpuExpectation* source, const GpuExpectation* destination, int device_count,
                             const SmokeOptions& options, std::string& basis) {
  Expectation out;
  if (source != nullptr && source == destination && source->p2p_read_minimum) {
    const int board = source->p2p_board_gpus.value_or(device_count);
    if (board == device_count) {
      if (source->is_verified("p2p_read_minimum")) {
        out.minimum = source->p2p_read_minimum;
      } else {
        out.expected = source->p2p_read_minimum;
        out.calibrated = false;
      }
      out.source = source->model + " peer read minimum " + rate_text(*source->p2p_read_minimum) +
                   " GB/s, measured on " + std::to_string(board) +
                   "-GPU NVSwitch boards (this node: " + std::to_string(device_count) + " GPUs); " + source->source;
    } else {
      basis = "no floor: " + source->model + "'s " + rate_text(*source->p2p_read_minimum) + " GB/s floor is for " +
              std::to_string(board) + "-GPU NVSwitch boards and the driver reports " + std::to_string(device_count) +
              " GPUs (fewer NVLinks per pair); give one with --minimum p2p=V";
    }
  }
  return with_override(options, "p2p", out);
}

/// Judges a verified copy against `expectation`. On a model whose GPUs are NVLink-connected (`nvlink_model`), no
/// peer access at all fails too.
Finding judge_peer_copy(Finding verified, const PeerResult& result, const Expectation& expectation,
                        const GpuExpectation* nvlink_model, const Thresholds& thresholds) {
  verified.source = expectation.source;
  if (!result.peer_access && nvlink_model != nullptr) {
    verified.status = Status::fail;
    verified.message +=
        ": " + nvlink_model->model + " GPUs reach each other over NVLink, but peer access is not available";
    verified.remedy =
        "check NVLink and the fabric: `nvidia-smi nvlink --status`, `nvidia-smi topo -m`, and that "
        "nvidia-fabricmanager is running on NVSwitch systems; then run `gpuenv doctor`";
    return verified;
  }
  const Judgement judgement = judge(result.metric.summary.median, expectation, thresholds, "GB/s");
  verified.status = judgement.status;
  verified.message += "; " + judgement.explanation;
  if (judgement.status == Status::fail || judgement.status == Status::warn) {
    verified.remedy =
        "check NVLink state and error counters (`nvidia-smi nvlink --status`, `nvidia-smi nvlink -e`) and the fabric "
        "manager; a degraded or inactive link cuts peer bandwidth";
  }
  return verified;
}

/// Makes `gpu`'s context current for the scope, `back`'s again at its end (one thread queues work on both GPUs).
class CurrentContext {
 public:
  CurrentContext(const Gpu& gpu, const Gpu& back) : m_back(back), m_switch(&gpu != &back) {
    if (!m_switch) return;
    set_current_gpu(gpu.ordinal);  // a failure from here on is charged to `gpu` (StepOutcome::faulted)
    check(gpu.api.ctx_set_current(gpu.context), "cuCtxSetCurrent");
  }
  ~CurrentContext() {
    if (!m_switch) return;
    m_back.api.ctx_set_current(m_back.context);
    set_current_gpu(m_back.ordinal);
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;

 private:
  const Gpu& m_back;
  bool m_switch;
};

/// Direct access from `gpu`'s context to `peer`'s memory for the scope, disabled again at its end: on systems without
/// NVSwitch "each device can support a system-wide maximum of eight peer connections" (CUDA C++ Programming Guide,
/// Peer-to-Peer Memory Access), so a node of more than eight GPUs would run out of them if every pair kept its access.
/// `current` is the thread's context (made current again after switching to `gpu`'s).
class PeerAccess {
 public:
  PeerAccess(const Gpu& gpu, const Gpu& peer, const Gpu& current) : m_gpu(gpu), m_peer(peer), m_current(current) {
    const CurrentContext on(gpu, current);
    m_result = gpu.api.ctx_enable_peer_access(peer.context, 0);
    m_enabled = m_result == cuda_success;  // ALREADY_ENABLED: someone else's, left as it was
  }
  ~PeerAccess() {
    if (!m_enabled) return;
    if (&m_gpu != &m_current) m_gpu.api.ctx_set_current(m_gpu.context);
    m_gpu.api.ctx_disable_peer_access(m_peer.context);
    if (&m_gpu != &m_current) m_current.api.ctx_set_current(m_current.context);
  }
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;
  /// CUDA_ERROR_TOO_MANY_PEERS: no fault of either GPU (the node's peer connections are used up), so the pair is a
  /// skip.
  bool too_many_peers() const { return m_result == cuda_error_too_many_peers; }
  /// Throws CudaFailure for any other refusal (already enabled counts as enabled).
  void check_enabled() const {
    if (m_result != cuda_error_peer_access_already_enabled) check(m_result, "cuCtxEnablePeerAccess");
  }

 private:
  const Gpu& m_gpu;
  const Gpu& m_peer;
  const Gpu& m_current;
  CUresult m_result = cuda_success;
  bool m_enabled = false;
};

/// The skip for a pair whose peer access the driver refused with CUDA_ERROR_TOO_MANY_PEERS.
Finding too_many_peers_finding(const std::string& id, const std::string& pair) {
  return Finding{id,
                 Status::skip,
                 pair +
                     "not measured: cuCtxEnablePeerAccess returned CUDA_ERROR_TOO_MANY_PEERS (711): the node's peer "
                     "connections are used up (without NVSwitch each GPU has at most eight, system-wide), which "
                     "says nothing about these GPUs",
                 "other processes may hold peer connections to these GPUs: rerun on an idle node to measure the pair",
                 {}};
}

/// A spin flag for `gpu` for the scope, unless it has one already; `current` is the thread's context.
class ScopedSpinFlag {
 public:
  ScopedSpinFlag(Gpu& gpu, const Gpu& current) : m_gpu(gpu), m_current(current), m_owned(gpu.spin_flag == nullptr) {
    if (!m_owned) return;
    const CurrentContext on(gpu, current);
    allocate_spin_flag(gpu);
  }
  ~ScopedSpinFlag() {
    if (!m_owned) return;
    if (&m_gpu != &m_current) m_gpu.api.ctx_set_current(m_gpu.context);
    free_spin_flag(m_gpu);
    if (&m_gpu != &m_current) m_gpu.api.ctx_set_current(m_current.context);
  }
  ScopedSpinFlag(const ScopedSpinFlag&) = delete;
  ScopedSpinFlag& operator=(const ScopedSpinFlag&) = delete;

 private:
  Gpu& m_gpu;
  const Gpu& m_current;
  bool m_owned;
};

/// Bytes per peer copy: copy_bytes() at least twice the larger L2 of the two GPUs, so neither side's cache serves it.
std::size_t peer_copy_bytes(const Gpu& a, const Gpu& b) {
  return copy_bytes(a.options, std::max(a.info.l2_bytes, b.info.l2_bytes));
}

/// Runs one source -> destination copy on the destination GPU; fills `result`. `pair` ("GPU 0 -> GPU 1: ") starts
/// the finding's message.
StepOutcome copy_between(Gpu& destination, Gpu& source, const std::string& pair, PeerResult& result) {
  const CudaApi& api = destination.api;
  int can_access = 0;
  check(api.device_can_access_peer(&can_access, destination.device, source.device), "cuDeviceCanAccessPeer");
  result.peer_access = can_access != 0;
  std::optional<PeerAccess> access;  // disabled again when the pair is done
  if (result.peer_access) {
    access.emplace(destination, source, destination);
    if (access->too_many_peers()) {
      StepOutcome out;
      out.findings.push_back(too_many_peers_finding("smoke.p2p", pair));
      return out;  // no metric: nothing is judged
    }
    access->check_enabled();
  }
  const std::size_t bytes = peer_copy_bytes(destination, source);
  const std::uint32_t seed = 100 + static_cast<std::uint32_t>(source.ordinal * 16 + destination.ordinal);
  const DeviceBuffer from(source, destination, bytes,
                          "cuMemAlloc_v2 (peer copy, GPU " + std::to_string(source.ordinal) + ")");
  const DeviceBuffer to(destination, bytes,
                        "cuMemAlloc_v2 (peer copy, GPU " + std::to_string(destination.ordinal) + ")");
  // With peer access the copies queue behind the destination's spin kernel, as the other copies (nvbandwidth's
  // method): one copy per event pair would add a launch gap to every sample. Without it the driver stages the copy
  // through host memory and cuMemcpyPeerAsync may not return until the stream's earlier work ran, so the host could
  // never release the spin kernel: every sample would time out (2 s each). Those copies are timed one per event pair.
  std::optional<ScopedSpinFlag> flag;
  if (result.peer_access) flag.emplace(destination, destination);
  {
    // The source pattern is written by the source GPU (complete before the copies: its stream is synchronised).
    const CurrentContext on_source(source, destination);
    fill_words(source, from.get(), bytes / 4, seed);
    check(api.stream_synchronize(source.stream.get()), "cuStreamSynchronize (peer copy source)");
  }
  const Summary rates = time_copies(destination, true, static_cast<double>(bytes), [&] {
    check(api.memcpy_peer_async(to.get(), destination.context, from.get(), source.context, bytes,
                                destination.stream.get()),
          "cuMemcpyPeerAsync");
  });
  const PatternCheck data = check_words(destination, to.get(), bytes / 4, seed);  // on the destination GPU
  result.metric = Metric{"p2p_" + std::to_string(source.ordinal) + "_" + std::to_string(destination.ordinal),
                         "GB/s",
                         rates,
                         std::nullopt,
                         static_cast<double>(bytes),
                         data.ok()};

  StepOutcome out;
  const std::string observed =
      pair + rate_text(rates.median) + " GB/s (median of " + std::to_string(rates.count) + ", " + size_text(bytes) +
      ", " + (result.peer_access ? "peer access" : "no peer access: staged through host memory") + ")";
  if (!data.ok()) {
    out.findings.push_back(Finding{"smoke.p2p",
                                   Status::fail,
                                   observed + ": data corrupted: " + data.describe(bytes / 4),
                                   "the copy returned wrong data: check for Xid errors (sudo dmesg | grep -i xid), "
                                   "NVLink errors (`nvidia-smi nvlink -e`) and run `gpuenv doctor`",
                                   {}});
    return out;
  }
  if (rates.invalid) {  // every sample's spin kernel timed out: a lower bound, not judged (with a floor or without)
    out.findings.push_back(Finding{"smoke.p2p",
                                   Status::skip,
                                   observed + ", data verified; " + invalid_timing_text(rates),
                                   "run it again on an idle host",
                                   {}});
    return out;
  }
  out.findings.push_back(
      Finding{"smoke.p2p", Status::skip, observed + ", data verified" + discarded_note(rates), {}, {}});
  return out;
}

/// Both directions of one pair at once, run on `a`'s thread: `b`'s copy engine reads a -> b on b's stream while `a`'s
/// reads b -> a on a's stream (the direction of the one-way copies: nvbandwidth's
/// device_to_device_bidirectional_memcpy_read_ce), each stream's copies_per_sample copies queued behind its spin
/// kernel and both released together. Each direction's rate is its own bytes over its own stream's time, measured
/// while the other direction runs (nvbandwidth's CE bidirectional count); a sample where either spin kernel timed out
/// is discarded for both. Fills `to_b`, `to_a`; the finding (skip, or fail for wrong data) is judged by the caller.
StepOutcome copy_both_ways(Gpu& a, Gpu& b, const std::string& pair, PeerResult& to_b, PeerResult& to_a) {
  const CudaApi& api = a.api;
  StepOutcome out;
  const PeerAccess a_reads_b(a, b, a);  // each disabled again when the pair is done
  const PeerAccess b_reads_a(b, a, a);
  if (a_reads_b.too_many_peers() || b_reads_a.too_many_peers()) {
    out.findings.push_back(too_many_peers_finding("smoke.p2p_bidirectional", pair));
    return out;
  }
  a_reads_b.check_enabled();
  b_reads_a.check_enabled();
  const ScopedSpinFlag flag_a(a, a);
  const ScopedSpinFlag flag_b(b, a);
  if (a.spin_wait == nullptr || b.spin_wait == nullptr || a.spin_flag == nullptr || b.spin_flag == nullptr) {
    out.findings.push_back(Finding{"smoke.p2p_bidirectional",
                                   Status::skip,
                                   pair + "not measured: both directions at once need the spin kernel on both GPUs "
                                          "(kernels loaded and pinned host memory mapped for the device)",
                                   {},
                                   {}});
    return out;
  }
  const std::size_t bytes = peer_copy_bytes(a, b);
  const std::string gpu_a = "GPU " + std::to_string(a.ordinal), gpu_b = "GPU " + std::to_string(b.ordinal);
  const DeviceBuffer from_a(a, bytes, "cuMemAlloc_v2 (bidirectional peer copy, " + gpu_a + ")");
  const DeviceBuffer into_a(a, bytes, "cuMemAlloc_v2 (bidirectional peer copy, " + gpu_a + ")");
  const DeviceBuffer from_b(b, a, bytes, "cuMemAlloc_v2 (bidirectional peer copy, " + gpu_b + ")");
  const DeviceBuffer into_b(b, a, bytes, "cuMemAlloc_v2 (bidirectional peer copy, " + gpu_b + ")");
  const std::uint32_t seed_to_b = 300 + static_cast<std::uint32_t>(a.ordinal * 16 + b.ordinal);
  const std::uint32_t seed_to_a = 300 + static_cast<std::uint32_t>(b.ordinal * 16 + a.ordinal);
  // Each source written by its own GPU.
  fill_words(a, from_a.get(), bytes / 4, seed_to_b);
  check(api.stream_synchronize(a.stream.get()), "cuStreamSynchronize");
  {
    const CurrentContext on_b(b, a);
    fill_words(b, from_b.get(), bytes / 4, seed_to_a);
    check(api.stream_synchronize(b.stream.get()), "cuStreamSynchronize");
  }
  auto copy_to_b = [&] {
    check(api.memcpy_peer_async(into_b.get(), b.context, from_a.get(), a.context, bytes, b.stream.get()),
          "cuMemcpyPeerAsync (bidirectional)");
  };
  auto copy_to_a = [&] {
    check(api.memcpy_peer_async(into_a.get(), a.context, from_b.get(), b.context, bytes, a.stream.get()),
          "cuMemcpyPeerAsync (bidirectional)");
  };
  // Warm-up, one each way.
  copy_to_a();
  {
    const CurrentContext on_b(b, a);
    copy_to_b();
    check(api.stream_synchronize(b.stream.get()), "cuStreamSynchronize");
  }
  check(api.stream_synchronize(a.stream.get()), "cuStreamSynchronize");

  std::vector<double> valid_to_b, valid_to_a, timed_out_to_b, timed_out_to_a;
  const double queued_bytes = static_cast<double>(bytes) * copies_per_sample;
  for (int i = 0; i < repetitions(a.options); ++i) {
    float ms_to_b = 0, ms_to_a = 0;
    bool timed_out = false;
    {
      StreamHold hold_a(a);
      std::optional<StreamHold> hold_b;
      {
        const CurrentContext on_b(b, a);
        hold_b.emplace(b);
        check(api.event_record(b.start.get(), b.stream.get()), "cuEventRecord");
        for (int c = 0; c < copies_per_sample; ++c) copy_to_b();
        check(api.event_record(b.stop.get(), b.stream.get()), "cuEventRecord");
      }
      check(api.event_record(a.start.get(), a.stream.get()), "cuEventRecord");
      for (int c = 0; c < copies_per_sample; ++c) copy_to_a();
      check(api.event_record(a.stop.get(), a.stream.get()), "cuEventRecord");
      hold_b->release();  // together: both queues start within a few host instructions
      hold_a.release();
      check(api.event_synchronize(a.stop.get()), "cuEventSynchronize");
      check(api.event_elapsed_time(&ms_to_a, a.start.get(), a.stop.get()), "cuEventElapsedTime");
      {
        const CurrentContext on_b(b, a);
        check(api.event_synchronize(b.stop.get()), "cuEventSynchronize");
        check(api.event_elapsed_time(&ms_to_b, b.start.get(), b.stop.get()), "cuEventElapsedTime");
      }
      timed_out = hold_a.timed_out() || hold_b->timed_out();
    }
    (timed_out ? timed_out_to_b : valid_to_b).push_back(gigabytes_per_second(queued_bytes, ms_to_b / 1e3));
    (timed_out ? timed_out_to_a : valid_to_a).push_back(gigabytes_per_second(queued_bytes, ms_to_a / 1e3));
  }
  to_b.metric = Metric{"p2p_bidir_" + std::to_string(a.ordinal) + "_" + std::to_string(b.ordinal), "GB/s",
                       summarize_copy_samples(valid_to_b, timed_out_to_b), std::nullopt, static_cast<double>(bytes)};
  to_a.metric = Metric{"p2p_bidir_" + std::to_string(b.ordinal) + "_" + std::to_string(a.ordinal), "GB/s",
                       summarize_copy_samples(valid_to_a, timed_out_to_a), std::nullopt, static_cast<double>(bytes)};
  to_b.peer_access = to_a.peer_access = true;

  PatternCheck data_to_b, data_to_a;  // each destination checked by its own GPU
  {
    const CurrentContext on_b(b, a);
    data_to_b = check_words(b, into_b.get(), bytes / 4, seed_to_b);
  }
  data_to_a = check_words(a, into_a.get(), bytes / 4, seed_to_a);
  to_b.metric.verified = data_to_b.ok();
  to_a.metric.verified = data_to_a.ok();
  const Summary& rb = to_b.metric.summary;
  const Summary& ra = to_a.metric.summary;
  const std::string observed = pair + gpu_a + " -> " + gpu_b + " " + rate_text(rb.median) + " GB/s and " + gpu_b +
                               " -> " + gpu_a + " " + rate_text(ra.median) + " GB/s at once (sum " +
                               rate_text(rb.median + ra.median) + " GB/s; medians of " + std::to_string(rb.count) +
                               ", " + size_text(bytes) + " each way)";
  if (!data_to_b.ok() || !data_to_a.ok()) {
    out.findings.push_back(Finding{
        "smoke.p2p_bidirectional",
        Status::fail,
        observed + ": data corrupted: " +
            (!data_to_b.ok() ? gpu_a + " -> " + gpu_b + ": " + data_to_b.describe(bytes / 4)
                             : gpu_b + " -> " + gpu_a + ": " + data_to_a.describe(bytes / 4)),
        "the copy returned wrong data: check for Xid errors (sudo dmesg | grep -i xid), NVLink errors (`nvidia-smi "
        "nvlink -e`) and run `gpuenv doctor`",
        {}});
    return out;
  }
  if (rb.invalid || ra.invalid) {  // a lower bound, not judged (with a floor or without)
    out.findings.push_back(Finding{"smoke.p2p_bidirectional",
                                   Status::skip,
                                   observed + ", data verified; " + invalid_timing_text(rb.invalid ? rb : ra),
                                   "run it again on an idle host",
                                   {}});
    return out;
  }
  out.findings.push_back(
      Finding{"smoke.p2p_bidirectional", Status::skip, observed + ", data verified" + discarded_note(rb), {}, {}});
  return out;
}

/// A verified bidirectional pair beside the pair's one-way fail floor `one_way` (the floor the one-way copies are
/// judged by): reported, not judged. NVLink and PCIe are full duplex, so each direction should keep about its one-way
/// rate, but how much copy-engine and memory contention costs a direction on real boards is not measured (nvbandwidth
/// publishes no floor), so no line drawn from the one-way floor is calibrated: a healthy pair must never warn here.
Finding report_bidirectional(Finding verified, const Summary& to_b, const Summary& to_a, double one_way) {
  const double slowest = std::min(to_b.median, to_a.median);
  verified.status = Status::pass;
  verified.message += "; the slower direction is " + format("%.2f", slowest / one_way) + " x the one-way floor " +
                      rate_text(one_way) + " GB/s, not judged (uncalibrated: no anchor tool has a bidirectional floor)";
  return verified;
}

/// Marks both GPUs of a pair whose copy step (run on `runner`'s thread) missed its deadline: both took part in the
/// copy, so neither is trusted with another step. Returns the pair's finding (a hang, or "driver blocked by GPU N").
Finding pair_hung(Gpu& runner, Gpu& other, const std::string& id, const std::string& pair) {
  runner.stopped = other.stopped = runner.hung = other.hung = true;
  Finding hang = missed_deadline(*runner.budget, runner.ordinal, id);
  if (hang.status == Status::fail) runner.hang_reported = other.hang_reported = true;  // either may be the one
  hang.message = pair + hang.message;
  return hang;
}

/// The GPU of a pair whose context faulted (StepOutcome::faulted), else the GPU the step ran on.
Gpu& faulted_gpu(const StepOutcome& outcome, Gpu& runner, Gpu& other) {
  return outcome.faulted == other.ordinal ? other : runner;
}

/// source -> destination on the destination's step thread, judged; appends to `copies`.
void one_way(const std::shared_ptr<Gpu>& source, const std::shared_ptr<Gpu>& destination,
             const Expectations& expectations, int board_gpus, std::vector<PeerResult>& results,
             std::vector<Finding>& findings) {
  if (source->stopped || destination->stopped) return;
  auto result = std::make_shared<PeerResult>();
  result->source = source->ordinal;
  result->destination = destination->ordinal;
  const std::string pair =
      "GPU " + std::to_string(source->ordinal) + " -> GPU " + std::to_string(destination->ordinal) + ": ";
  std::optional<StepOutcome> outcome = run_step(
      destination, "smoke.p2p", [source, result, pair](Gpu& gpu) { return copy_between(gpu, *source, pair, *result); });
  if (!outcome) {
    findings.push_back(pair_hung(*destination, *source, "smoke.p2p", pair));
    return;
  }
  const GpuExpectation* source_model = whole_gpu_model(expectations, source->info);
  const GpuExpectation* destination_model = whole_gpu_model(expectations, destination->info);
  std::string basis;
  const Expectation expectation =
      peer_expectation(source_model, destination_model, board_gpus, destination->options, basis);
  const GpuExpectation* nvlink_model = source_model == destination_model && source_model != nullptr &&
                                               source_model->p2p_read_minimum &&
                                               source_model->is_verified("p2p_read_minimum")
                                           ? source_model
                                           : nullptr;
  for (Finding& finding : outcome->findings) {
    // A skip is a verified copy awaiting its verdict, unless its timing was invalid (every sample timed out).
    if (finding.status == Status::skip && !result->metric.id.empty() && !result->metric.summary.invalid &&
        (expectation.expected || expectation.minimum || (nvlink_model && !result->peer_access))) {
      finding = judge_peer_copy(finding, *result, expectation, nvlink_model, destination->options.thresholds);
    }
    if (finding.status == Status::skip && !basis.empty()) finding.message += "; " + basis;
    if (finding.message.rfind(pair, 0) != 0) finding.message = pair + finding.message;  // a CUDA error's finding
    findings.push_back(std::move(finding));
  }
  // A sticky error stops the GPU whose context faulted, source or destination (issue 23 item 14).
  if (outcome->stop) faulted_gpu(*outcome, *destination, *source).stopped = true;
  if (!result->metric.id.empty()) results.push_back(*result);
}

/// Both directions of a pair at once on `a`'s step thread, shown beside the pair's one-way copies (`alone_to_b`,
/// `alone_to_a`) and floor; appends to `results` and `findings`.
void both_ways(const std::shared_ptr<Gpu>& a, const std::shared_ptr<Gpu>& b, const PeerResult& alone_to_b,
               const PeerResult& alone_to_a, const Expectations& expectations, int board_gpus,
               std::vector<PeerResult>& results, std::vector<Finding>& findings) {
  if (a->stopped || b->stopped) return;
  auto to_b = std::make_shared<PeerResult>(PeerResult{a->ordinal, b->ordinal, true, {}});
  auto to_a = std::make_shared<PeerResult>(PeerResult{b->ordinal, a->ordinal, true, {}});
  const std::string pair = "GPU " + std::to_string(a->ordinal) + " <-> GPU " + std::to_string(b->ordinal) + ": ";
  std::optional<StepOutcome> outcome = run_step(a, "smoke.p2p_bidirectional", [b, to_b, to_a, pair](Gpu& gpu) {
    return copy_both_ways(gpu, *b, pair, *to_b, *to_a);
  });
  if (!outcome) {
    findings.push_back(pair_hung(*a, *b, "smoke.p2p_bidirectional", pair));
    return;
  }
  std::string basis;
  // The floor of the one-way copies between these two (either direction: the same models and board).
  const Expectation expectation = peer_expectation(
      whole_gpu_model(expectations, a->info), whole_gpu_model(expectations, b->info), board_gpus, a->options, basis);
  const double one_way_floor = judge(0, expectation, a->options.thresholds, "GB/s").fail_below;
  const double alone_sum = alone_to_b.metric.summary.median + alone_to_a.metric.summary.median;
  for (Finding& finding : outcome->findings) {
    if (finding.status == Status::skip && !to_b->metric.id.empty() && to_b->metric.verified && to_a->metric.verified &&
        !to_b->metric.summary.invalid && !to_a->metric.summary.invalid) {
      // Shown, not judged: full duplex gives about 1 x (each direction keeps its one-way rate).
      if (alone_sum > 0) {
        finding.message += "; " +
                           format("%.2f", (to_b->metric.summary.median + to_a->metric.summary.median) / alone_sum) +
                           " x the one-way copies' sum (" + rate_text(alone_sum) + " GB/s)";
      }
      if (one_way_floor > 0) {
        finding.source = expectation.source;
        finding = report_bidirectional(finding, to_b->metric.summary, to_a->metric.summary, one_way_floor);
      } else {
        finding.message += "; no one-way floor for this pair: numbers only" + (basis.empty() ? "" : " (" + basis + ")");
      }
    }
    if (finding.message.rfind(pair, 0) != 0) finding.message = pair + finding.message;  // a CUDA error's finding
    findings.push_back(std::move(finding));
  }
  if (outcome->stop) faulted_gpu(*outcome, *a, *b).stopped = true;
  if (!to_b->metric.id.empty()) {
    results.push_back(*to_b);
    results.push_back(*to_a);
  }
}

}  // namespace

PairCopies copy_pair(const std::shared_ptr<Gpu>& a, const std::shared_ptr<Gpu>& b, const Expectations& expectations,
                     int board_gpus) {
  PairCopies out;
  one_way(a, b, expectations, board_gpus, out.one_way, out.one_way_findings);
  one_way(b, a, expectations, board_gpus, out.one_way, out.one_way_findings);
  auto with_access = [&](int from, int to) -> const PeerResult* {
    for (const PeerResult& result : out.one_way) {
      if (result.source == from && result.destination == to && result.peer_access) return &result;
    }
    return nullptr;
  };
  const PeerResult* to_b = with_access(a->ordinal, b->ordinal);
  const PeerResult* to_a = with_access(b->ordinal, a->ordinal);
  if (to_b != nullptr && to_a != nullptr) {
    both_ways(a, b, *to_b, *to_a, expectations, board_gpus, out.both_ways, out.both_ways_findings);
  }
  return out;
}

}  // namespace gpuenv::smoke
