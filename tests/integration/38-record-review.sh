#!/bin/bash
# 38-record-review: regressions from the recorder review.  A --packet-size
# recorder receiving good and wrong-sized datagrams interleaved in one
# batch keeps the good ones (it crashed closing the holes).  A slow input's
# partial chunk is durable about one commit interval after it arrived.
# Also: one corrupt VDIF seconds field, a short first VDIF read, kernel
# socket drops, an unwritable --stats-json, recfs-play --sequence sizes, and
# a checksum array that cannot grow.
. "$(dirname "$0")/../lib.sh"
echo "38-record-review: recorder review regressions"

make_members 2 64M
check "mkfs 2 members" mkfs.recfs -f -q -c 256K "$PACK"


# --- 2a: --packet-size with wrong-sized datagrams between good ones
PORT=$(free_port)
recfs-record --buffer 16M -q -i "udp:127.0.0.1:$PORT" --packet-size 1000 -d 3 \
	--stats-json "$T_DIR/mix.json" "$PACK" mix 2>"$T_DIR/mix.err" &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
kill -STOP $pid # the datagrams queue up: the recorder takes them in batches
python3 - "$PORT" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(300):
    s.sendto(bytes([i % 251]) * 1000, ("127.0.0.1", int(sys.argv[1])))
    s.sendto(b'b' * 10, ("127.0.0.1", int(sys.argv[1])))
PY
kill -CONT $pid
wait $pid
rc=$?
check "interleaved wrong sizes with --packet-size: exit 0 (exit $rc)" test "$rc" = 0
check "only the 1000-byte datagrams are stored, in order" cmp <(recfs cat "$PACK" mix) \
	<(python3 -c 'import sys; sys.stdout.buffer.write(b"".join(bytes([i % 251]) * 1000 for i in range(300)))')
check "600 received, 300 wrong size" python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))["datagrams"]
assert d["received"]==600 and d["wrong_size"]==300, d' "$T_DIR/mix.json"

# --- 1a: a slow input below one chunk: kill -9 a few commit intervals after
# its last byte; the committed length is every byte received, byte for byte
head -c 300000 /dev/urandom >"$T_DIR/slow"
mkfifo "$T_DIR/fifo"
recfs-record --buffer 16M -q -c 0.25 "$PACK" slow <"$T_DIR/fifo" 2>/dev/null &
pid=$!
cleanup_add "kill -9 $pid"
{ head -c 100000 "$T_DIR/slow"; sleep 0.6; tail -c +100001 "$T_DIR/slow" | head -c 100000; sleep 1.2
  kill -9 $pid; sleep 0.5; tail -c +200001 "$T_DIR/slow"; } >"$T_DIR/fifo" 2>/dev/null
wait $pid 2>/dev/null
ls_out=$(recfs ls -l "$PACK")
len=$(awk '$1=="slow"{print $2}' <<<"$ls_out")
state=$(awk '$1=="slow"{print $3}' <<<"$ls_out")
check "slow input: left in state recording ($state)" test "$state" = recording
check "slow input: both pieces committed though under one chunk ($len bytes)" test "${len:-0}" = 200000
check "slow input: the committed prefix reads back byte for byte" \
	cmp <(recfs cat "$PACK" slow) <(head -c 200000 "$T_DIR/slow")
check "slow input: rm -f the crashed recording" recfs rm -f "$PACK" slow

# a slow input that grows a chunk across stalls and then ends: sealed whole
{ head -c 100000 "$T_DIR/slow"; sleep 0.6; tail -c +100001 "$T_DIR/slow"; } |
	recfs-record --buffer 16M -q -c 0.2 "$PACK" slow2 2>/dev/null
check "slow input then EOF: sealed at every byte" grep -Eq '^slow2 +300000 +sealed' <<<"$(recfs ls -l "$PACK")"
check "slow input then EOF: reads back byte for byte" cmp <(recfs cat "$PACK" slow2) "$T_DIR/slow"

