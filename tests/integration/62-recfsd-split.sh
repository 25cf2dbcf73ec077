#!/bin/bash
# recfsd --split vdif-thread: one VDIF stream of 4 threads (plus a thread no
# lane takes) becomes one recording per thread, each holding only its
# thread's frames in order, each with its own loss map.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "62: recfsd splits a VDIF stream by thread"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
refused_start() { recfsd -l 127.0.0.1:0 "$@" "$PACK" 2>&1 | head -n 1; }
check "--split without --format vdif is refused" grep -q 'needs --format vdif' <<<"$(refused_start --split vdif-thread:0-3 -i "udp:127.0.0.1:$port")"
check "--split with junk is refused" grep -q "split thread 'x'" <<<"$(refused_start -F vdif --split vdif-thread:0-x -i "udp:127.0.0.1:$port")"
check "recfsd --split vdif-thread:0-3 ready" start_recfsd -F vdif --split vdif-thread:0-3 -i "udp:127.0.0.1:$port" --buffer 64M "$PACK"
expect_reply "datastream? the lanes, in jive5ab's layout" "datastream?" '!datastream \? 0 : 4 : t0 : t1 : t2 : t3 ;'
expect_reply "datastream? NAME: its match" "datastream? t2" '!datastream \? 0 : t2 : \.2 ;'
expect_reply "datastream? an unknown NAME" "datastream? x" "!datastream \\? 8 : The stream 'x' is not defined ;"
expect_reply "datastream= an unknown subcommand: jive5ab's 2" "datastream = frob" '!datastream = 2 : frob does not apply to datastream ;'
expect_reply "record=on" "record=on:v" '!record = 0 ;'

