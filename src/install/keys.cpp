// What both backends share: https-only downloads, keeping only the key with a pinned fingerprint, checking it.
// Sources: curl(1) --proto / --proto-redir; gpg(1) --export, --show-keys, --with-colons (DETAILS: "fpr" records
// carry the fingerprint in field 10); data/install/keys.toml for the fingerprints.

#include <cctype>

#include "install/backend.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_gnupg_home = "/var/cache/gpuenv/gnupg";

std::vector<std::string> gpg(std::vector<std::string> arguments) {
  std::vector<std::string> argv = {"gpg", "--batch", "--no-tty", "--homedir", k_gnupg_home};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return argv;
}

}  // namespace

bool is_local_repository(const std::string& url) { return url.rfind("file:", 0) == 0; }

std::string package_stem(const std::string& package) {
  for (std::size_t dash = package.find('-'); dash != std::string::npos; dash = package.find('-', dash + 1)) {
    if (dash + 1 < package.size() && std::isdigit(static_cast<unsigned char>(package[dash + 1])))
      return package.substr(0, dash + 1);
  }
  return package;
}

std::vector<std::string> https_download(const std::string& url, const std::string& file) {
  // --proto =https refuses any other scheme for the URL, --proto-redir =https for every redirect it follows.
  return {"curl", "--proto", "=https", "--proto-redir", "=https", "-fsSL", "--create-dirs", "-o", file, url};
}

Check fingerprint_check(const std::string& keyring, const std::string& fingerprint) {
  return Check{gpg({"--with-colons", "--show-keys", keyring}), OutputMatch::has_line,
               "fpr:::::::::" + fingerprint + ":",
               keyring + " does not hold the key with fingerprint " + fingerprint + " (data/install/keys.toml)"};
}

PinnedKey pin_key(const std::string& downloaded, const std::string& fingerprint, const std::string& keyring,
                  bool armor) {
  PinnedKey out;
  // A fresh GnuPG home each time: nothing imported earlier can be exported by mistake.
  out.commands.push_back({"rm", "-rf", k_gnupg_home});
  out.commands.push_back({"mkdir", "-p", "-m", "0700", k_gnupg_home});
  out.commands.push_back(gpg({"--import", downloaded}));
  std::vector<std::string> exported = {"--yes", "--output", keyring};
  if (armor) exported.push_back("--armor");
  exported.insert(exported.end(), {"--export", fingerprint});
  out.commands.push_back(gpg(exported));
  out.check = fingerprint_check(keyring, fingerprint);
  return out;
}

std::string_view to_string(OutputMatch match) {
  switch (match) {
    case OutputMatch::exact:
      return "exact";
    case OutputMatch::has_line:
      return "has_line";
    case OutputMatch::lines_prefixed:
      break;
  }
  return "lines_prefixed";
}

std::string repository_arch(const std::string& arch) { return arch == "arm64" || arch == "aarch64" ? "sbsa" : arch; }

}  // namespace gpuenv::install
