// /etc/gpuenv/watch.toml's [watch] table, durations, the listen address (loopback only) and the checks that refuse a
// setting that cannot work: each error names the file, the key and the fix.

#include "watch/settings.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "system/system.hpp"
#include "watch/publisher.hpp"

using gpuenv::watch::WatchSettings;
using namespace std::chrono_literals;

TEST_CASE("durations", "[watch]") {
  CHECK(gpuenv::watch::parse_duration("10s") == 10s);
  CHECK(gpuenv::watch::parse_duration("500ms") == 500ms);
  CHECK(gpuenv::watch::parse_duration("5m") == 5min);
  CHECK(gpuenv::watch::parse_duration("6h") == 6h);
  CHECK(gpuenv::watch::parse_duration("7d") == 168h);
  CHECK(gpuenv::watch::parse_duration("15") == 15s);
  CHECK(gpuenv::watch::parse_duration("1.5s") == 1500ms);
  CHECK_FALSE(gpuenv::watch::parse_duration("soon"));
  CHECK_FALSE(gpuenv::watch::parse_duration("10 parsecs"));
  CHECK_FALSE(gpuenv::watch::parse_duration(""));
}

TEST_CASE("the settings file over the defaults", "[watch]") {
  const auto settings = gpuenv::watch::apply_settings_file(WatchSettings{}, R"([watch]
interval = "30s"
db = "/srv/gpuenv/watch.db"
listen = "127.0.0.1:9835"
cloud_metadata = true
on_interruption = ["/usr/local/bin/checkpoint", "--now"]
slurm_drain = false
azure_acknowledge = true
)",
                                                           "/etc/gpuenv/watch.toml");
  REQUIRE(settings);
  CHECK(settings->interval == 30s);
  CHECK(settings->db == "/srv/gpuenv/watch.db");
  CHECK(settings->listen == "127.0.0.1:9835");
  CHECK(settings->cloud_metadata);
  CHECK(settings->on_interruption == std::vector<std::string>{"/usr/local/bin/checkpoint", "--now"});
  CHECK_FALSE(settings->slurm_drain);
  CHECK(settings->azure_acknowledge);
  CHECK(settings->prometheus_file.empty());  // not in the file: the default stays
  CHECK(gpuenv::watch::validate(*settings));
  const auto empty = gpuenv::watch::apply_settings_file(WatchSettings{}, "", "/etc/gpuenv/watch.toml");
  REQUIRE(empty);
  CHECK(empty->interval == 10s);
}

TEST_CASE("settings errors name the file, the key and the fix", "[watch]") {
  const auto typo = gpuenv::watch::apply_settings_file(WatchSettings{}, "[watch]\nintreval = \"5s\"\n", "/etc/w.toml");
  REQUIRE_FALSE(typo);
  CHECK_THAT(typo.error().message, Catch::Contains("/etc/w.toml"));
  CHECK_THAT(typo.error().message, Catch::Contains("intreval"));
  const auto type =
      gpuenv::watch::apply_settings_file(WatchSettings{}, "[watch]\ncloud_metadata = \"yes\"\n", "w.toml");
  REQUIRE_FALSE(type);
  CHECK_THAT(type.error().message, Catch::Contains("`cloud_metadata` must be true or false"));
  const auto duration =
      gpuenv::watch::apply_settings_file(WatchSettings{}, "[watch]\ninterval = \"often\"\n", "w.toml");
  REQUIRE_FALSE(duration);
  CHECK_THAT(duration.error().message, Catch::Contains("is not a duration"));
  const auto syntax = gpuenv::watch::apply_settings_file(WatchSettings{}, "[watch\n", "w.toml");
  REQUIRE_FALSE(syntax);
  CHECK_THAT(syntax.error().message, Catch::Contains("w.toml:1"));
  const auto stray = gpuenv::watch::apply_settings_file(WatchSettings{}, "interval = \"5s\"\n", "w.toml");
  REQUIRE_FALSE(stray);
  CHECK_THAT(stray.error().remedy, Catch::Contains("[watch]"));
}

TEST_CASE("what cannot work is refused: a relative hook, a public listener, two exposition targets", "[watch]") {
  WatchSettings settings;
  settings.on_interruption = {"checkpoint"};
  const auto hook = gpuenv::watch::validate(settings);
  REQUIRE_FALSE(hook);
  CHECK_THAT(hook.error().remedy, Catch::Contains("never looks a hook up in a search path"));
  settings = WatchSettings{};
  settings.listen = "0.0.0.0:9835";
  CHECK_FALSE(gpuenv::watch::validate(settings));
  settings.listen = "10.0.0.5:9835";
  CHECK_FALSE(gpuenv::watch::validate(settings));
  for (const char* loopback : {"127.0.0.1:9835", "127.1.2.3:80", "[::1]:9835", "localhost:9835"}) {
    settings.listen = loopback;
    CHECK(gpuenv::watch::validate(settings));
  }
  settings.prometheus_file = "/var/lib/node_exporter/textfile/gpuenv-watch.prom";
  CHECK_FALSE(gpuenv::watch::validate(settings));
  settings = WatchSettings{};
  settings.cloud = "openstack";
  CHECK_FALSE(gpuenv::watch::validate(settings));
}

