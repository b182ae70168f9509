# Throw-away Debian roots for the install integration test (sourced by run.sh).
#
# Each case gets its own `cp -a` of the cached root. Commands run in it through `unshare --mount --pid --fork
# --propagation private` + chroot: /proc and /dev/pts are mounted inside that private mount namespace, so they vanish
# with its last process and nothing is ever mounted on the host (no unmount to forget on any exit path). /sys is not
# mounted: gpuenv then sees no NVIDIA PCI device, as on a CI runner, even when the host has a GPU.

# new_root BASE DEST: a private copy of the cached root BASE at DEST, as a node where gpuenv is about to run: its
# apt source is the stand-in distribution archive (the Debian archive's sources are removed: every package the test
# installs comes from a local repository), its package lists are current, and the repositories (built in $WORK/tree),
# gpuenv and the profile are in place.
new_root() {
  local base=$1 dest=$2
  cp -a "$base" "$dest"
  rm -f "$dest"/etc/apt/sources.list.d/*
  rm -rf "$dest"/var/lib/apt/lists/*
  echo "deb [trusted=yes] file:$(archive_dir) /" >"$dest/etc/apt/sources.list"
  # No fsync per unpacked file: the root is thrown away, and on a busy CI disk the syncs cost more than the test.
  echo force-unsafe-io >"$dest/etc/dpkg/dpkg.cfg.d/gpuenv-test-unsafe-io"
  mkdir -p "$dest/etc/gpuenv" "$dest/var/lib/gpuenv-test"
  cp -a "$WORK/tree/." "$dest/"
  install -m 0755 "$GPUENV" "$dest/usr/local/bin/gpuenv"
  install -m 0644 "$PROFILE" "$dest/etc/gpuenv/profile.toml"
  # The kernel release the node reports (bound over /proc/sys/kernel/osrelease by in_root).
  echo "$KERNEL" >"$dest/var/lib/gpuenv-test/osrelease"
  # A minbase root has no systemd: a stand-in systemctl records what gpuenv asks (enable, start) and answers
  # is-enabled / is-active from that record, so the services steps run and a re-run sees them done.
  install -D -m 0755 /dev/stdin "$dest/usr/local/sbin/systemctl" <<'STUB'
#!/bin/sh
log=/var/lib/gpuenv-test/systemctl.log
verb=$1
shift
case "$verb" in
  enable | start) for unit; do echo "$verb $unit" >>"$log"; done ;;
  is-enabled | is-active)
    want=enable; state=enabled
    [ "$verb" = is-active ] && want=start && state=active
    rc=0
    for unit; do
      if grep -qx "$want $unit" "$log" 2>/dev/null; then echo "$state"; else echo "unknown"; rc=1; fi
    done
    exit $rc ;;
  *) echo "systemctl stand-in: $verb not supported" >&2; exit 1 ;;
esac
STUB
  in_root "$dest" apt-get update -qq
}

# in_root ROOT COMMAND...: runs COMMAND as root inside ROOT with a clean environment; returns its exit code.
in_root() {
  local root=$1
  shift
  # shellcheck disable=SC2016 # the inner script expands its own positional parameters
  unshare --mount --pid --fork --kill-child --propagation private -- /bin/sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" || exit 125
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || true
    if [ -f "$root/var/lib/gpuenv-test/osrelease" ]; then
      mount --bind "$root/var/lib/gpuenv-test/osrelease" "$root/proc/sys/kernel/osrelease" || exit 125
    fi
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' in_root "$root" "$@"
}

# dpkg_state ROOT PACKAGE: "<status> <version>" as dpkg records it ("install ok installed 12.4.1-1"), or "absent".
dpkg_state() {
  # shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
  in_root "$1" dpkg-query -W -f='${Status} ${Version}' "$2" 2>/dev/null || echo absent
}
