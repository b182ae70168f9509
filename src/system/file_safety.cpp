// Files that root writes or trusts (docs/security.md): atomic writes that a planted symlink cannot redirect, and the
// check that a file a variable or flag named can be changed by no one but root and the user running gpuenv.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "system/files.hpp"

namespace gpuenv::system {
namespace {

namespace fs = std::filesystem;
using util::Error;
using util::Expected;

std::string errno_text() { return std::strerror(errno); }

/// Why the entry `st` at `shown` could be changed by someone other than root and `user`; nullopt when it cannot.
/// A sticky directory (/tmp) is safe to pass through: others cannot rename or remove what they do not own in it.
std::optional<std::string> others_can_change(const struct stat& st, uid_t user, const std::string& shown) {
  if (st.st_uid != 0 && st.st_uid != user) return shown + " belongs to uid " + std::to_string(st.st_uid);
  if (S_ISLNK(st.st_mode)) return std::nullopt;  // a link's own mode means nothing; its directory was checked
  const bool sticky_directory = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & S_IWOTH) != 0 && !sticky_directory) return shown + " is writable by everyone";
  if ((st.st_mode & S_IWGRP) != 0 && !sticky_directory)
    return shown + " is writable by its group (gid " + std::to_string(st.st_gid) + ")";
  return std::nullopt;
}

/// `path` resolved the way the kernel would, checking that no one but root and `user` could change any entry on
/// the way (each directory, each symlink, the file itself). `resolved` is the path free of symlinks.
struct Walk {
  std::string resolved;
  std::optional<std::string> problem;
  bool missing = false;  ///< an entry on the way does not exist (nothing to trust or distrust yet)
  struct stat last {};
};

Walk walk_trusted(const std::string& path, uid_t user) {
  Walk walk;
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) {
    walk.problem = path + ": " + error.message();
    return walk;
  }
  std::vector<std::string> pending;  // components still to resolve, the next one last
  const auto push_front = [&pending](const fs::path& more) {
    std::vector<std::string> parts;
    for (const fs::path& part : more.relative_path()) parts.push_back(part.string());
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push_front(absolute);
  std::string current = "/";
  if (::lstat("/", &walk.last) != 0) {
    walk.problem = "/: " + errno_text();
    return walk;
  }
  if (auto problem = others_can_change(walk.last, user, "/")) {
    walk.problem = problem;
    return walk;
  }
  int links = 0;
  while (!pending.empty()) {
    const std::string part = pending.back();
    pending.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      current = fs::path(current).parent_path().string();
      if (current.empty()) current = "/";
      continue;
    }
    const std::string next = current == "/" ? "/" + part : current + "/" + part;
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        walk.missing = true;
        walk.resolved = next;
        return walk;
      }
      walk.problem = next + ": " + errno_text();
      return walk;
    }
    if (auto problem = others_can_change(st, user, next)) {
      walk.problem = problem;
      return walk;
    }
    if (S_ISLNK(st.st_mode)) {
      // The kernel's limit on links in one lookup (ELOOP after 40).
      if (++links > 40) {
        walk.problem = path + ": too many levels of symbolic links";
        return walk;
      }
      const fs::path target = fs::read_symlink(next, error);
      if (error) {
        walk.problem = next + ": " + error.message();
        return walk;
      }
      if (target.is_absolute()) current = "/";
      push_front(target);
      continue;
    }
    walk.last = st;
    current = next;
  }
  walk.resolved = current;
  return walk;
}

/// Six characters for a temporary name nobody can predict.
std::string random_suffix() {
  static constexpr char k_letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;
  std::string out;
  for (int i = 0; i < 6; ++i) out += k_letters[device() % (sizeof k_letters - 1)];
  return out;
}

/// Writes all of `contents` to `fd` (EINTR retried).
bool write_all(int fd, const std::string& contents) {
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t wrote = ::write(fd, contents.data() + done, contents.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += static_cast<std::size_t>(wrote);
  }
  return true;
}

