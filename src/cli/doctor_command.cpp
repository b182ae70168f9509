// `gpuenv doctor`: collect, judge, render; the exit code follows the verdict.

#include <algorithm>
#include <chrono>

#include "cli/commands.hpp"
#include "cli/doctor_output.hpp"
#include "cli/smoke_overrides.hpp"
#include "cli/trusted_paths.hpp"
#include "doctor/doctor.hpp"
#include "fleet/nfd.hpp"
#include "fleet/slurm.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"

#ifndef GPUENV_VERSION
#define GPUENV_VERSION "0.0.0"
#endif

namespace gpuenv::cli {
namespace {

/// The default whole-run deadline: Slurm kills a HealthCheckProgram after 60 s (HealthCheckInterval's limit) and
/// node-problem-detector plugins and cron wrappers use similar limits; 45 s leaves 15 s for the exit, the Slurm
/// drain/resume calls (5 s each) and a slow start (docs/reliability.md "Fault injection and deadlines").
constexpr double k_default_deadline_s = 45;

struct DoctorOptions {
  bool json = false;
  bool oneline = false;
  bool strict = false;
  bool quick = false;
  bool slurm = false;
  std::string slurm_node;
  std::string nfd;
  std::string prometheus;
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
  double timeout_s = k_default_deadline_s;
  std::string since = "boot";
  double memtest = 0;                ///< smoke's --memtest
  std::vector<std::string> expect;   ///< smoke's --expect ID=VALUE
  std::vector<std::string> minimum;  ///< smoke's --minimum ID=VALUE
};

/// The profile to judge the node against; a matrix profile needs --set to pick one cell.
util::Expected<std::optional<profile::Profile>> load_profile_for(Context& context, const DoctorOptions& options) {
  if (options.profile.empty()) return std::optional<profile::Profile>();
  auto document = load_trusted_profile(context.system, options.profile, "--profile");
  if (!document) return document.error();
  auto overrides = profile::parse_assignments(options.set);
  if (!overrides) return overrides.error();
  const auto cells = profile::select_cells(profile::expand_matrix(*document), *overrides);
  if (cells.size() != 1) {
    return util::Error::usage(
        "--profile " + options.profile + ": " + std::to_string(cells.size()) + " matrix cells match",
        "pick one cell with --set FIELD=VALUE (see `gpuenv matrix " + options.profile + "`)");
  }
  auto with_overrides = profile::apply_overrides(cells.front().profile, *overrides);
  if (!with_overrides) return with_overrides.error();
  return std::optional<profile::Profile>(std::move(*with_overrides));
}

/// Slurm kills a HealthCheckProgram after 60 s: under --slurm, each wait (NVML, libcuda, nvidia-smi, scontrol) is
/// capped at this, and the smoke tests do not run.
constexpr std::chrono::milliseconds k_slurm_wait_limit{std::chrono::seconds(5)};
/// Under --slurm the whole collection ends by then, whatever --timeout says: the drain/resume calls come after it.
constexpr std::chrono::milliseconds k_slurm_deadline_limit{std::chrono::seconds(45)};

bool exits_ok(report::Verdict verdict, bool strict) {
  return verdict == report::Verdict::ok || (verdict == report::Verdict::degraded && !strict);
}

fleet::NodeFeatures node_features(const doctor::DoctorReport& report, bool strict) {
  const probe::HostFacts& facts = report.facts;
  fleet::NodeFeatures features;
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

/// --slurm: drain this node on NOT READY, resume gpuenv's own drain when healthy (fleet/slurm.hpp).
ExitCode run_slurm_health_check(Context& context, const DoctorOptions& options, const doctor::DoctorReport& report) {
  auto node = fleet::slurm_node_name(context.system, options.slurm_node);
  if (!node) return report_error(context, node.error());
  const std::string oneline = doctor_oneline(report);
  context.out << oneline;
  auto outcome = fleet::run_slurm_health_check(context.system, *node, exits_ok(report.verdict, options.strict), oneline,
                                               k_slurm_wait_limit);
  if (!outcome) return report_error(context, outcome.error());
  context.out << "slurm node " << *node << " (" << outcome->before.state << "): " << outcome->action.why << "\n";
  return exits_ok(report.verdict, options.strict) ? ExitCode::ok : ExitCode::not_ok;
}

/// "127.0.0.1:8080" -> host and port (numeric IPv4 only: the metadata client resolves no names).
util::Expected<probe::MetadataEndpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    return util::Error::usage("--cloud-metadata-endpoint " + text + ": expected IPV4:PORT",
                              "e.g. --cloud-metadata-endpoint 127.0.0.1:8080");
  };
  if (colon == std::string::npos || colon == 0) return bad();
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return bad();
  const unsigned number = static_cast<unsigned>(std::stoul(port));
  if (number == 0 || number > 65535) return bad();
  return probe::MetadataEndpoint{text.substr(0, colon), number};
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
  const long long count = std::stoll(number);
  const char unit = text.back();
  const long long scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
  if (scale == 0 || count == 0) return bad();
  return std::optional<std::chrono::seconds>(std::chrono::seconds(count * scale));
}

/// The smoke tests' own options, as `gpuenv smoke` takes them.
util::Expected<util::Ok> read_smoke_options(Context& context, const DoctorOptions& options,
                                            smoke::SmokeOptions& smoke) {
  auto library = library_from_environment(context.system, "GPUENV_CUDA_LIBRARY", smoke.library);
  if (!library) return library.error();
  smoke.library = *library;
  auto cublas = library_from_environment(context.system, "GPUENV_CUBLAS_LIBRARY", "");
  if (!cublas) return cublas.error();
  smoke.cublas_library = *cublas;
  smoke.memtest_fraction = options.memtest;
  if (auto read = read_smoke_overrides(options.expect, "--expect", false, smoke.overrides); !read) return read;
  return read_smoke_overrides(options.minimum, "--minimum", true, smoke.overrides);
}

ExitCode run_doctor_command(Context& context, const DoctorOptions& options) {
  const bool asks_metadata = options.cloud_metadata || !options.cloud_metadata_endpoint.empty();
  if (asks_metadata && !options.root.empty()) {
    // The metadata service describes this machine, not the tree under --root: its answer would be wrong there.
    return report_error(context, util::Error::usage("--cloud-metadata cannot be used with --root: the metadata service "
                                                    "describes this machine, not the tree under --root",
                                                    "name the inspected machine's type with --instance-type TYPE"));
  }
  if ((options.memtest > 0 || !options.expect.empty() || !options.minimum.empty()) &&
      (options.quick || options.slurm)) {
    return report_error(context, util::Error::usage("--memtest, --expect and --minimum tune the smoke tests, which "
                                                    "--quick and --slurm skip",
                                                    "drop --quick (or --slurm), or run `gpuenv smoke` with them"));
  }
  doctor::DoctorRequest request;
  auto since = parse_since(options.since);
  if (!since) return report_error(context, since.error());
  request.collect.kernel_log_since = *since;
  request.collect.now_unix =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  request.collect.live = options.root.empty();
  request.deadline = std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 1000));
  if (options.slurm) {
    request.collect.timeout = std::min(request.collect.timeout, k_slurm_wait_limit);
    request.deadline = std::min(*request.deadline, k_slurm_deadline_limit);
  }
  auto nvml = library_from_environment(context.system, "GPUENV_NVML_LIBRARY", request.collect.nvml_library);
  if (!nvml) return report_error(context, nvml.error());
  request.collect.nvml_library = *nvml;
  request.run_smoke = !options.quick && !options.slurm;
  if (auto read = read_smoke_options(context, options, request.smoke); !read)
    return report_error(context, read.error());
  request.smoke.nvml_library = request.collect.nvml_library;
  if (options.expect_gpus >= 0) request.expect_gpus = static_cast<unsigned>(options.expect_gpus);
  if (!options.instance_type.empty()) request.instance_type = options.instance_type;
  request.collect.frameworks = !options.no_frameworks && (options.frameworks || (!options.quick && !options.slurm));
  request.collect.framework_matmul = !options.quick && !options.slurm;
  request.collect.python = options.python;
  request.collect.cloud_metadata = asks_metadata;
  if (!options.cloud_metadata_endpoint.empty()) {
    auto endpoint = parse_endpoint(options.cloud_metadata_endpoint);
    if (!endpoint) return report_error(context, endpoint.error());
    request.collect.metadata_endpoint = *endpoint;
  }
  if (!options.nvidia_smi_xml.empty()) {
    // The report is the user's file, read from this machine even under --root.
    auto xml = context.system.read_file(options.nvidia_smi_xml, system::FileKind::report);
    if (!xml) {
      const std::string& remedy = xml.error().remedy;
      return report_error(context, util::Error::input(xml.error().message,
                                                      remedy.empty() ? "check the --nvidia-smi-xml path" : remedy));
    }
    request.collect.nvidia_smi_xml = std::move(*xml);
    request.collect.nvidia_smi_xml_origin = options.nvidia_smi_xml;
  }
  auto profile = load_profile_for(context, options);
  if (!profile) return report_error(context, profile.error());
  request.profile = std::move(*profile);

  std::unique_ptr<system::System> rooted;
  system::System* target = &context.system;
  if (!options.root.empty()) {
    auto tree = system::make_rooted_system(options.root);
    if (!tree) return report_error(context, tree.error());
    rooted = std::move(*tree);
    target = rooted.get();
  }
  auto report = doctor::run_doctor(*target, request);
  if (!report) return report_error(context, report.error());

  if (!options.prometheus.empty()) {
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (auto written =
            context.system.write_file_atomic(options.prometheus, doctor_prometheus(*report, GPUENV_VERSION, now));
        !written) {
      return report_error(context, written.error());
    }
  }
  if (!options.nfd.empty()) {
    if (auto written = fleet::write_nfd_feature_file(context.system, options.nfd,
                                                     fleet::nfd_feature_file(node_features(*report, options.strict)));
        !written) {
      return report_error(context, written.error());
    }
  }
  if (options.slurm) return run_slurm_health_check(context, options, *report);
  if (options.json) {
    context.out << doctor_json(*report, GPUENV_VERSION);
  } else if (options.oneline) {
    context.out << doctor_oneline(*report);
  } else {
    context.out << doctor_text(*report, context.style);
  }
  return exits_ok(report->verdict, options.strict) ? ExitCode::ok : ExitCode::not_ok;
}

}  // namespace

