#include "nccl/nccl_api.hpp"

#include "system/symbols.hpp"
#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

/// Prints the directory of the nvidia.nccl package (the nvidia-nccl-cu12/-cu13 wheel), or nothing.
constexpr const char* k_find_wheel =
    "import importlib.util\n"
    "s = importlib.util.find_spec('nvidia.nccl')\n"
    "print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')\n";

}  // namespace

util::Expected<NcclApi> resolve_nccl_api(system::DynamicLibrary& library) {
  NcclApi api;
  system::SymbolBinder binder(library);
  binder.require(api.get_version, "ncclGetVersion");
  binder.require(api.get_error_string, "ncclGetErrorString");
  binder.require(api.comm_init_all, "ncclCommInitAll");
  binder.require(api.comm_destroy, "ncclCommDestroy");
  binder.require(api.comm_abort, "ncclCommAbort");
  binder.require(api.comm_get_async_error, "ncclCommGetAsyncError");
  binder.require(api.all_reduce, "ncclAllReduce");
  binder.require(api.group_start, "ncclGroupStart");
  binder.require(api.group_end, "ncclGroupEnd");
  if (!binder.missing().empty()) return util::Error::input("not a usable libnccl: it lacks " + binder.missing_text());
  return api;
}

std::string describe_nccl_error(const NcclApi& api, ncclResult_t result) {
  static const char* const names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                      "ncclRemoteError",   "ncclInProgress",         "ncclTimeout"};
  std::string text = result >= 0 && result <= 8 ? names[result] : "NCCL error";
  text += " (" + std::to_string(result) + ")";
  if (api.get_error_string != nullptr) {
    if (const char* what = api.get_error_string(result); what != nullptr && *what != '\0')
      text += ": " + std::string(what);
  }
  return text;
}

std::string nccl_version_text(int code) {
  if (code <= 0) return {};
  const bool old_scheme = code < 10000;  // NCCL_VERSION(X,Y,Z) for X <= 2 && Y <= 8
  const int major = old_scheme ? code / 1000 : code / 10000;
  const int minor = old_scheme ? (code % 1000) / 100 : (code % 10000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

util::Expected<std::vector<std::string>> nccl_candidates(system::System& system, const NcclLocation& location) {
  if (!location.library.empty()) return std::vector<std::string>{location.library};
  if (!location.python) return std::vector<std::string>{"libnccl.so.2"};
  // -I: neither the working directory nor PYTHON* variables nor the user's site-packages steer what root imports
  // (https://docs.python.org/3/using/cmdline.html#cmdoption-I), as doctor's framework probe does.
  const system::CommandResult result = system.run({*location.python, "-I", "-c", k_find_wheel}, location.timeout);
  if (result.not_found) return util::Error::usage("--python " + *location.python + ": no such interpreter");
  if (result.exit_code != 0 || result.timed_out) {
    return util::Error::input("--python " + *location.python + " could not look for the nvidia-nccl wheel" +
                              (result.timed_out ? " (it did not answer)" : ": " + std::string(util::trim(result.err))));
  }
  const std::string directory(util::trim(result.out));
  if (directory.empty() || directory.find('\n') != std::string::npos) {
    return util::Error::input("--python " + *location.python + ": its environment has no nvidia-nccl wheel",
                              "pip install nvidia-nccl-cu12 (or -cu13) into it, or leave out --python to use the "
                              "node's libnccl.so.2");
  }
  // The wheel's library is loaded into this (root) process: a venv a user can write to would choose root's code.
  std::string library = directory + "/lib/libnccl.so.2";
  if (const auto problem = system.trust_problem(library)) {
    return util::Error::input("--python " + *location.python + ": its nvidia-nccl wheel " + library +
                                  " is not trusted: " + *problem + ", so someone other than root could change what " +
                                  "gpuenv loads",
                              "install the wheel into an environment only root can change (`chown -R root: DIR && "
                              "chmod -R go-w DIR`), or name a trusted libnccl.so.2 with GPUENV_NCCL_LIBRARY");
  }
  return std::vector<std::string>{library};
}

}  // namespace gpuenv::nccl
