// Peer copies: between every ordered pair of GPUs, the destination's copy engine reads the source's memory
// (cuMemcpyPeerAsync on the destination's stream, as nvbandwidth's device_to_device_memcpy_read_ce), timed with
// events, verified, and judged against the Azure floor where the model's GPUs are NVLink-connected SXM parts.

#include <algorithm>

#include "smoke/step.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

/// Runs one source -> destination copy on the destination GPU; fills `result`. `pair` ("GPU 0 -> GPU 1: ") starts
/// the finding's message.
StepOutcome copy_between(Gpu& destination, Gpu& source, const std::string& pair, PeerResult& result) {
  const CudaApi& api = destination.api;
  int can_access = 0;
  check(api.device_can_access_peer(&can_access, destination.device, source.device), "cuDeviceCanAccessPeer");
  result.peer_access = can_access != 0;
  if (result.peer_access) {
    const CUresult enabled = api.ctx_enable_peer_access(source.context, 0);
    if (enabled != cuda_error_peer_access_already_enabled) check(enabled, "cuCtxEnablePeerAccess");
  }
  const std::size_t bytes = copy_bytes(destination.options);
  std::vector<std::uint32_t> host(bytes / 4);
  const std::uint32_t seed = 100 + static_cast<std::uint32_t>(source.ordinal * 16 + destination.ordinal);
  fill_pattern(host, seed);
  const DeviceBuffer from(source, destination, bytes,
                          "cuMemAlloc_v2 (peer copy, GPU " + std::to_string(source.ordinal) + ")");
  const DeviceBuffer to(destination, bytes,
                        "cuMemAlloc_v2 (peer copy, GPU " + std::to_string(destination.ordinal) + ")");
  // On the destination's stream (unified addressing finds the source GPU), so the copies below are ordered after it.
  check(api.memcpy_htod_async(from.get(), host.data(), bytes, destination.stream),
        "cuMemcpyHtoDAsync_v2 (peer copy source)");
  const Summary rates = time_copies(destination, true, static_cast<double>(bytes), [&] {
    check(api.memcpy_peer_async(to.get(), destination.context, from.get(), source.context, bytes, destination.stream),
          "cuMemcpyPeerAsync");
  });
  std::fill(host.begin(), host.end(), 0u);
  check(api.memcpy_dtoh(host.data(), to.get(), bytes), "cuMemcpyDtoH_v2 (peer copy verification)");
  const PatternCheck data = check_pattern(host, seed);
  result.metric = Metric{"p2p_" + std::to_string(source.ordinal) + "_" + std::to_string(destination.ordinal), "GB/s",
                         rates, std::nullopt, static_cast<double>(bytes)};

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
  out.findings.push_back(Finding{"smoke.p2p", Status::skip, observed + ", data verified", {}, {}});
  return out;
}

/// What a copy between these two GPUs should reach: Azure's floor where both are the same SXM model with one and the
/// node has the board size it was measured on, and the operator's `p2p` override. `basis` says why there is no floor
/// when the model has one but the board differs.
Expectation peer_expectation(const GpuExpectation* source, const GpuExpectation* destination, int device_count,
                             const SmokeOptions& options, std::string& basis) {
  Expectation out;
  if (source != nullptr && source == destination && source->p2p_read_minimum) {
    const int board = source->p2p_board_gpus.value_or(device_count);
    if (board == device_count) {
      out.minimum = source->p2p_read_minimum;
      out.source = source->model + " peer read minimum " + rate_text(*out.minimum) + " GB/s, measured on " +
                   std::to_string(board) + "-GPU NVSwitch boards (this node: " + std::to_string(device_count) +
                   " GPUs); " + source->source;
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

}  // namespace

std::vector<PeerResult> run_peer_copies(const std::vector<std::shared_ptr<Gpu>>& gpus, const Expectations& expectations,
                                        int device_count, std::vector<Finding>& findings) {
  std::vector<PeerResult> results;
  for (const std::shared_ptr<Gpu>& source : gpus) {
    for (const std::shared_ptr<Gpu>& destination : gpus) {
      if (source == destination || source->stopped || destination->stopped) continue;
      auto result = std::make_shared<PeerResult>();
      result->source = source->ordinal;
      result->destination = destination->ordinal;
      const std::string pair =
          "GPU " + std::to_string(source->ordinal) + " -> GPU " + std::to_string(destination->ordinal) + ": ";
      std::optional<StepOutcome> outcome = run_step(destination, "smoke.p2p", [source, result, pair](Gpu& gpu) {
        return copy_between(gpu, *source, pair, *result);
      });
      if (!outcome) {
        // Both GPUs took part in the hung copy: neither is trusted with another step.
        destination->stopped = source->stopped = destination->hung = source->hung = true;
        Finding hang = hang_finding("smoke.p2p", destination->options.step_timeout);
        hang.message = pair + hang.message;
        findings.push_back(std::move(hang));
        continue;
      }
      const GpuExpectation* source_model = find_gpu(expectations, source->info.name);
      const GpuExpectation* destination_model = find_gpu(expectations, destination->info.name);
      std::string basis;
      const Expectation expectation =
          peer_expectation(source_model, destination_model, device_count, destination->options, basis);
      const GpuExpectation* nvlink_model =
          source_model == destination_model && source_model != nullptr && source_model->p2p_read_minimum ? source_model
                                                                                                         : nullptr;
      for (Finding& finding : outcome->findings) {
        if (finding.status == Status::skip &&
            (expectation.expected || expectation.minimum || (nvlink_model && !result->peer_access))) {
          finding = judge_peer_copy(finding, *result, expectation, nvlink_model, destination->options.thresholds);
        }
        if (finding.status == Status::skip && !basis.empty()) finding.message += "; " + basis;
        if (finding.message.rfind(pair, 0) != 0) finding.message = pair + finding.message;  // a CUDA error's finding
        findings.push_back(std::move(finding));
      }
      if (outcome->stop) destination->stopped = true;
      if (!result->metric.id.empty()) results.push_back(*result);
    }
  }
  return results;
}

}  // namespace gpuenv::smoke
