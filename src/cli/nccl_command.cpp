// `gpuenv nccl`: `judge FILE` (an nccl-tests output against the floors; text, --json, --prometheus FILE) and `job`
// (the Slurm script or Kubernetes MPIJob that runs nccl-tests across N nodes). docs/fabric.md.

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/nccl_output.hpp"
#include "cli/prometheus.hpp"
#include "cli/version.hpp"
#include "doctor/instances.hpp"
#include "nccl/data.hpp"
#include "nccl/job.hpp"
#include "nccl/judge.hpp"
#include "nccl/tests_output.hpp"

namespace gpuenv::cli {
namespace {

struct JudgeOptions {
  std::string file;
  std::string instance_type;
  unsigned nodes = 0;  ///< 0: from the output's device list
  bool json = false;
  std::string prometheus;
};

struct JobOptions {
  unsigned nodes = 2;
  bool slurm = false;
  bool kubernetes = false;
  std::string instance_type;
  unsigned gpus_per_node = 0;  ///< 0: the instance type's, else 8
  std::string image;
  std::string all_reduce_perf = "/opt/nccl-tests/build/all_reduce_perf";
  std::string output;
  std::string prometheus;
};

util::Expected<ExitCode> run_judge(Context& context, const JudgeOptions& options) {
  GPUENV_TRY_ASSIGN(auto data, nccl::builtin_data());
  GPUENV_TRY_ASSIGN(auto text, context.system.read_file(options.file, system::FileKind::report));
  auto output = nccl::parse_nccl_tests_output(text);
  if (!output) return util::Error::input(options.file + ": " + output.error().message, output.error().remedy);
  nccl::JudgeRequest request;
  request.instance_type = options.instance_type;
  if (options.nodes > 0) request.nodes = options.nodes;
  if (!options.instance_type.empty()) {
    GPUENV_TRY_ASSIGN(auto instances, doctor::builtin_instances());
    const doctor::InstanceExpectation* instance = doctor::find_instance(*instances, options.instance_type);
    if (instance != nullptr && instance->gpus > 0) request.gpus_per_node = instance->gpus;
  }
  const nccl::JudgeReport judged = nccl::judge_nccl_tests(*output, request, *data);
  if (!options.prometheus.empty()) {
    if (auto written =
            context.system.write_file_atomic(options.prometheus, nccl_judge_prometheus(judged, gpuenv_version()));
        !written)
      return written.error();
  }
  context.out << (options.json ? nccl_judge_json(*output, judged, gpuenv_version())
                               : nccl_judge_text(*output, judged, context.style));
  return judged.verdict == report::Verdict::not_ok ? ExitCode::not_ok : ExitCode::ok;
}

/// The instance type's network and sizes from doctor's instance table: EFA or InfiniBand rows, GPUs per node.
void apply_instance(const doctor::InstanceExpectation* instance, nccl::JobRequest& request) {
  if (instance == nullptr) return;
  if (instance->efa_devices) {
    request.network = "efa";
    request.nics_per_node = *instance->efa_devices;
  } else if (instance->infiniband_devices) {
    request.network = "infiniband";
    request.nics_per_node = *instance->infiniband_devices;
  }
  request.gpus_per_node = instance->gpus;
  // Two buffers of the largest size must fit beside NCCL's own: 16 GiB on 80 GB GPUs, 8 GiB below 48 GiB.
  if (instance->gpu_memory_mib && *instance->gpu_memory_mib >= 48 * 1024) request.max_bytes = 16ULL << 30;
}

util::Expected<ExitCode> run_job(Context& context, const JobOptions& options) {
  if (options.slurm == options.kubernetes) return util::Error::usage("name one scheduler: --slurm or --kubernetes");
  GPUENV_TRY_ASSIGN(auto data, nccl::builtin_data());
  GPUENV_TRY_ASSIGN(auto instances, doctor::builtin_instances());
  nccl::JobRequest request;
  request.scheduler = options.slurm ? nccl::Scheduler::slurm : nccl::Scheduler::kubernetes;
  request.nodes = options.nodes;
  request.instance_type = options.instance_type;
  request.image = options.image;
  request.all_reduce_perf = options.all_reduce_perf;
  request.prometheus = options.prometheus;
  if (!options.instance_type.empty()) {
    const doctor::InstanceExpectation* instance = doctor::find_instance(*instances, options.instance_type);
    if (instance == nullptr && data->floor_for(options.instance_type, options.nodes) == nullptr) {
      return util::Error::usage("--instance-type " + options.instance_type + ": not in gpuenv's instance table",
                                "leave it out, or add the type with a data overlay "
                                "(instances.toml)");
    }
    apply_instance(instance, request);
    if (const nccl::Floor* floor = data->floor_for(options.instance_type, options.nodes))
      request.max_bytes = std::max(request.max_bytes, floor->message_bytes);
  }
  if (options.gpus_per_node > 0) request.gpus_per_node = options.gpus_per_node;
  GPUENV_TRY_ASSIGN(auto job, nccl::write_job(request, *data));
  if (options.output.empty()) {
    context.out << job;
  } else {
    GPUENV_TRY(context.system.write_file_atomic(options.output, job));
  }
  return ExitCode::ok;
}

void add_judge(CLI::App& nccl, Action& action) {
  auto options = std::make_shared<JudgeOptions>();
  CLI::App* judge = nccl.add_subcommand(
      "judge", "Judge an nccl-tests output: wrong results, bus bandwidth against the floor, ranks (docs/fabric.md)");
  judge->add_option("file", options->file, "The output of all_reduce_perf (stdout, or the job's log)")->required();
  judge->add_option("--instance-type", options->instance_type, "The nodes' instance type (names the floor)");
  judge->add_option("--nodes", options->nodes, "How many nodes ran the test (default: the hosts it lists)")
      ->check(CLI::Range(1, 100000));
  judge->add_flag("--json", options->json, "Print the judgement as JSON");
  judge->add_option("--prometheus", options->prometheus, "Also write node_exporter textfile metrics to FILE");
  judge->callback([&action, options] { action = [options](Context& c) { return run_judge(c, *options); }; });
}

void add_job(CLI::App& nccl, Action& action) {
  auto options = std::make_shared<JobOptions>();
  CLI::App* job = nccl.add_subcommand(
      "job", "Write the job that runs nccl-tests all_reduce_perf across N nodes under Slurm or Kubernetes");
  job->add_option("--nodes", options->nodes, "Nodes to run across (default 2)")->check(CLI::Range(1, 4096));
  job->add_flag("--slurm", options->slurm, "A Slurm batch script (srun --mpi=pmix, one task per GPU)");
  job->add_flag("--kubernetes", options->kubernetes, "A Kubeflow MPIJob manifest (kubeflow.org/v2beta1)");
  job->add_option("--instance-type", options->instance_type,
                  "The nodes' instance type: its GPUs, network settings and floor size (data/doctor/instances.toml)");
  job->add_option("--gpus-per-node", options->gpus_per_node, "GPUs per node (default: the instance type's, else 8)")
      ->check(CLI::Range(1, 64));
  job->add_option("--image", options->image,
                  "Container image with nccl-tests (Slurm: pyxis --container-image; required for --kubernetes)");
  job->add_option(
      "--all-reduce-perf", options->all_reduce_perf,
      "Path of all_reduce_perf on the nodes or in the image (default /opt/nccl-tests/build/all_reduce_perf)");
  job->add_option("--output", options->output, "Write the job to FILE instead of standard output");
  job->add_option("--prometheus", options->prometheus,
                  "Have the job's judge step write node_exporter metrics to FILE (on the node that runs it)");
  job->callback([&action, options] { action = [options](Context& c) { return run_job(c, *options); }; });
}

}  // namespace

void add_nccl_command(CLI::App& app, Action& action) {
  CLI::App* nccl =
      app.add_subcommand("nccl", "NCCL collectives across nodes: write the nccl-tests job, judge its output");
  nccl->require_subcommand(1);
  add_judge(*nccl, action);
  add_job(*nccl, action);
}

}  // namespace gpuenv::cli
