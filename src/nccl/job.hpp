#pragma once
// `gpuenv nccl job`: the job that runs nccl-tests' all_reduce_perf across N nodes the way the field runs it (one rank
// per GPU, launched by the scheduler), as text: a Slurm batch script (srun --mpi=pmix) or a Kubeflow MPIJob
// manifest. gpuenv launches nothing remote itself; the job ends by handing its output to `gpuenv nccl judge`.
// Pure: request and data in, text out.

#include <optional>
#include <string>

#include "nccl/data.hpp"
#include "util/expected.hpp"

namespace gpuenv::nccl {

enum class Scheduler { slurm, kubernetes };

struct JobRequest {
  Scheduler scheduler = Scheduler::slurm;
  unsigned nodes = 2;
  unsigned gpus_per_node = 8;
  std::string instance_type;        ///< names the floor and, through the caller, the network ("" unknown)
  std::string network = "default";  ///< "efa", "infiniband", "default" (from the instance type's row)
  unsigned nics_per_node = 0;       ///< the instance row's EFA devices, for the Kubernetes resource request
  std::string image;                ///< container image (Slurm: pyxis --container-image; Kubernetes: required)
  std::string all_reduce_perf = "/opt/nccl-tests/build/all_reduce_perf";
  std::uint64_t max_bytes = 8ULL << 30;  ///< -e: the largest size (the floor's size when one applies)
  std::string prometheus;                ///< the judge step also writes node_exporter metrics there ("" none)
};

/// The job's text; a usage Error for values that cannot go into a script or manifest (only [A-Za-z0-9._/:@+-] are
/// accepted in names, image and path) or a Kubernetes job without an image.
util::Expected<std::string> write_job(const JobRequest& request, const NcclData& data);

}  // namespace gpuenv::nccl