void add_doctor_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* command = app.add_subcommand(
      "doctor", "Is this node ready for GPU work? READY / DEGRADED / NOT READY, with the reasons and the fixes");
  CLI::Option* json = command->add_flag("--json", options->json, "Print the report as JSON (docs/doctor-json.md)");
  command->add_flag("--oneline", options->oneline, "Print one line of at most 80 characters naming the worst finding")
      ->excludes(json);
  command->add_option("--prometheus", options->prometheus,
                      "Also write node_exporter textfile metrics to FILE (atomically)");
  command->add_option("--nfd", options->nfd,
                      "Also write a node-feature-discovery feature file to FILE (gpuenv.io/ready=..., atomically)");
  CLI::Option* slurm = command->add_flag(
      "--slurm", options->slurm,
      "Slurm HealthCheckProgram: drain this node when NOT READY, resume it when healthy if gpuenv drained it "
      "(implies --quick; each wait capped at 5 s)");
  slurm->excludes(json);
  command
      ->add_option("--slurm-node", options->slurm_node,
                   "With --slurm: the Slurm NodeName (default: $SLURMD_NODENAME, else the short host name)")
      ->needs(slurm);
  command->add_flag("--strict", options->strict, "Exit 1 when DEGRADED (warnings), not only when NOT READY");
  command->add_flag("--quick", options->quick, "Skip the on-device smoke tests (software and health checks only)");
  command->add_option("--profile", options->profile, "Judge the node against a profile (shipped name or .toml path)");
  command->add_option("--set", options->set, "With --profile: pick a matrix cell or override a field (FIELD=VALUE)");
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
  command->add_option("--cloud-metadata-endpoint", options->cloud_metadata_endpoint,
                      "With --cloud-metadata: ask IPV4:PORT instead of the cloud's own address (testing)");
  command
      ->add_option("--timeout", options->timeout_s,
                   "Deadline in seconds for the whole collection (default 45; at most 45 under --slurm): each wait for "
                   "NVML, libcuda or a command is cut to the time left, and what it cuts short is a failing "
                   "doctor.deadline finding")
      ->check(CLI::PositiveNumber);
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
