#include "dockerfile/text.hpp"

#include "util/strings.hpp"

namespace gpuenv::dockerfile {

std::string major_minor(const util::Version& version) { return version.truncated(2).str(); }

std::string os_display(const std::string& image_os) {
  const struct {
    const char* prefix;
    const char* name;
  } names[] = {{"ubuntu", "Ubuntu "}, {"ubi", "UBI "}, {"rockylinux", "Rocky Linux "}, {"amzn", "Amazon Linux "}};
  for (const auto& n : names) {
    if (util::starts_with(image_os, n.prefix)) return n.name + image_os.substr(std::string_view(n.prefix).size());
  }
  return image_os;
}

std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

std::string comment(std::string_view text) {
  constexpr std::size_t width = 112;
  std::string out;
  std::string line = "#";
  const std::string flat = one_line(text);
  for (std::string_view word : util::split(flat, ' ')) {
    if (word.empty()) continue;
    if (line.size() > 1 && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = "#";
    }
    line += " ";
    line += word;
  }
  return out + line + "\n";
}

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : one_line(text)) {
    if (c == '\\' || c == '"' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string chain(const std::vector<std::string>& commands) {
  std::string out;
  for (std::size_t i = 0; i < commands.size(); ++i) out += (i == 0 ? "" : " \\\n && ") + commands[i];
  return out;
}

PackageManager package_manager(const profile::Profile& profile) {
  if (profile.os_distro == "ubuntu" || profile.os_distro == "debian") return PackageManager::apt;
  // RHEL 7 / UBI 7 images have yum only; every later RHEL-family image and Amazon Linux 2023 have dnf.
  const auto version = util::Version::parse(profile.os_version);
  if ((profile.os_distro == "ubi" || profile.os_distro == "rhel") && version && version->major() <= 7)
    return PackageManager::yum;
  return PackageManager::dnf;
}

std::vector<std::string> install_commands(PackageManager manager, const std::vector<std::string>& packages) {
  const std::string list = util::join(packages, " ");
  switch (manager) {
    case PackageManager::apt:
      return {"apt-get update", "apt-get install -y --no-install-recommends " + list, "rm -rf /var/lib/apt/lists/*"};
    case PackageManager::dnf:
      return {"dnf install -y --setopt=install_weak_deps=False --nodocs " + list, "dnf clean all",
              "rm -rf /var/cache/dnf"};
    case PackageManager::yum:
      // RHEL 7's yum has no weak dependencies to skip (rpm 4.11 predates them).
      return {"yum install -y --setopt=tsflags=nodocs " + list, "yum clean all", "rm -rf /var/cache/yum"};
  }
  return {};
}

namespace {

/// `line` without its pip comment: from a `#` at the start or after a blank to the end.
std::string_view without_pip_comment(std::string_view line) {
  for (std::size_t hash = line.find('#'); hash != std::string_view::npos; hash = line.find('#', hash + 1)) {
    if (hash == 0 || line[hash - 1] == ' ' || line[hash - 1] == '\t') return line.substr(0, hash);
  }
  return line;
}

}  // namespace

std::vector<LogicalLine> logical_lines(std::string_view text, CommentRule rule) {
  std::vector<LogicalLine> out;
  std::string pending;
  std::size_t first = 0;
  std::size_t number = 0;
  for (std::string_view raw : util::split_lines(text)) {
    ++number;
    std::string_view body = util::trim(rule == CommentRule::pip ? without_pip_comment(raw) : raw);
    if (rule == CommentRule::dockerfile && (body.empty() || body.front() == '#')) continue;
    const bool continues = !body.empty() && body.back() == '\\';
    if (continues) body = util::trim(body.substr(0, body.size() - 1));
    if (pending.empty()) first = number;
    if (!body.empty()) pending += (pending.empty() ? "" : " ") + std::string(body);
    if (continues) continue;
    if (!pending.empty()) out.push_back({std::move(pending), first});
    pending.clear();
  }
  if (!pending.empty()) out.push_back({std::move(pending), first});
  return out;
}

}  // namespace gpuenv::dockerfile
