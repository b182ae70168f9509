#!/usr/bin/env bash
# A minimal LBNL NHC stand-in (NHC is not packaged in Debian): NHC sources every /etc/nhc/scripts/*.nhc into one bash
# process and calls each configured check; a check fails by calling `die CODE "message"`, which records the message
# and ends the run with CODE (nhc: die(), mark the node offline, exit). Usage: nhc_shim.sh CHECK_FILE ARGS...
set -u
die() {
    local code="$1"
    shift
    echo "ERROR: nhc: Health check failed: $*"
    exit "$code"
}
# shellcheck source=/dev/null
source "$1"
shift
check_gpuenv "$@" || { echo "check_gpuenv returned non-zero without die"; exit 99; }
echo "nhc: all checks passed"