TEST_CASE("load_settings: the command line over the settings file, GPUENV_NVML_LIBRARY over both", "[watch]") {
  gpuenv::testing::FakeSystem system;
  system.files["/etc/gpuenv/watch.toml"] = "[watch]\ninterval = \"30s\"\ndb = \"/srv/watch.db\"\ncloud = \"gcp\"\n";
  system.env["GPUENV_NVML_LIBRARY"] = "/opt/nvml/libnvidia-ml.so.1";
  gpuenv::watch::SettingsOverrides overrides;
  overrides.interval = "5s";
  overrides.prometheus = "/var/lib/node_exporter/textfile/gpuenv-watch.prom";
  const auto settings = gpuenv::watch::load_settings(system, overrides);
  REQUIRE(settings);
  CHECK(settings->interval == 5s);         // the command line wins
  CHECK(settings->db == "/srv/watch.db");  // the file where the command line says nothing
  CHECK(settings->cloud == "gcp");
  CHECK(settings->prometheus_file == "/var/lib/node_exporter/textfile/gpuenv-watch.prom");
  CHECK(settings->nvml_library == "/opt/nvml/libnvidia-ml.so.1");

  // No file: the defaults. A named file that is missing, a bad duration or a setting that cannot work: an error.
  gpuenv::testing::FakeSystem bare;
  const auto defaults = gpuenv::watch::load_settings(bare, {});
  REQUIRE(defaults);
  CHECK(defaults->interval == 10s);
  CHECK(defaults->db == gpuenv::watch::k_default_db);
  gpuenv::watch::SettingsOverrides named;
  named.config = "/srv/missing.toml";
  named.config_given = true;
  CHECK_FALSE(gpuenv::watch::load_settings(bare, named));
  gpuenv::watch::SettingsOverrides bad;
  bad.interval = "soon";
  const auto refused = gpuenv::watch::load_settings(bare, bad);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("--interval soon: not a duration"));
  gpuenv::watch::SettingsOverrides both;
  both.prometheus = "/tmp/x.prom";
  both.listen = "127.0.0.1:9835";
  CHECK_FALSE(gpuenv::watch::load_settings(bare, both));
}

TEST_CASE("the publisher writes the rendered text atomically to the textfile", "[watch]") {
  gpuenv::testing::FakeSystem system;
  gpuenv::watch::Publisher publisher(system, [](const gpuenv::watch::Snapshot& snapshot) {
    return "gpuenv_watch_interval_seconds " + std::to_string(snapshot.interval_ms / 1000) + "\n";
  });
  WatchSettings settings;
  settings.prometheus_file = "/var/lib/node_exporter/textfile/gpuenv-watch.prom";
  REQUIRE(publisher.configure(settings));
  CHECK(publisher.port() == 0);
  gpuenv::watch::Snapshot snapshot;
  snapshot.interval_ms = 10'000;
  std::vector<std::string> logged;
  const gpuenv::watch::LogSink log = [&logged](int, const std::string& line) { logged.push_back(line); };
  publisher.publish(snapshot, log);
  CHECK(system.written.at(settings.prometheus_file) == "gpuenv_watch_interval_seconds 10\n");
  CHECK(logged.empty());
  // No target: nothing rendered, nothing written.
  system.written.clear();
  REQUIRE(publisher.configure(WatchSettings{}));
  publisher.publish(snapshot, log);
  CHECK(system.written.empty());
}

// The hook runs as root: like every path root loads or runs because a setting named it (docs/security.md "Named
// files", System::trust_problem), it must be one only root can change; so must the settings file that names it and a
// library GPUENV_NVML_LIBRARY names.
TEST_CASE("load_settings refuses a hook, a settings file or an NVML library someone other than root could change",
          "[watch]") {
  gpuenv::testing::FakeSystem system;
  system.files["/etc/gpuenv/watch.toml"] = "[watch]\non_interruption = [\"/home/alice/checkpoint\", \"--now\"]\n";
  system.untrusted["/home/alice/checkpoint"] = "/home/alice is owned by uid 1000";
  const auto hook = gpuenv::watch::load_settings(system, {});
  REQUIRE_FALSE(hook);
  CHECK_THAT(hook.error().message, Catch::Contains("on_interruption = [\"/home/alice/checkpoint\", ...]: not trusted: "
                                                   "/home/alice is owned by uid 1000"));
  CHECK_THAT(hook.error().remedy, Catch::Contains("chown root:"));
  system.untrusted.clear();
  CHECK(gpuenv::watch::load_settings(system, {}));
  system.untrusted["/etc/gpuenv/watch.toml"] = "/etc/gpuenv is writable by group or others";
  CHECK_FALSE(gpuenv::watch::load_settings(system, {}));
  system.untrusted.clear();
  system.env["GPUENV_NVML_LIBRARY"] = "/tmp/libnvidia-ml.so.1";
  system.untrusted["/tmp/libnvidia-ml.so.1"] = "/tmp/libnvidia-ml.so.1 belongs to uid 1000";
  const auto library = gpuenv::watch::load_settings(system, {});
  REQUIRE_FALSE(library);
  CHECK_THAT(library.error().message, Catch::Contains("GPUENV_NVML_LIBRARY=/tmp/libnvidia-ml.so.1: not trusted"));
}

TEST_CASE("the hook's trust check is the real System's: a hook anyone can write is refused", "[watch]") {
  gpuenv::testing::fleet::TempDir dir;
  const std::string hook = (dir.path() / "checkpoint").string();
  std::ofstream(hook) << "#!/bin/sh\nexit 0\n";
  auto system = gpuenv::system::make_real_system();
  REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);
  REQUIRE(::chmod(hook.c_str(), 0755) == 0);
  CHECK(gpuenv::watch::hook_trusted(*system, {hook, "--now"}));
  REQUIRE(::chmod(hook.c_str(), 0777) == 0);  // anyone may replace what root would run
  const auto refused = gpuenv::watch::hook_trusted(*system, {hook, "--now"});
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains(hook + " is writable by everyone"));
}
