#!/bin/bash
# recfsd's status? and error? as jive5ab's error queue, driven by the FS's
# own fb_status loop (tests/tools/mk5cn.py fb_status, ported from nvi-inc/fs
# quikv/mk5_status.c): a scan that records nothing (udps datagrams to an
# input without --strip 8) posts one error, at the scan's start time;
# status? flags it (0x2) until error? reads it, and the condition, still
# there (scan_check? still says so), is not flagged again.  fb_status ends
# in one round with the message logged once (the old recfsd looped 11
# times and logged -302 and -303 at every check).  status? while
# recording: 0x59, jive5ab's bits 3 and 4 (a delayed-completion command).
# Real UDP and TCP over loopback.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6o: the FS's fb_status against recfsd's error queue"

make_members 2 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd -F vdif ready" start_recfsd -F vdif -i "a=udp:127.0.0.1:$port" --buffer 16M "$PACK"

run python3 - "$(dirname "$0")/../tools" "$RD_CTL" "$port" <<'PY'
import calendar, re, socket, struct, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, cport = split(sys.argv[2])
dport = int(sys.argv[3])
fs = mk5cn.MK5CN(host, cport)
chk = mk5cn.Checks(fs)
ok = chk.ok
def q(text):
    return fs.send(text)[2].rstrip("\n")
def wait(text, pred, secs=20.0):
    end = time.monotonic() + secs
    while True:
        r = q(text)
        if pred(r) or time.monotonic() > end:
            return r
        time.sleep(0.05)
def vsi_unix(t):
    """2026y328d20h40m12.3456s -> Unix seconds"""
    m = re.fullmatch(r"(\d{4})y(\d{3})d(\d\d)h(\d\d)m(\d\d\.\d+)s", t)
    y, d, h, mi, s = m.groups()
    return calendar.timegm((int(y), 1, 1, 0, 0, 0)) + (int(d) - 1) * 86400 + int(h) * 3600 + int(mi) * 60 + float(s)

