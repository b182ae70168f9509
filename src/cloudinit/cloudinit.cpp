#include "cloudinit/cloudinit.hpp"

#include <algorithm>
#include <cctype>
#include <span>

#include "cloudinit/quoting.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"

namespace gpuenv::cloudinit {

std::span<const util::EmbeddedFile> embedded_cloudinit_data();  // generated from data/cloudinit/

namespace {

constexpr std::string_view k_settings_placeholder = "# @GPUENV_SETTINGS@\n";
constexpr std::string_view k_uri_characters =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%";

std::string_view source_flag(SourceKind kind) { return kind == SourceKind::url ? "--gpuenv-url" : "--gpuenv-deb"; }

util::Expected<util::Ok> check_url(const Source& source) {
  const std::string& url = source.url;
  const std::string flag(source_flag(source.kind));
  if (!util::starts_with(url, "https://") || url.size() <= 8 || url[8] == '/') {
    return util::Error::usage(flag + " " + url + ": not an https URL",
                              "give the https:// address the node downloads gpuenv from (plain http is refused: "
                              "the download must not be alterable on the way)");
  }
  const std::size_t bad = url.find_first_not_of(k_uri_characters);
  if (bad != std::string::npos) {
    return util::Error::usage(flag + ": character " + std::to_string(bad + 1) + " of the URL is not allowed in a URL",
                              "percent-encode it (a space is %20)");
  }
  // RFC 3986: authority = [ userinfo "@" ] host [ ":" port ], ending at the first "/", "?" or "#".
  const std::string_view authority = std::string_view(url).substr(8, url.find_first_of("/?#", 8) - 8);
  if (authority.find('@') != std::string_view::npos) {
    return util::Error::usage(flag +
                                  ": the URL carries credentials (user:password@), which would be readable in the "
                                  "user-data, the per-boot script, its log and `ps` on the node",
                              "put them in a root-only curl config on the image and name it with "
                              "--gpuenv-curl-config PATH, or use a URL that needs none");
  }
  return util::Ok{};
}

util::Expected<std::string> check_sha256(const Source& source) {
  std::string hex = util::to_lower(source.sha256);
  const bool ok = hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
                    return std::isdigit(static_cast<unsigned char>(c)) != 0 || (c >= 'a' && c <= 'f');
                  });
  if (!ok) {
    return util::Error::usage("--gpuenv-sha256 '" + comment_safe(source.sha256) + "': not a SHA-256 (64 hex digits)",
                              "give the file's checksum: sha256sum FILE, or its line in the release's SHA256SUMS");
  }
  return hex;
}

std::string_view binary_path(const Source& source) {
  switch (source.kind) {
    case SourceKind::url:
      return k_binary_path;
    case SourceKind::deb:
      return k_deb_binary_path;
    case SourceKind::preinstalled:
      break;
  }
  return source.path;
}

std::string_view source_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::url:
      return "url";
    case SourceKind::deb:
      return "deb";
    case SourceKind::preinstalled:
      break;
  }
  return "preinstalled";
}

bool uses_apt(const profile::Profile& profile) {
  return profile.os_distro == "ubuntu" || profile.os_distro == "debian";
}

}  // namespace

std::string redacted_url(std::string_view url) {
  const std::size_t query = url.find_first_of("?#");
  if (query == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, query)) + "?(query hidden)";
}

namespace {

std::string settings_block(const Options& options) {
  const auto line = [](std::string_view name, std::string_view value) {
    return std::string(name) + "=" + sh_quote(value) + "\n";
  };
  std::string out = "# Settings from gpuenv cloud-init.\n";
  out += line("GPUENV_MODE", options.doctor_only ? "doctor-only" : "install");
  out += line("GPUENV_SOURCE", source_name(options.source.kind));
  out += line("GPUENV_URL", options.source.url);
  out += line("GPUENV_URL_SHOWN", redacted_url(options.source.url));
  out += line("GPUENV_CURL_CONFIG", options.source.curl_config);
  out += line("GPUENV_SHA256", options.source.sha256);
  out += line("GPUENV_BIN", binary_path(options.source));
  out += line("GPUENV_PROFILE", k_profile_path);
  out += line("GPUENV_RETRIES", std::to_string(options.retries));
  out += line("GPUENV_RETRY_DELAY", std::to_string(options.retry_delay_s));
  out += line("GPUENV_MAX_REBOOTS", std::to_string(options.max_reboots));
  out +=
      "# The matrix cell / field overrides, passed to gpuenv install and gpuenv doctor as --set FIELD=VALUE.\nset --";
  for (const auto& [field, value] : options.selection) out += " --set " + sh_quote(field + "=" + value);
  return out + "\n";
}

/// The script without its comment lines (it explains itself in gpuenv's source, data/cloudinit/per-boot.sh): EC2
/// refuses user-data above 16 KB, and the profile's text shares that room. The shebang and the settings placeholder
/// stay; a line saying where the comments are replaces the rest.
std::string without_comment_lines(std::string_view script) {
  std::string out;
  bool first = true;
  for (std::string_view line : util::split_lines(script)) {
    const std::string_view text = util::trim(line);
    const bool keep = first || !util::starts_with(text, "#") || text == util::trim(k_settings_placeholder);
    if (keep) out += std::string(line) + "\n";
    if (first)
      out +=
          "# gpuenv per-boot script, written by `gpuenv cloud-init`; explained in data/cloudinit/per-boot.sh of "
          "gpuenv's "
          "source and docs/cloud-init.md.\n";
    first = false;
  }
  return out;
}

std::string file_entry(std::string_view path, std::string_view permissions, std::string_view content) {
  return "  - path: " + std::string(path) + "\n    owner: root:root\n    permissions: '" + std::string(permissions) +
         "'\n" + yaml_content(content, 4);
}

std::string header(const profile::Profile& profile, const Options& options) {
  std::string out = "#cloud-config\n";
  out += "# gpuenv " + comment_safe(options.gpuenv_version) + " user-data for profile " + comment_safe(profile.name);
  for (const auto& [field, value] : options.selection) out += " --set " + comment_safe(field + "=" + value);
  out += "\n";
  if (options.doctor_only) {
    out +=
        "# Verify only: each boot the per-boot script runs `gpuenv doctor` and keeps /var/lib/gpuenv/ready while\n"
        "# the node is READY or DEGRADED. Nothing is installed.\n";
  } else {
    out +=
        "# Each boot the per-boot script runs `gpuenv install --resume` until the node conforms (rebooting when\n"
        "# install asks), then `gpuenv doctor`; /var/lib/gpuenv/ready exists while the node is READY or DEGRADED.\n";
  }
  out += "# Log: /var/log/gpuenv/cloud-init.log; report: /var/lib/gpuenv/doctor.json (docs/cloud-init.md).\n";
  return out;
}

util::Expected<util::Ok> check_options(const profile::Profile& profile, const Options& options) {
  if (options.retries < 1 || options.retry_delay_s < 0 || options.max_reboots < 0) {
    return util::Error::usage("retries must be at least 1, the retry delay and the reboot limit at least 0");
  }
  if (options.source.kind == SourceKind::deb && !profile.os_distro.empty() && !uses_apt(profile)) {
    return util::Error::usage(
        "--gpuenv-deb: a .deb does not install on " + profile.os_distro + " (profile " + profile.name + ")",
        "use --gpuenv-url with the release binary, or --gpuenv-preinstalled");
  }
  return util::Ok{};
}

}  // namespace

