#!/bin/sh
# gpuenv per-boot script, written by `gpuenv cloud-init` to /var/lib/cloud/scripts/per-boot/50-gpuenv.
#
# Why per-boot: cloud-init's cc_scripts_per_boot runs /var/lib/cloud/scripts/per-boot/* on EVERY boot, the first
# one included, in the final stage (canonical/cloud-init doc/module-docs/cc_scripts_per_boot; final-stage order in
# config/cloud.cfg.tmpl: scripts_per_boot, scripts_per_instance, scripts_user, ..., power_state_change). runcmd
# (scripts_user) runs once per instance and never again after a reboot, so it cannot resume an install.
#
# Each boot: make sure the gpuenv binary is there (download + SHA-256 check, bounded retries), run
# `gpuenv install --resume PROFILE --json` (unless verify-only), reboot when its JSON says "reboot_required": true,
# otherwise run `gpuenv doctor --tier boot --profile PROFILE --json` into /var/lib/gpuenv/doctor.json and keep the
# readiness marker /var/lib/gpuenv/ready only when the verdict is READY or DEGRADED. A node that is already ready:
# install reports nothing to change, doctor confirms, the marker stays.
#
# The reboot path never returns: cloud-init marks a module as run before running it (canonical/cloud-init
# cloudinit/helpers.py: Runners.run writes a per-instance module's semaphore before it calls the module), so a script
# that returned while the machine shuts down would let cloud-init start the user's own scripts, which the shutdown
# then kills and which never run again. The script asks systemd for the reboot without waiting (--no-block) and then
# waits to be stopped by it.
#
# The readiness marker is removed first thing on every boot: a marker from the previous boot never vouches for this
# one. It records the boot_id it was written in; doctor is retried (bounded) while nvidia-persistenced or
# nvidia-fabricmanager is still starting.
#
# Secrets: the script is 0700 (user-data may name a signed URL), logs show URLs without their query string, curl gets
# the URL on its standard input (not in `ps`), and credentials only from a root-only curl config file
# (GPUENV_CURL_CONFIG, passed with -K). Files the script writes are flushed (sync FILE) before the rename.
#
# JSON is read without jq or python: the install report's "reboot_required" and "outcome" (docs/install.md) and the
# doctor report's "verdict" are found with grep/sed on the key (docs/cloud-init.md). The doctor exit code decides
# the marker.
#
# Every setting below is filled in by `gpuenv cloud-init`, each value single-quoted for sh.

# @GPUENV_SETTINGS@

set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022

STATE_DIR=/var/lib/gpuenv
LOG_DIR=/var/log/gpuenv
LOG="$LOG_DIR/cloud-init.log"
MARKER="$STATE_DIR/ready"
DOCTOR_JSON="$STATE_DIR/doctor.json"
INSTALL_JSON="$STATE_DIR/install.json"
REBOOTS="$STATE_DIR/cloud-init-reboots"
INSTALL_FAILED=no
BOOT_ID=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)

log() {
  printf '%s gpuenv-per-boot: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$LOG"
}

# durable_move FROM TO: flush FROM to disk, rename it over TO, then flush TO's directory so that the rename itself is
# on disk (rename(2) changes the directory, which fsync of the file does not flush: fsync(2) "does not necessarily
# ensure that the entry in the directory containing the file has also reached disk"). A power cut leaves the old
# file or the new one. GNU sync FILE fsyncs each FILE, a directory too (coreutils sync.c sync_arg).
durable_move() {
  sync "$1" 2>/dev/null || sync
  mv -f "$1" "$2" || return 1
  sync "$(dirname -- "$2")" 2>/dev/null || sync
}

# curl_config_ok: GPUENV_CURL_CONFIG (credentials for the download) is a regular file of root's that nobody else
# can read or change; anything else is refused rather than used.
curl_config_ok() {
  [ -f "$GPUENV_CURL_CONFIG" ] && [ ! -L "$GPUENV_CURL_CONFIG" ] || return 1
  case "$(stat -c '%u %a' "$GPUENV_CURL_CONFIG" 2>/dev/null)" in
    "0 600" | "0 400") return 0 ;;
  esac
  return 1
}

# fetch FILE: one download of GPUENV_URL. curl reads the URL from its standard input (-K -) so that a signed URL is
# not in `ps`; https only, redirects included. wget cannot restrict redirects to https; the SHA-256 check stands.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    if [ -n "$GPUENV_CURL_CONFIG" ]; then
      printf 'url = "%s"\noutput = "%s"\n' "$GPUENV_URL" "$1" |
        curl -q -fsSL --proto '=https' --proto-redir '=https' --connect-timeout 30 --max-time 900 \
          -K "$GPUENV_CURL_CONFIG" -K - 2>>"$LOG"
    else
      printf 'url = "%s"\noutput = "%s"\n' "$GPUENV_URL" "$1" |
        curl -q -fsSL --proto '=https' --proto-redir '=https' --connect-timeout 30 --max-time 900 -K - 2>>"$LOG"
    fi
  elif [ -n "$GPUENV_CURL_CONFIG" ]; then
    log "GPUENV_CURL_CONFIG needs curl, which is not installed"
    return 1
  elif command -v wget >/dev/null 2>&1; then
    wget -q --timeout=30 -O "$1" "$GPUENV_URL" 2>>"$LOG"
  else
    log "neither curl nor wget is installed: cannot download $GPUENV_URL_SHOWN"
    return 1
  fi
}

