// `gpuenv doctor`: collect, judge, render; the exit code follows the verdict.

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "cli/boot_allreduce.hpp"
#include "cli/boot_retry.hpp"
#include "cli/commands.hpp"
#include "cli/doctor_output.hpp"
#include "cli/prometheus.hpp"
#include "cli/smoke_overrides.hpp"
#include "cli/trusted_paths.hpp"
#include "cli/version.hpp"
#include "doctor/doctor.hpp"
#include "fleet/nfd.hpp"
#include "fleet/slurm.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "util/strings.hpp"
#include "watch/history.hpp"
#include "watch/settings.hpp"

namespace gpuenv::cli {
namespace {

/// The default whole-run deadline: Slurm kills a HealthCheckProgram after 60 s (HealthCheckInterval's limit) and
/// node-problem-detector plugins and cron wrappers use similar limits; 45 s leaves 15 s for the exit, the Slurm
/// drain/resume calls (5 s each) and a slow start (docs/reliability.md "Fault injection and deadlines").
constexpr double k_default_deadline_s = 45;

/// A check tier (--tier, docs/fleet.md "Tiers"): what runs and the budget that fits the caller.
struct Tier {
  std::string_view name;
  double deadline_s;               ///< the collection's deadline; a cap for prolog and health
  std::chrono::milliseconds wait;  ///< each wait on NVML, libcuda or a command
  bool smoke;                      ///< on-device smoke tests (and the frameworks' matmul)
  bool libcuda;                    ///< load libcuda and run cuInit
  double memtest;                  ///< smoke's --memtest fraction unless given
  bool allreduce;                  ///< the NCCL all-reduce over every GPU after the smoke tests (boot_allreduce.hpp)
};

/// prolog: the Slurm Prolog that keeps a job off a bad GPU, NVML only, 5 s. health: HealthCheckProgram (killed at
/// 60 s), NHC, the systemd timer: the collection in 45 s, no smoke. boot: first boot and after repairs: everything,
/// the memory test over half of each GPU's free memory and NCCL's all-reduce over every GPU; minutes.
constexpr Tier k_tiers[] = {
    {"prolog", 5, std::chrono::seconds(2), false, false, 0, false},
    {"health", 45, std::chrono::seconds(10), false, true, 0, false},
    {"boot", 120, std::chrono::seconds(10), true, true, 0.5, true},
};

const Tier* find_tier(const std::string& name) {
  for (const Tier& tier : k_tiers)
    if (tier.name == name) return &tier;
  return nullptr;
}

/// How long a report read with --from-report may be: three runs of the DaemonSet's 300 s loop.
constexpr double k_default_max_age_s = 900;

struct DoctorOptions {
  std::string tier;
  bool json = false;
  bool oneline = false;
  bool strict = false;
  bool quick = false;
  bool slurm = false;
  std::string slurm_node;
  std::string nfd;
  double nfd_expiry_s = 900;  ///< 3 x the DaemonSet's 300 s interval
  std::string prometheus;
  bool prometheus_gpu_gauges = false;
  std::string report_file;  ///< --report: the JSON report, also written atomically
  std::string from_report;  ///< --from-report: judge by that report instead of collecting
  double max_age_s = k_default_max_age_s;
  std::string root;
  std::string nvidia_smi_xml;
  std::string profile;
  std::vector<std::string> set;
  int expect_gpus = -1;
  bool cloud_metadata = false;
  std::string instance_type;
  bool frameworks = false;
  bool no_frameworks = false;
  std::string python = "python3";
  std::string cloud_metadata_endpoint;
  std::string watch_db = watch::k_default_db;  ///< gpuenv watch's history, read when present
  double timeout_s = 0;                        ///< 0: the tier's deadline, else 45 s
  std::string since = "boot";
  double boot_retry_s = 0;  ///< --boot-retry: try again while NOT READY and the machine is up for less than this
  double memtest = -1;      ///< smoke's --memtest (not given: its default sub-second test)
  std::vector<std::string> expect;   ///< smoke's --expect ID=VALUE
  std::vector<std::string> minimum;  ///< smoke's --minimum ID=VALUE
};

/// The profile to judge the node against: the one cell --set picks (profile::resolve_cell).
util::Expected<std::optional<profile::Profile>> load_profile_for(Context& context, const DoctorOptions& options) {
  if (options.profile.empty() && !options.set.empty())
    return util::Error::usage("--set picks a cell of --profile, and no --profile was given", "add --profile NAME|FILE");
  if (options.profile.empty()) return std::optional<profile::Profile>();
  GPUENV_TRY_ASSIGN(auto document, load_trusted_profile(context.system, options.profile, "--profile"));
  GPUENV_TRY_ASSIGN(auto assignments, profile::parse_assignments(options.set));
  GPUENV_TRY_ASSIGN(auto cell, profile::resolve_cell(document, assignments, options.profile));
  return std::optional<profile::Profile>(std::move(cell));
}

/// Slurm kills a HealthCheckProgram after 60 s: under --slurm, each wait (NVML, libcuda, nvidia-smi, scontrol) is
/// capped at this, and the smoke tests do not run.
constexpr std::chrono::milliseconds k_slurm_wait_limit{std::chrono::seconds(5)};
/// Under --slurm the whole collection ends by then, whatever --timeout says: the drain/resume calls come after it.
constexpr std::chrono::milliseconds k_slurm_deadline_limit{std::chrono::seconds(45)};

bool exits_ok(report::Verdict verdict, bool strict) {
  return verdict == report::Verdict::ok || (verdict == report::Verdict::degraded && !strict);
}

fleet::NodeFeatures node_features(const doctor::DoctorReport& report, const DoctorOptions& options, long long now) {
  const probe::HostFacts& facts = report.facts;
  const bool strict = options.strict;
  fleet::NodeFeatures features;
  if (options.nfd_expiry_s > 0) features.expires_unix = now + static_cast<long long>(options.nfd_expiry_s);
  features.ready = exits_ok(report.verdict, strict);
  features.verdict = std::string(doctor::verdict_word(report.verdict));
  features.driver_version =
      facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version;
  features.cuda_version = facts.cuda_driver.driver_cuda_version.empty() ? facts.gpus.cuda_driver_version
                                                                        : facts.cuda_driver.driver_cuda_version;
  if (!facts.gpus.gpus.empty()) features.gpu_model = facts.gpus.gpus.front().name;
  features.gpu_count = facts.gpus.gpus.size();
  return features;
}

/// True for an Xid whose action is to restart the job (NVIDIA's RESTART_APP bucket: application Xids such as 13 and
/// 31): the job that caused it is the one to act on, not the node.
bool is_job_xid(const report::Finding& f) {
  return (f.id == "xid.events" || f.id == "smoke.xid") && report::action_of(f) == report::Action::restart_job;
}

/// True when every warning is one a running job causes: its processes on the GPUs, MIG, or a restart_job Xid.
bool warnings_only_from_jobs(const std::vector<report::Finding>& findings) {
  for (const report::Finding& f : findings) {
    if (f.status != report::Status::warn) continue;
    if (f.id == "gpu.processes" || f.id == "gpu.mig" || is_job_xid(f)) continue;
    return false;
  }
  return true;
}

/// True when the only warnings are restart_job Xids.
bool warnings_only_job_xids(const std::vector<report::Finding>& findings) {
  return std::all_of(findings.begin(), findings.end(),
                     [](const report::Finding& f) { return f.status != report::Status::warn || is_job_xid(f); });
}

/// Doctor's verdict as the Slurm decision takes it: under --strict, warnings a running job causes do not drain a
/// busy node (fleet::NodeHealth::degraded_by_jobs). A restart_job Xid drains no node, busy or idle: the kernel log
/// keeps it until the next boot (--since boot), so on an idle node, whose job has ended, it would drain a healthy
/// node until a reboot, and no check could tell this job's Xid from an earlier one's (docs/fleet.md "Slurm").
fleet::NodeHealth slurm_health(const doctor::DoctorReport& report, bool strict) {
  if (exits_ok(report.verdict, strict)) return fleet::NodeHealth::ready;
  if (strict && report.verdict == report::Verdict::degraded && warnings_only_job_xids(report.findings))
    return fleet::NodeHealth::ready;
  if (strict && report.verdict == report::Verdict::degraded && warnings_only_from_jobs(report.findings))
    return fleet::NodeHealth::degraded_by_jobs;
  return fleet::NodeHealth::not_ready;
}

/// --slurm: drain this node on NOT READY, resume gpuenv's own drain when healthy (fleet/slurm.hpp).
util::Expected<ExitCode> run_slurm_health_check(Context& context, const DoctorOptions& options,
                                                const doctor::DoctorReport& report) {
  GPUENV_TRY_ASSIGN(auto node, fleet::slurm_node_name(context.system, options.slurm_node));
  const std::string oneline = doctor_oneline(report);
  context.out << oneline;
  GPUENV_TRY_ASSIGN(auto outcome,
                    fleet::run_slurm_health_check(context.system, node, slurm_health(report, options.strict), oneline,
                                                  k_slurm_wait_limit));
  context.out << "slurm node " << node << " (" << outcome.before.state << "): " << outcome.action.why << "\n";
  return exits_ok(report.verdict, options.strict) ? ExitCode::ok : ExitCode::not_ok;
}

/// doctor with watch's history: history.error_rates when the database is there (docs/watch.md "doctor and the
/// history"), and the verdict with it.
void add_history_finding(system::System& system, const std::string& db, doctor::DoctorReport& report) {
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto finding = watch::read_history_error_rates(system, db, now_ms);
  if (!finding) return;
  report.findings.push_back(std::move(*finding));
  report.verdict = report::verdict_of(report.findings);
}

/// --since: "boot" (nullopt) or a duration "90s", "30m", "6h", "2d".
util::Expected<std::optional<std::chrono::seconds>> parse_since(const std::string& text) {
  if (text == "boot") return std::optional<std::chrono::seconds>();
  const auto bad = [&] {
    return util::Error::usage("--since " + text + ": expected `boot` or a duration such as 90s, 30m, 6h or 2d",
                              "e.g. --since 6h judges the kernel log's last six hours");
  };
  if (text.size() < 2 || text.size() > 8) return bad();
  const std::string number = text.substr(0, text.size() - 1);
  if (number.find_first_not_of("0123456789") != std::string::npos) return bad();
  const std::optional<long long> count = util::parse_int(number);
  const char unit = text.back();
  const long long scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
  if (scale == 0 || !count || *count == 0) return bad();
  return std::optional<std::chrono::seconds>(std::chrono::seconds(*count * scale));
}

/// The smoke tests' own options, as `gpuenv smoke` takes them.
util::Expected<util::Ok> read_smoke_options(Context& context, const DoctorOptions& options,
                                            smoke::SmokeOptions& smoke) {
  GPUENV_TRY_ASSIGN(auto library, library_from_environment(context.system, "GPUENV_CUDA_LIBRARY", smoke.library));
  smoke.library = library;
  GPUENV_TRY_ASSIGN(auto cublas, library_from_environment(context.system, "GPUENV_CUBLAS_LIBRARY", ""));
  smoke.cublas_library = cublas;
  smoke.memtest_fraction = options.memtest;
  GPUENV_TRY(read_smoke_overrides(options.expect, "--expect", false, smoke.overrides));
  return read_smoke_overrides(options.minimum, "--minimum", true, smoke.overrides);
}

/// --from-report: the one line and the exit code of a report another run wrote (the DaemonSet's), refused when older
/// than --max-age (exit 2, which node-problem-detector shows as Unknown: the writer stopped).
util::Expected<ExitCode> run_from_report(Context& context, const DoctorOptions& options, long long now) {
  auto text = context.system.read_file(options.from_report, system::FileKind::report);
  if (!text) {
    return util::Error::input(text.error().message,
                              "check that the gpuenv DaemonSet runs on this node and writes "
                              "--report " +
                                  options.from_report);
  }
  auto read = read_doctor_json(*text);
  if (!read) return util::Error::input(options.from_report + ": " + read.error().message, read.error().remedy);
  const long long age = now - read->time;
  if (age > static_cast<long long>(options.max_age_s)) {
    return util::Error::input(options.from_report + " is " + std::to_string(age) +
                                  " s old (more than "
                                  "--max-age " +
                                  std::to_string(static_cast<long long>(options.max_age_s)) +
                                  "): the run that writes it stopped",
                              "check the gpuenv DaemonSet's pod on this node (kubectl -n gpuenv get pods "
                              "-o wide)");
  }
  context.out << doctor_oneline(read->report);
  return exits_ok(read->report.verdict, options.strict) ? ExitCode::ok : ExitCode::not_ok;
}

/// What --tier, --quick and --slurm leave to run, and the budget: into `request`.
util::Expected<util::Ok> apply_budget(const DoctorOptions& options, const Tier* tier, doctor::DoctorRequest& request) {
  const bool no_smoke = options.quick || options.slurm || (tier != nullptr && !tier->smoke);
  if (tier != nullptr && tier->smoke && options.quick)
    return util::Error::usage("--tier boot runs the smoke tests, which --quick skips", "drop one of them");
  if ((options.memtest > 0 || !options.expect.empty() || !options.minimum.empty()) && no_smoke) {
    return util::Error::usage(
        "--memtest, --expect and --minimum tune the smoke tests, which --quick, --slurm and --tier prolog|health skip",
        "drop --quick (or --slurm), use --tier boot, or run `gpuenv smoke` with them");
  }
  double deadline_s =
      options.timeout_s > 0 ? options.timeout_s : (tier != nullptr ? tier->deadline_s : k_default_deadline_s);
  // prolog and health are budgets their callers enforce (Slurm's Prolog, HealthCheckProgram's 60 s): a cap.
  if (tier != nullptr && !tier->smoke) deadline_s = std::min(deadline_s, tier->deadline_s);
  request.deadline = std::chrono::milliseconds(static_cast<long long>(deadline_s * 1000));
  if (tier != nullptr) {
    request.collect.timeout = std::min(request.collect.timeout, tier->wait);
    request.collect.libcuda = tier->libcuda;
    if (tier->memtest > 0 && options.memtest == 0) request.smoke.memtest_fraction = tier->memtest;
  }
  if (options.slurm) {
    request.collect.timeout = std::min(request.collect.timeout, k_slurm_wait_limit);
    request.deadline = std::min(*request.deadline, k_slurm_deadline_limit);
  }
  request.run_smoke = !no_smoke;
  request.collect.frameworks = !options.no_frameworks && (options.frameworks || !no_smoke);
  request.collect.framework_matmul = !no_smoke;
  return util::Ok{};
}

/// --prometheus's options: the families a current `gpuenv watch` textfile beside it exports (gpuenv-watch.prom, the
/// name gpuenv-watch.service writes) are left to watch, whose values are newer. A file that someone other than root
/// can change is not believed: it could only hide doctor's series.
PrometheusOptions prometheus_options(Context& context, const DoctorOptions& options, long long now) {
  PrometheusOptions out;
  out.gpu_gauges = options.prometheus_gpu_gauges;
  const std::string watch_file =
      (std::filesystem::path(options.prometheus).parent_path() / "gpuenv-watch.prom").lexically_normal().string();
  if (watch_file == std::filesystem::path(options.prometheus).lexically_normal().string() ||
      context.system.trust_problem(watch_file))
    return out;
  const util::Expected<std::string> text = context.system.read_file(watch_file);
  if (!text) return out;
  out.left_to_watch = families_left_to_watch(parse_watch_textfile(*text), static_cast<double>(now));
  out.watch_textfile = watch_file;
  return out;
}

/// Writes --prometheus, --nfd and --report (each atomically, mode 0644: node_exporter and NFD run unprivileged).
util::Expected<util::Ok> write_outputs(Context& context, const DoctorOptions& options,
                                       const doctor::DoctorReport& report, long long now) {
  constexpr unsigned k_readable = 0644;
  if (!options.prometheus.empty()) {
    const PrometheusOptions prometheus = prometheus_options(context, options, now);
    GPUENV_TRY(context.system.write_file_atomic(
        options.prometheus, doctor_prometheus(report, gpuenv_version(), now, prometheus), k_readable));
  }
  if (!options.nfd.empty()) {
    GPUENV_TRY(fleet::write_nfd_feature_file(context.system, options.nfd,
                                             fleet::nfd_feature_file(node_features(report, options, now))));
  }
  if (!options.report_file.empty()) {
    GPUENV_TRY(
        context.system.write_file_atomic(options.report_file, doctor_json(report, gpuenv_version(), now), k_readable));
  }
  return util::Ok{};
}

/// One doctor run (with watch's history on a live node); under --boot-retry, again every 10 s while NOT READY and
/// the machine is still booting (cli/boot_retry.hpp), each wait logged to stderr (the journal).
util::Expected<doctor::DoctorReport> run_doctor_at_boot(Context& context, system::System& target,
                                                        const doctor::DoctorRequest& request,
                                                        const DoctorOptions& options) {
  util::Expected<doctor::DoctorReport> report = util::Error::internal("doctor did not run");
  const auto once = [&](int) {
    report = doctor::run_doctor(target, request);
    if (!report) return true;  // an error is not a node that may still be starting
    if (options.root.empty()) add_history_finding(context.system, options.watch_db, *report);
    return report->verdict != report::Verdict::not_ok || options.boot_retry_s <= 0 || options.slurm;
  };
  const auto log_try = [&](int tries) {
    context.err << "gpuenv doctor: try " << tries << ", again in " << k_boot_retry_interval.count()
                << " s: " << doctor_oneline(*report);
  };
  const auto until = std::chrono::seconds(static_cast<long long>(options.boot_retry_s));
  if (const int tries = retry_during_boot(context.system, until, once, log_try); tries > 1 && report)
    context.err << "gpuenv doctor: " << doctor::verdict_word(report->verdict) << " after " << tries << " tries\n";
  return report;
}

/// Seconds since the epoch, the time reports and feature files carry.
long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

util::Expected<ExitCode> run_doctor_command(Context& context, const DoctorOptions& options) {
  long long now = unix_now();
  if (!options.from_report.empty()) return run_from_report(context, options, now);
  const bool asks_metadata = options.cloud_metadata || !options.cloud_metadata_endpoint.empty();
  if (asks_metadata && !options.root.empty()) {
    // The metadata service describes this machine, not the tree under --root: its answer would be wrong there.
    return util::Error::usage(
        "--cloud-metadata cannot be used with --root: the metadata service "
        "describes this machine, not the tree under --root",
        "name the inspected machine's type with --instance-type TYPE");
  }
  doctor::DoctorRequest request;
  GPUENV_TRY_ASSIGN(auto since, parse_since(options.since));
  request.collect.kernel_log_since = since;
  request.collect.now_unix = now;
  request.collect.live = options.root.empty();
  GPUENV_TRY_ASSIGN(auto nvml,
                    library_from_environment(context.system, "GPUENV_NVML_LIBRARY", request.collect.nvml_library));
  request.collect.nvml_library = nvml;
  GPUENV_TRY(read_smoke_options(context, options, request.smoke));
  const Tier* tier = find_tier(options.tier);
  GPUENV_TRY(apply_budget(options, tier, request));
  // The boot tier's all-reduce: GPUENV_NCCL_LIBRARY is checked before any GPU work, as smoke --nccl checks it.
  std::optional<BootAllreduceOptions> allreduce;
  if (tier != nullptr && tier->allreduce && options.root.empty()) {
    GPUENV_TRY_ASSIGN(auto nccl_library, library_from_environment(context.system, "GPUENV_NCCL_LIBRARY", ""));
    // Only a --python that was given names a wheel to use: the default python3 need not have one.
    const std::string wheel_python = options.python == DoctorOptions{}.python ? std::string() : options.python;
    allreduce = BootAllreduceOptions{request.smoke.library, nccl_library, wheel_python, options.instance_type};
  }
  request.smoke.nvml_library = request.collect.nvml_library;
  if (options.expect_gpus >= 0) request.expect_gpus = static_cast<unsigned>(options.expect_gpus);
  if (!options.instance_type.empty()) request.instance_type = options.instance_type;
  // A Python named by path runs as root with its own site-packages (a venv's, which -I does not ignore): it must be
  // one only root or the user running gpuenv can change (docs/security.md, item 6).
  if (options.python.find('/') != std::string::npos)
    GPUENV_TRY(require_trusted(context.system, options.python, "--python " + options.python));
  request.collect.python = options.python;
  request.collect.cloud_metadata = asks_metadata;
  if (!options.cloud_metadata_endpoint.empty()) {
    GPUENV_TRY_ASSIGN(auto endpoint,
                      probe::parse_metadata_endpoint(options.cloud_metadata_endpoint, "--cloud-metadata-endpoint"));
    request.collect.metadata_endpoint = endpoint;
  }
  if (!options.nvidia_smi_xml.empty()) {
    // The report is the user's file, read from this machine even under --root.
    auto xml = context.system.read_file(options.nvidia_smi_xml, system::FileKind::report);
    if (!xml) {
      const std::string& remedy = xml.error().remedy;
      return util::Error::input(xml.error().message, remedy.empty() ? "check the --nvidia-smi-xml path" : remedy);
    }
    request.collect.nvidia_smi_xml = std::move(*xml);
    request.collect.nvidia_smi_xml_origin = options.nvidia_smi_xml;
  }
  GPUENV_TRY_ASSIGN(auto profile, load_profile_for(context, options));
  request.profile = std::move(profile);

  std::unique_ptr<system::System> rooted;
  system::System* target = &context.system;
  if (!options.root.empty()) {
    GPUENV_TRY_ASSIGN(auto tree, system::make_rooted_system(options.root));
    rooted = std::move(tree);
    target = rooted.get();
  }
  GPUENV_TRY_ASSIGN(auto report, run_doctor_at_boot(context, *target, request, options));
  if (allreduce) {
    GPUENV_TRY(add_boot_allreduce(context.system, *allreduce, report));
  }
  now = unix_now();  // the last try's time: --boot-retry may have taken minutes

  GPUENV_TRY(write_outputs(context, options, report, now));
  if (options.slurm) return run_slurm_health_check(context, options, report);
  if (options.json) {
    context.out << doctor_json(report, gpuenv_version(), now);
  } else if (options.oneline) {
    context.out << doctor_oneline(report);
  } else {
    context.out << doctor_text(report, context.style);
  }
  return exits_ok(report.verdict, options.strict) ? ExitCode::ok : ExitCode::not_ok;
}

}  // namespace

void add_doctor_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* command = app.add_subcommand(
      "doctor", "Is this node ready for GPU work? READY / DEGRADED / NOT READY, with the reasons and the fixes");
  command
      ->add_option("--tier", options->tier,
                   "Check tier and budget for the caller (docs/fleet.md): prolog (NVML only, 5 s: a Slurm Prolog), "
                   "health (45 s, no smoke: HealthCheckProgram, NHC, the systemd timer), boot (everything and the "
                   "memory test: first boot, after repairs)")
      ->check(CLI::IsMember({"prolog", "health", "boot"}));
  CLI::Option* json = command->add_flag("--json", options->json, "Print the report as JSON (docs/doctor-json.md)");
  command->add_flag("--oneline", options->oneline, "Print one line of at most 80 characters naming the worst finding")
      ->excludes(json);
  command->add_option("--prometheus", options->prometheus,
                      "Also write node_exporter textfile metrics to FILE (atomically, mode 0644)");
  command->add_flag("--prometheus-gpu-gauges", options->prometheus_gpu_gauges,
                    "With --prometheus: also GPU temperature and power (DCGM-exporter exports them already)");
  command->add_option("--nfd", options->nfd,
                      "Also write a node-feature-discovery feature file to FILE (gpuenv.io/ready=..., atomically)");
  command
      ->add_option("--nfd-expiry", options->nfd_expiry_s,
                   "With --nfd: seconds until NFD ignores the file unless rewritten (# +expiry-time; default 900, "
                   "0: never)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--report", options->report_file,
                      "Also write the JSON report to FILE (atomically, mode 0644; what --from-report reads)");
  CLI::Option* from_report = command->add_option(
      "--from-report", options->from_report,
      "Collect nothing: print the one line and exit as the report in FILE says (node-problem-detector reading the "
      "DaemonSet's report); exit 2 when it is older than --max-age");
  command
      ->add_option("--max-age", options->max_age_s,
                   "With --from-report: the oldest report accepted, in seconds (default 900)")
      ->check(CLI::PositiveNumber)
      ->needs(from_report);
  CLI::Option* slurm = command->add_flag(
      "--slurm", options->slurm,
      "Slurm HealthCheckProgram: drain this node when NOT READY, resume it when healthy if gpuenv drained it "
      "(implies --quick; each wait capped at 5 s)");
  slurm->excludes(json);
  from_report->excludes(slurm)->excludes(json);
  command
      ->add_option("--slurm-node", options->slurm_node,
                   "With --slurm: the Slurm NodeName (default: $SLURMD_NODENAME, else the short host name)")
      ->needs(slurm);
  command->add_flag("--strict", options->strict, "Exit 1 when DEGRADED (warnings), not only when NOT READY");
  command->add_flag("--quick", options->quick, "Skip the on-device smoke tests (software and health checks only)");
  command->add_option("--profile", options->profile, "Judge the node against a profile (shipped name or .toml path)");
  command->add_option("--set", options->set, "With --profile: pick a matrix cell or override a field (FIELD=VALUE)")
      ->allow_extra_args(false);
  command->add_option("--expect-gpus", options->expect_gpus, "Fail unless exactly N GPUs are visible")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--root", options->root,
                      "Inspect a mounted image or captured host tree: read files under DIR, run and load nothing");
  command->add_option("--nvidia-smi-xml", options->nvidia_smi_xml,
                      "Take GPU facts from a captured `nvidia-smi -q -x` report instead of NVML");
  command->add_flag("--frameworks", options->frameworks, "Check torch/tensorflow even with --quick or --slurm");
  command->add_flag("--no-frameworks", options->no_frameworks,
                    "Do not run Python to check torch/tensorflow (the check is on unless --quick or --slurm)");
  command->add_option("--python", options->python,
                      "The Python whose torch/tensorflow doctor checks (default python3 on PATH; a venv's works)");
  command->add_option("--instance-type", options->instance_type,
                      "Judge the node as this cloud instance type (e.g. p4d.24xlarge) instead of what DMI or the "
                      "metadata service say; types in data/doctor/instances.toml");
  command->add_flag("--cloud-metadata", options->cloud_metadata,
                    "Ask the cloud's link-local metadata service for the instance type when DMI lacks it (one "
                    "request, at most 1 s; not with --root, whose machine it does not describe)");
  command->add_option("--watch-db", options->watch_db,
                      "gpuenv watch's history: when it exists, judge the error counters' growth over the last 24 h "
                      "(default /var/lib/gpuenv/watch.db; `none` to ignore it)");
  command->add_option("--cloud-metadata-endpoint", options->cloud_metadata_endpoint,
                      "With --cloud-metadata: ask IPV4:PORT instead of the cloud's own address (testing)");
  command
      ->add_option("--timeout", options->timeout_s,
                   "Deadline in seconds for the whole collection (default 45, or the tier's; at most 45 under --slurm "
                   "or --tier health, 5 under --tier prolog): each wait for "
                   "NVML, libcuda or a command is cut to the time left, and what it cuts short is a failing "
                   "doctor.deadline finding")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--boot-retry", options->boot_retry_s,
                   "While NOT READY and the machine has been up for less than SECONDS (/proc/uptime), run again every "
                   "10 s (fabric manager or the persistence daemon still starting at boot); later runs, and --slurm "
                   "(killed by slurmd at 60 s), try once")
      ->check(CLI::PositiveNumber)
      ->excludes(from_report);
  command->add_option("--since", options->since,
                      "Kernel-log window: `boot` (default; a log file from its last boot line) or a duration such as "
                      "30m, 6h, 2d (log files by their timestamps)");
  command
      ->add_option("--memtest", options->memtest,
                   "Smoke tests: also write and verify patterns over this fraction of each GPU's free memory")
      ->check(CLI::Range(0.01, 0.95));
  command->add_option("--expect", options->expect,
                      "Smoke tests: ID=VALUE, what metric ID should reach here (repeatable; docs/smoke.md)");
  command->add_option("--minimum", options->minimum, "Smoke tests: ID=VALUE, fail metric ID below VALUE (repeatable)");
  command->callback([&action, options] { action = [options](Context& c) { return run_doctor_command(c, *options); }; });
}

}  // namespace gpuenv::cli
