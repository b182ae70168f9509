#pragma once
// Spot and maintenance interruptions, as each cloud's link-local metadata service announces them (opt-in:
// `gpuenv watch --cloud-metadata`). The answers are parsed by pure functions from the documented formats; a
// watcher asks its cloud's service once per interval through System::http_request.
//
//   AWS   IMDSv2 (token first): /latest/meta-data/spot/instance-action (404 until a notice; then
//         {"action": "terminate"|"stop"|"hibernate", "time": "<RFC 3339 UTC>"}) and
//         /latest/meta-data/events/maintenance/scheduled (a JSON array of {Code, EventId, NotBefore, NotAfter,
//         Description, State}, times "21 Jan 2019 09:00:43 GMT", State "completed"/"canceled" when over).
//   GCP   Metadata-Flavor: Google; /computeMetadata/v1/instance/preempted ("TRUE" once preempted: 30 s to go) and
//         /computeMetadata/v1/instance/maintenance-event ("NONE", "MIGRATE_ON_HOST_MAINTENANCE",
//         "TERMINATE_ON_HOST_MAINTENANCE": a GPU VM gets one hour's notice).
//   Azure Metadata: true; /metadata/scheduledevents?api-version=2019-01-01 ({"DocumentIncarnation": n, "Events":
//         [{EventId, EventType, ResourceType, Resources, EventStatus, NotBefore}]}, NotBefore an RFC 1123 time), an
//         event acknowledged by POSTing {"StartRequests": [{"EventId": id}]}; it applies to the VMs named in
//         Resources only (this VM's name: /metadata/instance/compute/name).
// Sources, per cloud, in docs/watch.md "Interruptions".

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/cloud_metadata.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::watch {

/// One announced interruption.
struct Notice {
  std::string cloud;  ///< "aws", "gcp", "azure"
  std::string
      kind;        ///< as the cloud names it: "terminate", "system-reboot", "TERMINATE_ON_HOST_MAINTENANCE", "Preempt"
  std::string id;  ///< stable for the notice's life (the cloud's event id, or the kind and its time)
  std::optional<std::int64_t> deadline_ms;  ///< Unix ms when the interruption may begin; nullopt when not said
  std::string description;                  ///< one line for the event and the hook
  bool spot = false;                        ///< a spot/preemptible reclaim (rather than maintenance)
  /// The VM stops (or reboots): the flow drains, removes the marker and runs the hook. False for a GCP live
  /// migration, which the VM runs through (an event only).
  bool disruptive = true;
};

/// Unix seconds of "2026-12-01T03:00:00Z", "21 Jan 2019 09:00:43 GMT" or "Mon, 19 Sep 2016 18:29:47 GMT".
std::optional<std::int64_t> parse_notice_time(std::string_view text);

/// AWS spot/instance-action: a notice for a 200 answer, none for 404; an Error for anything else.
util::Expected<std::optional<Notice>> parse_aws_instance_action(const system::HttpResponse& answer);
/// AWS events/maintenance/scheduled: the events not completed or canceled.
util::Expected<std::vector<Notice>> parse_aws_scheduled_events(std::string_view body);
/// GCP instance/preempted: a notice when the body is TRUE, its deadline 30 s after `first_seen_ms`.
std::optional<Notice> parse_gcp_preempted(std::string_view body, std::int64_t first_seen_ms);
/// GCP instance/maintenance-event: a notice unless NONE; `first_seen_ms` is when this value was first seen (the
/// deadline counts from it: one hour for TERMINATE, 60 s for MIGRATE).
std::optional<Notice> parse_gcp_maintenance_event(std::string_view body, std::int64_t first_seen_ms);
/// Azure scheduledevents: Preempt, Reboot, Redeploy and Terminate events that name `vm_name` in Resources (Freeze,
/// a pause of seconds, is left out).
util::Expected<std::vector<Notice>> parse_azure_scheduled_events(std::string_view body, const std::string& vm_name);
/// The POST body that acknowledges Azure event `event_id`.
std::string azure_start_request(const std::string& event_id);

/// One cloud's metadata service, asked at each interval.
class InterruptionWatcher {
 public:
  /// `cloud` is "aws", "gcp" or "azure"; `endpoint` the service's address (a loopback server in tests).
  InterruptionWatcher(std::string cloud, probe::MetadataEndpoint endpoint);
  /// The clouds with an interruption service gpuenv knows.
  static bool supported(const std::string& cloud);

  /// The notices active now; an Error when the service cannot be asked or answers what the formats above are not.
  util::Expected<std::vector<Notice>> poll(system::System& system, std::int64_t now_ms,
                                           std::chrono::milliseconds timeout);
  /// Tells Azure to go ahead with `notice` now (gpuenv does so only when configured to: it applies to every VM the
  /// event names). An input Error for other clouds.
  util::Expected<util::Ok> acknowledge(system::System& system, const Notice& notice, std::chrono::milliseconds timeout);

  const std::string& cloud() const { return m_cloud; }

 private:
  util::Expected<system::HttpResponse> get(system::System& system, system::HttpRequest request,
                                           std::chrono::milliseconds timeout);
  std::string m_cloud;
  probe::MetadataEndpoint m_endpoint;
  std::string m_aws_token;
  std::chrono::steady_clock::time_point m_aws_token_expires{};
  std::string m_azure_vm_name;
  std::string m_gcp_maintenance;                         ///< the last maintenance-event value and...
  std::int64_t m_gcp_maintenance_since_ms = 0;           ///< ...when it was first seen
  std::optional<std::int64_t> m_gcp_preempted_since_ms;  ///< when instance/preempted was first seen TRUE
};

}  // namespace gpuenv::watch