# download FILE: fetch GPUENV_URL with bounded retries.
download() {
  if [ -n "$GPUENV_CURL_CONFIG" ] && ! curl_config_ok; then
    log "refusing $GPUENV_CURL_CONFIG: the curl config with credentials must be a file of root's, mode 0600 or 0400"
    return 1
  fi
  attempt=1
  while [ "$attempt" -le "$GPUENV_RETRIES" ]; do
    rm -f "$1"
    fetch "$1" && return 0
    log "download of $GPUENV_URL_SHOWN failed (attempt $attempt of $GPUENV_RETRIES)"
    attempt=$((attempt + 1))
    [ "$attempt" -le "$GPUENV_RETRIES" ] && sleep "$GPUENV_RETRY_DELAY"
  done
  return 1
}

sha256_of() {
  sha256sum "$1" 2>/dev/null | cut -d' ' -f1
}

# fetch_verified FILE: download GPUENV_URL to FILE and check its SHA-256 against GPUENV_SHA256.
fetch_verified() {
  download "$1" || return 1
  actual=$(sha256_of "$1")
  if [ "$actual" != "$GPUENV_SHA256" ]; then
    log "SHA-256 mismatch for $GPUENV_URL_SHOWN: expected $GPUENV_SHA256, got ${actual:-nothing}; not installing it"
    rm -f "$1"
    return 1
  fi
  return 0
}

install_binary() {
  if [ -x "$GPUENV_BIN" ] && [ "$(sha256_of "$GPUENV_BIN")" = "$GPUENV_SHA256" ]; then
    return 0
  fi
  log "installing gpuenv from $GPUENV_URL_SHOWN to $GPUENV_BIN"
  fetch_verified "$STATE_DIR/gpuenv.download" || return 1
  mkdir -p "$(dirname "$GPUENV_BIN")"
  cp "$STATE_DIR/gpuenv.download" "$GPUENV_BIN.new" && chmod 0755 "$GPUENV_BIN.new" &&
    durable_move "$GPUENV_BIN.new" "$GPUENV_BIN" || return 1
  rm -f "$STATE_DIR/gpuenv.download"
}

install_deb() {
  stamp="$STATE_DIR/gpuenv-deb.sha256"
  if [ -x "$GPUENV_BIN" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$GPUENV_SHA256" ]; then
    return 0
  fi
  log "installing the gpuenv package from $GPUENV_URL_SHOWN"
  deb="$STATE_DIR/gpuenv.deb"
  fetch_verified "$deb" || return 1
  if command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=600 "$deb" >>"$LOG" 2>&1 || return 1
  else
    dpkg -i "$deb" >>"$LOG" 2>&1 || return 1
  fi
  printf '%s\n' "$GPUENV_SHA256" >"$stamp"
  rm -f "$deb"
}

ensure_gpuenv() {
  case "$GPUENV_SOURCE" in
    url) install_binary ;;
    deb) install_deb ;;
    *) true ;;
  esac || return 1
  if [ ! -x "$GPUENV_BIN" ]; then
    log "gpuenv is not at $GPUENV_BIN"
    return 1
  fi
}

reboot_requested() {
  grep -Eq '"reboot_required"[[:space:]]*:[[:space:]]*true' "$INSTALL_JSON"
}

request_reboot() {
  count=$(cat "$REBOOTS" 2>/dev/null || echo 0)
  if [ "$count" -ge "$GPUENV_MAX_REBOOTS" ]; then
    log "install still asks for a reboot after $count reboots; not rebooting again (see $INSTALL_JSON)"
    return 1
  fi
  echo $((count + 1)) >"$REBOOTS.tmp" && durable_move "$REBOOTS.tmp" "$REBOOTS"
  log "install asks for a reboot (reboot $((count + 1)) of at most $GPUENV_MAX_REBOOTS); rebooting"
  if command -v systemctl >/dev/null 2>&1; then
    systemctl reboot --no-block
  else
    shutdown -r now
  fi
  rc=$?
  if [ "$rc" -ne 0 ]; then
    # Nothing will stop this script: waiting would hold cloud-init's final stage forever (cloud-final.service has
    # TimeoutSec=0). Report the node not ready instead.
    log "the reboot could not be requested (exit $rc); not waiting for it"
    return 1
  fi
  # Never return: cloud-init would go on with the user's scripts while the machine shuts down. The shutdown stops
  # this script (systemd ends every remaining process before it reboots).
  while :; do
    sleep 60
  done
}

