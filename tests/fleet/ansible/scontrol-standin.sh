#!/usr/bin/env bash
# A stand-in scontrol for the Ansible role test: `show node N` prints the state Slurm 22.05 prints for an idle node,
# drained or not (tests/fixtures/fleet/scontrol-show-node-*.txt), `update ...` drains it; each argv is appended to
# $STANDIN_LOG as "scontrol ARGS".
set -euo pipefail
echo "scontrol $*" >> "${STANDIN_LOG:-/dev/null}"
state="${STANDIN_LOG:-/tmp/standin}.slurm-drained"
case "$1" in
  show)
    if [[ -e "$state" ]]; then
      printf 'NodeName=%s Arch=x86_64 CoresPerSocket=1\n   State=IDLE+DRAIN ThreadsPerCore=1\n   Reason=gpuenv: rollout by ansible [root@2026-12-01T02:51:25]\n' "$3"
    else
      printf 'NodeName=%s Arch=x86_64 CoresPerSocket=1\n   State=IDLE ThreadsPerCore=1\n' "$3"
    fi
    ;;
  update) touch "$state" ;;
  *) echo "scontrol stand-in: unexpected $*" >&2; exit 2 ;;
esac
