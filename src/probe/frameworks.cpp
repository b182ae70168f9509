#include "probe/frameworks.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

// Python 3.6+; prints one `key=value` per line. No network: it only imports and asks the local runtime.
constexpr std::string_view k_script = R"PY(
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
def last(e):
    lines = str(e).strip().splitlines()
    return type(e).__name__ + (": " + lines[-1] if lines else "")
def first(e):
    # torch's CUDA errors put the cause first and generic advice after it.
    lines = str(e).strip().splitlines()
    return type(e).__name__ + (": " + lines[0] if lines else "")
def out(key, value):
    print(key + "=" + str(value).replace("\n", " "))
try:
    import importlib.util as util
except Exception:
    util = None
matmul = "matmul" in sys.argv[1:]
# 64x64 ones times itself: every element is 64, the sum 64**3; exact in fp32.
EXPECTED = 262144.0
def report_matmul(name, index, compute):
    try:
        value = float(compute())
        out(name + ".matmul", "%d %s" % (index, "ok" if value == EXPECTED else
                                         "mismatch: the sum is %r, expected %r" % (value, EXPECTED)))
    except BaseException as e:
        out(name + ".matmul", "%d error: %s" % (index, first(e)))
for name in ("torch", "tensorflow"):
    try:
        found = util is not None and util.find_spec(name) is not None
    except Exception:
        found = False
    out(name + ".installed", "yes" if found else "no")
    if not found:
        continue
    try:
        module = __import__(name)
    except BaseException as e:
        out(name + ".import_error", last(e))
        continue
    out(name + ".version", getattr(module, "__version__", ""))
    try:
        if name == "torch":
            cuda = module.cuda
            out("torch.cuda", module.version.cuda or "")
            cudnn = module.backends.cudnn
            out("torch.cudnn", (cudnn.version() if cudnn.is_available() else "") or "")
            available = bool(cuda.is_available())
            out("torch.cuda_available", "yes" if available else "no")
            count = cuda.device_count() if available else 0
            out("torch.device_count", count)
            out("torch.arch_list", " ".join(cuda.get_arch_list()) if available else "")
            out("torch.capabilities", " ".join("%d.%d" % tuple(cuda.get_device_capability(i)) for i in range(count)))
            for i in range(count if matmul else 0):
                def compute(i=i):
                    a = module.ones((64, 64), device="cuda:%d" % i)
                    return module.matmul(a, a).sum().item()
                report_matmul("torch", i, compute)
        else:
            build = module.sysconfig.get_build_info()
            out("tensorflow.cuda", build.get("cuda_version", ""))
            out("tensorflow.cudnn", build.get("cudnn_version", ""))
            gpus = module.config.list_physical_devices("GPU")
            out("tensorflow.cuda_available", "yes" if gpus else "no")
            out("tensorflow.device_count", len(gpus))
            for i in range(len(gpus) if matmul else 0):
                def compute(i=i):
                    with module.device("/GPU:%d" % i):
                        a = module.ones((64, 64))
                        return module.reduce_sum(module.matmul(a, a)).numpy()
                report_matmul("tensorflow", i, compute)
    except BaseException as e:
        out(name + ".error", last(e))
)PY";

FrameworkFacts& framework(std::vector<FrameworkFacts>& all, std::string_view name) {
  for (FrameworkFacts& f : all) {
    if (f.name == name) return f;
  }
  all.push_back(FrameworkFacts{});
  all.back().name = std::string(name);
  return all.back();
}

std::vector<std::string> spaced_words(std::string_view text) {
  std::vector<std::string> out;
  for (auto word : util::split(text, ' ')) {
    if (!util::trim(word).empty()) out.emplace_back(util::trim(word));
  }
  return out;
}

// The report and the capabilities are host text: a number too large for an int is unreadable, not a crash
// (std::stoi threw out_of_range on "sm_99999999999": found by tests/fuzz/host_text_fuzz).
constexpr long long k_max_number = 100000;  // no arch number or device count is larger

/// `text` as a number in [0, max]; nullopt for anything else.
std::optional<int> small_number(std::string_view text, long long max) {
  const auto value = util::parse_int(text);
  if (!value || *value < 0 || *value > max) return std::nullopt;
  return static_cast<int>(*value);
}

/// "sm_86" -> 86, "compute_90" -> 90; nullopt for arch-specific ("sm_90a") or unreadable names.
std::optional<int> arch_number(std::string_view name, std::string_view prefix) {
  if (!util::starts_with(name, prefix)) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return small_number(digits, k_max_number);
}