util::Expected<Source> checked_source(Source source) {
  if (source.kind == SourceKind::preinstalled) {
    if (source.path.empty()) source.path = std::string(k_preinstalled_path);
    if (source.path.front() != '/' || comment_safe(source.path) != source.path) {
      return util::Error::usage("--gpuenv-preinstalled " + comment_safe(source.path) + ": not an absolute path",
                                "give where the image has gpuenv, e.g. /usr/bin/gpuenv");
    }
    return source;
  }
  GPUENV_TRY(check_url(source));
  GPUENV_TRY_ASSIGN(auto sha, check_sha256(source));
  source.sha256 = sha;
  if (!source.curl_config.empty() &&
      (source.curl_config.front() != '/' || comment_safe(source.curl_config) != source.curl_config ||
       source.curl_config.find_first_of("\"\\ ") != std::string::npos)) {
    return util::Error::usage("--gpuenv-curl-config " + comment_safe(source.curl_config) +
                                  ": not an absolute path of printable characters without spaces or quotes",
                              "name the root-only curl config on the node, e.g. /etc/gpuenv/curl.conf");
  }
  return source;
}

std::vector<std::string> source_warnings(const Source& source) {
  if (source.kind == SourceKind::preinstalled || source.url.find('?') == std::string::npos) return {};
  return {std::string(source_flag(source.kind)) +
          ": the URL has a query string; a signed URL is a secret, and user-data is readable by anything on the "
          "node that can reach the cloud's metadata service. The node's log shows it as " +
          redacted_url(source.url) + "; prefer an unsigned URL with --gpuenv-curl-config for credentials"};
}

util::Expected<std::string> render_per_boot_script(const Options& unchecked) {
  GPUENV_TRY_ASSIGN(auto source, checked_source(unchecked.source));
  Options options = unchecked;
  options.source = std::move(source);
  const auto files = embedded_cloudinit_data();
  const auto file = std::find_if(files.begin(), files.end(), [](const auto& f) { return f.name == "per-boot.sh"; });
  if (file == files.end()) return util::Error::internal("embedded data/cloudinit/per-boot.sh is missing");
  std::string script = without_comment_lines(file->contents);
  const std::size_t at = script.find(k_settings_placeholder);
  if (at == std::string::npos) return util::Error::internal("per-boot.sh has no settings placeholder");
  script.replace(at, k_settings_placeholder.size(), settings_block(options));
  return script;
}

util::Expected<std::string> render_user_data(const profile::Profile& profile, std::string_view profile_text,
                                             const Options& options) {
  GPUENV_TRY(check_options(profile, options));
  GPUENV_TRY_ASSIGN(auto script, render_per_boot_script(options));

  std::string out = header(profile, options);
  out += "write_files:\n";
  if (uses_apt(profile) && (!options.doctor_only || options.source.kind == SourceKind::deb)) {
    // First-boot unattended-upgrades holds the dpkg lock; apt waits up to 10 minutes for it instead of failing.
    out += file_entry(k_apt_lock_path, "0644",
                      "// gpuenv: wait for the dpkg lock (unattended-upgrades on first boot) instead of failing.\n"
                      "DPkg::Lock::Timeout \"600\";\n");
  }
  out += file_entry(k_profile_path, "0644", profile_text);
  // write_files runs in cloud-init's init stage, before the final stage runs the per-boot scripts. 0700: the script
  // holds the download URL (cloud-init's scripts_per_boot runs it as root and needs only the owner's bits).
  out += file_entry(k_per_boot_path, "0700", script);
  return out;
}

}  // namespace gpuenv::cloudinit
