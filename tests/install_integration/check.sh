# Assertions for the install integration test (sourced by run.sh). Each prints one "ok" or "FAIL" line and counts
# failures in FAILURES; a failing check never stops the run, so one run shows every broken assertion.

FAILURES=0

pass() { echo "  ok   $*"; }
fail() {
  echo "  FAIL $*"
  FAILURES=$((FAILURES + 1))
}

# expect DESCRIPTION COMMAND...: passes when COMMAND exits 0.
expect() {
  local description=$1
  shift
  if "$@"; then pass "$description"; else fail "$description"; fi
}

# expect_same DESCRIPTION ACTUAL EXPECTED: as expect_equal, and EXPECTED is not empty.
expect_same() {
  if [ -n "$3" ] && [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

# expect_equal DESCRIPTION ACTUAL EXPECTED
expect_equal() {
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

# file_hash FILE: the SHA-256 of FILE, or "absent".
file_hash() { if [ -f "$1" ]; then sha256sum <"$1"; else echo absent; fi; }

# both COMMAND1... -- COMMAND2...: both commands succeed.
both() {
  local first=()
  while [ "$1" != -- ]; do first+=("$1"); shift; done
  shift
  "${first[@]}" && "$@"
}

# quietly COMMAND...: COMMAND with its standard output dropped.
quietly() { "$@" >/dev/null; }

# json FILE FILTER: one value from a gpuenv --json answer ("" when the file is not JSON or the key is absent).
json() { jq -r "($2) | if . == null then empty else . end" "$1" 2>/dev/null || true; }

# contains FILE EXTENDED-REGEX
contains() { grep -Eq -- "$2" "$1" 2>/dev/null; }

# lacks FILE EXTENDED-REGEX: FILE exists and has no line matching.
lacks() { [ -f "$1" ] && ! grep -Eq -- "$2" "$1"; }

# installed ROOT PACKAGE [VERSION]: dpkg has PACKAGE fully installed (at VERSION when given).
installed() {
  local state
  state=$(dpkg_state "$1" "$2")
  case "$state" in
    "install ok installed ${3:-}"* | "hold ok installed ${3:-}"*) return 0 ;;
    *) echo "       $2: $state"; return 1 ;;
  esac
}

# show_run CASE_DIR RUN: the evidence of one gpuenv run, printed after a failing check.
show_run() {
  local dir=$1 run=$2
  echo "  --- $run: exit $(cat "$dir/$run.rc"), stderr:"
  sed 's/^/  | /' "$dir/$run.err" | tail -20 || true
  echo "  --- $run: JSON outcome/failed_step/changed: $(json "$dir/$run.json" '.outcome') $(json "$dir/$run.json" '.failed_step') $(json "$dir/$run.json" '.changed')"
  echo "  --- $run: install log (last 30 lines):"
  { sed 's/^/  | /' "$dir/root/var/log/gpuenv/$run.log" 2>/dev/null || echo "  | (none)"; } | tail -30
}
