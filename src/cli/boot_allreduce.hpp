#pragma once
// `doctor --tier boot`'s NCCL all-reduce (issue 27 item 4: "gpuenv smoke --nccl (and in the boot tier)"): after the
// boot tier's smoke tests, the single-node sweep of nccl/allreduce.hpp over every GPU, judged into the report.

#include <string>

#include "doctor/doctor.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::cli {

/// Where the sweep's libraries come from (each already trust-checked by the caller).
struct BootAllreduceOptions {
  std::string cuda_library;   ///< the smoke tests' libcuda
  std::string nccl_library;   ///< GPUENV_NCCL_LIBRARY, "" for the node's libnccl.so.2
  std::string python;         ///< doctor's --python: its nvidia-nccl wheel
  std::string instance_type;  ///< --instance-type, else what doctor found (DMI or the metadata service)
};

/// Runs the all-reduce when the smoke tests ran and finished on two or more GPUs, adds its findings (nccl.library,
/// nccl.allreduce, nccl.busbw, with their actions) and judges the verdict again; nothing otherwise. A sweep that
/// cannot start (a --python without the nvidia-nccl wheel) is a skip finding; an Error only for gpuenv's broken data.
util::Expected<util::Ok> add_boot_allreduce(system::System& system, const BootAllreduceOptions& options,
                                            doctor::DoctorReport& report);

}  // namespace gpuenv::cli