# --- 3b: VDIF from a pipe whose first read is shorter than a header: the
# stored frame size is the frames', not 0
check "vdif source" recfs-record --buffer 16M -q -i gen:vdif --size $((8032 * 100)) "$PACK" vsrc
recfs cat "$PACK" vsrc >"$T_DIR/v.vdif"
{ head -c 20 "$T_DIR/v.vdif"; sleep 0.5; tail -c +21 "$T_DIR/v.vdif"; } |
	recfs-record --buffer 16M -q --format vdif "$PACK" vshort 2>/dev/null
check "vdif after a short first read: frame size 8032 stored" python3 -c '
import json,sys; j=[e for e in json.load(sys.stdin) if e["name"]=="vshort"][0]
assert j["frame_size"]==8032 and j["size"]==803200, j' <<<"$(recfs ls --json "$PACK")"

# --- 3a: one frame with a corrupt seconds field costs one invalid frame,
# not a giant gap and every later frame out of order; a real jump of more
# than a few seconds is still counted once the frames after it agree
check "vdif 100 frames/s source" recfs-record --buffer 16M -q -i gen:vdif --threads 2 --frame-rate 100 \
	--frame-size 1024 --size $((1024 * 3000)) "$PACK" v100
recfs cat "$PACK" v100 >"$T_DIR/v100.vdif"
python3 - "$T_DIR/v100.vdif" "$T_DIR/flip.vdif" "$T_DIR/jump.vdif" <<'PY'
import struct, sys
F = 1024
d = open(sys.argv[1], 'rb').read()
fr = [bytearray(d[i*F:(i+1)*F]) for i in range(len(d)//F)]
flip = [bytearray(f) for f in fr]
w0 = struct.unpack_from('<I', flip[500])[0]
struct.pack_into('<I', flip[500], 0, (w0 & ~0x3fffffff) | ((w0 & 0x3fffffff) + 5000))
open(sys.argv[2], 'wb').write(b''.join(flip))
open(sys.argv[3], 'wb').write(b''.join(fr[:1000] + fr[2000:]))
PY
check "record a stream with one corrupt seconds field" recfs-record --buffer 16M -q --format vdif \
	--stats-json "$T_DIR/flip.json" "$PACK" vflip <"$T_DIR/flip.vdif"
check "corrupt seconds: 1 invalid, nothing lost or out of order" python3 -c '
import json,sys; v=json.load(open(sys.argv[1]))["vdif"]
assert v["frames_lost"]==0 and v["out_of_order"]==0 and v["invalid"]==1 and v["gaps"]==[], v' "$T_DIR/flip.json"
check "record a stream that jumps 5 s" recfs-record --buffer 16M -q --format vdif \
	--stats-json "$T_DIR/jump.json" "$PACK" vjump <"$T_DIR/jump.vdif"
check "5 s jump: 500 frames lost per thread, at the first frame after it" python3 -c '
import json,sys; v=json.load(open(sys.argv[1]))["vdif"]
assert v["frames_lost"]==1000 and v["out_of_order"]==0 and v["invalid"]==0, v
assert sorted((g["offset"], g["frames"]) for g in v["gaps"])==[(1024000, 500), (1025024, 500)], v' "$T_DIR/jump.json"

# --- 4a: an unwritable --stats-json refuses the start (exit 1, pack
# unchanged); a writable one is complete when the last line is printed
snap=$(snapshot $MEMBERS)
run recfs-record --buffer 16M -q -i gen:counter --size 1M --stats-json "$T_DIR/no/such/dir/s.json" "$PACK" nojson
check "unwritable --stats-json: exit 1 ($RC)" test "$RC" = 1
check "unwritable --stats-json: the last line names the file" grep -q "no/such/dir/s.json: cannot write statistics" <<<"$(tail -1 <<<"$OUT")"
expect_unchanged "unwritable --stats-json: pack unchanged" "$snap" $MEMBERS
run recfs-record --buffer 16M -i gen:counter --size 1M --stats-json "$T_DIR/ok.json" "$PACK" okjson
check "--stats-json: exit 0, the last line is the verdict" grep -q "'okjson' sealed at 1048576 bytes" <<<"$(tail -1 <<<"$OUT")"
check "--stats-json: written" python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["bytes"]==1048576' "$T_DIR/ok.json"

# --- 4c: recfs-play counts --sequence's 8 bytes in the datagram size
PORT=$(free_port)
expect_err "play --sequence with a 65507-byte payload is refused before sending" 1 \
	"65507-byte payloads behind an 8-byte --sequence do not fit a datagram" \
	recfs-play --gen counter --packet-size 65507 --sequence --size 1M --udp "127.0.0.1:$PORT"
expect_err "play --sequence of a recording with 65500-byte packets is refused" 1 \
	"'okjson': 65500-byte payloads behind an 8-byte --sequence do not fit" \
	recfs-play --packet-size 65500 --sequence "$PACK" okjson --udp "127.0.0.1:$PORT"

# --- 3c: datagrams the kernel dropped (socket buffer overflow) are stored
# with the recording, not only in the summary
PORT=$(free_port)
recfs-record --buffer 16M -q -i "udp:127.0.0.1:$PORT" --rcvbuf 64K -d 3 \
	--stats-json "$T_DIR/ovfl.json" "$PACK" ovfl 2>/dev/null &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
kill -STOP $pid # the socket buffer overflows
python3 - "$PORT" 1000 <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(b'k' * 1000, ("127.0.0.1", int(sys.argv[1])))
PY
kill -CONT $pid
sleep 0.5
python3 - "$PORT" 5 <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(b'k' * 1000, ("127.0.0.1", int(sys.argv[1]))); time.sleep(0.01)
PY
wait $pid
check "kernel drops: counted, and stored as the recording's dropped" python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))["datagrams"]
e=[e for e in json.loads(sys.argv[2]) if e["name"]=="ovfl"][0]
assert d["dropped_kernel"]>0 and d["received"]+d["dropped_kernel"]==1005, d
assert e["dropped"]==d["dropped_kernel"]+d["dropped_ring_full"], (e, d)' "$T_DIR/ovfl.json" "$(recfs ls --json "$PACK")"