# run_install [--set F=V ...]: 0 when the node conforms, 1 when install failed; a reboot does not return.
run_install() {
  attempt=1
  while :; do
    log "gpuenv install --resume $GPUENV_PROFILE (attempt $attempt of $GPUENV_RETRIES)"
    "$GPUENV_BIN" install --resume "$GPUENV_PROFILE" "$@" --json >"$INSTALL_JSON" 2>>"$LOG"
    rc=$?
    if [ "$rc" -eq 0 ]; then
      if reboot_requested; then
        request_reboot
        return 1
      fi
      rm -f "$REBOOTS"
      if grep -Eq '"changed"[[:space:]]*:[[:space:]]*true' "$INSTALL_JSON"; then
        log "gpuenv install: done, the node was changed"
      else
        log "gpuenv install: nothing to change"
      fi
      return 0
    fi
    if [ "$rc" -eq 2 ]; then
      log "gpuenv install rejected its input (exit 2); not retrying"
      return 1
    fi
    # Only a failed step may be transient (a mirror, the network); a refusal or a NOT READY node is not retried.
    if grep -Eq '"outcome"[[:space:]]*:[[:space:]]*"(refused|not_ready)"' "$INSTALL_JSON"; then
      log "gpuenv install: $(sed -n 's/^.*"outcome"[[:space:]]*:[[:space:]]*"\([a-z_]*\)".*$/\1/p' "$INSTALL_JSON" | head -n 1) (exit $rc); not retrying (see /var/log/gpuenv/install.log)"
      return 1
    fi
    log "gpuenv install failed (exit $rc; see /var/log/gpuenv/install.log)"
    attempt=$((attempt + 1))
    [ "$attempt" -le "$GPUENV_RETRIES" ] || return 1
    sleep "$GPUENV_RETRY_DELAY"
  done
}

# nvidia_services_starting: nvidia-persistenced or nvidia-fabricmanager is still starting (systemd "activating"):
# GPUs can look absent or NVLink down until they are up.
nvidia_services_starting() {
  command -v systemctl >/dev/null 2>&1 || return 1
  systemctl is-active nvidia-persistenced.service nvidia-fabricmanager.service 2>/dev/null | grep -q '^activating$'
}

# run_doctor [--set F=V ...]: doctor into doctor.json (atomically); its exit code. A NOT READY answer while the NVIDIA
# services are still starting is asked again, GPUENV_RETRIES times at most.
run_doctor() {
  tmp="$DOCTOR_JSON.tmp.$$"
  attempt=1
  while :; do
    "$GPUENV_BIN" doctor --tier boot --profile "$GPUENV_PROFILE" "$@" --json >"$tmp" 2>>"$LOG"
    rc=$?
    if [ "$rc" -ne 1 ] || [ "$attempt" -ge "$GPUENV_RETRIES" ] || ! nvidia_services_starting; then
      break
    fi
    log "gpuenv doctor: NOT READY while nvidia-persistenced or nvidia-fabricmanager is starting; asking again"
    attempt=$((attempt + 1))
    sleep "$GPUENV_RETRY_DELAY"
  done
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
    durable_move "$tmp" "$DOCTOR_JSON"
  else
    rm -f "$tmp" "$DOCTOR_JSON"
  fi
  return "$rc"
}

# verify [--set F=V ...]: doctor into doctor.json; the marker only when READY or DEGRADED and install did not fail
# (INSTALL_FAILED=yes: doctor runs only to record why).
verify() {
  run_doctor "$@"
  rc=$?
  verdict=$(sed -n 's/^.*"verdict"[[:space:]]*:[[:space:]]*"\([A-Z ]*\)".*$/\1/p' "$DOCTOR_JSON" 2>/dev/null | head -n 1)
  case "$INSTALL_FAILED:$rc:$verdict" in
    "no:0:READY" | "no:0:DEGRADED")
      printf 'verdict=%s\nboot_id=%s\n' "$verdict" "$BOOT_ID" >"$MARKER.tmp"
      durable_move "$MARKER.tmp" "$MARKER"
      log "gpuenv doctor: $verdict; marker $MARKER written"
      return 0
      ;;
  esac
  rm -f "$MARKER"
  log "gpuenv doctor: ${verdict:-no verdict} (exit $rc, install failed: $INSTALL_FAILED); marker $MARKER removed (details: $DOCTOR_JSON)"
  return 1
}

main() {
  mkdir -p "$STATE_DIR" "$LOG_DIR" || exit 1
  # A marker from an earlier boot vouches for nothing now: it goes before anything else runs.
  rm -f "$MARKER"
  log "boot ${BOOT_ID:-(id unknown)}: mode $GPUENV_MODE, gpuenv $GPUENV_BIN ($GPUENV_SOURCE)"
  if ! ensure_gpuenv; then
    rm -f "$MARKER"
    log "gpuenv is not available; the node is not verified"
    exit 1
  fi
  if [ "$GPUENV_MODE" = install ]; then
    run_install "$@"
    case $? in
      0) ;;
      *)
        INSTALL_FAILED=yes
        verify "$@"
        exit 1
        ;;
    esac
  fi
  verify "$@" || exit 1
  exit 0
}

main "$@"
