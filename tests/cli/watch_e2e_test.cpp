// `gpuenv watch` and `gpuenv events` as the built binary runs them, on the fake libnvidia-ml: intervals stored and
// exposed (the textfile checked by the real promtool, the loopback listener by an HTTP client), the settings file and
// its errors, SIGHUP and SIGTERM sent to a running watch, and the events listed as JSON.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/text_files.hpp"
#include "system/http.hpp"
#include "util/strings.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::read_text;
using gpuenv::testing::run_gpuenv;
using gpuenv::testing::fleet::promtool_problems;
using gpuenv::testing::fleet::run_tool;
using gpuenv::testing::fleet::TempDir;

gpuenv::testing::EnvironmentChanges fake_nvml(const std::string& conf) {
  return {{"GPUENV_NVML_LIBRARY", std::string(GPUENV_FAKE_NVML_LIBRARY)},
          {"GPUENV_FAKE_NVML", gpuenv::testing::fixture_path("nvml/" + conf)},
          {"JOURNAL_STREAM", std::nullopt}};
}

std::string sqlite3(const std::string& db, const std::string& sql) {
  const auto result = run_tool({"sqlite3", db, sql});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return std::string(gpuenv::util::trim(result.out));
}

/// `gpuenv watch ...` started in the background (posix_spawn, no shell), stderr to a file; killed if still running.
class BackgroundWatch {
 public:
  BackgroundWatch(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<std::string> argv{GPUENV_BINARY, "watch"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (std::string& arg : argv) pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    REQUIRE(::posix_spawn(&m_pid, GPUENV_BINARY, &actions, nullptr, pointers.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~BackgroundWatch() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }
  void signal(int number) const { ::kill(m_pid, number); }
  /// The exit code once it exits within `limit`, or -1.
  int wait(std::chrono::seconds limit) {
    for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t m_pid = -1;
};

/// Waits until `ready` holds (polled every 50 ms), at most `limit`.
template <typename Ready>
bool eventually(Ready ready, std::chrono::seconds limit = std::chrono::seconds(20)) {
  for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

/// Sets the fake's fixture and library for this process (and so for the children it spawns) for a scope.
struct FakeNvmlEnvironment {
  explicit FakeNvmlEnvironment(const std::string& conf) {
    ::setenv("GPUENV_NVML_LIBRARY", GPUENV_FAKE_NVML_LIBRARY, 1);
    ::setenv("GPUENV_FAKE_NVML", conf.c_str(), 1);
    ::unsetenv("JOURNAL_STREAM");
  }
  ~FakeNvmlEnvironment() {
    ::unsetenv("GPUENV_NVML_LIBRARY");
    ::unsetenv("GPUENV_FAKE_NVML");
  }
};

}  // namespace

TEST_CASE("watch: three intervals stored and exposed, promtool accepts the textfile, events as JSON",
          "[cli][watch][system-test]") {
  TempDir dir;
  const std::string db = (dir.path() / "watch.db").string();
  const fs::path prom = dir.path() / "watch.prom";
  const fs::path config = dir.path() / "watch.toml";
  gpuenv::testing::write_text(config, "[watch]\ninterval = \"50ms\"\nslurm_drain = false\n");
  const auto run =
      run_gpuenv({"watch", "--config", config.string(), "--count", "3", "--db", db, "--prometheus", prom.string()},
                 fake_nvml("healthy-8xh100.conf"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(gpuenv::util::contains(run.err, "gpuenv watch: watching every 50 ms"));
  CHECK(sqlite3(db, "SELECT count(*) FROM interval") == "3");
  CHECK(sqlite3(db, "SELECT count(*) FROM sample") == "24");
  CHECK(sqlite3(db, "PRAGMA integrity_check") == "ok");
  const std::string text = read_text(prom);
  CHECK(gpuenv::util::contains(text,
                               "gpuenv_gpu_temperature_celsius{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-"
                               "000000000000\"} 30\n"));
  CHECK(gpuenv::util::contains(text, "\ngpuenv_gpus_visible 8\n"));
  CHECK(gpuenv::util::contains(text, "\ngpuenv_watch_nvml_up 1\n"));
  CHECK(gpuenv::util::contains(text, "\ngpuenv_watch_history_up 1\n"));
  if (gpuenv::testing::fleet::have_tool("promtool")) {
    CHECK(promtool_problems(prom).empty());
  } else {
    WARN("promtool not installed: the exposition's lint is not checked (scripts/bootstrap installs prometheus)");
  }
  // The textfile is the last interval's, and that interval is in the database (publish comes after the commit).
  const std::string stamp = "gpuenv_watch_last_sample_timestamp_seconds ";
  const std::size_t at = text.find("\n" + stamp);
  REQUIRE(at != std::string::npos);
  const double published = std::stod(text.substr(at + 1 + stamp.size()));
  CHECK(std::stoll(sqlite3(db, "SELECT max(time_ms) FROM interval")) == static_cast<long long>(published * 1000 + 0.5));

  const auto events = run_gpuenv({"events", "--db", db, "--json", "--since", "1h"});
  REQUIRE(events.exit_code == 0);
  const auto parsed = nlohmann::json::parse(events.out);
  CHECK(parsed.is_array());  // a healthy node: no event
  CHECK(parsed.empty());
}

TEST_CASE("watch: bad settings are exit 2 with the file, the key and the fix", "[cli][watch]") {
  TempDir dir;
  const fs::path config = dir.path() / "watch.toml";
  gpuenv::testing::write_text(config, "[watch]\ninterval = \"10s\"\nintervall = \"5s\"\n");
  auto unknown = run_gpuenv({"watch", "--config", config.string(), "--count", "1", "--db", "none"});
  CHECK(unknown.exit_code == 2);
  CHECK(gpuenv::util::contains(unknown.err, config.string()));
  CHECK(gpuenv::util::contains(unknown.err, "intervall"));
  gpuenv::testing::write_text(config, "[watch]\non_interruption = [\"checkpoint\", \"--now\"]\n");
  auto relative = run_gpuenv({"watch", "--config", config.string(), "--count", "1", "--db", "none"});
  CHECK(relative.exit_code == 2);
  CHECK(gpuenv::util::contains(relative.err, "must be an absolute path"));
  auto open = run_gpuenv({"watch", "--config", "/nonexistent/watch.toml", "--count", "1"});
  CHECK(open.exit_code == 2);
  auto wide = run_gpuenv({"watch", "--config", config.string(), "--listen", "0.0.0.0:9400", "--count", "1"});
  CHECK(wide.exit_code == 2);
  CHECK(gpuenv::util::contains(wide.err, "only a loopback address is served"));
  gpuenv::testing::write_text(config, "");
  auto tiny = run_gpuenv({"watch", "--interval", "1ms", "--count", "1", "--db", "none", "--config", config.string()});
  CHECK(tiny.exit_code == 2);
  CHECK(gpuenv::util::contains(tiny.err, "at least 10ms"));
}

TEST_CASE("watch: SIGHUP reloads the settings file, SIGTERM stops after the interval in hand is stored",
          "[cli][watch][system-test]") {
  TempDir dir;
  const FakeNvmlEnvironment fake(gpuenv::testing::fixture_path("nvml/healthy-8xh100.conf"));
  const std::string db = (dir.path() / "watch.db").string();
  const fs::path first = dir.path() / "first.prom";
  const fs::path second = dir.path() / "second.prom";
  const fs::path config = dir.path() / "watch.toml";
  const fs::path log = dir.path() / "watch.log";
  gpuenv::testing::write_text(config, "[watch]\ninterval = \"100ms\"\nprometheus = \"" + first.string() + "\"\n");
  BackgroundWatch watch({"--config", config.string(), "--db", db}, log);
  REQUIRE(eventually([&] { return fs::exists(first); }));
  gpuenv::testing::write_text(config, "[watch]\ninterval = \"100ms\"\nprometheus = \"" + second.string() + "\"\n");
  watch.signal(SIGHUP);
  REQUIRE(eventually([&] { return fs::exists(second); }));
  CHECK(gpuenv::util::contains(read_text(log), "settings reloaded"));
  watch.signal(SIGTERM);
  CHECK(watch.wait(std::chrono::seconds(10)) == 0);
  CHECK(gpuenv::util::contains(read_text(log), "stopping"));
  // The last interval exposed is in the database: nothing was lost on the way out.
  const std::string text = read_text(second);
  const std::string stamp = "\ngpuenv_watch_last_sample_timestamp_seconds ";
  const std::size_t at = text.find(stamp);
  REQUIRE(at != std::string::npos);
  const double published = std::stod(text.substr(at + stamp.size()));
  CHECK(std::stoll(sqlite3(db, "SELECT max(time_ms) FROM interval")) >= static_cast<long long>(published * 1000));
  CHECK(sqlite3(db, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("watch: --listen serves the metrics on loopback (GET), refuses other methods", "[cli][watch][system-test]") {
  TempDir dir;
  const FakeNvmlEnvironment fake(gpuenv::testing::fixture_path("nvml/healthy-8xh100.conf"));
  // A port that was free a moment ago (bound to 0, then closed).
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
  const unsigned port = ntohs(address.sin_port);
  ::close(probe);
  const fs::path log = dir.path() / "watch.log";
  const fs::path config = dir.path() / "watch.toml";
  gpuenv::testing::write_text(config, "");
  BackgroundWatch watch({"--config", config.string(), "--db", "none", "--interval", "100ms", "--listen",
                         "127.0.0.1:" + std::to_string(port)},
                        log);
  gpuenv::system::HttpResponse page;
  REQUIRE(eventually([&] {
    auto answer = gpuenv::system::send_http_request({"127.0.0.1", port, "GET", "/metrics", {}, {}},
                                                    std::chrono::milliseconds(1000));
    if (answer && gpuenv::util::contains(answer->body, "gpuenv_gpus_visible 8")) page = *answer;
    return answer && page.status == 200;
  }));
  CHECK(gpuenv::util::contains(page.body, "# TYPE gpuenv_gpu_idle_seconds gauge"));
  auto post = gpuenv::system::send_http_request({"127.0.0.1", port, "POST", "/metrics", {}, {}},
                                                std::chrono::milliseconds(1000));
  REQUIRE(post);
  CHECK(post->status == 405);
  watch.signal(SIGTERM);
  CHECK(watch.wait(std::chrono::seconds(10)) == 0);
}

TEST_CASE("watch: killed with SIGKILL at random points, the database stays whole and keeps every exposed interval",
          "[cli][watch][system-test]") {
  // The bench (scripts/bench watch) does this 200 times; here 15 kills keep the suite short.
  TempDir dir;
  const FakeNvmlEnvironment fake(gpuenv::testing::fixture_path("nvml/healthy-8xh100.conf"));
  const std::string db = (dir.path() / "watch.db").string();
  const fs::path prom = dir.path() / "watch.prom";
  const fs::path config = dir.path() / "watch.toml";
  gpuenv::testing::write_text(config, "");
  std::srand(28);
  long long rows_before = 0;
  for (int kill = 0; kill < 15; ++kill) {
    fs::remove(prom);
    BackgroundWatch watch(
        {"--config", config.string(), "--db", db, "--interval", "10ms", "--prometheus", prom.string()},
        dir.path() / "watch.log");
    REQUIRE(eventually([&] { return fs::exists(prom); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::rand() % 200));
    watch.signal(SIGKILL);
    REQUIRE(watch.wait(std::chrono::seconds(10)) == 128 + SIGKILL);
    INFO("kill " << kill);
    CHECK(sqlite3(db, "PRAGMA integrity_check") == "ok");
    // Every interval exposed was committed before it was exposed: the last one must be there.
    const std::string text = read_text(prom);
    const std::string stamp = "\ngpuenv_watch_last_sample_timestamp_seconds ";
    const std::size_t at = text.find(stamp);
    REQUIRE(at != std::string::npos);
    const auto published = static_cast<long long>(std::stod(text.substr(at + stamp.size())) * 1000 + 0.5);
    CHECK(sqlite3(db, "SELECT count(*) FROM interval WHERE time_ms = " + std::to_string(published)) == "1");
    const long long rows = std::stoll(sqlite3(db, "SELECT count(*) FROM interval"));
    CHECK(rows > rows_before);  // what earlier runs stored is still there
    rows_before = rows;
  }
}