# --- 1b: the checksum array cannot grow (realloc to 64 KiB, past 4096
# uncommitted chunks, fails): sealed where checksums exist, every one right,
# exit 3
cat >"$T_DIR/nore.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
void *realloc(void *p, size_t n)
{
	static void *(*real)(void *, size_t);
	if (!real)
		real = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	return p && n == 65536 ? NULL : real(p, n);
}
C
check "build the realloc shim" cc -shared -fPIC -o "$T_DIR/nore.so" "$T_DIR/nore.c" -ldl
if [ -f "$T_DIR/nore.so" ]; then
	make_members 2 400M n
	check "mkfs 64K chunks" mkfs.recfs -f -q -c 64K "$PACK"
	run env ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$T_DIR/nore.so" recfs-record -q -c 30 -i gen:counter --size 300M "$PACK" nomem
	check "checksum array full: exit 3 ($RC: $(tail -1 <<<"$OUT"))" test "$RC" = 3
	run recfs-play --check counter "$PACK" nomem
	check "checksum array full: sealed at the 4096 checksummed chunks, all verify ($OUT)" \
		grep -q "'nomem': 268435456 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
fi

# --- 2b: a receive error while learning the datagram size stops the
# recorder with the error (it spun on it until --duration)
cat >"$T_DIR/norecv.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>
ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	(void)fd; (void)buf; (void)n; (void)flags;
	errno = ENOBUFS;
	return -1;
}
C
check "build the recv shim" cc -shared -fPIC -o "$T_DIR/norecv.so" "$T_DIR/norecv.c"
if [ -f "$T_DIR/norecv.so" ]; then
	PORT=$(free_port)
	t0=$(date +%s)
	run env ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$T_DIR/norecv.so" recfs-record -q -i "udp:127.0.0.1:$PORT" -d 20 "$PACK" norecv
	check "receive error while learning the size: exit 1, named ($RC: $OUT)" \
		grep -q "udp:127.0.0.1:$PORT: receive failed: No buffer space available; recording 'norecv' not created" <<<"$OUT"
	check "receive error: stopped at once, not at --duration" test $(($(date +%s) - t0)) -lt 10
fi
finish