/// "1 ok", "1 mismatch: ...", "1 error: ..." -> the device's result; nullopt for anything else.
std::optional<MatmulResult> parse_matmul(std::string_view value) {
  const auto space = value.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  const std::string_view index = value.substr(0, space);
  if (index.find_first_not_of("0123456789") != std::string_view::npos || index.size() > 4) return std::nullopt;
  const std::optional<long long> device = util::parse_int(index);
  if (!device) return std::nullopt;
  MatmulResult result;
  result.device = static_cast<unsigned>(*device);
  const std::string_view rest = value.substr(space + 1);
  const auto colon = rest.find(": ");
  const std::string_view outcome = rest.substr(0, colon);
  if (outcome == "ok") {
    result.outcome = MatmulResult::Outcome::ok;
  } else if (outcome == "mismatch") {
    result.outcome = MatmulResult::Outcome::mismatch;
  } else if (outcome == "error") {
    result.outcome = MatmulResult::Outcome::error;
  } else {
    return std::nullopt;
  }
  if (colon != std::string_view::npos) result.detail = std::string(rest.substr(colon + 2));
  return result;
}

}  // namespace

std::string_view framework_probe_script() { return k_script; }

std::vector<FrameworkFacts> parse_framework_report(std::string_view text) {
  std::vector<FrameworkFacts> all;
  for (auto raw : util::split(text, '\n')) {
    const std::string_view line = util::trim(raw);
    const auto dot = line.find('.');
    const auto equals = line.find('=');
    if (dot == std::string_view::npos || equals == std::string_view::npos || dot > equals) continue;
    const std::string_view name = line.substr(0, dot);
    if (name != "torch" && name != "tensorflow") continue;
    const std::string_view key = line.substr(dot + 1, equals - dot - 1);
    const std::string value(line.substr(equals + 1));
    FrameworkFacts& f = framework(all, name);
    if (key == "installed")
      f.installed = value == "yes";
    else if (key == "import_error")
      f.import_error = value;
    else if (key == "error")
      f.error = value;
    else if (key == "version")
      f.version = value;
    else if (key == "cuda")
      f.cuda = value;
    else if (key == "cudnn")
      f.cudnn = value;
    else if (key == "cuda_available")
      f.cuda_available = value == "yes";
    else if (key == "device_count" && small_number(value, k_max_number))
      f.device_count = static_cast<unsigned>(*small_number(value, k_max_number));  // std::stoul threw on 20 digits
    else if (key == "arch_list")
      f.arch_list = spaced_words(value);
    else if (key == "capabilities")
      f.device_capabilities = spaced_words(value);
    else if (key == "matmul")
      if (auto result = parse_matmul(value)) f.matmul.push_back(std::move(*result));
  }
  return all;
}

FrameworkProbe probe_frameworks(system::System& system, const std::string& python, std::chrono::milliseconds timeout,
                                bool matmul) {
  FrameworkProbe probe;
  probe.availability.source = python;
  // -I (isolated mode, Python 3.4+): neither the working directory nor the script's is put on sys.path, PYTHON*
  // variables and the user's site-packages are ignored, so a `torch.py` where root stands is never imported
  // (https://docs.python.org/3/using/cmdline.html#cmdoption-I). System::run adds a clean environment and "/".
  std::vector<std::string> argv = {python, "-I", "-c", std::string(k_script)};
  if (matmul) argv.emplace_back("matmul");
  const system::CommandResult result = system.run(argv, timeout);
  if (result.not_found) {
    probe.availability.reason = python + " is not installed";
  } else if (result.timed_out) {
    probe.availability.reason = python + " did not finish within " + std::to_string(timeout.count()) + " ms";
  } else if (result.exit_code != 0) {
    const auto lines = util::split(util::trim(result.err), '\n');
    probe.availability.reason = python + " failed with exit code " + std::to_string(result.exit_code) +
                                (lines.empty() ? "" : ": " + std::string(util::trim(lines.back())));
  } else {
    probe.availability.available = true;
    probe.frameworks = parse_framework_report(result.out);
  }
  return probe;
}

bool arch_list_covers(const std::vector<std::string>& arch_list, const std::string& capability) {
  const auto dot = capability.find('.');
  // Unknown capability (no dot, not two numbers, a minor past 9: "8.x", "9.", "a.b"): nothing to judge. std::stoi
  // threw invalid_argument on those.
  const auto major_number = small_number(capability.substr(0, dot), 1000);
  const auto minor_number = dot == std::string::npos ? std::nullopt : small_number(capability.substr(dot + 1), 9);
  if (!major_number || !minor_number) return true;
  const int major = *major_number;
  const int gpu = major * 10 + *minor_number;
  for (const std::string& arch : arch_list) {
    if (auto sass = arch_number(arch, "sm_")) {
      if (*sass / 10 == major && *sass <= gpu) return true;
    } else if (auto ptx = arch_number(arch, "compute_")) {
      if (*ptx <= gpu) return true;
    } else if (arch == "sm_" + std::to_string(gpu) + "a") {
      return true;
    }
  }
  return false;
}

}  // namespace gpuenv::probe
