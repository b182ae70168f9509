#!/usr/bin/env bash
# LBNL NHC's failure path as the real `nhc` script runs it, for tests/fleet/nhc_test.cpp (NHC is not packaged in
# Debian 12). The lines marked "nhc:N" are quoted from mej/nhc at commit 9c4a38c0c9f48f92005c9120ca88145c33841dac
# (release 1.4.3), https://github.com/mej/nhc/blob/9c4a38c0c9f48f92005c9120ca88145c33841dac/nhc ; everything else is
# the harness around them: NHC's logging, syslog and result-file plumbing are left out, the Slurm branch of
# node-mark-offline is tests/fleet/nhc_node_mark_offline.sh.
#
# Usage: nhc_die_path.sh CHECK_FILE CHECK_LINE   (CHECK_LINE as written after "||" in nhc.conf, e.g. "check_gpuenv")
# Environment: HOSTNAME, OFFLINE_NODE (the helper), NHC_RM=slurm, MARK_OFFLINE=1 as nhc sets them (nhc:372, nhc:379).
# shellcheck disable=SC2086,SC2128  # NHC's own lines, kept verbatim
set -u
FAIL_CNT=0
CHECK_DIED=0

# nhc:48-66, the Slurm-relevant lines of die() verbatim:
function die() {
    IFS=$' \t\n'
    local RET="$1"
    shift

    CHECK_DIED=1
    [[ -z "$CHECK" ]] && CHECK="$FUNCNAME $*"
    echo "ERROR:  nhc:  Health check failed:  $*"   # nhc:55 log "ERROR:  $NAME:  Health check failed:  $*"
    if [[ -n "$NHC_RM" && "$MARK_OFFLINE" -eq 1 && "$FAIL_CNT" -eq 0 ]]; then
        if [[ "${CHECK:0:4}" == "die " ]]; then
            CHECK="$OFFLINE_NODE '$HOSTNAME' '$*'"
            eval $OFFLINE_NODE "'$HOSTNAME'" "'$*'"
            CHECK="$FUNCNAME $*"
        else
            eval $OFFLINE_NODE "'$HOSTNAME'" "'$*'"
        fi
    fi
    exit "$RET"   # nhc:67-84 end the run with the check's code (result file, SGE output and kill_watchdog left out)
}

# nhc:515-529 nhcmain_load_scripts: every *.nhc file is sourced into the one bash process.
# shellcheck source=/dev/null
. "$1"

# nhc:646-654 nhcmain_run_checks: CHECK is the config line's check, run with eval.
CHECK="$2"
eval $CHECK
RET=$?
if [[ "$RET" != "0" && "$CHECK_DIED" == "0" ]]; then
    # nhc:666-669 the fallback reason of a check that failed without die().
    die $RET "Check $CHECK returned $RET"
fi
echo "nhc: all checks passed"
