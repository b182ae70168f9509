# Throw-away Debian roots for the install integration test (sourced by run.sh).
#
# Each case gets its own `cp -a` of the cached root. Commands run in it through `unshare --mount --pid --fork
# --propagation private` + chroot: /proc and /dev/pts are mounted inside that private mount namespace, so they vanish
# with its last process and nothing is ever mounted on the host (no unmount to forget on any exit path). /sys is not
# mounted: gpuenv then sees no NVIDIA PCI device, as on a CI runner, even when the host has a GPU.

REPO_IN_ROOT=/srv/cuda-repo

# new_root BASE DEST: a private copy of the cached root BASE at DEST, with the Debian archive sources removed (every
# package the test installs comes from the local repository) and the local repository, gpuenv and the profile put in.
new_root() {
  local base=$1 dest=$2
  cp -a "$base" "$dest"
  : >"$dest/etc/apt/sources.list"
  rm -f "$dest"/etc/apt/sources.list.d/*
  rm -rf "$dest"/var/lib/apt/lists/*
  mkdir -p "$dest$REPO_IN_ROOT" "$dest/etc/gpuenv" "$dest/var/lib/gpuenv-test"
  # No fsync per unpacked file: the root is thrown away, and on a busy CI disk the syncs cost more than the test.
  echo force-unsafe-io >"$dest/etc/dpkg/dpkg.cfg.d/gpuenv-test-unsafe-io"
  cp -a "$WORK/repo/." "$dest$REPO_IN_ROOT/"
  install -m 0755 "$GPUENV" "$dest/usr/local/bin/gpuenv"
  install -m 0644 "$PROFILE" "$dest/etc/gpuenv/profile.toml"
}

# in_root ROOT COMMAND...: runs COMMAND as root inside ROOT with a clean environment; returns its exit code.
in_root() {
  local root=$1
  shift
  # shellcheck disable=SC2016 # the inner script expands its own positional parameters
  unshare --mount --pid --fork --propagation private -- /bin/sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" || exit 125
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || true
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' in_root "$root" "$@"
}

# dpkg_state ROOT PACKAGE: "<status> <version>" as dpkg records it ("install ok installed 12.4.1-1"), or "absent".
dpkg_state() {
  # shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
  in_root "$1" dpkg-query -W -f='${Status} ${Version}' "$2" 2>/dev/null || echo absent
}
