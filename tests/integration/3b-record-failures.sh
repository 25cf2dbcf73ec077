#!/bin/bash
# 3b-record-failures: the failures no other test reaches, made to happen by
# an LD_PRELOAD shim (build/tests/failshim.so): the input dying mid-stream
# with a read error, and a flush (fdatasync) failing at each point of a
# recording in turn: at create, at any periodic commit, at the seal, at the
# close.  Every one must exit non-zero with one line saying what failed,
# claim no more than is durable, and leave a pack fsck.recfs recovers to an
# exact prefix of the stream, clean on its second run.
. "$(dirname "$0")/../lib.sh"
echo "3b-record-failures: an input read error; a flush failing at every point"

SHIM=$(cd "$(dirname "$0")/../.." && pwd)/${BUILD:-build}/tests/failshim.so
if [ ! -f "$SHIM" ]; then
	fail "no $SHIM: run make check, which builds it"
	finish
	exit
fi
shimmed() { env ASAN_OPTIONS=verify_asan_link_order=0 TSAN_OPTIONS="${TSAN_OPTIONS:-}" LD_PRELOAD="$SHIM" FAILSHIM_STATS="$T_DIR/shim" "$@"; }
make_members 2 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"

# --- the input dies: a read error after 1234567 bytes
head -c 3000000 /dev/urandom >"$T_DIR/src"
run shimmed FAILSHIM_READ_AFTER=1234567 recfs-record -q "$PACK" dying <"$T_DIR/src"
check "input read error: exit 4 ($RC)" test "$RC" = 4
check "input read error: one line naming the input and the error ($OUT)" \
	test "$(grep -c . <<<"$OUT")" = 1 -a -n "$(grep "stdin: read failed: Input/output error; 'dying' sealed at 1234567 bytes" <<<"$OUT")"
recfs cat "$PACK" dying >"$T_DIR/dying"
check "input read error: what arrived is sealed, byte for byte" cmp "$T_DIR/dying" <(head -c 1234567 "$T_DIR/src")

# --- a flush failing from the Kth on, for every K of a recording with
# periodic commits (the shim counts the flushes of a clean run first)
rec=(recfs-record -q -i gen:counter --rate 40M --size $((6 * 1048576 + 4321)) -c 0.03 "$PACK")
mkfs.recfs -q -f -c 256K "$PACK"
run shimmed "${rec[@]}" clean
check "a clean run under the shim ($(cat "$T_DIR/shim"))" test "$RC" = 0
S=$(awk '{print $2}' "$T_DIR/shim")
check "it flushed often enough to cut at many points ($S)" test "$S" -ge 10
bad=0 cut=0
for ((k = 1; k <= S + 1; k++)); do
	mkfs.recfs -q -f -c 256K "$PACK"
	run shimmed FAILSHIM_SYNC_FROM=$k "${rec[@]}" r
	rc=$RC out=$OUT
	# what it claims durable: "sealed at N" or "its last N committed bytes"
	claim=$(sed -n "s/.*'r' sealed at \([0-9]*\) bytes.*/\1/p; s/.*its last \([0-9]*\) committed bytes are durable.*/\1/p" <<<"$out" | tail -1)
	fsck.recfs -y "$PACK" >/dev/null 2>&1
	frc=$?
	run fsck.recfs -n "$PACK"
	second=$RC
	len=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin) if x["name"]=="r"]; print(r[0]["size"] if r else -1)')
	why=""
	# the number of commits depends on timing: a run that ended before
	# its Kth flush had nothing fail
	failed=$(awk '{print $4}' "$T_DIR/shim")
	[ "$failed" -gt 0 ] && cut=$((cut + 1))
	if [ "$failed" -gt 0 ]; then
		[ "$rc" != 0 ] || why="exit 0 with flush $k failing"
		grep -q "flush" <<<"$out" || why="$why; no line says a flush failed: $out"
	fi
	[ "$frc" -le 1 ] || why="$why; fsck -y exit $frc"
	[ "$second" = 0 ] || why="$why; fsck's second run exit $second"
	if [ -n "$claim" ] && [ "$claim" -gt 0 ]; then
		[ "$len" -ge "$claim" ] || why="$why; claimed $claim durable, $len after fsck"
	fi
	if [ "$len" -gt 0 ]; then
		chk=$(recfs-play --check counter "$PACK" r 2>&1)
		grep -q "counter pattern: 0 bad bytes" <<<"$chk" || why="$why; not a prefix of the stream: $chk"
	fi
	if [ -n "$why" ]; then
		fail "flush $k of $S failing:${why#;}"
		bad=$((bad + 1))
	fi
done
check "a flush failing at each of $S points: exit non-zero, said, recovered to an exact prefix ($bad bad)" test "$bad" = 0
check "most of them really cut the recording ($cut of $S)" test "$cut" -ge $((S * 2 / 3))
finish
