#pragma once
// Profile + options -> `#cloud-config` user-data that installs gpuenv, writes the profile and a per-boot script which
// runs `gpuenv install --resume` until the node conforms (rebooting when asked), then `gpuenv doctor` and the readiness
// marker. Pure: no file access (docs/cloud-init.md).

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::cloudinit {

/// Where the node gets the gpuenv binary from.
enum class SourceKind {
  url,           ///< a release binary, downloaded and SHA-256 checked, installed to /usr/local/bin/gpuenv
  deb,           ///< a .deb, downloaded and SHA-256 checked, installed with apt-get (dpkg -i without apt)
  preinstalled,  ///< already on the image at `path`
};

/// How the gpuenv binary reaches the node.
struct Source {
  SourceKind kind = SourceKind::preinstalled;
  std::string url;     ///< url, deb: an https URL
  std::string sha256;  ///< url, deb: 64 hex digits
  std::string path;    ///< preinstalled: the binary's absolute path
  /// url, deb: a curl config file on the node with the download's credentials (`user = ...`, `header = ...`),
  /// passed to curl with -K; the script uses it only when it is root's and mode 0600 or 0400. Empty: none.
  std::string curl_config = {};
};

/// Where each kind of source puts (or finds) the binary on the node.
inline constexpr std::string_view k_binary_path = "/usr/local/bin/gpuenv";
inline constexpr std::string_view k_deb_binary_path = "/usr/bin/gpuenv";
inline constexpr std::string_view k_preinstalled_path = "/usr/bin/gpuenv";
/// Files on the node.
inline constexpr std::string_view k_profile_path = "/etc/gpuenv/profile.toml";
inline constexpr std::string_view k_per_boot_path = "/var/lib/cloud/scripts/per-boot/50-gpuenv";
inline constexpr std::string_view k_apt_lock_path = "/etc/apt/apt.conf.d/90gpuenv-lock";

struct Options {
  Source source;
  bool doctor_only = false;        ///< verify only: doctor + marker, no install
  profile::Assignments selection;  ///< --set FIELD=VALUE passed to install and doctor (picks a matrix cell)
  int retries = 3;                 ///< attempts per download and per install run, each boot
  int retry_delay_s = 30;          ///< seconds between attempts
  int max_reboots = 5;             ///< reboots the script asks for before it stops rebooting
  std::string gpuenv_version;      ///< the generator, named in the header comment
};

/// A checked source: https URL without spaces or control characters and without credentials (user:password@ would
/// land in the user-data, the script and its log), SHA-256 as 64 hex digits (returned in lower case), an absolute
/// path (preinstalled; empty means /usr/bin/gpuenv; and the curl config); a usage Error naming the flag and the fix
/// otherwise.
util::Expected<Source> checked_source(Source source);

/// What the caller should warn about a checked source: a query string (a signed URL is a secret that the user-data,
/// readable through the cloud's metadata service, carries); empty when nothing.
std::vector<std::string> source_warnings(const Source& source);

/// `url` as the node's log shows it: without its query string and fragment ("https://h/p?(query hidden)").
std::string redacted_url(std::string_view url);

/// The per-boot script (data/cloudinit/per-boot.sh) with its settings filled in, every value quoted for sh; the
/// source is checked first (checked_source).
util::Expected<std::string> render_per_boot_script(const Options& options);

/// The whole user-data: apt lock timeout (apt-based distros, when apt is used), the profile text as given at
/// /etc/gpuenv/profile.toml, and the per-boot script. Usage Error: a bad source or option, a .deb for an rpm distro.
util::Expected<std::string> render_user_data(const profile::Profile& profile, std::string_view profile_text,
                                             const Options& options);

}  // namespace gpuenv::cloudinit
