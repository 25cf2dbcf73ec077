#!/bin/bash
# 3a-record-aio: the kernel's rarer AIO answers, made to happen by an
# io_submit shim (build/tests/aioshim.so, LD_PRELOAD): submits that take one
# request of several, submits refused with EAGAIN, writes the kernel really
# completes short, and writes that complete having written nothing.  The
# first three must cost nothing (the recording reads back byte for byte);
# the last is a member error like any other.  And an AIO context refused
# (io_setup, aio-max-nr reached): both programs refuse to start with the
# engine's one line, and nothing is written.
. "$(dirname "$0")/../lib.sh"
echo "3a-record-aio: partial submits, EAGAIN, short and empty writes"

SHIM=$(cd "$(dirname "$0")/../.." && pwd)/${BUILD:-build}/tests/aioshim.so
if [ ! -f "$SHIM" ]; then
	fail "no $SHIM: run make check, which builds it"
	finish
	exit
fi
# the recorder under the shim; ASan builds want to be first, the shim is
shimmed() { env ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$SHIM" AIOSHIM_STATS="$T_DIR/shim" "$@"; }
shim_count() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$T_DIR/shim"; }
short_writes() { python3 -c '
import json,sys; print(sum(m["short_writes"] for m in json.load(open(sys.argv[1]))["members"]))' "$1"; }

make_members 4 64M
check "mkfs 4 members, 256 KiB chunks" mkfs.recfs -f -q -c 256K "$PACK"

# --- one request per call, every third call EAGAIN, every fifth write short;
# an odd length, so the last chunk is partial
size=$((100 * 1048576 + 12345))
run shimmed AIOSHIM_ONE=1 AIOSHIM_EAGAIN=3 AIOSHIM_SHORT=5 \
	recfs-record -q --buffer 16M -i gen:counter --size $size --stats-json "$T_DIR/s1.json" "$PACK" rough
check "rough kernel: records, exit 0 ($RC: $(tail -1 <<<"$OUT"))" test "$RC" = 0
check "rough kernel: the shim saw the recorder's submits ($(cat "$T_DIR/shim"))" test "$(shim_count calls)" -gt 100
check "rough kernel: partial submits happened ($(shim_count partial))" test "$(shim_count partial)" -gt 0
check "rough kernel: EAGAIN happened ($(shim_count eagain))" test "$(shim_count eagain)" -gt 0
check "rough kernel: short writes happened ($(shim_count short))" test "$(shim_count short)" -gt 10
n=$(short_writes "$T_DIR/s1.json")
check "rough kernel: every short write was sent again, counted in --stats-json ($n of $(shim_count short))" \
	test "$n" = "$(shim_count short)"
run recfs-play --check counter "$PACK" rough
check "rough kernel: every byte reads back ($OUT)" \
	grep -q "'rough': $size bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
run fsck.recfs -n --verify "$PACK"
check "rough kernel: fsck --verify finds every chunk checksum right ($RC)" test "$RC" = 0

# --- a slow input: the partial chunk written on a stall (its own request)
# is shortened too, then the chunk again when it fills
run shimmed AIOSHIM_SHORT=2 recfs-record -q --buffer 16M -c 0.1 -i gen:counter --rate 1M --size 600000 \
	--stats-json "$T_DIR/s2.json" "$PACK" slow
check "slow input, every other write short: exit 0 ($RC: $(tail -1 <<<"$OUT"))" test "$RC" = 0
n=$(short_writes "$T_DIR/s2.json")
commits=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["commits"])' "$T_DIR/s2.json")
# 3 chunk writes alone make at most 2 short ones: more means stall writes were
check "slow input: stall commits happened ($commits)" test "$commits" -ge 4
check "slow input: stall writes were shortened and sent again ($n)" test "$n" -ge 4 -a "$n" = "$(shim_count short)"
run recfs-play --check counter "$PACK" slow
check "slow input: every byte reads back ($OUT)" \
	grep -q "'slow': 600000 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"

# --- without the shim nothing is short
run recfs-record -q --buffer 16M -i gen:counter --size 8M --stats-json "$T_DIR/s3.json" "$PACK" plain
check "no shim: no short writes counted ($(short_writes "$T_DIR/s3.json"))" test "$(short_writes "$T_DIR/s3.json")" = 0

# --- a write that completes having written nothing: a member error
run shimmed AIOSHIM_ZERO=40 recfs-record -q --buffer 16M -i gen:counter --size 60M \
	--stats-json "$T_DIR/s4.json" "$PACK" empty
last=$(tail -1 <<<"$OUT")
check "empty write: exit 3 ($RC: $last)" test "$RC" = 3
check "empty write: the last line names the member and the empty write" \
	grep -Eq "member [0-3] \($T_DIR/m[0-3]\.img\): write failed at byte [0-9]+ of 'empty': short write, 0 of 262144 bytes" <<<"$last"
check "empty write: and that the recording was sealed" grep -q "'empty' sealed at [0-9]* bytes" <<<"$last"
len=$(recfs ls -l "$PACK" | awk '$1=="empty"{print $2}')
check "empty write: sealed before the failed chunk (${len:-none} bytes)" \
	test "${len:-0}" -gt 0 -a "${len:-0}" -le $((39 * 262144))
run recfs-play --check counter "$PACK" empty
check "empty write: the sealed prefix reads back ($OUT)" \
	grep -q "'empty': $len bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"

# --- once a member has failed nothing more is submitted (a dying disk can
# hold every request for its whole timeout): every write short, every third
# empty, one request per call, 8 in flight per member
run shimmed AIOSHIM_ONE=1 AIOSHIM_SHORT=1 AIOSHIM_ZERO=3 recfs-record -q -Q 8 --buffer 16M \
	-i gen:counter --size 60M "$PACK" dying
check "dying member: exit 3 ($RC: $(tail -1 <<<"$OUT"))" test "$RC" = 3
check "dying member: no submit after the error was seen ($(cat "$T_DIR/shim"))" test "$(shim_count after)" = 0

# --- no AIO context: refused before anything is created (the engine sets
# it up in rr_start and returns the reason; recfsd used to start, print it
# from the writer's thread and fail every scan)
before=$(recfs ls "$PACK" | sort | tr '\n' ' ')
run shimmed AIOSHIM_SETUP=11 recfs-record -q --buffer 16M -i gen:counter --size 8M "$PACK" noaio
check "no AIO context: recfs-record exits 1 ($RC)" test "$RC" = 1
check "no AIO context: one line says why ($OUT)" \
	test "$OUT" = "recfs-record: io_setup(16): Resource temporarily unavailable"
run shimmed AIOSHIM_SETUP=11 timeout 10 recfsd -l 127.0.0.1:0 -i udp:127.0.0.1:0 --buffer 16M "$PACK"
check "no AIO context: recfsd refuses to start, exit 1 ($RC)" test "$RC" = 1
check "no AIO context: recfsd says why ($(tail -1 <<<"$OUT"))" \
	grep -qx "recfsd: io_setup(16): Resource temporarily unavailable" <<<"$OUT"
check "no AIO context: the pack is as it was" test "$(recfs ls "$PACK" | sort | tr '\n' ' ')" = "$before"
finish
