#!/usr/bin/env bash
# Integration test of `gpuenv install` with the real apt and dpkg (issue 10), run by CTest (label `integration`):
#
#   tests/install_integration/run.sh GPUENV_BINARY [CASE...]      CASE: see `all_cases` below (default: all)
#
# A cached Debian 12 root (scripts/debian-root) is copied per case; local apt repositories of stand-in packages named
# as NVIDIA names them (repo.sh, cases.sh) are put inside it; the built gpuenv runs `install` in it through chroot
# (root.sh), and the results are checked with dpkg, apt, the install log, the state file and the JSON answer
# (check.sh). Warm (root cached): about 2 minutes on 2 busy cores; the first debootstrap adds 1-2 minutes.
# Prints "SKIPPED: <reason>" and exits 0 where it cannot run (not root, no debootstrap, no jq). Exit 1 when a check
# failed. GPUENV_KEEP_WORK=1 keeps the work directory for inspection.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
all_cases=(fresh_and_rerun branch_without_pin postinst_failure interrupted_dpkg held_package missing_package
  fabric_node archive_copies)

skip() {
  echo "SKIPPED: $*"
  exit 0
}

[ $# -ge 1 ] || { echo "usage: $0 GPUENV_BINARY [CASE...]" >&2; exit 2; }
GPUENV=$(realpath "$1")
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("${all_cases[@]}")
PROFILE=$source_dir/tests/fixtures/install/cuda-12.4-debian12-580.toml

[ "$(id -u)" -eq 0 ] || skip "the install integration test needs root (debootstrap, chroot, dpkg in a Debian root)"
for tool in debootstrap dpkg-deb dpkg-scanpackages unshare jq; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/bootstrap installs it)"
done
[ -x "$GPUENV" ] || { echo "no gpuenv binary at $GPUENV" >&2; exit 2; }
# Until the install module is merged, this gpuenv has no install command to test.
grep -Eq '^ +install ' <<<"$("$GPUENV" --help 2>/dev/null || true)" ||
  skip "this gpuenv has no install command (tests/install_integration tests the install module: docs/install.md)"

source "$here/repo.sh"
source "$here/root.sh"
source "$here/check.sh"
source "$here/cases.sh"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/gpuenv-install-it.XXXXXX")
cleanup() {
  if [ "${GPUENV_KEEP_WORK:-0}" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$SECONDS
BASE_ROOT=$("$source_dir/scripts/debian-root" bookworm curl)
echo "Debian 12 root: $BASE_ROOT (ready after $((SECONDS - started)) s)"

# The binary is built on this machine; it runs in the root when the root's glibc is as new as the build's and the
# root has its shared libraries (an ASan build needs libasan: CI's asan pass skips here, its dev pass runs).
build_repositories "$WORK/tree" "$WORK/pool"
probe_root=$WORK/probe
new_root "$BASE_ROOT" "$probe_root"
if ! in_root "$probe_root" gpuenv --version >"$WORK/version" 2>&1; then
  grep -Eq "error while loading shared libraries|GLIBC_[0-9.]+' not found" "$WORK/version" &&
    skip "this gpuenv build does not run in a Debian 12 root: $(head -1 "$WORK/version")"
  cat "$WORK/version" >&2
  echo "gpuenv --version failed inside the Debian 12 root" >&2
  exit 1
fi

# Every package the plan installs must be in the stand-in repository, or the cases would fail for the wrong reason.
echo "plan"
plan_rc=0
in_root "$probe_root" gpuenv install /etc/gpuenv/profile.toml --dry-run --json --repo-url "file://$CUDA_REPO" \
  --toolkit-repo-url "file://$TOOLKIT_REPO" >"$WORK/plan.json" 2>"$WORK/plan.err" || plan_rc=$?
expect_equal "dry-run plan exits 0" "$plan_rc" 0
[ "$plan_rc" -eq 0 ] || sed 's/^/  | /' "$WORK/plan.err"
# (A name with a <placeholder>, such as the headers of <running-kernel>, is resolved only when the plan is applied.)
find "$WORK/tree" -name Packages -exec cat {} + >"$WORK/all-packages"
for package in $(jq -r -f "$here/planned-packages.jq" "$WORK/plan.json" 2>/dev/null | grep -v '<'); do
  expect "the stand-in repositories have $package, which the plan installs (else add it to cases.sh)" \
    contains "$WORK/all-packages" "^Package: $package\$"
done
rm -rf "$probe_root"

for name in "${cases[@]}"; do
  case_started=$SECONDS
  echo "case $name"
  CASE_DIR=$WORK/$name
  CASE_FAILURES=$FAILURES
  mkdir -p "$CASE_DIR"
  new_root "$BASE_ROOT" "$CASE_DIR/root"
  "case_$name"
  echo "  ($((SECONDS - case_started)) s)"
  [ "${GPUENV_KEEP_WORK:-0}" = 1 ] || rm -rf "$CASE_DIR"
done

echo "install integration: ${#cases[@]} cases, $FAILURES failed checks, $((SECONDS - started)) s"
[ "$FAILURES" -eq 0 ]