/// The directory root writes into, resolved and checked: only root may be able to change it or anything above it;
/// a sticky directory (/tmp) passes when the target is absent or root's.
Expected<std::string> root_output_directory(const std::string& directory, const std::string& name,
                                            const std::string& path) {
  const Walk walk = walk_trusted(directory, 0);
  const std::string remedy =
      "write it under a directory that only root can change (`chown root: DIR && chmod go-w DIR`), or run gpuenv as "
      "the user who owns the directory";
  if (walk.problem) return Error::input("refusing to write " + path + " as root: " + *walk.problem, remedy);
  if (walk.missing) return Error::input("cannot write " + path + ": " + walk.resolved + " does not exist");
  if (!S_ISDIR(walk.last.st_mode))
    return Error::input("cannot write " + path + ": " + walk.resolved + " is not a directory");
  const bool others_write = (walk.last.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  struct stat target {};
  const std::string target_path = walk.resolved + "/" + name;
  if (others_write && ::lstat(target_path.c_str(), &target) == 0 && target.st_uid != 0) {
    return Error::input("refusing to write " + path + " as root: " + target_path + " belongs to uid " +
                            std::to_string(target.st_uid) + " in a directory others can write",
                        remedy);
  }
  return walk.resolved;
}

}  // namespace

std::optional<std::string> path_trust_problem(const std::string& path, unsigned user) {
  const Walk walk = walk_trusted(path, user);
  return walk.problem;
}

std::optional<std::string> program_directory_problem(const std::string& directory) {
  const Walk walk = walk_trusted(directory, 0);
  if (walk.problem) return walk.problem;
  if (walk.missing) return walk.resolved + " does not exist";
  if (!S_ISDIR(walk.last.st_mode)) return walk.resolved + " is not a directory";
  // The sticky bit keeps others from replacing root's files, not from adding their own: /tmp/dmesg is anyone's.
  if ((walk.last.st_mode & (S_IWGRP | S_IWOTH)) != 0) return walk.resolved + " is writable by group or others";
  return std::nullopt;
}

Expected<util::Ok> write_file_atomically(const std::string& path, const std::string& contents, unsigned mode) {
  const fs::path target(path);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") return Error::input("cannot write " + path + ": not a file name");
  std::string directory = target.parent_path().string();
  if (directory.empty()) directory = ".";
  if (::geteuid() == 0) {
    GPUENV_TRY_ASSIGN(auto checked, root_output_directory(directory, name, path));
    directory = checked;
  } else {
    // A user's own output directory may be reached through a link of theirs: open what it resolves to.
    std::error_code error;
    const fs::path resolved = fs::canonical(directory, error);
    if (error) return Error::input("cannot write " + path + ": " + directory + ": " + error.message());
    directory = resolved.string();
  }
  // O_NOFOLLOW: the directory itself may not be a link swapped in after the check.
  const FileDescriptor dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) return Error::input("cannot write " + path + ": cannot open " + directory + ": " + errno_text());
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = "." + name + ".tmp." + random_suffix();
    // O_EXCL|O_NOFOLLOW: a file or link planted under the name is never opened, the name is tried again.
    fd = ::openat(dir.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return Error::input("cannot write " + path + ": cannot create a temporary file: " + errno_text());
  FileDescriptor file(fd);
  const auto fail = [&](const std::string& what) -> Expected<util::Ok> {
    const std::string reason = errno_text();
    ::unlinkat(dir.get(), temporary.c_str(), 0);
    return Error::input("cannot write " + path + ": " + what + ": " + reason);
  };
  if (!write_all(file.get(), contents)) return fail("write failed");
  // The mode asked for, whatever the umask: a 0644 file is 0644 under umask 000 too.
  if (::fchmod(file.get(), static_cast<mode_t>(mode & 07777)) != 0) return fail("chmod failed");
  if (::fsync(file.get()) != 0) return fail("fsync failed");
  if (file.close() != 0) return fail("close failed");
  if (::renameat(dir.get(), temporary.c_str(), dir.get(), name.c_str()) != 0)
    return fail("rename over " + name + " failed");
  ::fsync(dir.get());  // the rename itself on disk; a failure here leaves the new file in place, which is fine
  return util::Ok{};
}

}  // namespace gpuenv::system
