// `gpuenv cloud-init NAME|FILE [-o FILE] [--set FIELD=VALUE...] [--doctor-only]
//      (--gpuenv-url URL --gpuenv-sha256 HEX | --gpuenv-deb URL --gpuenv-sha256 HEX | --gpuenv-preinstalled
//      [--gpuenv-path PATH])`

#include "cli/commands.hpp"
#include "cli/profile_output.hpp"
#include "cli/version.hpp"
#include "cloudinit/cloudinit.hpp"
#include "compat/rules.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

struct CloudInitOptions {
  std::string profile;
  std::string output;
  std::vector<std::string> set;
  std::string gpuenv_url;
  std::string gpuenv_deb;
  std::string gpuenv_sha256;
  std::string gpuenv_curl_config;
  std::string gpuenv_preinstalled;
  bool preinstalled = false;
  bool doctor_only = false;
};

/// The profile's text exactly as the user gave it: the file (same rule as profile::load_profile) or the shipped text.
util::Expected<std::string> profile_text(const std::string& name_or_path, system::System& system) {
  const bool is_path = name_or_path.find('/') != std::string::npos || util::ends_with(name_or_path, ".toml");
  if (is_path) return system.read_file(name_or_path, system::FileKind::profile);
  for (const profile::ShippedProfile& shipped : profile::shipped_profiles()) {
    if (shipped.name == name_or_path) return shipped.text;
  }
  return util::Error::internal("shipped profile " + name_or_path + " parsed but has no text");
}

/// Exactly one of the three ways to get gpuenv onto the node, checked.
util::Expected<cloudinit::Source> source_from(const CloudInitOptions& options) {
  if (!options.preinstalled && !options.gpuenv_preinstalled.empty()) {
    return util::Error::usage("--gpuenv-path goes with --gpuenv-preinstalled", "add --gpuenv-preinstalled");
  }
  const int given = static_cast<int>(!options.gpuenv_url.empty()) + static_cast<int>(!options.gpuenv_deb.empty()) +
                    static_cast<int>(options.preinstalled);
  if (given != 1) {
    return util::Error::usage(
        given == 0 ? "no gpuenv download URL: the node needs the gpuenv binary before it can install or verify"
                   : "--gpuenv-url, --gpuenv-deb and --gpuenv-preinstalled exclude each other",
        "give one of --gpuenv-url URL --gpuenv-sha256 HEX (the release binary), --gpuenv-deb URL --gpuenv-sha256 HEX "
        "(the package) or --gpuenv-preinstalled [--gpuenv-path PATH] (already on the image)");
  }
  cloudinit::Source source;
  if (options.preinstalled) {
    if (!options.gpuenv_sha256.empty() || !options.gpuenv_curl_config.empty()) {
      return util::Error::usage("--gpuenv-sha256 and --gpuenv-curl-config are for a download",
                                "drop them, or use --gpuenv-url/--gpuenv-deb");
    }
    source.kind = cloudinit::SourceKind::preinstalled;
    source.path = options.gpuenv_preinstalled;
  } else {
    source.kind = options.gpuenv_url.empty() ? cloudinit::SourceKind::deb : cloudinit::SourceKind::url;
    source.url = options.gpuenv_url.empty() ? options.gpuenv_deb : options.gpuenv_url;
    source.sha256 = options.gpuenv_sha256;
    source.curl_config = options.gpuenv_curl_config;
    if (source.sha256.empty()) {
      return util::Error::usage("a download needs --gpuenv-sha256 HEX", "give the file's SHA-256 (sha256sum FILE)");
    }
  }
  return cloudinit::checked_source(std::move(source));
}

util::Expected<ExitCode> run_cloud_init(Context& context, const CloudInitOptions& options) {
  GPUENV_TRY_ASSIGN(auto source, source_from(options));
  for (const std::string& warning : cloudinit::source_warnings(source))
    context.err << "gpuenv: warning: " << warning << "\n";
  GPUENV_TRY_ASSIGN(auto document, profile::load_profile(options.profile, context.system));
  GPUENV_TRY_ASSIGN(auto text, profile_text(options.profile, context.system));
  GPUENV_TRY_ASSIGN(auto selection, profile::parse_assignments(options.set));
  GPUENV_TRY_ASSIGN(auto node, profile::resolve_cell(document, selection, options.profile));

  // A node given an impossible environment would retry its install on every boot: refuse it here.
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  const std::vector<report::Finding> findings = compat::check_profile(node, *kb);
  if (report::verdict_of(findings) == report::Verdict::not_ok) {
    context.err << "gpuenv: refusing to write user-data: " << node.name << " is not compatible:\n\n";
    context.err << check_text(node, {compat::CellVerdict{profile::Cell{selection, node, false}, findings, false}},
                              report::TextStyle{});
    return ExitCode::not_ok;
  }

  cloudinit::Options render;
  render.source = std::move(source);
  render.doctor_only = options.doctor_only;
  render.selection = std::move(selection);
  render.gpuenv_version = gpuenv_version();
  GPUENV_TRY_ASSIGN(auto user_data, cloudinit::render_user_data(node, text, render));
  if (options.output.empty()) {
    context.out << user_data;
    return ExitCode::ok;
  }
  if (auto written = context.system.write_file_atomic(options.output, user_data); !written) {
    return util::Error::input(written.error().message, "check that -o names a writable path");
  }
  return ExitCode::ok;
}

}  // namespace

void add_cloud_init_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<CloudInitOptions>();
  CLI::App* command = app.add_subcommand(
      "cloud-init", "Write #cloud-config user-data that installs a profile on first boot and verifies it every boot");
  command->add_option("profile", options->profile, "Shipped profile name or path to a .toml file")->required();
  command->add_option("-o,--output", options->output, "Write the user-data to FILE (atomically) instead of stdout");
  command->add_option("--set", options->set, "Pick a matrix cell or override a field (FIELD=VALUE; repeatable)")
      ->allow_extra_args(false);
  command->add_option("--gpuenv-url", options->gpuenv_url,
                      "https URL of the gpuenv binary; the node downloads it to /usr/local/bin/gpuenv");
  command->add_option("--gpuenv-deb", options->gpuenv_deb, "https URL of the gpuenv .deb; the node installs it");
  command->add_option("--gpuenv-sha256", options->gpuenv_sha256,
                      "SHA-256 of the --gpuenv-url/--gpuenv-deb file; the node refuses any other");
  command->add_option("--gpuenv-curl-config", options->gpuenv_curl_config,
                      "A curl config file already on the node (root's, mode 0600) with the download's credentials, "
                      "passed to curl with -K; credentials in the URL itself are refused");
  // A flag and a separate path option: an optional value would swallow the profile name written after it.
  command->add_flag("--gpuenv-preinstalled", options->preinstalled,
                    "gpuenv is already on the image (at --gpuenv-path; default /usr/bin/gpuenv)");
  command->add_option("--gpuenv-path", options->gpuenv_preinstalled,
                      "Where the image has gpuenv, with --gpuenv-preinstalled (default /usr/bin/gpuenv)");
  command->add_flag("--doctor-only", options->doctor_only,
                    "Verify only (doctor + readiness marker), for images that already have the stack");
  command->callback(
      [&action, options, command] { action = [options](Context& c) { return run_cloud_init(c, *options); }; });
}

}  // namespace gpuenv::cli
