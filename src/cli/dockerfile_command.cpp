// `gpuenv dockerfile NAME|FILE [--set FIELD=VALUE...] [-o FILE] [--with-doctor] [--digest D | --digest-lock FILE]
//                   [--hashed-requirements FILE]`
// `gpuenv dockerfile NAME|FILE --all --out-dir DIR [--with-doctor] [--digest-lock FILE]`

#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.hpp"
#include "cli/profile_output.hpp"
#include "cli/version.hpp"
#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "profile/catalog.hpp"
#include "profile/fields.hpp"
#include "profile/matrix.hpp"

namespace gpuenv::cli {
namespace {

struct DockerfileOptions {
  std::string profile;
  std::vector<std::string> set;
  std::string output;
  bool all = false;
  std::string out_dir;
  bool with_doctor = false;
  std::string digest;
  std::string digest_lock;
  std::string hashed_requirements;
};

/// The facts every run needs.
struct Inputs {
  const compat::KnowledgeBase* kb = nullptr;
  const dockerfile::Data* data = nullptr;
  profile::ProfileDocument document;
  std::optional<dockerfile::DigestLock> digest_lock;
  std::optional<dockerfile::HashedRequirements> hashed_requirements;
};

/// compat's findings for a Dockerfile, then the generator's own.
std::vector<report::Finding> dockerfile_findings(const profile::Profile& p, const Inputs& in) {
  std::vector<report::Finding> findings = compat::check_profile(p, *in.kb, compat::Purpose::dockerfile);
  std::vector<report::Finding> own = dockerfile::check(p, *in.kb, *in.data);
  findings.insert(findings.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  return findings;
}

bool usable(const std::vector<report::Finding>& findings) {
  return report::verdict_of(findings) != report::Verdict::not_ok;
}

void print_warnings(Context& context, const std::vector<report::Finding>& findings) {
  for (const report::Finding& f : findings) {
    if (f.status == report::Status::warn) context.err << "gpuenv: warning: " << f.id << ": " << f.message << "\n";
  }
}

/// The render options for one cell; a usage Error when --digest-lock has no digest for the cell's base image.
util::Expected<dockerfile::Options> render_options(const DockerfileOptions& options, const Inputs& in,
                                                   const profile::Profile& resolved, profile::Assignments selection) {
  dockerfile::Options out;
  out.gpuenv_version = gpuenv_version();
  out.profile_argument = options.profile;
  out.selection = std::move(selection);
  out.with_doctor = options.with_doctor;
  out.hashed_requirements = in.hashed_requirements;
  if (!options.digest.empty()) {
    out.base_digest = options.digest;
    out.digest_argument = "--digest " + options.digest;
  } else if (in.digest_lock) {
    // Every image the file names is pinned: the base and the helpers (syntax frontend, uv, curl).
    const std::string base = "nvidia/cuda:" + compat::derive(resolved, *in.kb).image_tag;
    std::vector<std::string> images{base};
    for (const std::string& image : dockerfile::helper_images(resolved, *in.data, options.with_doctor))
      images.push_back(image);
    for (const std::string& image : images) {
      const std::string* digest = in.digest_lock->find(image);
      if (digest == nullptr) {
        return util::Error::input(
            options.digest_lock + ": no digest for " + image,
            "add a line `" + image + " sha256:<digest>` (docker buildx imagetools inspect " + image + ")");
      }
      if (image == base) {
        out.base_digest = *digest;
      } else {
        out.helper_digests[image] = *digest;
      }
    }
    out.digest_argument = "--digest-lock " + options.digest_lock;
  }
  return out;
}

util::Expected<ExitCode> run_one(Context& context, const DockerfileOptions& options, const Inputs& in) {
  GPUENV_TRY_ASSIGN(auto overrides, profile::parse_assignments(options.set));
  const profile::Profile& base = in.document.base;
  // profile::pick_cells: --set on a field the matrix sets picks cells, on any other field overrides; when no cell
  // has the values, the base profile takes the overrides.
  const profile::CellPick pick = profile::pick_cells(in.document, overrides);
  const profile::Assignments& selectors = pick.selectors;
  std::vector<profile::Cell> candidates = pick.cells;
  if (candidates.empty()) {
    context.err << "gpuenv: note: no matrix cell of " << base.name << " has "
                << dockerfile::cell_label(base.name, selectors) << "; using the base profile with --set applied\n";
    candidates.push_back(profile::Cell{{}, base, true});
  }

  struct Choice {
    profile::Cell cell;
    profile::Profile resolved;
    std::vector<report::Finding> findings;
  };
  std::optional<Choice> chosen;
  std::optional<Choice> first;
  for (const profile::Cell& cell : candidates) {
    GPUENV_TRY_ASSIGN(auto resolved, profile::apply_overrides(cell.profile, overrides));
    Choice choice{cell, resolved, dockerfile_findings(resolved, in)};
    if (usable(choice.findings)) {
      chosen = std::move(choice);
      break;
    }
    if (!first) first = std::move(choice);
  }
  if (!chosen) {
    context.err << "gpuenv: refusing to write a Dockerfile: " << base.name
                << (candidates.size() > 1 ? " has no valid cell among the " + std::to_string(candidates.size()) +
                                                " that match; the first one's findings:"
                                          : " is not compatible:")
                << "\n\n";
    const compat::CellVerdict verdict{first->cell, first->findings, false};
    context.err << check_text(base, {verdict}, report::TextStyle{});
    return ExitCode::not_ok;
  }
  if (candidates.size() > 1) {
    context.err << "gpuenv: note: " << candidates.size() << " cells of " << base.name
                << " match; using the first valid one, " << dockerfile::cell_label(base.name, chosen->cell.assignments)
                << " (pick one with --set, or write all with --all --out-dir)\n";
  }
  print_warnings(context, chosen->findings);

  // The selection repeated in the file: the cell's assignments, then overrides of other fields.
  profile::Assignments selection = chosen->cell.assignments;
  for (const auto& pair : overrides) {
    const bool present =
        std::any_of(selection.begin(), selection.end(), [&pair](const auto& s) { return s.first == pair.first; });
    if (!present) selection.push_back(pair);
  }
  GPUENV_TRY_ASSIGN(auto render, render_options(options, in, chosen->resolved, std::move(selection)));
  GPUENV_TRY_ASSIGN(auto text, dockerfile::render(chosen->resolved, *in.kb, *in.data, render));
  if (options.output.empty()) {
    context.out << text;
    return ExitCode::ok;
  }
  if (auto written = context.system.write_file_atomic(options.output, text); !written) {
    return util::Error::input(written.error().message, "check that -o names a writable path");
  }
  return ExitCode::ok;
}

util::Expected<ExitCode> run_all(Context& context, const DockerfileOptions& options, const Inputs& in) {
  if (!context.system.exists(options.out_dir)) {
    return util::Error::usage("--out-dir " + options.out_dir + ": no such directory",
                              "create it first (mkdir -p " + options.out_dir + ")");
  }
  const profile::Profile& base = in.document.base;
  const std::vector<profile::Cell> cells = profile::expand_matrix(in.document);

  struct Output {
    std::string file;
    std::string text;
  };
  std::vector<Output> outputs;
  std::set<std::string> names;
  nlohmann::json written = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::array();
  std::string skipped_text;
  bool requested_invalid = false;
  for (const profile::Cell& cell : cells) {
    const std::vector<report::Finding> findings = dockerfile_findings(cell.profile, in);
    const std::string label = dockerfile::cell_label(base.name, cell.assignments);
    if (!usable(findings)) {
      std::vector<report::Finding> failing;
      for (const report::Finding& f : findings) {
        if (f.status == report::Status::fail) {
          failing.push_back(f);
          skipped_text += "  skipped " + label + (cell.requested && !cell.assignments.empty() ? " (include)" : "") +
                          ": " + f.id + ": " + f.message + "\n";
        }
      }
      skipped.push_back({{"label", label},
                         {"cell", assignments_json(cell.assignments)},
                         {"requested", cell.requested},
                         {"findings", report::to_json(failing)}});
      requested_invalid = requested_invalid || cell.requested;
      continue;
    }
    GPUENV_TRY_ASSIGN(auto render, render_options(options, in, cell.profile, cell.assignments));
    GPUENV_TRY_ASSIGN(auto text, dockerfile::render(cell.profile, *in.kb, *in.data, render));
    std::string file = dockerfile::unique_cell_file_name(base.name, cell.assignments, names);
    written.push_back({{"file", file},
                       {"label", label},
                       {"cell", assignments_json(cell.assignments)},
                       {"set", dockerfile::set_arguments(cell.assignments)},
                       {"requested", cell.requested},
                       {"image", "nvidia/cuda:" + compat::derive(cell.profile, *in.kb).image_tag},
                       {"helper_images", dockerfile::helper_images(cell.profile, *in.data, options.with_doctor)},
                       {"profile_hash", dockerfile::profile_hash(cell.profile)}});
    if (!render.base_digest.empty()) written.back()["digest"] = render.base_digest;
    outputs.push_back({std::move(file), std::move(text)});
  }

  // Everything is rendered before the first write; the index goes last, so a reader never sees an index
  // naming a file that is not there.
  const std::string dir = options.out_dir.back() == '/' ? options.out_dir : options.out_dir + "/";
  for (const Output& output : outputs) {
    if (auto ok = context.system.write_file_atomic(dir + output.file, output.text); !ok) {
      return util::Error::input(ok.error().message, "check that --out-dir is a writable directory");
    }
  }
  const nlohmann::json index = {{"schema", 1},
                                {"generator", std::string("gpuenv ") + gpuenv_version()},
                                {"profile", base.name},
                                {"origin", base.origin},
                                {"with_doctor", options.with_doctor},
                                {"dockerfiles", written},
                                {"skipped", skipped}};
  if (auto ok = context.system.write_file_atomic(dir + "index.json", index.dump(2) + "\n"); !ok) {
    return util::Error::input(ok.error().message, "check that --out-dir is a writable directory");
  }
  context.err << "gpuenv: wrote " << outputs.size() << " Dockerfile" << (outputs.size() == 1 ? "" : "s")
              << " and index.json to " << options.out_dir;
  if (!skipped.empty())
    context.err << "; skipped " << skipped.size() << " invalid cell" << (skipped.size() == 1 ? "" : "s") << ":";
  context.err << "\n" << skipped_text;
  if (requested_invalid) return ExitCode::not_ok;
  return outputs.empty() ? ExitCode::not_ok : ExitCode::ok;
}

util::Expected<ExitCode> run_dockerfile(Context& context, const DockerfileOptions& options) {
  if (options.all && options.out_dir.empty()) {
    return util::Error::usage("--all needs --out-dir DIR",
                              "e.g. gpuenv dockerfile " + options.profile + " --all --out-dir out/");
  }
  if (!options.all && !options.out_dir.empty()) {
    return util::Error::usage("--out-dir is for --all", "add --all, or write one Dockerfile with -o FILE");
  }
  if (options.all && !options.output.empty()) {
    return util::Error::usage("-o writes one Dockerfile; --all writes one per cell into --out-dir", "drop -o");
  }
  if (options.all && !options.set.empty()) {
    return util::Error::usage("--set picks one cell; --all writes every valid cell", "drop --set, or drop --all");
  }
  if (!options.digest.empty() && !options.digest_lock.empty()) {
    return util::Error::usage("--digest and --digest-lock both pin the base image", "pass one of them");
  }
  if (options.all && !options.digest.empty()) {
    return util::Error::usage("--digest pins one base image; --all writes one per cell",
                              "use --digest-lock FILE with a digest per image");
  }
  if (options.all && !options.hashed_requirements.empty()) {
    return util::Error::usage("--hashed-requirements pins one set of wheels; --all writes every cell",
                              "write one cell with --set and its own hashed file");
  }
  Inputs in;
  if (!options.digest.empty()) {
    GPUENV_TRY(dockerfile::parse_digest(options.digest));
  }
  if (!options.digest_lock.empty()) {
    auto text = context.system.read_file(options.digest_lock);
    if (!text) {
      return util::Error::input("--digest-lock " + options.digest_lock + ": " + text.error().message,
                                "name a readable lock file");
    }
    GPUENV_TRY_ASSIGN(auto lock, dockerfile::parse_digest_lock(*text, options.digest_lock));
    in.digest_lock = std::move(lock);
  }
  if (!options.hashed_requirements.empty()) {
    auto text = context.system.read_file(options.hashed_requirements);
    if (!text) {
      return util::Error::input("--hashed-requirements " + options.hashed_requirements + ": " + text.error().message,
                                "name a readable requirements file");
    }
    GPUENV_TRY_ASSIGN(auto requirements, dockerfile::parse_hashed_requirements(*text, options.hashed_requirements));
    in.hashed_requirements = std::move(requirements);
  }
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  GPUENV_TRY_ASSIGN(auto data, dockerfile::builtin_data());
  GPUENV_TRY_ASSIGN(auto document, profile::load_profile(options.profile, context.system));
  in.kb = kb;
  in.data = data;
  in.document = std::move(document);
  return options.all ? run_all(context, options, in) : run_one(context, options, in);
}

}  // namespace

void add_dockerfile_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DockerfileOptions>();
  CLI::App* command =
      app.add_subcommand("dockerfile", "Write a Dockerfile for a profile (or one per valid matrix cell)");
  command->add_option("profile", options->profile, "Shipped profile name or path to a .toml file")->required();
  command->add_option("--set", options->set, "Pick a matrix cell or override a field (FIELD=VALUE; repeatable)")
      ->allow_extra_args(false);
  command->add_option("-o,--output", options->output, "Write the Dockerfile to FILE (atomically) instead of stdout");
  command->add_flag("--all", options->all,
                    "Write one Dockerfile per valid matrix cell, and index.json, into --out-dir");
  command->add_option("--out-dir", options->out_dir, "With --all: an existing directory to write into");
  command->add_flag(
      "--with-doctor", options->with_doctor,
      "Add the gpuenv binary for `gpuenv doctor --quick --oneline` as a readiness probe (no HEALTHCHECK)");
  command->add_option("--digest", options->digest,
                      "Pin the base image by digest (sha256:<64 hex>): FROM nvidia/cuda:<tag>@<digest>");
  command->add_option("--digest-lock", options->digest_lock,
                      "Pin each cell's base image by the digest FILE lists (`nvidia/cuda:<tag> sha256:<hex>` lines)");
  command->add_option("--hashed-requirements", options->hashed_requirements,
                      "Install the framework from FILE (build-context path) with pip --require-hashes "
                      "(uv pip compile --generate-hashes)");
  command->callback([&action, options] { action = [options](Context& c) { return run_dockerfile(c, *options); }; });
}

}  // namespace gpuenv::cli
