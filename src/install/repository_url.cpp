#include "install/repository_url.hpp"

#include <string_view>

#include "install/backend.hpp"
#include "profile/fields.hpp"

namespace gpuenv::install {
namespace {

/// The directory of a file: URL ("file:///srv/repo" and "file:/srv/repo" -> "/srv/repo").
std::string local_path(const std::string& url) {
  std::string path = url.substr(5);
  if (path.rfind("//", 0) == 0) path = path.substr(2);
  return path;
}

/// `text` with control and non-ASCII bytes as \xNN, so a message names a URL on one line.
std::string printable(const std::string& text) {
  constexpr const char* k_hex = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xf];
    }
  }
  return out;
}

std::string local_problem(const std::string& url) {
  const std::string path = local_path(url);
  if (path.empty() || path.front() != '/') return "a file: repository must name an absolute directory (file:///srv/repo)";
  for (char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!plain && std::string_view("._~+/-").find(c) == std::string_view::npos)
      return "it contains `" + printable(std::string(1, c)) + "`, which gpuenv does not accept in a repository path";
  }
  if (("/" + path + "/").find("/../") != std::string::npos) return "its path contains `..`";
  return {};
}

}  // namespace

util::Expected<std::string> checked_repository_url(const std::string& url, const std::string& origin) {
  const std::string problem = is_local_repository(url) ? local_problem(url) : profile::https_url_problem(url);
  if (!problem.empty()) {
    return util::Error::usage(origin + " `" + printable(url) + "` is not a repository URL gpuenv accepts: " + problem,
                              "give an https URL (a mirror) or file:///absolute/directory");
  }
  std::string out = url;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::optional<util::Error> check_local_repository(system::System& system, const std::string& url) {
  if (!is_local_repository(url)) return std::nullopt;
  std::string path = local_path(url);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (std::string dir = path;; dir = dir.substr(0, std::max<std::size_t>(dir.rfind('/'), 1))) {
    const auto status = system.path_status(dir);
    const std::string why = !status                    ? "does not exist"
                            : status->symlink          ? "is a symlink"
                            : !status->directory       ? "is not a directory"
                            : status->uid != 0         ? "is not owned by root"
                            : (status->mode & 022) != 0 ? "is writable by group or others"
                                                        : "";
    if (!why.empty()) {
      return util::Error::input("the local repository " + url + " cannot be trusted: " + dir + " " + why,
                                "keep a local repository in directories only root can write (chown root, chmod "
                                "go-w), or serve it over https");
    }
    if (dir == "/") break;
  }
  return std::nullopt;
}

}  // namespace gpuenv::install
