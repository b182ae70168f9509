#include "dockerfile/dockerfile.hpp"

#include "compat/derive.hpp"
#include "compat/mirrors.hpp"
#include "dockerfile/checks.hpp"
#include "dockerfile/doctor_stage.hpp"
#include "dockerfile/framework.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile/lint.hpp"
#include "dockerfile/sources.hpp"
#include "dockerfile/text.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {
namespace {

using util::Error;
using util::Version;

/// Everything render() works from, resolved once.
struct Plan {
  const profile::Profile& p;
  const Data& data;
  const Options& options;
  compat::Derived derived;
  const compat::CudaImage* image = nullptr;
  PythonPlan python;
  FrameworkSteps framework;
  PackageManager manager = PackageManager::apt;
  bool uses_uv = false;
  /// With --hashed-requirements: the file's pip line, installed from its hashes before the framework.
  std::string hashed_pip;
  /// The lowest driver the image's payload runs on (label io.gpuenv.driver.min).
  compat::DriverFloor payload_floor;

  std::string base_image() const { return "nvidia/cuda:" + derived.image_tag; }
  /// The --digest-lock digest of a helper image, or "".
  std::string digest_of(const std::string& reference) const {
    const auto it = options.helper_digests.find(reference);
    return it == options.helper_digests.end() ? std::string() : it->second;
  }
};

/// The lowest driver the image runs its framework on. A framework that brings its own CUDA (PyTorch's cuXYZ
/// wheels, TensorFlow [and-cuda]) needs only what its CUDA major's minor-version compatibility needs (cu12x: R525+),
/// not what the base tag's toolkit release requires; driver.min, when set, wins.
compat::DriverFloor payload_floor(const profile::Profile& p, const compat::KnowledgeBase& kb,
                                  const compat::Derived& derived, const FrameworkSteps& framework) {
  if (!p.driver_min.empty() || !framework.from_wheels) return derived.driver_floor;
  const auto cuda = Version::parse(framework.loaded_cuda);
  const compat::CudaMajor* major = cuda ? kb.cuda_major(cuda->major()) : nullptr;
  if (major == nullptr) return derived.driver_floor;
  return {major->compat_driver_min,
          "the framework's CUDA " + framework.loaded_cuda + " runs on any CUDA " + std::to_string(cuda->major()) +
              " driver through minor-version compatibility (" + major->provenance.source + ")"};
}

/// What the build context must hold, for the header's Build line.
std::string context_use(const Options& options) {
  std::vector<std::string> uses;
  if (options.hashed_requirements) uses.push_back("./" + options.hashed_requirements->path + " (COPY)");
  if (options.with_doctor) uses.push_back("./gpuenv with GPUENV_FROM=context");
  if (uses.empty()) return "not used";
  return "used for " + util::join(uses, " and ");
}

/// The host-driver lines: what the payload needs and what the base tag's NVIDIA_REQUIRE_CUDA enforces, when they
/// differ.
std::string driver_comment(const Plan& plan) {
  const compat::DriverFloor& toolkit = plan.derived.driver_floor;
  const compat::DriverFloor& payload = plan.payload_floor;
  if (!payload.version) return {};
  std::string text =
      "Host driver: >= " + payload.version->str() + " (" + one_line(payload.reason) + "; label io.gpuenv.driver.min).";
  const auto cuda = Version::parse(plan.p.cuda_version);
  if (cuda && toolkit.version && *toolkit.version != *payload.version) {
    text += " The base tag's NVIDIA_REQUIRE_CUDA, which the NVIDIA container toolkit enforces at start, asks cuda>=" +
            major_minor(*cuda) + " (driver >= " + toolkit.version->str() +
            ") or one of the older driver branches NVIDIA lists in it per GPU brand (label "
            "io.gpuenv.base.require_cuda); NVIDIA_DISABLE_REQUIRE=true lifts that check.";
  }
  return comment(text);
}

/// How to run the image: shared memory, any uid, and the RDMA devices when the image has the libraries.
std::string run_comment(const Plan& plan) {
  std::string text;
  if (!plan.p.framework_name.empty()) {
    text =
        "Run: docker run --gpus all --ipc=host ... (or --shm-size=8g): DataLoader workers share tensors through "
        "/dev/shm, and Docker's default 64 MB makes them fail with bus errors.";
  }
  if (!stays_root(plan.p)) text += " Any uid in group 0 works: --user <uid>:0, as OpenShift assigns.";
  if (wants_rdma(plan.p)) {
    text +=
        " RDMA (`[image] rdma = true`): NCCL's InfiniBand/RoCE transport needs the devices and pinned memory: "
        "--device=/dev/infiniband --cap-add=IPC_LOCK --ulimit memlock=-1 (and the host's network or an SR-IOV "
        "interface), else it falls back to TCP sockets.";
  }
  return text.empty() ? std::string() : comment(util::trim(text));
}

std::string header(const Plan& plan) {
  const profile::Profile& p = plan.p;
  const Options& options = plan.options;
  const FrameworkSteps& framework = plan.framework;
  std::string out = syntax_line(p, plan.digest_of(k_syntax_image));
  out += "# Generated by gpuenv " + one_line(options.gpuenv_version) + " from profile \"" + one_line(p.name) +
         "\"; do not edit, regenerate.\n";
  out += "# Regenerate with: gpuenv dockerfile " + regenerate_arguments(options) + "\n";
  if (!p.description.empty()) out += "# " + one_line(p.description) + "\n";
  out += "# Profile hash: " + profile_hash(p) + " (FNV-1a 64 of the resolved fields; label io.gpuenv.profile.hash)\n";
  std::vector<std::string> resolved{"CUDA " + p.cuda_version};
  if (plan.derived.image_flavor.find("cudnn") != std::string::npos) resolved.push_back("cuDNN " + p.cudnn_version);
  resolved.push_back(plan.derived.image_flavor + " image");
  resolved.push_back(os_display(plan.derived.image_os));
  if (p.framework_name == "pytorch")
    resolved.push_back("PyTorch " + p.framework_version + " (" + framework.variant_label + " wheel)");
  if (p.framework_name == "tensorflow") resolved.push_back("TensorFlow " + p.framework_version);
  if (!p.framework_name.empty()) resolved.push_back("Python " + p.framework_python);
  out += "# Resolved: " + util::join(resolved, ", ") + "\n";
  if (framework.from_wheels) {
    out += comment(
        "Loaded by the framework: CUDA " + framework.loaded_cuda + " and cuDNN " +
        (framework.loaded_cudnn.empty() ? std::string("(version not in gpuenv's data)") : framework.loaded_cudnn) +
        " from its own wheels in " + k_venv + ", not from the image" +
        (plan.derived.image_flavor == "base" ? " (a `base` image: cudart only, nothing duplicated)." : "."));
  }
  out += "# Base image: " + plan.base_image() + " (a published tag: data/compat/images.toml, " +
         plan.image->provenance.status + ")\n";
  if (!options.base_digest.empty()) {
    out += comment("Pinned by digest (" + one_line(options.digest_argument) + "): docker pulls exactly " +
                   one_line(options.base_digest) +
                   " and ignores the tag, which stays for readers. gpuenv cannot reach a registry, so it does not "
                   "check that the digest belongs to the tag.");
  }
  if (plan.image->lifecycle == "eol") {
    out += "# Warning: this tag is end-of-life" +
           (plan.image->deletion_date.empty() ? std::string()
                                              : "; NVIDIA set its deletion date to " + plan.image->deletion_date) +
           ". NVIDIA deletes EOL tags six months after EOL: it may no longer be pullable.\n";
  }
  out += driver_comment(plan);
  out += "# GPU access: NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES stay as NVIDIA's base image sets them\n";
  out +=
      "# (all; compute,utility); narrow them at run time (docker run --gpus '\"device=0\"', -e "
      "NVIDIA_VISIBLE_DEVICES=...).\n";
  out += "# Build: docker build -f <this file> .  (BuildKit; the build context is " + context_use(options) + ")\n";
  if (!p.framework_name.empty()) {
    out += comment(
        "Private package index: docker build --secret id=netrc,src=$HOME/.netrc (pip and uv read it), never "
        "a build argument, which stays in the image history. Reproducible layers: set SOURCE_DATE_EPOCH "
        "(docker buildx passes it from the environment; e.g. the commit time, git log -1 --format=%ct).");
  }
  out += run_comment(plan);
  if (const std::string note = mirrors_note(p, framework.variant_label, plan.uses_uv); !note.empty())
    out += comment(note);
  if (const std::string arg = registry_arg(p); !arg.empty()) {
    out += "\n# The registry the nvidia/cuda base image comes from ([mirrors] registry).\n" + arg;
  }
  if (options.with_doctor) out += doctor_global_arg();
  return out;
}

/// The helper stages (uv, --with-doctor) and the image's FROM.
std::string stages(const Plan& plan) {
  std::string out;
  if (plan.uses_uv) {
    out += "\n# uv, only mounted while Python is installed (not kept in the image).\n";
    out += "FROM " + plan.data.uv.image + digest_suffix(plan.digest_of(plan.data.uv.image)) + " AS uv\n";
  }
  if (plan.options.with_doctor) {
    const std::string curl = doctor_download_image();
    out += doctor_stages(hub_image_reference(plan.p, curl, plan.digest_of(curl)));
  }
  out += "\nFROM " + from_reference(plan.p, plan.derived.image_tag) + digest_suffix(plan.options.base_digest) + "\n";
  // Declared in the stage, the build argument reaches every RUN: Python writes hash-checked .pyc files while it is
  // set (py_compile), and BuildKit takes the image's timestamps from it (moby/buildkit docs/build-repro.md).
  return out + "ARG SOURCE_DATE_EPOCH\n";
}

/// Where Python comes from, the venv, pip's pin and the cache mounts, as a comment.
std::string python_comment(const Plan& plan, const PipPin& pip) {
  std::string text = plan.python.why + ". The framework goes into a virtual environment at " + k_venv +
                     ", not the system site-packages; ";
  if (!plan.hashed_pip.empty()) {
    text += "pip itself comes from the hashed requirements file (" +
            plan.hashed_pip.substr(0, plan.hashed_pip.find(' ')) + ", hash-checked, wheels only).";
  } else {
    text += "pip itself is pinned to " + pip.version + ", the newest release for Python " +
            major_minor(*Version::parse(plan.p.framework_python)) + " in gpuenv's data (data/dockerfile/python.toml, " +
            "checked " + plan.data.as_of + "; a newer one may exist).";
    if (const PipAdvisory* advisory = pip_advisory_of(plan.data, pip)) {
      text += " Warning: pip " + pip.version + " predates pip " + advisory->fixed.str() + "'s fix of " + advisory->id +
              " (no later pip supports this Python; interpreters with PEP 706 tar filters are not affected).";
    }
  }
  return comment(text +
                 " BuildKit cache mounts keep pip's and uv's downloads between builds, outside the image; index "
                 "credentials come from the netrc secret.");
}

/// The commands that pin pip in the venv: pip==<data's pin>, or with --hashed-requirements the file's pip line
/// installed from its hashes (written to a one-line requirements file: pip takes --hash only there).
std::vector<std::string> pin_pip(const Plan& plan, const PipPin& pip) {
  const std::string python = std::string(k_venv) + "/bin/python";
  if (plan.hashed_pip.empty()) return {python + " -m pip install pip==" + pip.version};
  const std::string installer = plan.uses_uv ? "uv pip install --python " + python : python + " -m pip install";
  return {"printf '%s\\n' '" + plan.hashed_pip + "' > /tmp/pip.hashed.txt",
          installer + " --require-hashes --only-binary :all: --no-deps -r /tmp/pip.hashed.txt",
          "rm /tmp/pip.hashed.txt"};
}

/// The RUN mounts of a step that runs pip or uv: pip's cache and the index credentials.
std::string pip_mounts() { return std::string(k_pip_cache_mount) + " \\\n    " + k_netrc_secret_mount; }

/// One RUN for the system packages, the non-root user and, with the OS's own Python, the venv with pip pinned:
/// none is a big download and all change rarely, so one layer costs no caching.
std::string system_layer(const Plan& plan, const PipPin* pip) {
  const bool os_python = plan.python.method == PythonPlan::Method::os && pip != nullptr;
  std::vector<std::string> packages;
  std::vector<std::string> why;
  if (os_python) {
    packages = plan.python.packages;
    why.push_back("Python " + plan.python.version + " (" + os_display(plan.derived.image_os) + "'s own python3)");
  }
  const bool apt = plan.manager == PackageManager::apt;
  if (wants_compiler(plan.p, plan.data)) {
    const std::vector<std::string> compiler = compiler_packages(plan.python, apt);
    packages.insert(packages.end(), compiler.begin(), compiler.end());
    why.push_back(util::join(compiler, ", ") +
                  " for torch.compile (Inductor compiles C++ kernels, Triton a C launcher, at run time; `[image] "
                  "compiler = false` drops them)");
  } else if (const TorchCompileGap* gap = compile_gap(plan.p, plan.data)) {
    why.push_back("no compiler: torch.compile of PyTorch " + plan.p.framework_version + " does not run on Python " +
                  gap->python_from.str() + "+ (" + gap->provenance.source + ")");
  }
  if (wants_rdma(plan.p)) {
    const std::vector<std::string> rdma = rdma_packages(apt);
    packages.insert(packages.end(), rdma.begin(), rdma.end());
    why.push_back(util::join(rdma, ", ") +
                  " so NCCL can use InfiniBand/RoCE instead of TCP sockets (`[image] rdma = true`; the run flags are "
                  "in the header)");
  }
  if (plan.manager != PackageManager::apt && !stays_root(plan.p)) {
    packages.push_back("shadow-utils");
    why.push_back("shadow-utils for useradd");
  }
  std::vector<std::string> commands;
  std::string out;
  if (os_python) out += python_source_args(plan.p, false);
  if (!packages.empty()) {
    if (apt) {
      out += "ARG DEBIAN_FRONTEND=noninteractive\n";
      if (const AptMirrors mirrors = apt_mirrors(plan.p); !mirrors.command.empty()) {
        out +=
            "# apt sources rewritten to the mirrors ([mirrors] distro_archive, cuda_repo); they stay in the image.\n" +
            mirrors.arg_lines;
        commands.push_back(mirrors.command);
      }
    }
    out += comment("System packages: " + util::join(why, "; ") + ".");
    const std::vector<std::string> install = install_commands(plan.manager, packages);
    commands.insert(commands.end(), install.begin(), install.end());
  } else if (!why.empty()) {
    out += comment(util::join(why, "; ") + ".");
  }
  const std::vector<std::string> user = user_commands(plan.p);
  if (!user.empty()) {
    out += user_comment(plan.p);
    commands.insert(commands.end(), user.begin(), user.end());
  }
  if (commands.empty()) return {};
  if (!os_python) return out + "RUN " + chain(commands) + "\n";
  out += python_comment(plan, *pip);
  commands.push_back(plan.python.interpreter + " -m venv " + k_venv);
  const std::vector<std::string> pinned = pin_pip(plan, *pip);
  commands.insert(commands.end(), pinned.begin(), pinned.end());
  return out + "RUN " + pip_mounts() + " \\\n    " + chain(commands) + "\n";
}

/// uv's Python and the venv (the OS's own Python is in system_layer()), the environment, the framework and its
/// check.
std::string python_layers(const Plan& plan, const PipPin& pip) {
  std::string out;
  if (plan.uses_uv) {
    if (const std::string args = python_source_args(plan.p, true); !args.empty()) out += "\n" + args;
    out += "\n" + python_comment(plan, pip);
    out += std::string("ARG UV_PYTHON_INSTALL_DIR=") + k_python_dir + "\n";
    out += "ARG UV_PYTHON_PREFERENCE=only-managed\n";
    // The cache mount is another filesystem: uv copies from it instead of trying hard links first.
    out += "ARG UV_LINK_MODE=copy\n";
    // With hashed requirements no unhashed seed packages: the venv gets pip from the file's hashes only.
    std::vector<std::string> commands{"uv python install " + plan.python.version,
                                      std::string("uv venv ") + (plan.hashed_pip.empty() ? "--seed " : "") +
                                          "--python " + plan.python.version + " " + k_venv};
    const std::vector<std::string> pinned = pin_pip(plan, pip);
    commands.insert(commands.end(), pinned.begin(), pinned.end());
    out += std::string("RUN --mount=from=uv,source=/uv,target=/usr/local/bin/uv \\\n    ") + k_uv_cache_mount +
           " \\\n    " + pip_mounts() + " \\\n    " + chain(commands) + "\n";
  }
  out +=
      std::string("ENV VIRTUAL_ENV=") + k_venv + " \\\n    PATH=" + k_venv + "/bin:$PATH \\\n    PYTHONUNBUFFERED=1\n";
  out += loader_path(plan.framework.from_wheels);
  const HashedRequirements* hashed = plan.options.hashed_requirements ? &*plan.options.hashed_requirements : nullptr;
  out += "\n" + framework_install(plan.framework, hashed, venv_permissions(plan.p));
  // A separate layer on purpose: changing the check never re-runs the multi-GB install above.
  return out + plan.framework.check_comment + plan.framework.check;
}

std::string labels(const Plan& plan) {
  const profile::Profile& p = plan.p;
  const FrameworkSteps& framework = plan.framework;
  std::vector<std::string> out;
  const auto label = [&out](const std::string& key, const std::string& value) {
    out.push_back(key + "=" + quoted(value));
  };
  label("org.opencontainers.image.title", p.name);
  if (!p.description.empty()) label("org.opencontainers.image.description", p.description);
  label("org.opencontainers.image.base.name", "docker.io/" + plan.base_image());
  if (!plan.options.base_digest.empty()) label("org.opencontainers.image.base.digest", plan.options.base_digest);
  label("io.gpuenv.profile", p.name);
  label("io.gpuenv.profile.hash", profile_hash(p));
  if (!plan.options.selection.empty()) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : plan.options.selection) parts.push_back(key + "=" + value);
    label("io.gpuenv.cell", util::join(parts, ","));
  }
  label("io.gpuenv.cuda", p.cuda_version);
  if (framework.from_wheels) {
    // The libraries the framework loads, not the image's (a base image has no cuDNN).
    label("io.gpuenv.framework.cuda", framework.loaded_cuda);
    if (!framework.loaded_cudnn.empty()) label("io.gpuenv.cudnn", framework.loaded_cudnn);
  } else if (!p.cudnn_version.empty()) {
    label("io.gpuenv.cudnn", p.cudnn_version);  // the image's cuDNN, which the framework loads
  }
  if (!framework.label.empty()) label("io.gpuenv.framework", framework.label);
  if (!framework.variant_label.empty()) label("io.gpuenv.torch.variant", framework.variant_label);
  if (!p.framework_python.empty() && !p.framework_name.empty()) label("io.gpuenv.python", p.framework_python);
  if (plan.options.hashed_requirements) label("io.gpuenv.requirements", k_hashed_requirements_path);
  if (plan.payload_floor.version) label("io.gpuenv.driver.min", plan.payload_floor.version->str());
  const auto cuda = Version::parse(p.cuda_version);
  if (cuda && plan.payload_floor.version && plan.derived.driver_floor.version &&
      *plan.payload_floor.version != *plan.derived.driver_floor.version)
    label("io.gpuenv.base.require_cuda", "cuda>=" + major_minor(*cuda));
  // Labels last, after the heavy layers, so changing one does not invalidate the build cache.
  return "\nLABEL " + util::join(out, " \\\n      ") + "\n";
}

