#!/usr/bin/env bash
# A stand-in for gpuenv in the Ansible role test (the install subcommand lives on another branch): answers
# `install ... --json` and `doctor ... --json` per docs/install.md and docs/doctor-json.md, driven by
#   STANDIN_CHANGED=true|false  STANDIN_REBOOT=true|false  STANDIN_VERDICT="READY"|"NOT READY"
# and appends each argv to $STANDIN_LOG. `doctor --slurm` answers as a healthy node whose gpuenv drain it resumes.
set -euo pipefail
echo "$*" >> "${STANDIN_LOG:-/dev/null}"
case "$1" in
  install)
    if [[ " $* " == *" --dry-run "* ]]; then
      echo '{"schema": 1, "mode": "dry-run", "steps": [{"id": "install.driver"}, {"id": "install.verify"}],'
      echo ' "changed": false, "reboot_required": false, "outcome": "planned"}'
    else
      echo "{\"schema\": 1, \"mode\": \"apply\", \"steps\": [], \"changed\": ${STANDIN_CHANGED:-false},"
      echo " \"reboot_required\": ${STANDIN_REBOOT:-false}, \"outcome\": \"converged\"}"
    fi
    ;;
  doctor)
    if [[ " $* " == *" --slurm "* ]]; then
      echo "READY: 8 GPUs"
      echo "slurm node localhost (IDLE+DRAIN): healthy: resuming gpuenv's drain"
      exit 0
    fi
    if [[ "${STANDIN_VERDICT:-READY}" == "READY" ]]; then
      echo '{"schema": 1, "verdict": "READY", "findings": [{"id": "gpu.count", "status": "pass"}]}'
    else
      echo '{"schema": 1, "verdict": "NOT READY", "findings": [{"id": "gpu.ecc", "status": "fail"},'
      echo ' {"id": "xid.events", "status": "fail"}, {"id": "gpu.count", "status": "pass"}]}'
      exit 1
    fi
    ;;
  *) echo "stand-in: unexpected $*" >&2; exit 2 ;;
esac
