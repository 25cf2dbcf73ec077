#!/bin/bash
# 33-record-crash: kill -9 of recfs-record mid-stream.  Afterwards the
# recording is still RECORDING, its committed length is a whole number of
# chunks no older than about one commit interval, every committed byte reads
# back (checksums verified) and matches the generator byte for byte, and
# nothing past the committed end is visible.  fsck.recfs then seals it at
# its durable end; a stale recording can also be removed and the pack
# records again.
. "$(dirname "$0")/../lib.sh"
echo "33-record-crash: kill -9 keeps the committed prefix"

CS=262144
RATE=$((24 << 20))
for it in 1 2 3; do
	make_members 3 128M "i${it}m"
	check "[$it] mkfs" mkfs.recfs -f -q -c 256K "$PACK"
	recfs-record --buffer 32M -q -i gen:counter --rate $RATE -c 0.2 "$PACK" crash 2>/dev/null &
	pid=$!
	cleanup_add "kill -9 $pid"
	sleep "1.$((it * 3))"
	t=$(awk '{print $1}' /proc/uptime)
	kill -9 $pid
	wait $pid 2>/dev/null
	ls_out=$(recfs ls -l "$PACK")
	len=$(awk '$1=="crash"{print $2}' <<<"$ls_out")
	state=$(awk '$1=="crash"{print $3}' <<<"$ls_out")
	check "[$it] left in state recording ($state)" test "$state" = recording
	check "[$it] a durable prefix exists ($len bytes)" test "${len:-0}" -gt 0
	check "[$it] committed at whole chunks while streaming" test $((len % CS)) = 0
	# at 24 MiB/s for 1.3+ s with 0.2 s commits: well past the first MiB
	# (a quarter of a second's stream: a sanitizer build starts slowly)
	check "[$it] commits kept up: $len bytes after ${it}x0.3+1 s" test "$len" -gt $((RATE / 4))
	run recfs-play --check counter "$PACK" crash
	check "[$it] committed prefix checksummed and byte for byte right ($OUT)" \
		grep -q "'crash': $len bytes, recording, counter pattern: 0 bad bytes" <<<"$OUT"
	n=$(recfs cat "$PACK" crash | wc -c)
	check "[$it] nothing past the committed end is visible ($n bytes)" test "$n" = "$len"
	n=$(recfs cat --offset "$len" "$PACK" crash 2>/dev/null | wc -c)
	check "[$it] reading at the committed end gives nothing" test "$n" = 0
	eval "PACK$it=\$PACK LEN$it=\$len"
done

# fsck.recfs recovers the crashed recording: sealed at the durable end,
# every byte verified
if command -v fsck.recfs >/dev/null; then
	run fsck.recfs -y --verify "$PACK1"
	check "fsck repairs the crashed pack (exit $RC: $(tail -1 <<<"$OUT"))" test "$RC" = 1
	ls_out=$(recfs ls -l "$PACK1")
	len=$(awk '$1=="crash"{print $2}' <<<"$ls_out")
	check "fsck sealed the recording" grep -Eq '^crash +[0-9]+ +sealed' <<<"$ls_out"
	check "fsck kept at least the committed prefix ($len >= $LEN1)" test "$len" -ge "$LEN1"
	run recfs-play --check counter "$PACK1" crash
	check "recovered recording verified byte for byte ($OUT)" grep -q "'crash': $len bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
	run fsck.recfs -n "$PACK1"
	check "second fsck is clean (exit $RC)" test "$RC" = 0
fi

# the stale recording can be forced away and the pack records again
check "rm -f the crashed recording" recfs rm -f "$PACK" crash
check "records again after the crash" recfs-record --buffer 16M -q -i gen:counter --size 3M "$PACK" after
run recfs-play --check counter "$PACK" after
check "new recording verified" grep -q "3145728 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"

# a crash during a VDIF recording keeps the loss map committed so far
make_members 2 128M v
check "mkfs vdif pack" mkfs.recfs -f -q -c 256K "$PACK"
python3 - "$T_DIR/gaps.vdif" <<'PY'
import struct, sys
F = 8032
# hand-built VDIF: one thread, 1000 frames/s; frames 5 and 9 missing
out = bytearray()
for i in range(4000):
    if i in (5, 9):
        continue
    sec, fn = 100 + i // 1000, i % 1000
    h = struct.pack("<IIII", sec, fn, F // 8, 1 << 26) + bytes(16)
    out += h + bytes([i & 255]) * (F - 32)
open(sys.argv[1], "wb").write(out)
PY
# feed it through a FIFO held open, so the recorder is still running
mkfifo "$T_DIR/fifo"
recfs-record --buffer 16M -q --format vdif -c 0.1 "$PACK" vcrash <"$T_DIR/fifo" 2>/dev/null &
pid=$!
cleanup_add "kill -9 $pid"
exec 3>"$T_DIR/fifo"
cat "$T_DIR/gaps.vdif" >&3
for ((i = 0; i < 100; i++)); do  # until the whole chunks are committed
	l=$(recfs ls -l "$PACK" 2>/dev/null | awk '$1=="vcrash"{print $2}')
	[ "${l:-0}" -ge $((122 * 262144)) ] && break
	sleep 0.1
done
kill -9 $pid
wait $pid 2>/dev/null
exec 3>&-
ls_out=$(recfs ls -l "$PACK")
check "vdif crash: committed with 2 frames lost" grep -Eq '^vcrash +[0-9]+ +recording.* vdif +2 ' <<<"$ls_out"
check "vdif crash: both gaps stored" test "$(grep -c 'gap at byte' <<<"$ls_out")" = 2
# whole chunks, or (when the kill came after the stall's partial-chunk
# commit, which a loaded machine allows) the exact length
check "vdif crash: whole chunks committed" grep -Eq "^vcrash +($((122 * 262144))|$((3998 * 8032))) " <<<"$ls_out"
check "vdif crash: gap before frame 6 (byte 40160)" grep -q "gap at byte 40160: 1 frames lost (thread 0)" <<<"$ls_out"
check "vdif crash: gap before frame 10 (byte 64256)" grep -q "gap at byte 64256: 1 frames lost (thread 0)" <<<"$ls_out"
finish
