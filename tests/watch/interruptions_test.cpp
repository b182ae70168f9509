// Interruption notices: each cloud's documented answers parsed (the examples are the ones the sources print), and
// the watcher against a loopback metadata server on 127.0.0.1 that answers each cloud's paths as the service does,
// through the real HTTP client.
//   AWS:   aws/aws-node-termination-handler @ 0624ff6a pkg/ec2metadata/ec2metadata.go (InstanceAction {action, time};
//          404 is "normal" for spot/instance-action; the scheduled-events example) and @ 16300b00
//          pkg/monitor/scheduledevent/scheduled-event-monitor.go (date format "2 Jan 2006 15:04:05 GMT"; states
//          "completed" and "canceled" are over).
//   GCP:   cloud.google.com/compute/docs/metadata/getting-live-migration-notice and .../gpus/gpu-host-maintenance
//          (maintenance-event NONE | MIGRATE_ON_HOST_MAINTENANCE | TERMINATE_ON_HOST_MAINTENANCE, one hour's notice
//          for GPU VMs); .../instances/spot (instance/preempted TRUE, 30 s).
//   Azure: MicrosoftDocs/azure-docs @ 0076a623 articles/virtual-machines/linux/scheduled-events.md (the Events
//          document, EventType values, "check the Resources field", POST {"StartRequests": [{"EventId": ...}]}).

#include "watch/interruptions.hpp"

#include <catch2/catch.hpp>

#include "support/metadata_server.hpp"

using gpuenv::system::HttpResponse;
using gpuenv::testing::MetadataServer;
using gpuenv::watch::InterruptionWatcher;
using gpuenv::watch::Notice;
using gpuenv::watch::parse_notice_time;

TEST_CASE("notice times in the three clouds' formats", "[watch]") {
  CHECK(parse_notice_time("2017-09-18T08:22:00Z") == 1505722920);           // AWS spot "time"
  CHECK(parse_notice_time("21 Jan 2019 09:00:43 GMT") == 1548061243);       // AWS scheduled NotBefore
  CHECK(parse_notice_time("Mon, 19 Sep 2016 18:29:47 GMT") == 1474309787);  // Azure NotBefore
  CHECK_FALSE(parse_notice_time("soon"));
  CHECK_FALSE(parse_notice_time("21 Foo 2019 09:00:43 GMT"));
}

TEST_CASE("AWS: spot/instance-action is a notice only when it answers 200", "[watch]") {
  auto none = gpuenv::watch::parse_aws_instance_action(HttpResponse{404, "<html>Not Found</html>"});
  REQUIRE(none);
  CHECK_FALSE(*none);
  auto notice = gpuenv::watch::parse_aws_instance_action(
      HttpResponse{200, R"({"action": "terminate", "time": "2017-09-18T08:22:00Z"})"});
  REQUIRE(notice);
  REQUIRE(*notice);
  CHECK((*notice)->kind == "terminate");
  CHECK((*notice)->spot);
  CHECK((*notice)->deadline_ms == 1505722920000);
  CHECK_FALSE(gpuenv::watch::parse_aws_instance_action(HttpResponse{500, ""}));
  CHECK_FALSE(gpuenv::watch::parse_aws_instance_action(HttpResponse{200, "{}"}));
}

TEST_CASE("AWS: scheduled events that are not over", "[watch]") {
  const std::string body = R"([
    {"NotBefore" : "21 Jan 2019 09:00:43 GMT", "Code" : "system-reboot", "Description" : "scheduled reboot",
     "EventId" : "instance-event-0d59937288b749b32", "NotAfter" : "21 Jan 2019 09:17:23 GMT", "State" : "active"},
    {"NotBefore" : "1 Jan 2019 09:00:00 GMT", "Code" : "instance-stop", "Description" : "done",
     "EventId" : "instance-event-0000000000000000a", "NotAfter" : "1 Jan 2019 10:00:00 GMT", "State" : "completed"}])";
  auto events = gpuenv::watch::parse_aws_scheduled_events(body);
  REQUIRE(events);
  REQUIRE(events->size() == 1);
  CHECK(events->front().id == "instance-event-0d59937288b749b32");
  CHECK(events->front().kind == "system-reboot");
  CHECK(events->front().deadline_ms == 1548061243000);
  CHECK_FALSE(events->front().spot);
  CHECK_FALSE(gpuenv::watch::parse_aws_scheduled_events("{}"));
}

TEST_CASE("GCP: preempted and maintenance-event", "[watch]") {
  CHECK_FALSE(gpuenv::watch::parse_gcp_preempted("FALSE", 1000));
  const auto preempted = gpuenv::watch::parse_gcp_preempted("TRUE", 1000);
  REQUIRE(preempted);
  CHECK(preempted->deadline_ms == 31000);
  CHECK_FALSE(gpuenv::watch::parse_gcp_maintenance_event("NONE", 1000));
  const auto terminate = gpuenv::watch::parse_gcp_maintenance_event("TERMINATE_ON_HOST_MAINTENANCE", 1000);
  REQUIRE(terminate);
  CHECK(terminate->deadline_ms == 1000 + 3600 * 1000);
  // The id is the notice's content, not when this process first saw it: a watch restarted while the notice is up
  // (first seen later) finds the id it already handled.
  const auto after_restart = gpuenv::watch::parse_gcp_maintenance_event("TERMINATE_ON_HOST_MAINTENANCE", 7'201'000);
  REQUIRE(after_restart);
  CHECK(after_restart->id == terminate->id);
  CHECK(terminate->id == "maintenance-TERMINATE_ON_HOST_MAINTENANCE");
}

