// A fake libnccl.so.2 for tests: exports the nccl.h entry points gpuenv's all-reduce sweep uses and answers them from
// the key=value file named by GPUENV_FAKE_NCCL (read at each ncclCommInitAll), so the real dlopen path runs without
// a GPU. It works with the fake libcuda (tests/fake_cuda), whose "device" memory is host memory: an all-reduce really
// sums the ranks' send buffers (float32, ncclSum) into every receive buffer when the group ends. Timing comes from the
// fake libcuda's events (elapsed_ms), as the real collectives' time comes from the real GPU's.
//
// Keys: version (ncclGetVersion's code, e.g. 22703; nccl.h NCCL_VERSION), init_result (ncclCommInitAll's result),
// max_ranks (ncclCommInitAll with more devices answers ncclInvalidUsage), allreduce_result (every ncclAllReduce's
// result), async_error (ncclCommGetAsyncError reports it after the first collective), wrong_rank and wrong_element
// (that rank's receive buffer gets element N one too high after each all-reduce: a wrong sum), hang_seconds
// (ncclGroupEnd blocks that long: a collective stuck on a dead link; then it answers ncclSystemError), comm_id_env
// (1: ncclCommInitAll reads NCCL_COMM_ID from the process environment with getenv, as NCCL's bootstrap does, and
// answers ncclInvalidArgument when it is set, as an address NCCL cannot listen on would end).
// fake_nccl_allreduce_bytes(i) and fake_nccl_allreduce_count() let tests see the sizes the collectives ran with.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::map<std::string, std::string>& g_config = *new std::map<std::string, std::string>();

void load_config() {
  g_config.clear();
  const char* path = std::getenv("GPUENV_FAKE_NCCL");
  if (path == nullptr) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto equals = line.find('=');
    if (line.empty() || line[0] == '#' || equals == std::string::npos) continue;
    auto trim = [](std::string text) {
      const auto begin = text.find_first_not_of(" \t\r");
      const auto end = text.find_last_not_of(" \t\r");
      return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
    };
    g_config[trim(line.substr(0, equals))] = trim(line.substr(equals + 1));
  }
}

long long number(const std::string& key, long long fallback) {
  const auto it = g_config.find(key);
  return it == g_config.end() ? fallback : std::strtoll(it->second.c_str(), nullptr, 0);
}

struct FakeComm {
  int rank = 0;
  int nranks = 0;
};

/// One queued ncclAllReduce of a group.
struct Operation {
  const float* send = nullptr;
  float* recv = nullptr;
  std::size_t count = 0;
  int rank = 0;
};

std::mutex g_mutex;
std::vector<Operation>& g_queue = *new std::vector<Operation>();
int g_group_depth = 0;
bool g_collective_done = false;
std::atomic<unsigned long long> g_aborted{0};  ///< communicators ended with ncclCommAbort
std::vector<unsigned long long>& g_sizes =
    *new std::vector<unsigned long long>();  ///< bytes per rank of each executed all-reduce

constexpr int k_success = 0;
constexpr int k_invalid_argument = 4;
constexpr int k_invalid_usage = 5;

/// Sums the queued operations (one per rank, equal counts) into every receive buffer.
int execute_queue() {
  if (g_queue.empty()) return k_success;
  const std::size_t count = g_queue.front().count;
  for (const Operation& op : g_queue) {
    if (op.count != count) return k_invalid_usage;
  }
  std::vector<float> sum(count, 0.0f);
  for (const Operation& op : g_queue) {
    for (std::size_t i = 0; i < count; ++i) sum[i] += op.send[i];
  }
  const long long wrong_rank = number("wrong_rank", -1);
  const auto wrong_element = static_cast<std::size_t>(number("wrong_element", 0));
  for (const Operation& op : g_queue) {
    std::memcpy(op.recv, sum.data(), count * sizeof(float));
    if (op.rank == wrong_rank && wrong_element < count) op.recv[wrong_element] += 1.0f;
  }
  g_sizes.push_back(count * sizeof(float));
  g_queue.clear();
  g_collective_done = true;
  return k_success;
}

}  // namespace

extern "C" {

int ncclGetVersion(int* version) {
  *version = static_cast<int>(number("version", 22703));
  return k_success;
}

const char* ncclGetErrorString(int result) {
  switch (result) {
    case 1:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 5:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default:
      return "fake NCCL error";
  }
}

int ncclCommInitAll(FakeComm** comms, int ndev, const int* devlist) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  load_config();
  g_queue.clear();
  g_collective_done = false;
  if (const int result = static_cast<int>(number("init_result", 0)); result != k_success) return result;
  if (number("comm_id_env", 0) != 0 && std::getenv("NCCL_COMM_ID") != nullptr) return k_invalid_argument;
  if (ndev < 1 || ndev > number("max_ranks", 64)) return k_invalid_usage;
  for (int i = 0; i < ndev; ++i) {
    if (devlist != nullptr && devlist[i] != i) return k_invalid_argument;  // the sweep passes devices 0..n-1
    comms[i] = new FakeComm{i, ndev};
  }
  return k_success;
}

int ncclCommDestroy(FakeComm* comm) {
  delete comm;
  return k_success;
}

int ncclCommAbort(FakeComm* comm) {
  ++g_aborted;
  return ncclCommDestroy(comm);
}

int ncclCommGetAsyncError(FakeComm*, int* async_error) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  *async_error = g_collective_done ? static_cast<int>(number("async_error", 0)) : k_success;
  return k_success;
}

int ncclGroupStart() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  ++g_group_depth;
  return k_success;
}

int ncclGroupEnd() {
  if (const long long hang = number("hang_seconds", 0); hang > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(hang));
    // Then fail, so the abandoned sweep stops instead of queueing into the next test's collectives.
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_group_depth = 0;
    g_queue.clear();
    return 2;  // ncclSystemError
  }
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_group_depth == 0) return k_invalid_usage;
  if (--g_group_depth > 0) return k_success;
  return execute_queue();
}

int ncclAllReduce(const void* send, void* recv, std::size_t count, int datatype, int op, FakeComm* comm, void*) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (const int result = static_cast<int>(number("allreduce_result", 0)); result != k_success) return result;
  if (datatype != 7 || op != 0 || comm == nullptr) return k_invalid_argument;  // ncclFloat32, ncclSum
  g_queue.push_back({static_cast<const float*>(send), static_cast<float*>(recv), count, comm->rank});
  // Outside a group every rank's call must come from its own thread; the sweep always groups them.
  if (g_group_depth == 0 && static_cast<int>(g_queue.size()) == comm->nranks) return execute_queue();
  return k_success;
}

unsigned long long fake_nccl_allreduce_count() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_sizes.size();
}

unsigned long long fake_nccl_aborted_comms() { return g_aborted.load(); }

unsigned long long fake_nccl_allreduce_bytes(unsigned long long index) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return index < g_sizes.size() ? g_sizes[index] : 0;
}

}  // extern "C"
