// Path resolution inside an inspected tree (`doctor --root`): the tree is untrusted, so its symlinks are followed
// as if the tree were "/" (a chroot without privileges) and can never lead out of it: a link to /etc/shadow reads
// the tree's /etc/shadow, and `../../..` stops at the tree's top.

#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <optional>
#include <vector>

#include "system/files.hpp"

namespace gpuenv::system {
namespace {

/// The kernel's limit on symlinks followed in one lookup (MAXSYMLINKS, fs/namei.c).
constexpr int k_max_links = 40;

std::deque<std::string> components(const std::string& path) {
  std::deque<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path, start, end - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string joined(const std::string& root, const std::vector<std::string>& parts) {
  std::string out = root;
  for (const std::string& part : parts) out += "/" + part;
  return parts.empty() ? out + "/" : out;
}

std::optional<std::string> link_target(const std::string& path) {
  std::string target(4096, '\0');
  const ssize_t length = ::readlink(path.c_str(), target.data(), target.size());
  if (length < 0 || static_cast<std::size_t>(length) >= target.size()) return std::nullopt;
  target.resize(static_cast<std::size_t>(length));
  return target;
}

}  // namespace

util::Expected<std::string> resolve_in_root(const std::string& root, const std::string& path) {
  std::deque<std::string> pending = components(path);
  std::vector<std::string> resolved;
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.front());
    pending.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    resolved.push_back(std::move(part));
    const std::string candidate = joined(root, resolved);
    struct stat info {};
    // A missing component ends the lookup, as in the kernel: the path up to it does not exist either.
    if (::lstat(candidate.c_str(), &info) != 0) return candidate;
    if (!S_ISLNK(info.st_mode)) continue;
    if (++links > k_max_links) {
      return util::Error::input(path + " (under --root " + root + "): too many levels of symbolic links",
                                "the tree has a symlink loop; fix or remove the link");
    }
    const auto target = link_target(candidate);
    if (!target) {
      return util::Error::input("cannot read the symbolic link " + path + " (under --root " + root + ")",
                                "check the permissions of the inspected tree");
    }
    resolved.pop_back();
    if (!target->empty() && target->front() == '/') resolved.clear();
    std::deque<std::string> target_parts = components(*target);
    pending.insert(pending.begin(), target_parts.begin(), target_parts.end());
  }
  return joined(root, resolved);
}

}  // namespace gpuenv::system
