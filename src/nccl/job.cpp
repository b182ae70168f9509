#include "nccl/job.hpp"

#include <algorithm>
#include <cctype>

#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

/// Characters that mean the same in a shell word, a YAML double-quoted scalar and an argv entry, so that a value made
/// only of them needs no quoting anywhere it is written (host text never reaches a shell).
bool plain(std::string_view text, std::string_view extra = {}) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("._/:@+-").find(c) != std::string_view::npos || extra.find(c) != std::string_view::npos;
  });
}

/// The all_reduce_perf arguments: one GPU per rank (-g 1), 8 MiB doubling to max_bytes, results checked (-c 1).
std::vector<std::string> test_arguments(const JobRequest& request) {
  return {request.all_reduce_perf,
          "-b",
          "8388608",
          "-e",
          std::to_string(request.max_bytes),
          "-f",
          "2",
          "-g",
          "1",
          "-c",
          "1",
          "-n",
          "20"};
}

std::string judge_arguments(const JobRequest& request, const std::string& file) {
  std::string text = "gpuenv nccl judge " + file + " --nodes " + std::to_string(request.nodes);
  if (!request.instance_type.empty()) text += " --instance-type " + request.instance_type;
  if (!request.prometheus.empty()) text += " --prometheus " + request.prometheus;
  return text;
}

std::string header(const JobRequest& request, const Network& network, const std::string& comment) {
  return comment + " Written by `gpuenv nccl job`: NVIDIA nccl-tests all_reduce_perf across " +
         std::to_string(request.nodes) + " nodes x " + std::to_string(request.gpus_per_node) +
         " GPUs, one rank per GPU (docs/fabric.md).\n" + comment + " network: " + network.name +
         (request.instance_type.empty() ? std::string() : " (" + request.instance_type + ")") +
         "; its settings: " + network.source + "\n";
}

/// NCCL's INFO lines for initialisation and the network ("NET/IB : Using", "NET/Socket : Using"): without them the
/// judge cannot see a run that fell back to TCP sockets (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/
/// env.html, NCCL_DEBUG and NCCL_DEBUG_SUBSYS).
const std::vector<std::string>& transport_logging() {
  static const std::vector<std::string> entries = {"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"};
  return entries;
}

std::string slurm_script(const JobRequest& request, const Network& network) {
  std::string text = "#!/bin/bash\n" + header(request, network, "#");
  text += "# Submit with `sbatch`; when gpuenv is installed on the first node, the job judges its own output.\n";
  text += "#SBATCH --job-name=gpuenv-nccl\n";
  text += "#SBATCH --nodes=" + std::to_string(request.nodes) + "\n";
  text += "#SBATCH --ntasks-per-node=" + std::to_string(request.gpus_per_node) + "\n";
  text += "#SBATCH --gpus-per-node=" + std::to_string(request.gpus_per_node) + "\n";
  text += "#SBATCH --exclusive\n#SBATCH --time=00:30:00\n#SBATCH --output=gpuenv-nccl-%j.log\n";
  text += "set -uo pipefail\n";
  for (const std::string& entry : transport_logging()) text += "export " + entry + "\n";
  for (const std::string& entry : network.env) text += "export " + entry + "\n";
  text += "out=\"gpuenv-nccl-${SLURM_JOB_ID}.out\"\nstatus=0\n";
  text += "srun --mpi=pmix --cpu-bind=none";
  if (!request.image.empty()) text += " --container-image=" + request.image;
  for (const std::string& argument : test_arguments(request)) text += " " + argument;
  text += " 2>&1 | tee \"$out\" || status=$?\n";
  text += "if command -v gpuenv >/dev/null 2>&1; then\n  " + judge_arguments(request, "\"$out\"") +
          " || status=$?\nfi\nexit \"$status\"\n";
  return text;
}

/// A YAML flow sequence of double-quoted strings (every entry is plain: no escaping is needed).
std::string yaml_list(const std::vector<std::string>& items) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) text += (i == 0 ? "\"" : ", \"") + items[i] + "\"";
  return text + "]";
}

