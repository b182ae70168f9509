// The real System's command runner under faults: a command that hangs, floods its output, dies by a signal, prints
// nothing, or leaves a grandchild holding its pipes. Each returns within its timeout (plus a little) with a result
// that says what happened; none hangs the caller or takes its memory.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "system/system.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using gpuenv::system::CommandResult;
using gpuenv::system::k_command_output_cap;

struct Timed {
  CommandResult result;
  Clock::duration elapsed;
};

Timed run_timed(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  auto real = gpuenv::system::make_real_system();
  const auto start = Clock::now();
  CommandResult result = real->run(argv, timeout);
  return {std::move(result), Clock::now() - start};
}

}  // namespace

TEST_CASE("command runner: output past 16 MiB is read and dropped, and the result says it was cut",
          "[system][faults]") {
  const Timed run = run_timed({"head", "-c", "20971520", "/dev/zero"}, 30s);  // 20 MiB
  CHECK(run.result.exit_code == 0);
  CHECK_FALSE(run.result.timed_out);
  CHECK(run.result.out.size() == k_command_output_cap);
  CHECK(run.result.truncated);
}

TEST_CASE("command runner: a flood that never ends is killed at the timeout", "[system][faults][system-test]") {
  const Timed run = run_timed({"yes"}, 1000ms);
  CHECK(run.result.timed_out);
  CHECK(run.result.exit_code == -1);
  CHECK(run.elapsed >= 1000ms);  // returned at all: a runner that kept reading the flood would never return
}

TEST_CASE("command runner: a command that hangs is killed at the timeout", "[system][faults]") {
  const Timed run = run_timed({"sleep", "30"}, 500ms);
  CHECK(run.result.timed_out);
  CHECK(run.elapsed < 15s);  // half the sleep: a runner that waited for it would take 30 s
}

TEST_CASE("command runner: a command killed by a signal says which signal", "[system][faults]") {
  const Timed run = run_timed({"sh", "-c", "kill -KILL $$"}, 10s);
  CHECK_FALSE(run.result.timed_out);
  CHECK(run.result.signal == 9);
  CHECK(run.result.exit_code == -1);  // not an exit code: 9 would read as "exited with 9"
}

TEST_CASE("command runner: a command that prints nothing has empty output", "[system][faults]") {
  const Timed run = run_timed({"true"}, 10s);
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.out.empty());
  CHECK(run.result.err.empty());
  CHECK_FALSE(run.result.truncated);
}

TEST_CASE("command runner: a grandchild holding stdout open does not hold the caller past the timeout",
          "[system][faults][system-test]") {
  // The child exits at once; the background sleep keeps the pipe's write end for 30 s.
  const Timed run = run_timed({"sh", "-c", "sleep 30 & echo started"}, 1500ms);
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.out == "started\n");
  CHECK(run.elapsed < 15s);  // half the sleep: a runner that waited for the pipe's end would take 30 s
}
