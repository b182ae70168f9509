// `gpuenv nccl job`: the Slurm script (checked by bash -n and shellcheck) and the Kubeflow MPIJob (parsed as YAML
// and held to the MPI Operator's v2beta1 fields), and the inputs that cannot go into them.

#include "nccl/job.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "nccl/data.hpp"
#include "support/skip.hpp"
#include "system/system.hpp"

namespace {

const gpuenv::nccl::NcclData& data() {
  static const auto* loaded = [] {
    auto d = gpuenv::nccl::builtin_data();
    REQUIRE(d);
    return *d;
  }();
  return *loaded;
}

gpuenv::nccl::JobRequest p5(gpuenv::nccl::Scheduler scheduler) {
  gpuenv::nccl::JobRequest request;
  request.scheduler = scheduler;
  request.nodes = 4;
  request.gpus_per_node = 8;
  request.instance_type = "p5.48xlarge";
  request.network = "efa";
  request.nics_per_node = 32;
  request.max_bytes = 16ULL << 30;
  return request;
}

/// Writes `text` to a temporary file and returns its path.
std::string temporary(const std::string& text) {
  std::string pattern = "/tmp/gpuenv-nccl-job-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  return pattern;
}

}  // namespace

TEST_CASE("job: the Slurm script runs all_reduce_perf with srun --mpi=pmix and judges its output", "[nccl]") {
  auto script = gpuenv::nccl::write_job(p5(gpuenv::nccl::Scheduler::slurm), data());
  REQUIRE(script);
  CHECK(script->rfind("#!/bin/bash\n", 0) == 0);
  for (const char* line : {"#SBATCH --nodes=4\n", "#SBATCH --ntasks-per-node=8\n", "#SBATCH --gpus-per-node=8\n",
                           "export FI_PROVIDER=efa\n",
                           // NCCL's network INFO lines, so that `nccl judge` sees a fall-back to TCP sockets
                           "export NCCL_DEBUG=INFO\n", "export NCCL_DEBUG_SUBSYS=INIT,NET\n",
                           "srun --mpi=pmix --cpu-bind=none /opt/nccl-tests/build/all_reduce_perf -b 8388608 -e "
                           "17179869184 -f 2 -g 1 -c 1 -n 20 2>&1 | tee \"$out\" || status=$?\n",
                           "  gpuenv nccl judge \"$out\" --nodes 4 --instance-type p5.48xlarge || status=$?\n"}) {
    INFO(line);
    CHECK(script->find(line) != std::string::npos);
  }
  auto request = p5(gpuenv::nccl::Scheduler::slurm);
  request.image = "public.ecr.aws/hpc-cloud/nccl-tests:latest";
  CHECK(gpuenv::nccl::write_job(request, data())
            ->find("srun --mpi=pmix --cpu-bind=none --container-image=public.ecr.aws/hpc-cloud/nccl-tests:latest ") !=
        std::string::npos);
}

TEST_CASE("job: the Slurm script is valid bash and passes shellcheck", "[nccl][system-test]") {
  auto system = gpuenv::system::make_real_system();
  GPUENV_SKIP_UNLESS(!system->run({"shellcheck", "--version"}, std::chrono::seconds(30)).not_found,
                     "shellcheck is not installed (scripts/bootstrap installs it)");
  for (const char* network : {"efa", "infiniband", "default"}) {
    INFO(network);
    auto request = p5(gpuenv::nccl::Scheduler::slurm);
    request.network = network;
    auto script = gpuenv::nccl::write_job(request, data());
    REQUIRE(script);
    const std::string path = temporary(*script);
    const auto syntax = system->run({"bash", "-n", path}, std::chrono::seconds(30));
    const auto lint = system->run({"shellcheck", "--severity=style", path}, std::chrono::seconds(60));
    ::unlink(path.c_str());
    INFO(syntax.err << lint.out);
    CHECK(syntax.exit_code == 0);
    CHECK(lint.exit_code == 0);
  }
}

TEST_CASE("job: the Kubernetes MPIJob parses as YAML with the MPI Operator's v2beta1 shape", "[nccl][system-test]") {
  auto request = p5(gpuenv::nccl::Scheduler::kubernetes);
  request.image = "public.ecr.aws/hpc-cloud/nccl-tests:latest";
  auto manifest = gpuenv::nccl::write_job(request, data());
  REQUIRE(manifest);
  const std::string path = temporary(*manifest);
  // The fields the MPI Operator's v2beta1 API reads (kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/types.go:
  // slotsPerWorker, runPolicy, mpiReplicaSpecs Launcher/Worker), read back by PyYAML.
  const std::string check =
      "import sys, yaml\n"
      "d = yaml.safe_load(open(sys.argv[1]))\n"
      "assert d['apiVersion'] == 'kubeflow.org/v2beta1' and d['kind'] == 'MPIJob'\n"
      "s = d['spec']\n"
      "assert s['slotsPerWorker'] == 8\n"
      "launcher = s['mpiReplicaSpecs']['Launcher']['template']['spec']['containers'][0]\n"
      "worker = s['mpiReplicaSpecs']['Worker']\n"
      "assert worker['replicas'] == 4\n"
      "limits = worker['template']['spec']['containers'][0]['resources']['limits']\n"
      "assert limits == {'nvidia.com/gpu': 8, 'vpc.amazonaws.com/efa': 32, 'hugepages-2Mi': '5120Mi', "
      "'memory': '32000Mi'}, limits\n"
      "pod = worker['template']['spec']\n"
      "assert pod['volumes'] == [{'name': 'dshm', 'emptyDir': {'medium': 'Memory'}}], pod\n"
      "assert pod['containers'][0]['volumeMounts'] == [{'name': 'dshm', 'mountPath': '/dev/shm'}], pod\n"
      "c = launcher['command']\n"
      "assert c[:4] == ['mpirun', '--allow-run-as-root', '-np', '32'], c\n"
      "x = [c[i + 1] for i, a in enumerate(c) if a == '-x']\n"
      "assert x == ['PATH', 'LD_LIBRARY_PATH', 'NCCL_DEBUG=INFO', 'NCCL_DEBUG_SUBSYS=INIT,NET', 'FI_PROVIDER=efa'], "
      "x\n"
      "assert c[-13:] == ['/opt/nccl-tests/build/all_reduce_perf', '-b', '8388608', '-e', '17179869184', '-f', '2', "
      "'-g', '1', '-c', '1', '-n', '20'], c\n";
  auto system = gpuenv::system::make_real_system();
  const auto result = system->run({"python3", "-c", check, path}, std::chrono::seconds(60));
  ::unlink(path.c_str());
  GPUENV_SKIP_UNLESS(!result.not_found, "python3 is not installed");
  INFO(result.err);
  CHECK(result.exit_code == 0);
}