TEST_CASE("Azure: the events that name this VM, Freeze left out", "[watch]") {
  const std::string body = R"({"DocumentIncarnation": 2, "Events": [
    {"EventId": "602d9444-d2cd-49c7-8624-8643e7171297", "EventType": "Preempt", "ResourceType": "VirtualMachine",
     "Resources": ["gpu-node-7"], "EventStatus": "Scheduled", "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"},
    {"EventId": "f020ba2e-3bc0-4c40-a10b-86575a9eabd5", "EventType": "Reboot", "ResourceType": "VirtualMachine",
     "Resources": ["FrontEnd_IN_0", "BackEnd_IN_0"], "EventStatus": "Scheduled", "NotBefore": ""},
    {"EventId": "aaaa", "EventType": "Freeze", "ResourceType": "VirtualMachine", "Resources": ["gpu-node-7"],
     "EventStatus": "Scheduled", "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"}]})";
  auto events = gpuenv::watch::parse_azure_scheduled_events(body, "gpu-node-7");
  REQUIRE(events);
  REQUIRE(events->size() == 1);
  CHECK(events->front().kind == "Preempt");
  CHECK(events->front().spot);
  CHECK(events->front().deadline_ms == 1474309787000);
  CHECK(gpuenv::watch::azure_start_request("f020ba2e") == R"({"StartRequests":[{"EventId":"f020ba2e"}]})");
}

TEST_CASE("the watcher asks AWS with an IMDSv2 token, through the real client", "[watch]") {
  MetadataServer server;
  server.answer("PUT /latest/api/token", 200, "TOKEN-1");
  server.answer("GET /latest/meta-data/spot/instance-action", 404, "Not Found");
  server.answer("GET /latest/meta-data/events/maintenance/scheduled", 200, "[]");
  auto system = gpuenv::system::make_real_system();
  InterruptionWatcher watcher("aws", {"127.0.0.1", server.port()});
  auto quiet = watcher.poll(*system, 0, std::chrono::milliseconds(2000));
  REQUIRE(quiet);
  CHECK(quiet->empty());
  server.answer("GET /latest/meta-data/spot/instance-action", 200,
                R"({"action": "stop", "time": "2026-12-03T15:02:00Z"})");
  auto notices = watcher.poll(*system, 0, std::chrono::milliseconds(2000));
  REQUIRE(notices);
  REQUIRE(notices->size() == 1);
  CHECK(notices->front().kind == "stop");
  const auto requests = server.requests();
  CHECK(std::count_if(requests.begin(), requests.end(), [](const auto& r) {
          return r.line == "PUT /latest/api/token";
        }) == 1);  // the token is kept for its life
  for (const auto& request : requests) {
    if (request.line.rfind("GET", 0) == 0) CHECK(request.header("x-aws-ec2-metadata-token") == "TOKEN-1");
  }
}

TEST_CASE("the watcher asks GCP with Metadata-Flavor and Azure with Metadata, and acknowledges on Azure", "[watch]") {
  auto system = gpuenv::system::make_real_system();
  {
    MetadataServer server;
    server.answer("GET /computeMetadata/v1/instance/preempted", 200, "FALSE");
    server.answer("GET /computeMetadata/v1/instance/maintenance-event", 200, "TERMINATE_ON_HOST_MAINTENANCE");
    InterruptionWatcher watcher("gcp", {"127.0.0.1", server.port()});
    auto notices = watcher.poll(*system, 5000, std::chrono::milliseconds(2000));
    REQUIRE(notices);
    REQUIRE(notices->size() == 1);
    CHECK(notices->front().deadline_ms == 5000 + 3600 * 1000);
    auto later = watcher.poll(*system, 65000, std::chrono::milliseconds(2000));
    REQUIRE(later);
    CHECK(later->front().id == notices->front().id);  // the same notice: its deadline counts from when it was seen
    for (const auto& request : server.requests()) CHECK(request.header("metadata-flavor") == "Google");
  }
  {
    MetadataServer server;
    server.answer("GET /metadata/instance/compute/name?api-version=2021-02-01&format=text", 200, "gpu-node-7");
    server.answer("GET /metadata/scheduledevents?api-version=2019-01-01", 200,
                  R"({"DocumentIncarnation": 1, "Events": [{"EventId": "E1", "EventType": "Terminate",
                      "ResourceType": "VirtualMachine", "Resources": ["gpu-node-7"], "EventStatus": "Scheduled",
                      "NotBefore": "Thu, 03 Dec 2026 15:10:00 GMT"}]})");
    server.answer("POST /metadata/scheduledevents?api-version=2019-01-01", 200, "");
    InterruptionWatcher watcher("azure", {"127.0.0.1", server.port()});
    auto notices = watcher.poll(*system, 0, std::chrono::milliseconds(2000));
    REQUIRE(notices);
    REQUIRE(notices->size() == 1);
    CHECK(notices->front().id == "E1");
    REQUIRE(watcher.acknowledge(*system, notices->front(), std::chrono::milliseconds(2000)));
    const auto requests = server.requests();
    REQUIRE(requests.back().line == "POST /metadata/scheduledevents?api-version=2019-01-01");
    CHECK(requests.back().body == R"({"StartRequests":[{"EventId":"E1"}]})");
    for (const auto& request : requests) CHECK(request.header("metadata") == "true");
  }
}

TEST_CASE("an unreachable metadata service is an Error, not a notice", "[watch]") {
  auto system = gpuenv::system::make_real_system();
  unsigned closed_port = 0;
  {
    MetadataServer server;
    closed_port = server.port();
  }
  InterruptionWatcher watcher("gcp", {"127.0.0.1", closed_port});
  CHECK_FALSE(watcher.poll(*system, 0, std::chrono::milliseconds(500)));
}
