#!/bin/bash
# recfsd: a stray datagram never decides what the stream is (issue 15,
# item 12).  A 6-byte probe before a VDIF stream, between scans or inside
# a scan before the stream starts, and the same before a raw stream: every
# scan records the real stream exactly.  A stream that really is the wrong
# size (udps sequence numbers without --strip 8) is an error on status?,
# scan_check? and /metrics, not an idle "no data".  Real UDP over loopback.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "69: recfsd: stray datagrams, and scans that record nothing"

make_members 2 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"

# send.py PORT KIND ARGS... OUT: sends datagrams, writes what a recording of
# them holds to OUT.  stray: 6 bytes.  vdif SEC N [udps]: N frames of 1032
# bytes, thread 0, second SEC (udps: each after an 8-byte sequence number).
# raw SEED N: N datagrams of 8192 bytes.
cat >"$T_DIR/send.py" <<'PY'
import socket, struct, sys, time
port, kind, out = int(sys.argv[1]), sys.argv[2], sys.argv[-1]
args = sys.argv[3:-1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dgs, rec = [], b""
if kind == "stray":
    dgs = [b"probe!"]
elif kind == "vdif":
    sec, n = int(args[0]), int(args[1])
    F = 1032
    for fn in range(n):
        body = bytes((fn * 7 + k) % 251 for k in range(16)) * (F // 16)
        th = int(args[3]) if len(args) > 3 else 0
        fr = struct.pack("<IIII", sec, fn, F // 8, 1 << 26 | th << 16) + body[:F - 16]
        dgs.append(struct.pack("<Q", fn) + fr if args[2:3] == ["udps"] else fr)
        rec += fr
elif kind == "startup":  # a VDIF frame of its own length, 64 bytes, thread 0
    dgs = [struct.pack("<IIII", 1, 0, 64 // 8, 1 << 26) + bytes(48)]
elif kind == "raw":
    seed, n = int(args[0]), int(args[1])
    for i in range(n):
        d = struct.pack("<QQ", seed, i) + bytes((seed + i + k) % 253 for k in range(256)) * 32
        dgs.append(d[:8192])
        rec += d[:8192]
for i, d in enumerate(dgs):
    s.sendto(d, ("127.0.0.1", port))
    if i % 50 == 49:
        time.sleep(0.002)
open(out, "wb").write(rec)
PY
send() { python3 "$T_DIR/send.py" "$@"; }

# --- VDIF: input a learns between scans, input b inside its first scan
pa=$(free_port) pb=$(free_port)
check "recfsd -F vdif ready" start_recfsd -F vdif -i "a=udp:127.0.0.1:$pa" -i "b=udp:127.0.0.1:$pb" \
	-m 127.0.0.1:0 --buffer 16M "$PACK"
send "$pa" stray "$T_DIR/x"          # before anything else on a
send "$pa" vdif 99 20 "$T_DIR/x"     # then the stream, idle
check "a: the idle datagrams are taken" wait_drained "$pa"
expect_reply "record=on:v1" "record=on:v1" '!record = 0 ;'
send "$pb" stray "$T_DIR/x"          # b: the probe inside the scan, first of all
send "$pa" vdif 100 300 "$T_DIR/v1_a.want"
send "$pb" vdif 200 300 "$T_DIR/v1_b.want"
check "v1: the scan's datagrams are taken" wait_drained "$pa" "$pb"
expect_reply "status? while v1 records: no error" "status?" '!status \? 0 : 0x00000059 ;'
expect_reply "record=off" "record=off" '!record = 1 ;'
got="$(scan_checked 0) $(scan_checked 1)"
check "v1: scan_check? gives both recordings, vdif 1032, 309600 bytes ($got)" \
	grep -Eqx '!scan_check \? 0 : 1 : v1_a : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 309600 : 0 ; !scan_check \? 0 : 1 : v1_b : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 309600 : 0 ;' <<<"$got"
expect_reply "status? after v1: idle, no error" "status?" '!status \? 0 : 0x00000001 ;'
for n in v1_a v1_b; do
	recfs cat "$PACK" "$n" >"$T_DIR/$n.got" 2>"$T_DIR/cat.err"
	check "$n holds the real stream exactly ($(stat -c %s "$T_DIR/$n.got") bytes)" cmp "$T_DIR/$n.got" "$T_DIR/$n.want"
done

# a stream that really is the wrong size: udps (8-byte sequence numbers)
# sent to an input started without --strip 8
expect_reply "record=on:v2" "record=on:v2" '!record = 0 ;'
send "$pa" vdif 101 50 udps "$T_DIR/x"
send "$pb" vdif 201 50 "$T_DIR/v2_b.want"
check "v2: the scan's datagrams are taken" wait_drained "$pa" "$pb"
expect_reply "status? while v2 records nothing on a: the error bit, and why" "status?" \
	"!status \? 0 : 0x0000005b : 4 : scan 'v2_a' recorded nothing, 50 of 50 datagrams were the wrong size \(1040 bytes, not 1032\) : [^:]+ ;"
check "metrics scraped while v2 records" scrape
check "recfsd_scan_blind is 1 on a" test "$(metric 'recfsd_scan_blind{input="a",stream="a"}')" = 1
check "recfsd_scan_blind is 0 on b" test "$(metric 'recfsd_scan_blind{input="b",stream="b"}')" = 0
expect_reply "record=off" "record=off" '!record = 1 ;'
got="$(scan_checked) $(scan_checked 1)"
check "v2: scan_check? says a recorded nothing, rc 4; b is whole ($got)" \
	grep -Eqx "!scan_check \? 4 : 2 : v2_a : error : scan 'v2_a' recorded nothing, 50 of 50 datagrams were the wrong size \(1040 bytes, not 1032\) ; !scan_check \? 0 : 2 : v2_b : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 51600 : 0 ;" <<<"$got"
expect_reply "status? after v2: idle with the error bit, and why" "status?" \
	"!status \? 0 : 0x00000003 : 4 : scan 'v2_a' recorded nothing, 50 of 50 datagrams were the wrong size \(1040 bytes, not 1032\) : [^:]+ ;"
expect_reply "error? reads it, at the scan's start" "error?" \
	"!error \? 0 : 4 : scan 'v2_a' recorded nothing, 50 of 50 datagrams were the wrong size \(1040 bytes, not 1032\) : [^:]+ :  :  ;"
expect_reply "status? after error?: the condition is not flagged again" "status?" '!status \? 0 : 0x00000001 ;'
check "metrics scraped after v2" scrape
check "recfsd_blind_scans_total is 1 on a" test "$(metric 'recfsd_blind_scans_total{input="a",stream="a"}')" = 1
check "recfsd_blind_scans_total is 0 on b" test "$(metric 'recfsd_blind_scans_total{input="b",stream="b"}')" = 0
check "50 wrong-size datagrams counted on a" test "$(metric 'recfsd_wrong_size_datagrams_total{input="a",stream="a"}')" = 50
# the right stream again: the next scan records it, the error is gone
expect_reply "record=on:v3" "record=on:v3" '!record = 0 ;'
send "$pa" vdif 102 40 "$T_DIR/v3_a.want"
check "v3: the scan's datagrams are taken" wait_drained "$pa"
expect_reply "record=off" "record=off" '!record = 1 ;'
got=$(scan_checked)
check "v3: a records again, b received nothing ($got)" grep -Eq '^!scan_check \? 0 : 3 : v3 : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 41280 : 0 ;$' <<<"$got"
expect_reply "status? after v3: idle, no error" "status?" '!status \? 0 : 0x00000001 ;'
recfs cat "$PACK" v3_a >"$T_DIR/v3_a.got" 2>"$T_DIR/cat.err"
check "v3_a holds the stream exactly" cmp "$T_DIR/v3_a.got" "$T_DIR/v3_a.want"
stop_recfsd
check "recfsd -F vdif exits 0" test "$RD_RC" = 0

# --- raw: input x learns between scans and has a probe inside the scan,
# input y gets its probe first of all, inside the scan
px=$(free_port) py=$(free_port)
check "recfsd raw ready" start_recfsd -i "x=udp:127.0.0.1:$px" -i "y=udp:127.0.0.1:$py" --buffer 16M "$PACK"
send "$px" stray "$T_DIR/x"
send "$px" raw 1 12 "$T_DIR/x"
check "x: the idle datagrams are taken" wait_drained "$px"
expect_reply "record=on:r1" "record=on:r1" '!record = 0 ;'
send "$py" stray "$T_DIR/x"
send "$px" stray "$T_DIR/x"
send "$px" raw 2 200 "$T_DIR/r1_x.want"
send "$py" raw 3 200 "$T_DIR/r1_y.want"
check "r1: the scan's datagrams are taken" wait_drained "$px" "$py"
expect_reply "record=off" "record=off" '!record = 1 ;'
got="$(scan_checked 0) $(scan_checked 1)"
check "r1: scan_check? gives both recordings, raw 8192, 1638400 bytes ($got)" \
	grep -Eqx '!scan_check \? 0 : 1 : r1_x : raw : 0 : [^:]+ : [^:]+ : [^:]+ : 0 : 8192 : 1 : 1638400 : 0 ; !scan_check \? 0 : 1 : r1_y : raw : 0 : [^:]+ : [^:]+ : [^:]+ : 0 : 8192 : 1 : 1638400 : 0 ;' <<<"$got"
expect_reply "status? after r1: idle, no error" "status?" '!status \? 0 : 0x00000001 ;'
for n in r1_x r1_y; do
	recfs cat "$PACK" "$n" >"$T_DIR/$n.got" 2>"$T_DIR/cat.err"
	check "$n holds the real stream exactly ($(stat -c %s "$T_DIR/$n.got") bytes)" cmp "$T_DIR/$n.got" "$T_DIR/$n.want"
done
stop_recfsd
check "recfsd raw exits 0" test "$RD_RC" = 0
recfs ls --json "$PACK" >"$T_DIR/ls.json"
check "r1_x and r1_y: 1 wrong-size datagram each (the probe), 200 recorded" python3 -c '
import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))}
for n in ("r1_x", "r1_y"):
    assert r[n]["packets"] == 201 and r[n]["wrong_size"] == 1, r[n]' "$T_DIR/ls.json"

# --- --split: a sender's start-up frame (a VDIF frame of its own length,
# 64 bytes) first in a scan does not decide thread 0's frame size
ps=$(free_port)
check "recfsd --split ready" start_recfsd -F vdif --split vdif-thread:0-1 -i "udp:127.0.0.1:$ps" --buffer 16M "$PACK"
expect_reply "record=on:sp" "record=on:sp" '!record = 0 ;'
send "$ps" startup "$T_DIR/x"
send "$ps" vdif 400 100 - 0 "$T_DIR/sp_t0.want"
send "$ps" vdif 400 100 - 1 "$T_DIR/sp_t1.want"
check "sp: the scan's datagrams are taken" wait_drained "$ps"
expect_reply "record=off" "record=off" '!record = 1 ;'
got="$(scan_checked 0) $(scan_checked 1)"
check "sp: both threads vdif 1032, 103200 bytes ($got)" \
	grep -Eqx '!scan_check \? 0 : 1 : sp_t0 : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 103200 : 0 ; !scan_check \? 0 : 1 : sp_t1 : VDIF : [^:]+ : [^:]+ : [^:]+ : [^:]+ : 0 : 1032 : 1 : 103200 : 0 ;' <<<"$got"
for n in sp_t0 sp_t1; do
	recfs cat "$PACK" "$n" >"$T_DIR/$n.got" 2>"$T_DIR/cat.err"
	check "$n holds its thread's stream exactly" cmp "$T_DIR/$n.got" "$T_DIR/$n.want"
done
stop_recfsd
check "recfsd --split exits 0" test "$RD_RC" = 0

# --- recfs-record -F vdif keeps its one shot, but a probe does not teach it
pr=$(free_port)
recfs-record -q -b 16M -F vdif -i "udp:127.0.0.1:$pr" -s 103200 -d 20 --stats-json "$T_DIR/rec.json" \
	"$PACK" rec 2>"$T_DIR/rec.err" &
rpid=$!
cleanup_add "kill $rpid"
check "recfs-record bound" wait_bound "$pr"
send "$pr" stray "$T_DIR/x"
send "$pr" vdif 300 100 "$T_DIR/rec.want"
wait "$rpid"
check "recfs-record -F vdif after a probe: exit 0 ($(cat "$T_DIR/rec.err"))" test $? = 0
recfs cat "$PACK" rec >"$T_DIR/rec.got" 2>"$T_DIR/cat.err"
check "recfs-record: the recording is the VDIF stream exactly" cmp "$T_DIR/rec.got" "$T_DIR/rec.want"
check "recfs-record: the probe counted as the wrong size, frame size 1032" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["datagrams"]["received"] == 101 and d["datagrams"]["wrong_size"] == 1, d["datagrams"]
assert d["vdif"]["frame_size"] == 1032, d["vdif"]' "$T_DIR/rec.json"
run fsck.recfs -n "$PACK"
check "fsck clean (exit $RC)" test "$RC" = 0
finish
