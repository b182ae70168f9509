// DeadlineSystem on FakeSystem's clock: commands get min(their timeout, time left), nothing starts after the deadline,
// and what the deadline cut short is recorded. A hung command moves the fake clock by its timeout, so no test sleeps.

#include "system/deadline.hpp"

#include <catch2/catch.hpp>
#include <chrono>

#include "support/fake_system.hpp"

namespace {

using namespace std::chrono_literals;
using gpuenv::system::CommandResult;

CommandResult hung() {
  CommandResult result;
  result.timed_out = true;
  return result;
}

}  // namespace

TEST_CASE("deadline: every command hangs, yet the run ends at the deadline", "[system][faults][deadline]") {
  gpuenv::testing::FakeSystem fake;
  fake.commands["probe"] = hung();
  gpuenv::system::DeadlineSystem bounded(fake, fake.now() + 10s);
  for (int i = 0; i < 5; ++i) bounded.run({"probe"}, 4s);
  // 4 s, 4 s, then the 2 s left; the last two never start.
  CHECK(fake.command_timeouts == std::vector<std::chrono::milliseconds>{4s, 4s, 2s});
  CHECK(fake.commands_run.size() == 3);
  CHECK(fake.now() - std::chrono::steady_clock::time_point{} == 10s);
  CHECK(bounded.time_left() == 0ms);
  CHECK(bounded.cut_short() == std::vector<std::string>{"probe"});
}

TEST_CASE("deadline: a command that answers within its own timeout is not cut short", "[system][faults][deadline]") {
  gpuenv::testing::FakeSystem fake;
  fake.commands["fast"].exit_code = 0;
  fake.commands["slow --flag"] = hung();
  gpuenv::system::DeadlineSystem bounded(fake, fake.now() + 60s);
  CHECK(bounded.run({"fast"}, 5s).exit_code == 0);
  CHECK(bounded.run({"slow", "--flag"}, 5s).timed_out);  // its own timeout fired, not the deadline
  CHECK(bounded.cut_short().empty());
  CHECK(bounded.limit(10s) == 10s);
  CHECK(bounded.limit(90s) == 55s);
}

TEST_CASE("deadline: HTTP after the deadline is not sent", "[system][faults][deadline]") {
  gpuenv::testing::FakeSystem fake;
  fake.http_answers["GET /x"] = {200, "ok"};
  gpuenv::system::DeadlineSystem bounded(fake, fake.now() + 1s);
  gpuenv::system::HttpRequest request;
  request.host = "127.0.0.1";
  request.path = "/x";
  CHECK(bounded.http_request(request, 5s));
  fake.clock += 2s;
  CHECK_FALSE(bounded.http_request(request, 5s));
  CHECK(fake.http_requests.size() == 1);
  CHECK(bounded.cut_short() == std::vector<std::string>{"GET http://127.0.0.1/x"});
}

TEST_CASE("deadline: long arguments are elided from what is named", "[system][faults][deadline]") {
  CHECK(gpuenv::system::command_text({"python3", "-c", std::string(200, 'x')}) == "python3 -c ...");
  CHECK(gpuenv::system::command_text({"nvidia-smi", "-q", "-x"}) == "nvidia-smi -q -x");
}