std::string kubernetes_manifest(const JobRequest& request, const Network& network) {
  // -x PATH -x LD_LIBRARY_PATH: the ranks mpirun starts over ssh do not inherit the container's ENV, so without them
  // libraries the image adds there (aws-ofi-nccl, libfabric, MPI under /opt) are not found (aws-samples/
  // awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml passes both).
  std::vector<std::string> command = {"mpirun",    "--allow-run-as-root",
                                      "-np",       std::to_string(request.nodes * request.gpus_per_node),
                                      "--bind-to", "none",
                                      "-x",        "PATH",
                                      "-x",        "LD_LIBRARY_PATH"};
  for (const auto* entries : {&transport_logging(), &network.env}) {
    for (const std::string& entry : *entries) {
      command.emplace_back("-x");
      command.push_back(entry);
    }
  }
  for (const std::string& argument : test_arguments(request)) command.push_back(argument);
  std::string text = header(request, network, "#");
  text +=
      "# Apply with `kubectl apply -f` (the Kubeflow MPI Operator, kubeflow.org/v2beta1; the image must carry\n"
      "# nccl-tests, MPI and sshd), then judge the launcher's log:\n#   kubectl logs job/gpuenv-nccl-launcher > "
      "gpuenv-nccl.out && " +
      judge_arguments(request, "gpuenv-nccl.out") + "\n";
  text += "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: gpuenv-nccl\nspec:\n";
  text += "  slotsPerWorker: " + std::to_string(request.gpus_per_node) + "\n";
  text += "  runPolicy:\n    cleanPodPolicy: Running\n  mpiReplicaSpecs:\n";
  text += "    Launcher:\n      replicas: 1\n      template:\n        spec:\n          containers:\n";
  text += "            - name: launcher\n              image: \"" + request.image + "\"\n";
  text += "              command: " + yaml_list(command) + "\n";
  // /dev/shm: a container's is 64 MiB, too small for NCCL's shared-memory segments between the ranks of one pod
  // ("failed to extend /dev/shm/nccl-...: No space left on device", NVIDIA/nccl#525); a memory-backed emptyDir
  // replaces it, as kubeflow/mpi-operator's examples/v2beta1/nccl-tests/nccl-tests.yaml does. Its pages count
  // against the worker's memory limit (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir).
  text += "    Worker:\n      replicas: " + std::to_string(request.nodes) + "\n      template:\n        spec:\n";
  text += "          volumes:\n            - name: dshm\n              emptyDir:\n                medium: Memory\n";
  text += "          containers:\n";
  text += "            - name: worker\n              image: \"" + request.image + "\"\n";
  text += "              volumeMounts:\n                - name: dshm\n                  mountPath: /dev/shm\n";
  text += "              resources:\n                limits:\n";
  text += "                  nvidia.com/gpu: " + std::to_string(request.gpus_per_node) + "\n";
  if (!network.kubernetes_resource.empty() && request.nics_per_node > 0)
    text += "                  " + network.kubernetes_resource + ": " + std::to_string(request.nics_per_node) + "\n";
  for (const std::string& limit : network.kubernetes_limits) {
    const std::size_t equals = limit.find('=');
    text += "                  " + limit.substr(0, equals) + ": " + limit.substr(equals + 1) + "\n";
  }
  return text;
}

}  // namespace

util::Expected<std::string> write_job(const JobRequest& request, const NcclData& data) {
  if (request.nodes < 1 || request.nodes > 4096) return util::Error::usage("--nodes must be between 1 and 4096");
  if (request.gpus_per_node < 1 || request.gpus_per_node > 64)
    return util::Error::usage("--gpus-per-node must be between 1 and 64");
  if (!request.instance_type.empty() && !plain(request.instance_type))
    return util::Error::usage("--instance-type `" + request.instance_type + "` is not an instance type name",
                              "use letters, digits and . _ - only");
  if (!request.image.empty() && !plain(request.image))
    return util::Error::usage("--image `" + request.image + "` is not an image reference",
                              "use a registry/name:tag or @sha256 digest reference");
  if (!request.prometheus.empty() && !plain(request.prometheus))
    return util::Error::usage("--prometheus `" + request.prometheus + "` is not a plain path");
  if (!plain(request.all_reduce_perf))
    return util::Error::usage("--all-reduce-perf `" + request.all_reduce_perf + "` is not a plain path");
  if (request.scheduler == Scheduler::kubernetes && request.image.empty())
    return util::Error::usage("--kubernetes needs --image: the container image with nccl-tests, MPI and sshd",
                              "e.g. --image public.ecr.aws/hpc-cloud/nccl-tests:latest on AWS");
  const Network* network = data.network(request.network);
  if (network == nullptr) return util::Error::internal("networks.toml has no default network");
  for (const std::string& entry : network->env) {
    if (!plain(entry, "=,"))
      return util::Error::internal("networks.toml: `" + entry + "` is not a plain NAME=value (" + network->name + ")");
  }
  return request.scheduler == Scheduler::slurm ? slurm_script(request, *network)
                                               : kubernetes_manifest(request, *network);
}

}  // namespace gpuenv::nccl