/// The plan, or the error that stops render() (the checks should have refused the profile first).
util::Expected<Plan> make_plan(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data,
                               const Options& options) {
  Plan plan{p,     data, options, compat::derive(p, kb), nullptr, PythonPlan{}, FrameworkSteps{}, PackageManager::apt,
            false, {},   {}};
  const auto cuda = Version::parse(p.cuda_version);
  if (!cuda || plan.derived.image_tag.empty() || !tag_published(p, kb, plan.derived)) {
    return Error::internal("refusing to write a Dockerfile: nvidia/cuda:" + plan.derived.image_tag +
                           " is not a published tag in the knowledge base (run the checks first)");
  }
  if (!options.base_digest.empty() && !is_digest(options.base_digest))
    return Error::internal("base digest `" + options.base_digest + "` is not sha256:<64 hex digits>");
  plan.image = kb.image(*cuda);
  plan.python = plan_python(p, data);
  plan.uses_uv = plan.python.method == PythonPlan::Method::uv;
  if (!p.framework_name.empty()) {
    const auto python = Version::parse(p.framework_python);
    if (!python || (plan.uses_uv && !uv_provides(data, *python))) {
      return Error::internal("no way to put Python " + p.framework_python + " into the image (run the checks first)");
    }
    if (pip_for(data, *python) == nullptr)
      return Error::internal("no pinned pip for Python " + p.framework_python + " in data/dockerfile/python.toml");
  }
  auto framework = framework_steps(p, kb, data);
  if (!framework) return framework.error();
  plan.framework = std::move(*framework);
  if (options.hashed_requirements) {
    if (p.framework_name.empty()) {
      return Error::usage("--hashed-requirements: profile " + p.name + " installs no framework",
                          "drop --hashed-requirements");
    }
    const auto pinned = check_framework_pin(*options.hashed_requirements, plan.framework.package, plan.framework.pin,
                                            plan.framework.variant, plan.framework.numpy_cap);
    if (!pinned) return pinned.error();
    auto pip = hashed_pip_requirement(*options.hashed_requirements);
    if (!pip) return pip.error();
    plan.hashed_pip = std::move(*pip);
  }
  plan.manager = package_manager(p);
  plan.payload_floor = payload_floor(p, kb, plan.derived, plan.framework);
  return plan;
}

}  // namespace

util::Expected<std::string> render(const profile::Profile& p, const compat::KnowledgeBase& kb, const Data& data,
                                   const Options& options) {
  const auto plan = make_plan(p, kb, data, options);
  if (!plan) return plan.error();
  const PipPin* pip = p.framework_name.empty() ? nullptr : pip_for(data, *Version::parse(p.framework_python));
  std::string out = header(*plan) + stages(*plan) + system_layer(*plan, pip);
  if (pip != nullptr) out += python_layers(*plan, *pip);
  if (options.with_doctor) out += doctor_install();
  out += runtime_identity(p) + compile_check(p, data) + labels(*plan) + final_user(p);

  const std::vector<std::string> problems =
      structural_problems(out, {data.uv.image, doctor_download_image()}, stays_root(p));
  if (!problems.empty())
    return Error::internal("generated Dockerfile failed its own checks: " + util::join(problems, "; "));
  return out;
}

}  // namespace gpuenv::dockerfile
