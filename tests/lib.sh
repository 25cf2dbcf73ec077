# Shared helpers for the shell integration tests.  Source it first:
#   . "$(dirname "$0")/../lib.sh"
# Every assertion appends PASS/FAIL to $RECFS_RESULTS (tests/run.sh sums
# them).  Cleanup: register with `cleanup_add CMD`; runs on any exit.
set -u
RECFS_BIN=${RECFS_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/${BUILD:-build}/bin}
RECFS_RESULTS=${RECFS_RESULTS:-/dev/null}
PATH=$RECFS_BIN:$PATH
T_NAME=$(basename "$0" .sh)
T_FAILS=0

_cleanups=()
cleanup_add() { _cleanups=("$*" "${_cleanups[@]}"); }
# show_log_on_failure FILE: when the test has failed, FILE's last lines
# (a daemon's stderr: a sanitizer report) go to the test's log before the
# temporary folder is removed.
_logs=()
show_log_on_failure() { _logs+=("$1"); }
_run_cleanups() {
	local c
	if [ "$T_FAILS" -gt 0 ]; then
		for c in "${_logs[@]}"; do
			[ -s "$c" ] || continue
			echo "--- last lines of $(basename "$c"):"; tail -n 60 "$c"
		done
	fi
	for c in "${_cleanups[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

# A private temporary folder, removed at exit.
T_DIR=$(mktemp -d /var/tmp/recfs-test.XXXXXX)
cleanup_add "rm -rf '$T_DIR'"

pass() { echo "PASS $T_NAME: $*" >>"$RECFS_RESULTS"; echo "ok: $*"; }
fail() { echo "FAIL $T_NAME: $*" >>"$RECFS_RESULTS"; echo "FAILED: $*"; T_FAILS=$((T_FAILS + 1)); }

# check DESC CMD...: CMD must exit 0
check() {
	local d=$1; shift
	if "$@"; then pass "$d"; else fail "$d (exit $?: $*)"; fi
}

# run CMD capturing stdout+stderr into $OUT and status into $RC
run() { OUT=$("$@" 2>&1); RC=$?; }

# expect_err DESC RC PATTERN CMD...: CMD fails with exit RC (or any non-zero
# when RC is '!0') and its output matches the extended regex PATTERN in one
# line.
expect_err() {
	local d=$1 want=$2 pat=$3; shift 3
	run "$@"
	if [ "$want" = '!0' ]; then
		[ "$RC" != 0 ] || { fail "$d: expected failure, got exit 0: $OUT"; return 1; }
	elif [ "$RC" != "$want" ]; then
		fail "$d: expected exit $want, got $RC: $OUT"; return 1
	fi
	if ! grep -Eq -- "$pat" <<<"$OUT"; then
		fail "$d: message does not match /$pat/: $OUT"; return 1
	fi
	pass "$d"
}

. "$(dirname "${BASH_SOURCE[0]}")/tools/udp-lib.sh"

# make_members N SIZE [PREFIX]: creates N sparse files, sets $MEMBERS
# (space-separated) and $PACK (comma-separated).
make_members() {
	local n=$1 size=$2 prefix=${3:-m} i
	MEMBERS=""
	for ((i = 0; i < n; i++)); do
		truncate -s "$size" "$T_DIR/$prefix$i.img"
		MEMBERS="$MEMBERS $T_DIR/$prefix$i.img"
	done
	MEMBERS=${MEMBERS# }
	PACK=$(tr ' ' , <<<"$MEMBERS")
}

# snapshot FILES...: prints one checksum line per file (for "unchanged").
# CRC-32 and length (cksum): it tells a member a refused command wrote to
# from one it did not as surely as a cryptographic hash does (no one is
# forging collisions here), and at 20 times the speed: the suites hash
# several GB of sparse members.
snapshot() { cksum "$@" 2>/dev/null; }

# flip_byte FILE OFFSET: inverts the byte at OFFSET (writing a fixed value
# would leave a byte that already held it untouched: 1 run in 256)
flip_byte() {
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}

# expect_unchanged DESC SNAP FILES...
expect_unchanged() {
	local d=$1 snap=$2; shift 2
	if [ "$(snapshot "$@")" = "$snap" ]; then pass "$d: members unchanged"; else fail "$d: members changed"; fi
}

# refused DESC PATTERN CMD...: a refused command: non-zero exit, a one-line
# message matching PATTERN, and every member in $MEMBERS byte-identical.
refused() {
	local d=$1 pat=$2 snap; shift 2
	snap=$(snapshot $MEMBERS)
	expect_err "$d" '!0' "$pat" "$@"
	local lines
	lines=$(grep -c . <<<"$OUT")
	[ "$lines" -le 1 ] || fail "$d: message is $lines lines: $OUT"
	expect_unchanged "$d" "$snap" $MEMBERS
}

# counter_pattern BYTES: the gen:counter stream on stdout (python3)
finish() {
	[ "$T_FAILS" = 0 ]
}
