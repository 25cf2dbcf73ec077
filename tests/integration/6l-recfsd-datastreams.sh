#!/bin/bash
# recfsd's datastreams at run time (jive5ab's datastream=, as the FS's
# thread procedures and station scripts send it): lanes reserved at start
# (--lanes 4, --split's two threads the default set), changed between
# scans: clear, add:ds{thread}:* (drudg's proc_thread), two threads merged
# into one recording, {thread} over a range, station matching with
# {station}, no datastreams (one recording), more recordings than lanes,
# stray datagrams of 8 stations.
# Every reply asserted; every recording compared frame by frame with what
# was sent (its threads, in order, nothing lost or extra); refused
# commands leave the members unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6l: recfsd's datastreams at run time"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
refused_start() { recfsd -l 127.0.0.1:0 "$@" "$PACK" 2>&1 | head -n 1; }
check "--lanes without --format vdif is refused" grep -q 'needs --format vdif' <<<"$(refused_start --lanes 4 -i "udp:127.0.0.1:$port")"
check "--lanes fewer than --split's threads is refused" grep -q "fewer than --split's 4" \
	<<<"$(refused_start -F vdif --split vdif-thread:0-3 --lanes 2 -i "udp:127.0.0.1:$port")"
check "--lanes 17 is refused" grep -q 'lanes' <<<"$(refused_start -F vdif --lanes 17 -i "udp:127.0.0.1:$port")"
check "recfsd --split vdif-thread:0,1 --lanes 4 ready" \
	start_recfsd -F vdif --split vdif-thread:0,1 --lanes 4 -i "udp:127.0.0.1:$port" --buffer 64M "$PACK"

