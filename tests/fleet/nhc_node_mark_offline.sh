#!/usr/bin/env bash
# The Slurm branch of LBNL NHC's helpers/node-mark-offline, for tests/fleet/nhc_test.cpp: the lines marked
# "node-mark-offline:N" are quoted from mej/nhc at commit 9c4a38c0c9f48f92005c9120ca88145c33841dac,
# https://github.com/mej/nhc/blob/9c4a38c0c9f48f92005c9120ca88145c33841dac/helpers/node-mark-offline ; sinfo and
# scontrol are the test's stand-ins (SLURM_SINFO answers "idle none", SLURM_SCONTROL records its argv).
# shellcheck disable=SC2086,SC2207  # NHC's own lines, kept verbatim
IGNORE_EMPTY_NOTE="${IGNORE_EMPTY_NOTE:-0}"   # node-mark-offline:15
LEADER="NHC:"                                 # node-mark-offline:16

HOSTNAME="$1"   # node-mark-offline:20-22
shift
NOTE="$*"

SLURM_SINFO="${SLURM_SINFO:-sinfo}"                                   # node-mark-offline:57
SLURM_SCONTROL="${SLURM_SCONTROL:-scontrol}"                          # node-mark-offline:58
SLURM_SC_OFFLINE_ARGS="${SLURM_SC_OFFLINE_ARGS:-update State=DRAIN}"  # node-mark-offline:59


LINE=( $($SLURM_SINFO -o '%t %E' -hn $HOSTNAME) )   # node-mark-offline:61-64
STATUS="${LINE[0]}"
OLD_NOTE_LEADER="${LINE[1]}"
OLD_NOTE="${LINE[*]:2}"
case "$STATUS" in
    alloc*|comp*|drain*|drng*|fail*|idle*|maint*|mix*|resume*|resv*|undrain*)   # node-mark-offline:71
        # node-mark-offline:83-88: keep a note NHC did not write, then drain with the note.
        if [[ "$OLD_NOTE_LEADER" != "none" && "$OLD_NOTE_LEADER" != "$LEADER" ]]; then
            LEADER="$OLD_NOTE_LEADER"
            NOTE="$OLD_NOTE"
        fi
        exec $SLURM_SCONTROL $SLURM_SC_OFFLINE_ARGS NodeName=$HOSTNAME Reason="$LEADER $NOTE"
        ;;
esac
echo "node-mark-offline (test): state $STATUS not handled here"
exit 1
