#!/bin/bash
# The fsck fuzz harness in the test suite: every seed, every input the
# fuzzer kept (tests/fuzz/corpus) and every crash it ever found replayed
# with the strict checks (no crash, -n never writes, a repaired pack is clean
# on the second run and assembles); then, with clang and in the plain build,
# libFuzzer itself for RECFS_FUZZ_TIME seconds (default 30, 0 to skip).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../lib.sh"
REPLAY=$(cd "$RECFS_BIN/.." && pwd)/tests/fuzz-replay
[ -x "$REPLAY" ] || { fail "build $REPLAY first (make check)"; exit 1; }

for f in "$ROOT"/tests/fuzz/seeds/* "$ROOT"/tests/fuzz/corpus/*; do
	if FUZZ_STRICT=1 "$REPLAY" "$f" >"$T_DIR/out" 2>&1; then
		n=$((${n:-0} + 1))
	else
		fail "fuzz input $(basename "$f"): $(tail -3 "$T_DIR/out")"
	fi
done
check "replayed ${n:-0} fuzz inputs" test "${n:-0}" -gt 100

secs=${RECFS_FUZZ_TIME:-30}
if [ "$secs" -gt 0 ] && [ "${BUILD:-build}" = build ] && command -v clang >/dev/null; then
	run make -C "$ROOT" fuzz FUZZ_TIME="$secs"
	check "libFuzzer ran $secs s without a finding" test "$RC" = 0
	[ "$RC" = 0 ] || tail -30 <<<"$OUT"
	check "libFuzzer reported its runs" grep -q "^Done [0-9]* runs" <<<"$OUT"
fi
finish
