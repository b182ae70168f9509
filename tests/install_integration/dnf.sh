#!/usr/bin/env bash
# Integration test of `gpuenv install` with the real dnf (Debian's dnf 4 and createrepo-c), run by CTest (labels
# integration, system):
#
#   tests/install_integration/dnf.sh GPUENV_BINARY [CASE...]      CASE: see `all_cases` below (default: all)
#
# No Rocky Linux root can be built here (no EL packages from Debian's mirrors), so the node is a Debian 12 root with
# dnf (scripts/debian-root, cached and shared between runs) that says it is Rocky Linux 9: its /etc/os-release is
# Rocky's and the EL9 kernel release is bound over /proc/sys/kernel/osrelease. The dnf and rpm gpuenv runs there are
# the real ones with `--installroot` / `--root` added by a wrapper (dnf_repo.sh), so every package lands in the
# root's /installroot; systemctl is a recording stand-in. The stand-in repository reproduces the modular
# metadata of NVIDIA's repositories (module streams nvidia-driver:<branch>-open with the default and fm profiles,
# made as NVIDIA/cuda-repo-management genmodules.py makes them and added with modifyrepo_c as its README says).
#
# What this cannot show, and docs/install.md says: a real RHEL/Rocky root (subscription-manager, the kernel's own
# packages, DKMS building a module), a GPU (so no reboot or verify), and NVIDIA's signed repository (the stand-in
# repositories are local, so no key is fetched). Prints "SKIPPED: <reason>" and exits 0 where it cannot run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
all_cases=(fresh_rerun_switch fabric_node el10_versionlock)

skip() {
  echo "SKIPPED: $*"
  exit 0
}

[ $# -ge 1 ] || { echo "usage: $0 GPUENV_BINARY [CASE...]" >&2; exit 2; }
GPUENV=$(realpath "$1")
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("${all_cases[@]}")

[ "$(id -u)" -eq 0 ] || skip "the dnf integration test needs root (a private mount namespace, rpm databases)"
for tool in dnf rpm rpmbuild createrepo_c modifyrepo_c unshare jq; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/bootstrap installs it)"
done
[ -x "$GPUENV" ] || { echo "no gpuenv binary at $GPUENV" >&2; exit 2; }

source "$here/check.sh"
source "$here/root.sh"
source "$here/dnf_repo.sh"

# Under a directory only root can write: gpuenv refuses a local repository anywhere else (issue 30, item 5).
WORK=$(mktemp -d /var/lib/gpuenv-dnf-it.XXXXXX)
chmod 0755 "$WORK"
cleanup() {
  if [ "${GPUENV_KEEP_WORK:-0}" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$SECONDS
# A Debian root with dnf, cached and shared with other runs (scripts/debian-root): it plays a Rocky Linux 9 node.
BASE_ROOT=$("$source_dir/scripts/debian-root" bookworm dnf dnf-plugins-core rpm)
echo "Debian 12 root with dnf: $BASE_ROOT (ready after $((SECONDS - started)) s)"
build_dnf_repositories "$WORK"
echo "stand-in repositories: $((SECONDS - started)) s"
probe=$WORK/probe
new_installroot "$probe"
if ! in_root "$probe/root" gpuenv --version >"$WORK/version" 2>&1; then
  grep -Eq "error while loading shared libraries|GLIBC_[0-9.]+' not found" "$WORK/version" &&
    skip "this gpuenv build does not run in a Debian 12 root: $(head -1 "$WORK/version")"
  cat "$WORK/version" >&2
  exit 1
fi
rm -rf "$probe"

for name in "${cases[@]}"; do
  case_started=$SECONDS
  echo "case $name"
  CASE_DIR=$WORK/$name
  CASE_FAILURES=$FAILURES
  new_installroot "$CASE_DIR"
  "case_$name"
  echo "  ($((SECONDS - case_started)) s)"
done

echo "dnf install integration: ${#cases[@]} cases, $FAILURES failed checks, $((SECONDS - started)) s"
[ "$FAILURES" -eq 0 ]