out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
F = 1032
def send(sec, n, udps=False):
    for fn in range(n):
        fr = struct.pack("<IIII", sec, fn, F // 8, 1 << 26) + bytes((fn + k) % 251 for k in range(F - 16))
        out.sendto(struct.pack("<Q", fn) + fr if udps else fr, ("127.0.0.1", dport))
        if fn % 50 == 49:
            time.sleep(0.002)

# idle: nothing pending, one status line, nothing logged
lines, errs = mk5cn.fb_status(fs)
ok("idle: fb_status logs the status alone", lines == ["fb_status/status,0x00000001"] and errs == [], (lines, errs))
r = q("error?\n")
ok("error? with nothing pending: jive5ab's five empty fields", r == "!error ? 0 :  :  :  :  :  ;", r)

# a good scan: status? while recording has jive5ab's 0x59
send(99, 20)
ok("record=on:g1", q("record=on:g1\n") == "!record = 0 ;")
send(100, 100)
r = q("status?\n")
ok("status? while recording: 0x59 (ready, bits 3 and 4, recording)", r == "!status ? 0 : 0x00000059 ;", r)
ok("record=off", q("record=off\n") == "!record = 1 ;")
lines, errs = mk5cn.fb_status(fs)
ok("after a good scan: fb_status clean", lines == ["fb_status/status,0x00000001"] and errs == [], (lines, errs))

# a blind scan: udps datagrams, 8 bytes too long each
t0 = time.time()
ok("record=on:b1", q("record=on:b1\n") == "!record = 0 ;")
t1 = time.time()
send(101, 50, udps=True)
r = wait("status?\n", lambda r: "50 of 50" in r)
ok("status? while b1 records nothing: 0x5b and why", re.fullmatch(
    r"!status \? 0 : 0x0000005b : 4 : scan 'b1' recorded nothing, 50 of 50 datagrams were the wrong size "
    r"\(1040 bytes, not 1032\) : \S+ ;", r) is not None, r)
ok("record=off", q("record=off\n") == "!record = 1 ;")
lines, errs = mk5cn.fb_status(fs)
ok("fb_status: status, error, status: one round", len(lines) == 3, lines)
ok("fb_status: the error bit first", lines[:1] == ["fb_status/status,0x00000003,error(s) pending"], lines)
m = re.fullmatch(r"fb_status/error,4,scan 'b1' recorded nothing, 50 of 50 datagrams were the wrong size "
                 r"\(1040 bytes, not 1032\),(\S+),,", lines[1] if len(lines) > 1 else "")
ok("fb_status: the error as error? gives it (number, message, time, no repeat)", m is not None, lines)
if m:
    t = vsi_unix(m.group(1))
    ok("the error's time is the scan's start (%.4f in [%.4f, %.4f])" % (t, t0, t1), t0 - 0.001 <= t <= t1 + 0.001)
ok("fb_status: cleared at the end", lines[2:] == ["fb_status/status,0x00000001"], lines)
ok("fb_status: -302 once, no -303", errs == [-302], errs)
ok("the message logged once", sum("recorded nothing" in l for l in lines) == 1, lines)

# the condition stays (scan_check? still says so), the flag does not
r = wait("scan_check?\n", lambda r: not r.startswith("!scan_check ? 5 "))
ok("scan_check? still reports b1 recorded nothing", r.startswith("!scan_check ? 4 : ") and "recorded nothing" in r, r)
for k in range(3):
    lines, errs = mk5cn.fb_status(fs)
    ok("checkfb %d after: fb_status clean" % (k + 1), lines == ["fb_status/status,0x00000001"] and errs == [],
       (lines, errs))
r = q("status?\n")
ok("status?: ready, no error fields", r == "!status ? 0 : 0x00000001 ;", r)
r = q("error?\n")
ok("error?: nothing pending", r == "!error ? 0 :  :  :  :  :  ;", r)

# two blind scans unread: two errors, the oldest first, one fb_status round
def drained():
    """tests/tools/udp-lib.sh wait_drained: the socket's Recv-Q empty twice running"""
    empty = 0
    for _ in range(400):
        o = subprocess.run(["ss", "-Hlun", "sport = :%d" % dport], capture_output=True, text=True).stdout
        empty = empty + 1 if sum(int(l.split()[1]) for l in o.splitlines() if l.split()) == 0 else 0
        if empty >= 2:
            break
        time.sleep(0.05)
    time.sleep(0.1)
for name, sec in (("b2", 102), ("b3", 103)):
    ok("record=on:" + name, q("record=on:%s\n" % name) == "!record = 0 ;")
    send(sec, 50, udps=True)
    drained()
    ok("record=off " + name, q("record=off\n") == "!record = 1 ;")
lines, errs = mk5cn.fb_status(fs)
ok("two errors: status, b2, status, b3, status", len(lines) == 5 and "'b2'" in lines[1] and "'b3'" in lines[3]
   and lines[4] == "fb_status/status,0x00000001", lines)
ok("two errors: -302 once", errs == [-302], errs)
fs.close()
chk.done()
PY
echo "$OUT"
check "the FS's fb_status loop against recfsd" test "$RC" = 0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0

# --- the same error twice unread counts as one, as jive5ab's queue:
# error? gives its first and last time and the count.  Two scans with
# three VDIF threads arriving and datastreams {thread} over 2 lanes: each
# record=on posts "1 recording past the 2 lanes"
port=$(free_port)
check "recfsd --lanes 2 ready" start_recfsd -F vdif --lanes 2 -i "udp:127.0.0.1:$port" --buffer 16M "$PACK"
expect_reply "datastream {thread} over threads 0-2" "datastream=add:{thread}:0-2" '!datastream = 0 ;'
python3 - "$port" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for th in (0, 1, 2):
    s.sendto(struct.pack("<IIII", 1, 0, 1032 // 8, 1 << 26 | th << 16) + bytes(1016), ("127.0.0.1", int(sys.argv[1])))
PY
check "three threads seen" wait_drained "$port"
for c in c1 c2; do
	expect_reply "$c: record=on (recorded without the third thread)" "record=on:$c" '!record = 0 ;'
	expect_reply "$c: record=off" "record=off" '!record = 1 ;'
done
expect_reply "error?: the error once, its first and last time, count 2" "error?" \
	"!error \\? 0 : 4 : datastreams, 1 recording past the 2 lanes reserved \\(--lanes\\), from 'ds2', their frames are dropped : [0-9ydhms.]+ : [0-9ydhms.]+ : 2 ;"
expect_reply "status?: nothing more pending" "status?" '!status \? 0 : 0x00000001 ;'
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0

# --- net_protocol as jive5ab takes it, and the socket buffer the kernel
# gave: recfsd without CAP_NET_ADMIN (the bounding set dropped), --rcvbuf
# 1 MiB past net.core.rmem_max, so the kernel gives rmem_max (nothing
# system-wide is changed)
rmax=$(cat /proc/sys/net/core/rmem_max)
ask=$((rmax + (1 << 20)))
recfsd() { exec setpriv --bounding-set=-net_admin "$RECFS_BIN/recfsd" "$@"; }
port=$(free_port)
check "recfsd without CAP_NET_ADMIN, --rcvbuf $ask, ready" \
	start_recfsd -i "x=udp:127.0.0.1:$port" --rcvbuf "$ask" --buffer 16M "$PACK"
unset -f recfsd
check "start: stderr says the kernel gave less than --rcvbuf, naming net.core.rmem_max" grep -q \
	"input x: the kernel gave a socket buffer of $rmax bytes, not the $ask asked (--rcvbuf): raise net.core.rmem_max" "$RD_LOG"
expect_reply "net_protocol? the buffer the kernel gave, jive5ab's four fields (plain UDP: pudp)" "net_protocol?" \
	"!net_protocol \\? 0 : pudp : $rmax : 131072 : 8 ;"
expect_reply "the FS's override, an empty PROTOCOL, within what the kernel gave: 0" "net_protocol = : $rmax" '!net_protocol = 0 ;'
expect_reply "more than the kernel gives: 8, naming the input and rmem_max" "net_protocol = : $ask" \
	"!net_protocol = 8 : the kernel gives input x a socket buffer of $rmax bytes, not $ask \\(raise net.core.rmem_max, or give recfsd CAP_NET_ADMIN\\) ;"
expect_reply "net_protocol? unchanged after the refusal" "net_protocol?" "!net_protocol \\? 0 : pudp : $rmax : 131072 : 8 ;"
expect_reply "the Mark5C line: empty PROTOCOL, k and M units" "net_protocol = : 128k : 2M : 4 ;" '!net_protocol = 0 ;'
expect_reply "net_protocol? BLOCKSIZE 2M, NBLOCK 4, the buffer kept" "net_protocol?" "!net_protocol \\? 0 : pudp : $rmax : 2097152 : 4 ;"
expect_reply "pudp: jive5ab's plain UDP, as started (--strip 0)" "net_protocol = pudp" '!net_protocol = 0 ;'
expect_reply "udp is jive5ab's udps: it needs --strip 8" "net_protocol = udp" \
	'!net_protocol = 6 : inputs are bound with --strip 0, udp needs --strip 8 \(restart recfsd with it\) ;'
expect_reply "an unknown protocol: 6, jive5ab's reason" "net_protocol = udpx" '!net_protocol = 6 : the protocol udpx is not recognized as a valid protocol ;'
expect_reply "a negative size: 8" "net_protocol = : -5" "!net_protocol = 8 : socket buffer '-5' out of range \\(0 to 2147483647\\) ;"
expect_reply "junk after the number: 6" "net_protocol = : 12x" "!net_protocol = 6 : invalid socket buffer '12x' \\(a number, optionally k or M\\) ;"
expect_reply "a unit past the end: 6" "net_protocol = : 12kk" "!net_protocol = 6 : invalid socket buffer '12kk' \\(a number, optionally k or M\\) ;"
expect_reply "overflow: 8" "net_protocol = : 99999999999999999999999" "!net_protocol = 8 : socket buffer '9+' out of range .*"
expect_reply "M overflowing the block size: 8" "net_protocol = : : 1025M" "!net_protocol = 8 : block size '1025M' out of range \\(0 to 1073741824\\) ;"
expect_reply "NBLOCK 0: 8" "net_protocol = : : : 0" "!net_protocol = 8 : number of blocks '0' out of range \\(1 to 4294967295\\) ;"
expect_reply "NBLOCK takes no unit: 6" "net_protocol = : : : 4k" "!net_protocol = 6 : invalid number of blocks '4k' \\(a number, optionally k or M\\) ;"
expect_reply "a bad field after a good one changes nothing" "net_protocol = : : 64k : x" "!net_protocol = 6 : invalid number of blocks 'x'.*"
expect_reply "five fields: 8" "net_protocol = pudp : 1 : 2 : 3 : 4" '!net_protocol = 8 : .*5 fields ;'
expect_reply "no field: 8" "net_protocol =" '!net_protocol = 8 : net_protocol = PROTOCOL .*'
expect_reply "net_protocol? unchanged by every refusal" "net_protocol?" "!net_protocol \\? 0 : pudp : $rmax : 2097152 : 4 ;"
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0

# --- a Mark5B station: the FS's fb_mode for a mark5b source
# (clib/mk5b_mode_util.c, quikv/mk5b_mode.c): mode, mtu, net_protocol,
# nthread, recorded as bytes (--format raw, as jive5ab records Mark5B on a
# FlexBuff); each 10016-byte frame in two 5008-byte datagrams with the
# udpsnor sequence number
port=$(free_port)
check "recfsd raw, --strip 8, ready" start_recfsd -S 8 -i "udp:127.0.0.1:$port" --buffer 16M "$PACK"
run python3 - "$(dirname "$0")/../tools" "$RD_CTL" "$port" "$T_DIR/m5b.want" <<'PY'
import socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, cport = split(sys.argv[2])
fs = mk5cn.MK5CN(host, cport)
chk = mk5cn.Checks(fs)
ok = chk.ok
def txn(text, want_rc, desc):
    return chk.txn(text, want_rc, desc).rstrip("\n")
txn("mode = mark5b-2048-16-2 ; \n", 0, "fb_mode: mode = mark5b-2048-16-2")
r = txn("mode?\n", 0, "mode?")
m = mk5cn.parse_mode(r)
ok("mode? as the FS parses it: the mode, Mark5B, 32 tracks, 64 Mbit/s a track in bit/s, no frame size",
   m == dict(magic="mark5b-2048-16-2", format="Mark5B", tracks=32, tbitrate=64e6), (m, r))
ok("mode? jive5ab's magic-mode layout", r == "!mode ? 0 : mark5b-2048-16-2 : Mark5B : 32 : 64000000.000 ;", r)
txn("mtu = 6000 ; \n", 0, "fb_mode: mtu")
txn("net_protocol = udpsnor : 64000000 : 256000000 : 4 ;\n", 0, "fb_mode: net_protocol")
txn("record = nthread : : 2 ;\n", 0, "fb_mode: nthread")
r = txn("rtime?\n", 0, "rtime?")
ok("rtime? names Mark5B and the rate on the wire (2048 x 10016/10000)", " : Mark5B : 32 : 0MHz : 2051.277Mbps ;" in r, r)
txn("mode = mark5b-2048-x-2 ;\n", 8, "a malformed Mark5B mode")
txn("mode = mark5b-2048-64-2 ;\n", 8, "128 tracks: more than Mark5B's 64")
txn("mode = VDIF_8000-2048-16-2 ;\n", 6, "a VDIF mode on a raw recfsd")
r = txn("mode?\n", 0, "mode? after the refusals")
ok("mode? unchanged by the refusals", r == "!mode ? 0 : mark5b-2048-16-2 : Mark5B : 32 : 64000000.000 ;", r)
txn("record = on : m5b_scan ;\n", 0, "record=on")
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
want, seq = b"", 0
for fn in range(40):
    fr = struct.pack("<IIII", 0xABADDEED, fn, 0x12345, 0) + bytes((fn * 3 + k) % 251 for k in range(10000))
    want += fr
    for half in (fr[:5008], fr[5008:]):
        out.sendto(struct.pack("<Q", seq) + half, ("127.0.0.1", int(sys.argv[3])))
        seq += 1
    if fn % 10 == 9:
        time.sleep(0.002)
open(sys.argv[4], "wb").write(want)
for _ in range(400):
    r = fs.send("record?\n")[2]
    if r.rstrip(" ;\n").endswith(" %d" % len(want)):
        break
    time.sleep(0.05)
ok("record? counts every byte", r.rstrip(" ;\n").endswith(" %d" % len(want)), r)
txn("record = off : m5b_scan ;\n", 1, "record=off")
fs.close()
chk.done()
PY
echo "$OUT"
check "the FS's fb_mode for a Mark5B source, and a scan" test "$RC" = 0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
recfs cat "$PACK" m5b_scan >"$T_DIR/m5b.got" 2>"$T_DIR/cat.err"
check "m5b_scan holds the Mark5B frames exactly ($(stat -c %s "$T_DIR/m5b.got") bytes)" cmp "$T_DIR/m5b.got" "$T_DIR/m5b.want"

# a VDIF recfsd refuses a Mark5B mode, saying why
port=$(free_port)
check "recfsd -F vdif ready" start_recfsd -F vdif -i "udp:127.0.0.1:$port" --buffer 16M "$PACK"
expect_reply "mode=mark5b-... on a VDIF recfsd: 6, what to restart with" "mode = mark5b-2048-16-2" \
	'!mode = 6 : recfsd was started with --format vdif, a Mark5B stream needs --format raw \(restart recfsd with it\) ;'
expect_reply "mode? unchanged" "mode?" '!mode \? 0 : vdif ;'
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
finish