# send.py PORT SEC N KEY...: N frames of each key (STATION:THREAD), frame
# numbers 0..N-1 of second SEC, keys interleaved in the order given
cat >"$T_DIR/send.py" <<'PY'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
F = 1032
port, sec, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
keys = [(k.split(":")[0], int(k.split(":")[1])) for k in sys.argv[4:]]
k = 0
for fn in range(n):
    for st, th in keys:
        sid = ord(st[0]) << 8 | ord(st[1])
        h = struct.pack("<IIII", sec, fn, F // 8, 1 << 26 | th << 16 | sid) + bytes(16)
        s.sendto(h + bytes([(th * 37 + fn + sid) & 255]) * (F - 32), ("127.0.0.1", port))
        k += 1
        if k % 100 == 0:
            time.sleep(0.002)
PY
# check.py FILE LSJSON NAME SEC N SENT TAKEN: recording NAME holds, in the
# order sent, exactly the frames of the keys TAKEN (of SENT, both
# comma-separated STATION:THREAD lists)
cat >"$T_DIR/check.py" <<'PY'
import json, struct, sys
d = open(sys.argv[1], "rb").read()
name, sec, n = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sent = sys.argv[6].split(",")
taken = set(sys.argv[7].split(","))
F = 1032
want = [(k, fn) for fn in range(n) for k in sent if k in taken]
rec = [r for r in json.load(open(sys.argv[2])) if r["name"] == name][0]
assert len(d) == len(want) * F, "%s: %d bytes, want %d frames" % (name, len(d), len(want))
for i, (k, fn) in enumerate(want):
    w0, w1, w2, w3 = struct.unpack_from("<IIII", d, i * F)
    st, th = k.split(":")
    sid = ord(st[0]) << 8 | ord(st[1])
    got = ((w3 >> 16) & 0x3ff, w3 & 0xffff, w0 & 0x3fffffff, w1 & 0xffffff)
    assert got == (int(th), sid, sec, fn), "%s frame %d: %s, want %s" % (name, i, got, (k, fn))
    assert d[i * F + 32] == (int(th) * 37 + fn + sid) & 255, "%s: payload of frame %d" % (name, i)
if len(set(k.split(":")[0] for k in taken)) == 1:
    assert rec["frames_lost"] == 0, "%s: frames_lost %d" % (name, rec["frames_lost"])
print("%s: %d frames of %s in order" % (name, len(want), sys.argv[7]))
PY
send() { python3 "$T_DIR/send.py" "$port" "$@"; }

# one scan: the keys seen first (idle), record=on:SCAN, N frames of each key
# of second SEC, record=off; SCAN's recordings are then checked
scan() {
	local scan=$1 sec=$2 n=$3; shift 3
	send 1 2 "$@"
	check "$scan: the keys arrive between scans" wait_drained "$port"
	expect_reply "$scan: record=on" "record=on:$scan" '!record = 0 ;'
	send "$sec" "$n" "$@"
	check "$scan: recfsd took every datagram sent" wait_drained "$port"
	expect_reply "$scan: record=off" "record=off" '!record = 1 ;'
	SENT=$(tr ' ' , <<<"$*")
	got=$(scan_checked)
	check "$scan: sealed ($got)" grep -q '^!scan_check ? 0 ' <<<"$got"
}
recs=()
# expect_rec NAME SEC N TAKEN: after the daemon stops, NAME is checked
expect_rec() { recs+=("$1 $2 $3 $SENT $4"); }

X4="Xx:0 Xx:1 Xx:2 Xx:3"
# A: the default set, --split's t0 and t1; threads 2 and 3 have no lane
expect_reply "datastream?: --split's threads" "datastream?" '!datastream \? 0 : 2 : t0 : t1 ;'
expect_reply "datastream? t1" "datastream? t1" '!datastream \? 0 : t1 : \.1 ;'
scan A 100 200 $X4
expect_rec A_t0 100 200 Xx:0
expect_rec A_t1 100 200 Xx:1

# refused: each answered with its code and reason, nothing changed
snap=$(snapshot $MEMBERS)
expect_reply "add: a range backwards (jive5ab's 4)" "datastream = add : x : 5-2" "!datastream = 4 : The vdif criterion '5-2' does not match .* ;"
expect_reply "add: a thread past 1023" "datastream = add : x : 1024" "!datastream = 4 : The vdif criterion '1024' does not match .* ;"
expect_reply "add: junk in the station" "datastream = add : x : X1.0" "!datastream = 4 : The vdif criterion 'X1.0' does not match .* ;"
expect_reply "add: a name with '/'" "datastream = add : a/b : 0" "!datastream = 8 : 'a/b' is not a datastream name.* ;"
expect_reply "add: a brace outside {thread}" "datastream = add : {th} : 0" "!datastream = 8 : '\\{th\\}' is not a datastream name.* ;"
expect_reply "add: matching on the sender is not implemented" "datastream = add : x : 10.0.0.1/0" "!datastream = 2 : '10.0.0.1/0', matching on the sender.* ;"
expect_reply "add: no match specification (jive5ab's 8)" "datastream = add : x" '!datastream = 8 : Missing data stream match specification\(s\) ;'
expect_reply "add: no name" "datastream = add" '!datastream = 8 : Missing data stream name ;'
expect_reply "add: a name already defined" "datastream = add : t0 : 3" "!datastream = 4 : The data stream 't0' already has a definition ;"
expect_reply "add: a fifth recording for 4 lanes (t0, t1, zz, then threads 2 and 3 seen)" "datastream = add : {thread} : 2-3 ; datastream = add : zz : 5" \
	"!datastream = 0 ; !datastream = 4 : datastreams, 1 recording past the 4 lanes reserved \\(--lanes\\), from 'ds3' ;"
expect_reply "remove: an unknown name" "datastream = remove : nope" "!datastream = 4 : The data stream 'nope' was not defined so cannot remove it ;"
expect_reply "remove {thread}" "datastream = remove : {thread}" '!datastream = 0 ;'
expect_reply "an unknown subcommand" "datastream = frob" '!datastream = 2 : frob does not apply to datastream ;'
expect_reply "no subcommand" "datastream =" '!datastream = 8 : subcommand .* ;'
expect_reply "the set is unchanged" "datastream?" '!datastream \? 0 : 2 : t0 : t1 ;'
expect_unchanged "refused datastream= commands" "$snap" $MEMBERS

# B: drudg's thread procedure: clear, add:ds{thread}:*, reset
expect_reply "B: the FS's thread procedure" "datastream=clear;datastream=add:ds{thread}:*;datastream=reset" \
	'!datastream = 0 ; !datastream = 0 ; !datastream = 0 ;'
expect_reply "B: datastream?" "datastream?" '!datastream \? 0 : 1 : ds\{thread\} ;'
expect_reply "B: datastream? NAME: its match as given" "datastream? ds{thread}" '!datastream \? 0 : ds\{thread\} : \* ;'
# not while recording: 6, and the scan's recordings are as before
send 1 2 $X4
check "B: the keys arrive between scans" wait_drained "$port"
expect_reply "B: record=on" "record=on:B" '!record = 0 ;'
expect_reply "B: datastream=clear while recording: jive5ab's 6" "datastream=clear" "!datastream = 6 : not whilst recording scan 'B' ;"
expect_reply "B: datastream? while recording" "datastream?" '!datastream \? 0 : 1 : ds\{thread\} ;'
send 200 150 $X4
check "B: recfsd took every datagram sent" wait_drained "$port"
expect_reply "B: record=off" "record=off" '!record = 1 ;'
SENT=$(tr ' ' , <<<"$X4")
got=$(scan_checked)
check "B: one scan_check? summary of 4 recordings ($got)" grep -Eq '^!scan_check \? 0 : .* : 4 : [0-9]+ : 0 ;$' <<<"$got"
for t in 0 1 2 3; do expect_rec B_dsds$t 200 150 Xx:$t; done

# C: two threads merged into one recording, {thread} over the rest
expect_reply "C: pair takes 0 and 1, {thread} 2 and 3" "datastream=clear;datastream=add:pair:0,1;datastream=add:{thread}:2-3" \
	'!datastream = 0 ; !datastream = 0 ; !datastream = 0 ;'
expect_reply "C: datastream? in jive5ab's order (by name)" "datastream?" '!datastream \? 0 : 2 : pair : \{thread\} ;'
scan C 300 150 $X4
expect_rec C_dspair 300 150 Xx:0,Xx:1
expect_rec C_ds2 300 150 Xx:2
expect_rec C_ds3 300 150 Xx:3

# D: stations: Xx's threads by {station}, thread 1 of any other station,
# Yy's thread 0 taken by none
expect_reply "D: by station" "datastream=clear;datastream=add:L_{station}:Xx.*;datastream=add:other:*.1:0x5a5a.7" \
	'!datastream = 0 ; !datastream = 0 ; !datastream = 0 ;'
expect_reply "D: datastream? other" "datastream? other" '!datastream \? 0 : other : \*\.1 : 0x5a5a\.7 ;'
scan D 400 120 Xx:0 Yy:0 Xx:1 Yy:1 ZZ:7
expect_rec D_dsL_Xx 400 120 Xx:0,Xx:1
expect_rec D_dsother 400 120 Yy:1,ZZ:7

# E: no datastreams: every frame in one recording, as without lanes
expect_reply "E: clear" "datastream=clear" '!datastream = 0 ;'
expect_reply "E: datastream? none" "datastream?" '!datastream \? 0 : 0 ;'
scan E 500 100 Xx:0 Yy:1 Xx:2
expect_rec E 500 100 Xx:0,Yy:1,Xx:2

# F: {thread} fits the 4 lanes when added; a fifth thread seen before
# record=on finds no lane: recorded without it, and error? says so
expect_reply "F: {thread} over threads 0-3" "datastream=add:{thread}:0-4" '!datastream = 0 ;'
scan F 600 100 Xx:0 Xx:1 Xx:2 Xx:3 Xx:4
for t in 0 1 2 3; do expect_rec F_ds$t 600 100 Xx:$t; done
expect_reply "F: error? names the recording without a lane" "error?" \
	"!error \\? 0 : 4 : datastreams, 1 recording past the 4 lanes reserved \\(--lanes\\), from 'ds4', their frames are dropped : .* ;"

# G: only a {thread} NAME, and none of its threads arrives: the scan
# records nothing, and error? says so (the FS's ds{thread} set up before
# the backend sends)
expect_reply "G: {thread} of a thread never sent" "datastream=clear;datastream=add:{thread}:9" '!datastream = 0 ; !datastream = 0 ;'
scan G 700 50 Xx:0 Xx:1
expect_reply "G: error? says the scan records nothing" "error?" \
	"!error \\? 0 : 4 : datastreams take no frame input 0 received in the last 10 s, scan 'G' records nothing on it : .* ;"

# H: stray datagrams that merely decode as VDIF headers (40 bytes, their
# headers say 1032) from 8 stations are not kept as stations seen (8 are
# kept): a {station} NAME still finds a new station's frames
python3 - "$port" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for k in range(8):
    sid = ord("J") << 8 | ord(str(k))
    s.sendto(struct.pack("<IIII", 900, 0, 1032 // 8, 1 << 26 | sid) + bytes(24), ("127.0.0.1", int(sys.argv[1])))
PY
check "H: the strays arrive" wait_drained "$port"
expect_reply "H: by a station not seen before" "datastream=clear;datastream=add:S_{station}:Qq.*" '!datastream = 0 ; !datastream = 0 ;'
scan H 800 50 Qq:0
expect_rec H_dsS_Qq 800 50 Qq:0
# scan_info? of an older scan names its own recordings, not those the
# datastreams set now would give it
expect_reply "scan_info? D after the datastreams changed: its 2 recordings" "scan_info? D" \
	'!scan_info \? 0 : 0 : 1 : [0-9]+ : D : complete : [^:]+ : [^:]+ : 2 : [01] ;'
# 32 datastreams of 32-byte names: datastream? fits the FS's 1022 bytes,
# the names past it counted
run python3 - "$(dirname "$0")/../tools" "$RD_CTL" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from vsi import VSI, split
v = VSI(*split(sys.argv[2]))
assert v.cmd("datastream=clear") == "!datastream = 0 ;"
for k in range(32):
    r = v.cmd("datastream=add:%s:%d" % (("n%02d{thread}" % k).ljust(32, "x"), 100 + k))
    assert r == "!datastream = 0 ;", r
r = v.cmd("datastream?")
assert len(r) + 1 <= 1022 and r.startswith("!datastream ? 0 : 32 : n00") and r.endswith(" more ;"), (len(r), r)
print(len(r), "bytes:", r[-40:])
PY
check "datastream? of 32 long names fits 1022 bytes ($OUT)" test "$RC" = 0
expect_reply "clear" "datastream=clear" '!datastream = 0 ;'

stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
recfs ls --json "$PACK" >"$T_DIR/ls.json"
names=$(python3 -c 'import json,sys; print(" ".join(sorted(r["name"] for r in json.load(open(sys.argv[1])))))' "$T_DIR/ls.json")
want=$(for r in "${recs[@]}"; do echo "${r%% *}"; done | sort | tr '\n' ' ')
check "exactly the recordings expected (${names})" test "$names " = "$want"
for r in "${recs[@]}"; do
	set -- $r
	recfs cat "$PACK" "$1" >"$T_DIR/rec.bin"
	run python3 "$T_DIR/check.py" "$T_DIR/rec.bin" "$T_DIR/ls.json" "$@"
	check "$1: only its threads' frames, in order ($OUT)" test "$RC" = 0
done
run fsck.recfs -n "$PACK"
check "fsck clean (exit $RC)" test "$RC" = 0

# no lanes reserved: datastream=add is refused with the reason, clear and
# reset answer 0 (the FS's thread procedure without vdif threads)
port=$(free_port)
check "recfsd without --lanes ready" start_recfsd -F vdif -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
expect_reply "no lanes: clear and reset answer 0" "datastream=clear;datastream=reset" '!datastream = 0 ; !datastream = 0 ;'
expect_reply "no lanes: add is refused" "datastream=add:ds{thread}:*" '!datastream = 4 : recfsd was started without lanes for datastreams \(--format vdif --lanes N\) ;'
stop_recfsd
check "recfsd exits 0 (no lanes)" test "$RD_RC" = 0
finish
