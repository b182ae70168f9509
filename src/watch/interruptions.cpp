#include "watch/interruptions.hpp"

#include <array>
#include <ctime>
#include <nlohmann/json.hpp>

#include "probe/kernel_log_window.hpp"
#include "util/strings.hpp"

namespace gpuenv::watch {
namespace {

using nlohmann::json;

constexpr std::int64_t k_second_ms = 1000;
/// GCP: a preempted Spot or preemptible VM gets 30 s before it is stopped (cloud.google.com/compute/docs/instances/
/// spot, "Preemption process"); a GPU VM gets a one-hour notice of TERMINATE_ON_HOST_MAINTENANCE, other VMs 60 s
/// (cloud.google.com/compute/docs/gpus/gpu-host-maintenance, .../metadata/getting-live-migration-notice).
constexpr std::int64_t k_gcp_preemption_ms = 30 * k_second_ms;
constexpr std::int64_t k_gcp_gpu_maintenance_ms = 3600 * k_second_ms;
constexpr std::int64_t k_gcp_migrate_ms = 60 * k_second_ms;
/// The AWS IMDSv2 session token's life gpuenv asks for (at most 21600 s).
constexpr int k_aws_token_seconds = 300;

std::optional<std::int64_t> time_ms(std::string_view text) {
  const auto seconds = parse_notice_time(text);
  if (!seconds) return std::nullopt;
  return *seconds * k_second_ms;
}

std::string string_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// "21 Jan 2019 09:00:43 GMT" or "Mon, 19 Sep 2016 18:29:47 GMT" (an optional weekday before the day).
std::optional<std::int64_t> day_month_year_seconds(std::string_view text) {
  static constexpr std::array<std::string_view, 12> k_months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (const std::size_t comma = text.find(", "); comma != std::string_view::npos && comma <= 4)
    text.remove_prefix(comma + 2);
  const std::vector<std::string_view> parts = util::split(util::trim(text), ' ');
  if (parts.size() != 5 || parts[4] != "GMT") return std::nullopt;
  std::tm tm{};
  const auto day = util::parse_int(parts[0]);
  const auto year = util::parse_int(parts[2]);
  int month = -1;
  for (std::size_t i = 0; i < k_months.size(); ++i) {
    if (parts[1] == k_months[i]) month = static_cast<int>(i);
  }
  const std::vector<std::string_view> clock = util::split(parts[3], ':');
  if (!day || !year || month < 0 || clock.size() != 3) return std::nullopt;
  const auto hour = util::parse_int(clock[0]), minute = util::parse_int(clock[1]), second = util::parse_int(clock[2]);
  if (!hour || !minute || !second || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  return static_cast<std::int64_t>(::timegm(&tm));
}

}  // namespace

std::optional<std::int64_t> parse_notice_time(std::string_view text) {
  text = util::trim(text);
  // RFC 3339 is probe's syslog stamp reader's first form (the year argument only serves BSD stamps).
  if (text.size() >= 19 && text[4] == '-') return probe::syslog_seconds(text, 1970);
  return day_month_year_seconds(text);
}

// ------------------------------------------------------------------------------------------------ AWS

util::Expected<std::optional<Notice>> parse_aws_instance_action(const system::HttpResponse& answer) {
  if (answer.status == 404) return std::optional<Notice>();  // no notice (aws-node-termination-handler: "normal")
  if (answer.status != 200)
    return util::Error::input("spot/instance-action answered HTTP " + std::to_string(answer.status));
  const json parsed = json::parse(answer.body, nullptr, false);
  if (!parsed.is_object()) return util::Error::input("spot/instance-action is not a JSON object");
  Notice notice;
  notice.cloud = "aws";
  notice.spot = true;
  notice.kind = string_member(parsed, "action");
  const std::string time = string_member(parsed, "time");
  if (notice.kind.empty() || time.empty())
    return util::Error::input("spot/instance-action lacks its action or time: " + answer.body.substr(0, 200));
  notice.deadline_ms = time_ms(time);
  notice.id = "spot-" + notice.kind + "-" + time;
  notice.description = "EC2 will " + notice.kind + " this spot instance at " + time;
  return std::optional<Notice>(notice);
}

util::Expected<std::vector<Notice>> parse_aws_scheduled_events(std::string_view body) {
  const json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_array()) return util::Error::input("events/maintenance/scheduled is not a JSON array");
  std::vector<Notice> out;
  for (const json& event : parsed) {
    if (!event.is_object()) continue;
    const std::string state = string_member(event, "State");
    if (state == "completed" || state == "canceled") continue;
    Notice notice;
    notice.cloud = "aws";
    notice.kind = string_member(event, "Code");
    notice.id = string_member(event, "EventId");
    const std::string not_before = string_member(event, "NotBefore");
    notice.deadline_ms = time_ms(not_before);
    if (notice.id.empty()) notice.id = notice.kind + "-" + not_before;
    notice.description =
        "EC2 scheduled " + notice.kind + " not before " + not_before + ": " + string_member(event, "Description");
    out.push_back(std::move(notice));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ GCP

std::optional<Notice> parse_gcp_preempted(std::string_view body, std::int64_t first_seen_ms) {
  if (util::trim(body) != "TRUE") return std::nullopt;
  Notice notice;
  notice.cloud = "gcp";
  notice.spot = true;
  notice.kind = "preempted";
  notice.id = "preempted";
  notice.deadline_ms = first_seen_ms + k_gcp_preemption_ms;
  notice.description = "Compute Engine is preempting this VM (30 s to stop)";
  return notice;
}

std::optional<Notice> parse_gcp_maintenance_event(std::string_view body, std::int64_t first_seen_ms) {
  const std::string value(util::trim(body));
  if (value.empty() || value == "NONE") return std::nullopt;
  Notice notice;
  notice.cloud = "gcp";
  notice.kind = value;
  // The id is the notice's content: the value stays the same from the notice until the maintenance is over and goes
  // back to NONE (cloud.google.com/compute/docs/metadata/getting-live-migration-notice), so a restart of watch in
  // between finds the notice it already handled. (The time it was first seen is watch's, not the notice's: it
  // changes with a restart.)
  notice.id = "maintenance-" + value;
  const bool terminate = value == "TERMINATE_ON_HOST_MAINTENANCE";
  notice.deadline_ms = first_seen_ms + (terminate ? k_gcp_gpu_maintenance_ms : k_gcp_migrate_ms);
  notice.description = terminate ? "Compute Engine will stop this VM for host maintenance (one hour's notice)"
                                 : "Compute Engine announces host maintenance: " + value;
  // "MIGRATE_ON_HOST_MAINTENANCE: ... live migrated" (cloud.google.com/compute/docs/metadata/getting-live-migration-
  // notice): the VM keeps running, so nothing is drained for it. (GPU VMs are not live-migrated: they get TERMINATE.)
  notice.disruptive = value != "MIGRATE_ON_HOST_MAINTENANCE";
  if (!notice.disruptive) notice.description = "Compute Engine will live-migrate this VM (it keeps running)";
  return notice;
}

// ------------------------------------------------------------------------------------------------ Azure

util::Expected<std::vector<Notice>> parse_azure_scheduled_events(std::string_view body, const std::string& vm_name) {
  const json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("Events") || !parsed["Events"].is_array())
    return util::Error::input("scheduledevents is not {\"Events\": [...]}");
  std::vector<Notice> out;
  for (const json& event : parsed["Events"]) {
    if (!event.is_object()) continue;
    const std::string type = string_member(event, "EventType");
    if (type != "Preempt" && type != "Reboot" && type != "Redeploy" && type != "Terminate") continue;
    bool ours = false;
    if (event.contains("Resources") && event["Resources"].is_array()) {
      for (const json& resource : event["Resources"])
        ours |= resource.is_string() && resource.get<std::string>() == vm_name;
    }
    if (!ours) continue;
    Notice notice;
    notice.cloud = "azure";
    notice.kind = type;
    notice.spot = type == "Preempt";
    notice.id = string_member(event, "EventId");
    const std::string not_before = string_member(event, "NotBefore");
    notice.deadline_ms = time_ms(not_before);
    notice.description = "Azure scheduled " + type + " (" + string_member(event, "EventStatus") + ")" +
                         (not_before.empty() ? std::string() : " not before " + not_before);
    out.push_back(std::move(notice));
  }
  return out;
}

std::string azure_start_request(const std::string& event_id) {
  return json{{"StartRequests", json::array({json{{"EventId", event_id}}})}}.dump();
}

// ------------------------------------------------------------------------------------------------ watcher

InterruptionWatcher::InterruptionWatcher(std::string cloud, probe::MetadataEndpoint endpoint)
    : m_cloud(std::move(cloud)), m_endpoint(std::move(endpoint)) {}

bool InterruptionWatcher::supported(const std::string& cloud) {
  return cloud == "aws" || cloud == "gcp" || cloud == "azure";
}

util::Expected<system::HttpResponse> InterruptionWatcher::get(system::System& system, system::HttpRequest request,
                                                              std::chrono::milliseconds timeout) {
  request.host = m_endpoint.host;
  request.port = m_endpoint.port;
  if (m_cloud == "gcp") request.headers.emplace_back("Metadata-Flavor", "Google");
  if (m_cloud == "azure") request.headers.emplace_back("Metadata", "true");
  if (m_cloud == "aws") {
    if (m_aws_token.empty() || system.now() >= m_aws_token_expires) {
      system::HttpRequest token{m_endpoint.host,
                                m_endpoint.port,
                                "PUT",
                                "/latest/api/token",
                                {{"X-aws-ec2-metadata-token-ttl-seconds", std::to_string(k_aws_token_seconds)}},
                                {}};
      GPUENV_TRY_ASSIGN(auto answer, system.http_request(token, timeout));
      if (answer.status != 200)
        return util::Error::input("the IMDSv2 token request answered HTTP " + std::to_string(answer.status));
      m_aws_token = std::string(util::trim(answer.body));
      // Renewed a minute early, so a request never carries a token that expires on its way.
      m_aws_token_expires = system.now() + std::chrono::seconds(k_aws_token_seconds - 60);
    }
    request.headers.emplace_back("X-aws-ec2-metadata-token", m_aws_token);
  }
  auto answer = system.http_request(request, timeout);
  if (answer && m_cloud == "aws" && answer->status == 401) m_aws_token.clear();  // expired early: next time anew
  return answer;
}

util::Expected<std::vector<Notice>> InterruptionWatcher::poll(system::System& system, std::int64_t now_ms,
                                                              std::chrono::milliseconds timeout) {
  std::vector<Notice> out;
  const auto ask = [&](const std::string& path) {
    return get(system, system::HttpRequest{{}, 0, "GET", path, {}, {}}, timeout);
  };
  if (m_cloud == "aws") {
    GPUENV_TRY_ASSIGN(auto action, ask("/latest/meta-data/spot/instance-action"));
    GPUENV_TRY_ASSIGN(auto notice, parse_aws_instance_action(action));
    if (notice) out.push_back(*notice);
    GPUENV_TRY_ASSIGN(auto scheduled, ask("/latest/meta-data/events/maintenance/scheduled"));
    if (scheduled.status == 200) {
      GPUENV_TRY_ASSIGN(auto events, parse_aws_scheduled_events(scheduled.body));
      out.insert(out.end(), events.begin(), events.end());
    } else if (scheduled.status != 404) {
      return util::Error::input("events/maintenance/scheduled answered HTTP " + std::to_string(scheduled.status));
    }
  } else if (m_cloud == "gcp") {
    GPUENV_TRY_ASSIGN(auto preempted, ask("/computeMetadata/v1/instance/preempted"));
    if (preempted.status != 200)
      return util::Error::input("instance/preempted answered HTTP " + std::to_string(preempted.status));
    // The 30 s count from when watch first saw TRUE, not from each poll.
    if (util::trim(preempted.body) != "TRUE") {
      m_gcp_preempted_since_ms.reset();
    } else if (!m_gcp_preempted_since_ms) {
      m_gcp_preempted_since_ms = now_ms;
    }
    if (auto notice = parse_gcp_preempted(preempted.body, m_gcp_preempted_since_ms.value_or(now_ms)))
      out.push_back(*notice);
    GPUENV_TRY_ASSIGN(auto maintenance, ask("/computeMetadata/v1/instance/maintenance-event"));
    if (maintenance.status != 200)
      return util::Error::input("instance/maintenance-event answered HTTP " + std::to_string(maintenance.status));
    const std::string value(util::trim(maintenance.body));
    if (value != m_gcp_maintenance) {
      m_gcp_maintenance = value;
      m_gcp_maintenance_since_ms = now_ms;
    }
    if (auto notice = parse_gcp_maintenance_event(value, m_gcp_maintenance_since_ms)) out.push_back(*notice);
  } else if (m_cloud == "azure") {
    if (m_azure_vm_name.empty()) {
      GPUENV_TRY_ASSIGN(auto name, ask("/metadata/instance/compute/name?api-version=2021-02-01&format=text"));
      if (name.status != 200 || util::trim(name.body).empty())
        return util::Error::input("instance/compute/name answered HTTP " + std::to_string(name.status));
      m_azure_vm_name = std::string(util::trim(name.body));
    }
    GPUENV_TRY_ASSIGN(auto events, ask("/metadata/scheduledevents?api-version=2019-01-01"));
    if (events.status != 200)
      return util::Error::input("scheduledevents answered HTTP " + std::to_string(events.status));
    GPUENV_TRY_ASSIGN(auto notices, parse_azure_scheduled_events(events.body, m_azure_vm_name));
    out = std::move(notices);
  }
  return out;
}

util::Expected<util::Ok> InterruptionWatcher::acknowledge(system::System& system, const Notice& notice,
                                                          std::chrono::milliseconds timeout) {
  if (m_cloud != "azure") return util::Error::input(m_cloud + " notices are not acknowledged");
  system::HttpRequest request{{}, 0, "POST", "/metadata/scheduledevents?api-version=2019-01-01", {}, {}};
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = azure_start_request(notice.id);
  GPUENV_TRY_ASSIGN(auto answer, get(system, request, timeout));
  if (answer.status != 200)
    return util::Error::input("acknowledging Azure event " + notice.id + " answered HTTP " +
                              std::to_string(answer.status));
  return util::Ok{};
}

}  // namespace gpuenv::watch