TEST_CASE("job: values that cannot go into a script or manifest are refused", "[nccl]") {
  auto request = p5(gpuenv::nccl::Scheduler::slurm);
  request.instance_type = "p5.48xlarge; rm -rf /";
  auto refused = gpuenv::nccl::write_job(request, data());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("is not an instance type name") != std::string::npos);
  request = p5(gpuenv::nccl::Scheduler::slurm);
  request.image = "img$(id)";
  CHECK_FALSE(gpuenv::nccl::write_job(request, data()));
  request = p5(gpuenv::nccl::Scheduler::kubernetes);
  auto no_image = gpuenv::nccl::write_job(request, data());
  REQUIRE_FALSE(no_image);
  CHECK(no_image.error().message.find("--kubernetes needs --image") != std::string::npos);
  request = p5(gpuenv::nccl::Scheduler::slurm);
  request.nodes = 0;
  CHECK_FALSE(gpuenv::nccl::write_job(request, data()));
}

TEST_CASE("job: the MPIJob's workers get a memory-backed /dev/shm and its ranks the launcher's PATH", "[nccl]") {
  auto request = p5(gpuenv::nccl::Scheduler::kubernetes);
  request.image = "public.ecr.aws/hpc-cloud/nccl-tests:latest";
  auto manifest = gpuenv::nccl::write_job(request, data());
  REQUIRE(manifest);
  // A container's /dev/shm is 64 MiB; NCCL's segments between the 8 ranks of one pod do not fit ("failed to extend
  // /dev/shm/nccl-... No space left on device", NVIDIA/nccl#525, NVIDIA/nccl-tests#166). kubeflow/mpi-operator @
  // 6dcc0f73e9dc7201e71e72c1f639944b8d0ebae8 examples/v2beta1/nccl-tests/nccl-tests.yaml, the Worker: volumes
  // "- name: shared-memory / emptyDir: / medium: \"Memory\"", volumeMounts "mountPath: /dev/shm".
  const std::string worker = manifest->substr(manifest->find("    Worker:\n"));
  CHECK(worker.find("        spec:\n          volumes:\n            - name: dshm\n              emptyDir:\n"
                    "                medium: Memory\n          containers:\n") != std::string::npos);
  CHECK(worker.find("              volumeMounts:\n                - name: dshm\n"
                    "                  mountPath: /dev/shm\n") != std::string::npos);
  // Ranks started over ssh do not inherit the image's ENV: aws-samples/awsome-distributed-training @
  // 0162aacd5da07d424e13f44bef8dd2c4cfcc66e4 micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml passes
  // "- -x / - PATH / - -x / - LD_LIBRARY_PATH" to mpirun.
  CHECK(manifest->find("command: [\"mpirun\", \"--allow-run-as-root\", \"-np\", \"32\", \"--bind-to\", \"none\", "
                       "\"-x\", \"PATH\", \"-x\", \"LD_LIBRARY_PATH\", ") != std::string::npos);
}

TEST_CASE("job: an EFA job does not force FI_EFA_USE_DEVICE_RDMA (p3dn's EFA has no RDMA read)", "[nccl]") {
  // libfabric aborts when FI_EFA_USE_DEVICE_RDMA=1 meets a device without RDMA read (ofiwg/libfabric @
  // a309bc2896765423e048d7d204a24f5332e211df prov/efa/src/rdm/efa_rdm_util.c: "FI_EFA_USE_DEVICE_RDMA=1 was set by
  // user, but EFA device has no rdma-read capability"); p3dn.24xlarge gets the same "efa" network as p4d and p5.
  for (const auto scheduler : {gpuenv::nccl::Scheduler::slurm, gpuenv::nccl::Scheduler::kubernetes}) {
    auto request = p5(scheduler);
    request.instance_type = "p3dn.24xlarge";
    request.nics_per_node = 1;
    request.image = "public.ecr.aws/hpc-cloud/nccl-tests:latest";
    auto job = gpuenv::nccl::write_job(request, data());
    REQUIRE(job);
    CHECK(job->find("FI_PROVIDER=efa") != std::string::npos);
    CHECK(job->find("FI_EFA_USE_DEVICE_RDMA=") == std::string::npos);
  }
}