# 2 seconds of 1000 frames per thread, 1032-byte frames, threads 0-3
# interleaved; thread 2 loses frames 500-504 of its first second; thread 7
# (no lane) sends 10 frames
python3 - "$port" <<'PY'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
F = 1032
def frame(th, sec, fn):
    h = struct.pack("<IIII", sec, fn, F // 8, 1 << 26 | th << 16) + bytes(16)
    return h + bytes([(th * 37 + fn) & 255]) * (F - 32)
n = 0
for sec in (100, 101):
    for fn in range(1000):
        for th in (0, 1, 2, 3):
            if th == 2 and sec == 100 and 500 <= fn < 505:
                continue
            s.sendto(frame(th, sec, fn), ("127.0.0.1", int(sys.argv[1])))
            n += 1
            if n % 200 == 0:
                time.sleep(0.002)
        if fn < 10 and sec == 100:
            s.sendto(frame(7, sec, fn), ("127.0.0.1", int(sys.argv[1])))
PY
check "recfsd took every datagram sent" wait_drained "$port"
expect_reply "record=off" "record=off" '!record = 1 ;'
got=$(for k in 0 1 2 3; do scan_checked $k; done)
check "scan_check? K names the 4 thread recordings ($got)" test "$(grep -o 'v_t[0-3]' <<<"$got" | sort -u | wc -l)" = 4
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0

recfs ls --json "$PACK" >"$T_DIR/ls.json"
for th in 0 1 2 3; do
	recfs cat "$PACK" "v_t$th" >"$T_DIR/t$th.bin"
	run python3 - "$T_DIR/t$th.bin" "$T_DIR/ls.json" "$th" <<'PY'
import json, struct, sys
d = open(sys.argv[1], "rb").read()
th = int(sys.argv[3])
F = 1032
rec = [r for r in json.load(open(sys.argv[2])) if r["name"] == "v_t%d" % th][0]
want = [(sec, fn) for sec in (100, 101) for fn in range(1000)
        if not (th == 2 and sec == 100 and 500 <= fn < 505)]
assert len(d) == len(want) * F, "length %d, want %d frames" % (len(d), len(want))
for k, (sec, fn) in enumerate(want):
    w0, w1, w2, w3 = struct.unpack_from("<IIII", d, k * F)
    assert (w3 >> 16) & 0x3ff == th, "frame %d is thread %d" % (k, (w3 >> 16) & 0x3ff)
    assert (w0 & 0x3fffffff, w1 & 0xffffff) == (sec, fn), "frame %d is %s" % (k, (w0, w1))
    assert d[k * F + 32] == (th * 37 + fn) & 255, "payload of frame %d" % k
assert rec["format"] == "vdif" and rec["frame_size"] == F, rec
lost = 5 if th == 2 else 0
assert rec["frames_lost"] == lost, "frames_lost %d" % rec["frames_lost"]
if th == 2:
    assert [(g["offset"], g["frames"], g["thread"]) for g in rec["gaps"]] == [(500 * F, 5, 2)], rec["gaps"]
else:
    assert rec["gaps"] == [], rec["gaps"]
print("%d frames of thread %d in order, %d lost" % (len(want), th, lost))
PY
	check "v_t$th: only thread $th's frames, in order, with its loss map ($OUT)" test "$RC" = 0
done
check "no recording for the thread no lane takes" test "$(grep -c '"v_t7"' "$T_DIR/ls.json")" = 0
run fsck.recfs -n "$PACK"
check "fsck clean (exit $RC)" test "$RC" = 0

# 16 lanes and the longest names: scan_check? answers every lane whole
# (its reply runs past 2 KiB; the fields of one reply once stopped at 1 KiB)
port=$(free_port)
check "recfsd --split vdif-thread:0-15 ready" start_recfsd -F vdif --split vdif-thread:0-15 -i "udp:127.0.0.1:$port" --buffer 64M "$PACK"
scan=$(printf 'S%.0s' $(seq 64)) exp=$(printf 'E%.0s' $(seq 32))
long=${exp}_STATION8_$scan
expect_reply "a 65-byte scan name is refused" "record=on:S$scan" '!record = 8 : .*at most 64, 32 and 8 printable bytes.*'
expect_reply "record=on the longest scan, experiment and station" "record=on:$scan:$exp:STATION8" '!record = 0 ;'
python3 - "$port" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
F = 1032
for fn in range(4):
    for th in range(16):
        s.sendto(struct.pack("<IIII", 200, fn, F // 8, 1 << 26 | th << 16) + bytes(F - 16), ("127.0.0.1", int(sys.argv[1])))
PY
check "recfsd took the 64 frames" wait_drained "$port"
expect_reply "record=off (16 lanes)" "record=off" '!record = 1 ;'
got=$(scan_checked)
check "scan_check? of 16 lanes: one summary within mk5cn's 1022 bytes (${#got}): 16 threads of 2 tracks, 16 recordings ($got)" \
	eval 'test ${#got} -lt 1022 && grep -Eq "^!scan_check \\? 0 : 1 : $long : VDIF : 32 : .* : 1032 : 16 : 66048 : 0 ;$" <<<"$got"'
got=$(for k in $(seq 0 15); do scan_checked $k; done)
check "scan_check? K: every lane's recording named" \
	test "$(grep -oE "${long}_t(1[0-5]|[0-9]) : VDIF" <<<"$got" | sort -u | wc -l)" = 16
# 40 per-lane replies on one line: all answered (queued whole before any
# was sent, replies once went over the 64 KiB a client may leave unread,
# and the client was dropped)
got=$(vsi "$(for i in $(seq 40); do printf 'scan_check? : : %d;' $((i % 16)); done)")
check "40 scan_check? K on a line: 40 whole replies on one line (${#got} bytes)" \
	test "$(grep -o "!scan_check ? 0 : [^!]*${long}_t[0-9]* : VDIF : [^!]* ;" <<<"$got" | wc -l)" = 40
stop_recfsd
check "recfsd exits 0 (16 lanes)" test "$RD_RC" = 0
finish
