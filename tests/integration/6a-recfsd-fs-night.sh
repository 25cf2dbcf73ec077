#!/bin/bash
# recfsd driven through a night as the NASA Field System drives a FlexBuff:
# tests/tools/mk5cn.py talks as mk5cn/mk5cn.c does (one connection, the
# FS's own strings, replies read into 1024 bytes, its rc rule) and parses
# replies with the FS's parsers.  Initialisation, setup (mode, mtu,
# net_protocol as the FS asks above 4 Gbit/s, nthread, drudg's thread
# procedure's datastream lines), 20 scans with
# record=on:LABEL / record=off:LABEL and checkfb (scan_check?, status?)
# after each, evlbi?/tstat/rtime?/set_disks?, the FS's data pull
# (scan_set with empty offsets, disk2file, a member refused as its
# destination; the FS's own disk2file= lines and drudg's, checked byte
# for byte), a restarted schedule repeating a label, drudg's Mark6 line,
# the control port against idle and dripping connections, SIGHUP mid-scan;
# every reply asserted, every recording compared frame by frame with what
# was sent.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "69: a night of the Field System on recfsd"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd ready (vdif, udps)" start_recfsd -F vdif -S 8 -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"

run python3 - "$(dirname "$0")/../tools" "$RD_CTL" "$port" "$T_DIR" "$PACK" <<'PY'
import calendar, json, os, socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, cport = split(sys.argv[2])
dport, tdir = int(sys.argv[3]), sys.argv[4]
fs = mk5cn.MK5CN(host, cport)
chk = mk5cn.Checks(fs)
ok, txn = chk.ok, chk.txn

# VDIF as a DBBC3 sends it: 8000-byte payloads, 16 channels of 2 bits (32
# tracks), one thread, 50 frames a second; the udps prefix: a sequence
F, FPS = 8032, 50
EPOCH = 52                       # 2026 January 1
E0 = calendar.timegm((2026, 1, 1, 0, 0, 0))
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
seq = 0
def frame(sec, fn, thread=0):
    w0 = sec - E0
    w1 = EPOCH << 24 | fn
    w2 = 4 << 24 | F // 8        # log2(16 channels)
    w3 = 1 << 26 | thread << 16 | 0x4d68  # 2 bits a sample, station "Mh"
    return struct.pack("<IIIIIIII", w0, w1, w2, w3, 0, 0, 0, 0) + struct.pack("<Q", sec * 100 + fn) + bytes(F - 40)
def send(frames):
    global seq
    for fr in frames:
        out.sendto(struct.pack("<Q", seq) + fr, ("127.0.0.1", dport))
        seq += 1
def recorded(name):
    """wait until record? counts every byte sent (record? names the bytes)"""
    for _ in range(400):
        r = mk5cn.parse_record(fs.send("record?\n")[2])
        b = fs.log[-1][1].split(":")
        if len(b) >= 5 and int(b[4].strip(" ;\n")) >= sent_bytes:
            return True
        time.sleep(0.01)
    return False

# initialisation (fb_init): identity, status
r = txn("dts_id?\n", 0, "dts_id?")
ok("dts_id? names recfsd's revision", "recfsd-" in r, r)
r = txn("os_rev?\n", 0, "os_rev?")
ok("os_rev? is the kernel's line", "Linux" in r, r)
r = txn("status?\n", 0, "status?")
ok("status? ready, no error", mk5cn.parse_status_word(r) == 0x1, r)
# setup (fb_mode and friends), strings as the FS writes them
txn("mode = VDIF_8000-512-16-2 ; \n", 0, "mode= (mk5b_mode_util.c)")
m = mk5cn.parse_mode(txn("mode?\n", 0, "mode?"))
ok("mode? parsed by the FS: 32 tracks of 16 Mbit/s (in bit/s: the FS logs it over 1e6), frames of 8032", m == dict(magic="VDIF_8000-512-16-2", format="VDIF", tracks=32, tbitrate=16e6, framesize=8032), m)
txn("mtu = 9000 ;\n", 0, "mtu=")
txn("net_protocol = udpsnor : 128000000 : 256000000 : 4 ;\n", 0, "net_protocol= as the FS asks above 4 Gbit/s")
txn("record = nthread : : 2 ;\n", 0, "record=nthread (fb_mode)")
r = txn("record? nthread ;\n", 0, "record? nthread")
ok("record? nthread: readers and writers", r.rstrip("\n").endswith(": 0 : 2 ;"), r)
# drudg's thread procedure (proc_thread.f) for vdif_single_thread_per_file
# no, each line as quikv/mk5.c relays an fb= argument (the text and \n)
txn("datastream=clear\n", 0, "fb=datastream=clear (proc_thread.f)")
txn("datastream=reset\n", 0, "fb=datastream=reset (proc_thread.f)")
r = txn("datastream?\n", 0, "datastream?")
ok("datastream?: none defined, one recording per scan", r == "!datastream ? 0 : 0 ;\n", r)

# 20 scans
t = calendar.timegm((2026, 11, 24, 3, 0, 0))
sent = {}
sent_bytes = 0
for k in range(1, 21):
    label = "r41234_mh_no%04d" % k
    frames = [frame(t + s, fn) for s in range(2) for fn in range(FPS)]
    lost = 0
    if k == 7:   # three frames lost on the way: scan_check? counts them
        del frames[60:63]
        lost = 3
    r = txn("record = on : %s ; \n" % label, 0, "scan %d: record=on" % k)
    ok("scan %d: record=on answers no new name" % k, r == "!record = 0 ;\n", r)
    sent_bytes = 0
    send(frames)
    sent_bytes = len(frames) * F
    ok("scan %d: record? counts every byte sent" % k, recorded(label))
    rec = mk5cn.parse_record(fs.log[-1][1])
    ok("scan %d: record? parsed: on, scan %d, the label" % (k, k), rec == dict(status="on", scan=k, label=label), rec)
    r = txn("record = off : %s ; \n" % label, 1, "scan %d: record=off:LABEL answers 1, as jive5ab" % k)
    # checkfb: scan_check? once sealed, status?
    for _ in range(400):
        ip2, rc, r = fs.send("scan_check?\n")
        if rc != 5:
            break
        time.sleep(0.01)
    ok("scan %d: scan_check? fits mk5cn's buffer, rc 0" % k, ip2 == 0 and rc == 0, r)
    sc = mk5cn.parse_scan_check(r)
    tm = time.gmtime(t)
    want_start = dict(y=tm.tm_year, d=tm.tm_yday, h=tm.tm_hour, m=tm.tm_min, s=float(tm.tm_sec))
    ok("scan %d: scan_check? as the FS reads it" % k,
       sc.get("scan") == k and sc.get("label") == label and sc.get("type") == "VDIF" and sc.get("code") == 32 and
       sc.get("start") == want_start and abs(sc["length"]["s"] - 2.0) < 1e-3 and abs(sc.get("total", 0) - 0.1) < 1e-6 and
       sc.get("missing") == lost * F and sc.get("error") == str(F), sc)
    r = txn("status?\n", 0, "scan %d: status?" % k)
    ok("scan %d: status? ready, nothing pending" % k, mk5cn.parse_status_word(r) == 0x1, r)
    sent[label] = frames
    t += 10

# loss and rate over the control port, from the counters /metrics has
r = txn("evlbi?\n", 0, "evlbi?")
ok("evlbi? jive5ab's default format: every datagram, the 3 frames lost",
   r == "!evlbi ? 0 : total : %d : loss : 3 (%5.2f%%) : out-of-order : 0 ( 0.00%%) : extent : 0seqnr/pkt ;\n" % (seq, 300.0 / (seq + 3)), r)
r = txn("evlbi = %t : %l\n", 0, "evlbi= a format")
ok("evlbi= its format", r == "!evlbi = 0 : %d : 3 ;\n" % seq, r)
r = txn("rtime?\n", 0, "rtime?")
f = [x.strip() for x in r.rstrip(" ;\n").split(":")]
ok("rtime? time left at the mode's rate, VDIF, 32 tracks, 514.048 Mbit/s on the wire",
   len(f) == 8 and f[1].endswith("s") and f[5:] == ["32", "0MHz", "514.048Mbps"] and f[4] == "VDIF", f)
r = txn("set_disks?\n", 0, "set_disks?")
ok("set_disks? the pack's 4 members", r.split(":")[1].strip() == "4" and r.count("m") >= 4, r)
r = txn("tstat=\n", 0, "tstat=")
ok("tstat= between scans: no_transfer, the bytes received and written",
   ": no_transfer : receive : %d : write : " % (sum(len(v) for v in sent.values()) * F) in r, r)
r = txn("tstat?\n", 0, "tstat? between scans")
ok("tstat? between scans", r == "!tstat ? 0 : 0.0 : no_transfer ;\n", r)

# the FS's data pull: scan_set with empty offsets, disk2file of a byte
# range to a local file; a pack member is never a destination
import hashlib
member = sys.argv[5].split(",")[1]
def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()
txn("scan_set = r41234_mh_no0015 :  :  ;\n", 0, "scan_set= with the FS's empty offsets")
before = digest(member)
r = txn("disk2file = %s : 0 : +100000 : w ;\n" % member, 6, "disk2file= onto a pack member (w) is refused")
ok("disk2file= onto a member: refused naming it, the member unchanged",
   "member" in r and digest(member) == before, r)
pull = os.path.join(tdir, "pull.m5a")
txn("disk2file = %s : 8032 : +%d : n ;\n" % (pull, 60 * F), 1, "disk2file= 60 frames from the second")
r = chk.d2f_done("disk2file?")
ok("disk2file? inactive when done, naming the file", r == "!disk2file ? 0 : inactive : %s ;\n" % pull, r)
ok("disk2file: the file is frames 1-60 of scan 15, as sent", open(pull, "rb").read() == b"".join(sent["r41234_mh_no0015"][1:61]))
r = txn("disk2file = %s : : : n ;\n" % pull, 6, "disk2file= n onto an existing file is refused")
txn("scan_set = r41234_mh_no0020 ;\n", 0, "scan_set= back to the last scan")

# the FS's own disk2file=LABEL,DEST,START,END: the lines quikv/disk2file.c
# builds (its scan_set = ; work-around, then clib/disk2file_util.c's
# disk2file_2_m5_scan_set and disk2file_2_m5, byte for byte with their
# trailing spaces), sent as mk5cn sends a command's lines: one at a time,
# the rest dropped at the first error
def fs_disk2file(label, dest, start, end, desc):
    lines = ["scan_set = ; \n", "scan_set = %s : %s : %s ; \n " % (label, start, end),
             "disk2file = %s : : : w ; \n " % dest]
    got = []
    for ln in lines:
        ip2, rc, r = fs.send(ln)
        got.append((rc, r))
        if ip2:
            break
    ok(desc + ": scan_set = ; 0, scan_set= 0, disk2file= 1", [g[0] for g in got] == [0, 0, 1], got)
    r = chk.d2f_done(desc + ": disk2file?")
    ok(desc + ": disk2file? inactive when done, naming the file", r == "!disk2file ? 0 : inactive : %s ;\n" % dest, r)
    return open(dest, "rb").read() if os.path.exists(dest) else b""
got = fs_disk2file("r41234_mh_no0015", os.path.join(tdir, "fs15.m5a"), "", "", "FS disk2file=LABEL,DEST")
ok("FS disk2file=LABEL,DEST: the file is scan 15 whole, as sent", got == b"".join(sent["r41234_mh_no0015"]), len(got))
# the FS's disk2file display (quikv/disk2file.c: disk2file?, scan_set?)
d2f = mk5cn.parse_disk2file(txn("disk2file?\n", 0, "the FS's disk2file display: disk2file?"))
ok("disk2file? as the FS's m5_2_disk2file reads it", d2f == dict(status="inactive", destination=os.path.join(tdir, "fs15.m5a")), d2f)
r = txn("scan_set?\n", 0, "the FS's disk2file display: scan_set?")
ok("scan_set? : 15 : NAME : 0 : its bytes, as jive5ab", r == "!scan_set ? 0 : 15 : r41234_mh_no0015 : 0 : %d ;\n" % (100 * F), r)
# drudg's line (snap.f: disk2file=,DEST,HHhMMmSS.SSs,HHhMMmSS.SSs,): no
# label, the last scan (20, from 03h03m10s); VEX times of its day
got = fs_disk2file("", os.path.join(tdir, "drudg20.m5a"), "03h03m10.50s", "03h03m11.00s", "drudg's disk2file= of the last scan")
ok("drudg's disk2file=: the file is scan 20's frames 25-49 (10.5 s to 11.0 s)", got == b"".join(sent["r41234_mh_no0020"][25:50]), len(got))
# drudg writes seconds under 10 as f5.2 does, with a leading space (scan 19 from 03h03m00s)
got = fs_disk2file("r41234_mh_no0019", os.path.join(tdir, "drudg19.m5a"), "03h03m 0.50s", "03h03m 1.00s", "drudg's f5.2 seconds")
ok("drudg's f5.2 seconds: scan 19's frames 25-49", got == b"".join(sent["r41234_mh_no0019"][25:50]), len(got))
# disk2file=abort,, (snap_disk2file_abort.f) with nothing running: jive5ab's 6
r = txn("reset=abort;\n", 6, "disk2file=abort with nothing running")
ok("reset=abort with nothing running says so", "nothing running to abort" in r, r)
txn("scan_set = ; \n", 0, "scan_set = ; the last scan")
r = txn("scan_set?\n", 0, "scan_set?")
ok("scan_set = ; chose the last scan", r.startswith("!scan_set ? 0 : 20 : r41234_mh_no0020"), r)

# the schedule restarted after a crash: a label recorded already
label = "r41234_mh_no0005"
frames = [frame(t, fn) for fn in range(FPS)]
r = txn("record = on : %s ; \n" % label, 0, "repeated label: record=on")
ok("repeated label: recorded as LABELa, named in the reply", r == "!record = 0 : %sa ;\n" % label, r)
sent_bytes = 0
send(frames)
sent_bytes = len(frames) * F
ok("repeated label: record? counts every byte", recorded(label + "a"))
rec = mk5cn.parse_record(fs.log[-1][1])
ok("repeated label: record? names LABELa", rec.get("label") == label + "a", rec)
txn("record = off : %s ; \n" % label, 1, "repeated label: record=off")
for _ in range(400):   # checkfb: sealed before the next frames are sent
    ip2, rc, r = fs.send("scan_check?\n")
    if rc != 5:
        break
    time.sleep(0.01)
sc = mk5cn.parse_scan_check(r)
ok("repeated label: scan_check? names LABELa", rc == 0 and sc.get("label") == label + "a" and sc.get("scan") == 21, r)
sent[label + "a"] = frames
t += 10

# the FS's space after '\n' (disk_record_util.c with an empty label): the
# next command on the same connection is answered at once
txn("status?\n ", 0, "a space after the newline")
ip2, rc, r = fs.send("status?\n")
ok("the connection goes on after it", ip2 == 0 and rc == 0, (ip2, r))

# drudg's Mark6 line: START : DURATION : GB : SCAN : EXP : STATION with
# drudg's padding; starts at START's VDIF second, stops itself after
# DURATION seconds of wall clock
start = int(time.time()) + 2
vex = time.strftime("%Yy%jd%Hh%Mm%Ss", time.gmtime(start))
r = txn("record=%s:     2:     1:no0021:r41234:mh;\n" % vex, 0, "Mark6 line")
ok("Mark6 line: no new name", r == "!record = 0 ;\n", r)
before = [frame(start - 1, fn) for fn in range(FPS)]
during = [frame(start + s, fn) for s in range(2) for fn in range(FPS)]
send(before)
send(during)
for _ in range(800):
    rec = mk5cn.parse_record(fs.send("record?\n")[2])
    if rec.get("status") == "off":
        break
    time.sleep(0.01)
ok("Mark6 line: the scan stopped by itself", rec.get("status") == "off" and time.time() >= start + 2, rec)
r = txn("status?\n", 0, "Mark6 line: status?")
ok("Mark6 line: status? no error", mk5cn.parse_status_word(r) == 0x1, r)
sent["r41234_mh_no0021"] = during

# 16 VDIF threads interleaved in one stream: tracks x threads is 32 x 16
label = "r41234_mh_no0022"
t += 10
frames = [frame(t + s, fn, th) for s in range(2) for fn in range(FPS) for th in range(16)]
txn("record = on : %s ; \n" % label, 0, "16 threads: record=on")
sent_bytes = 0
send(frames)
sent_bytes = len(frames) * F
ok("16 threads: record? counts every byte", recorded(label))
txn("record = off : %s ; \n" % label, 1, "16 threads: record=off")
for _ in range(400):
    ip2, rc, r = fs.send("scan_check?\n")
    if rc != 5:
        break
    time.sleep(0.01)
sc = mk5cn.parse_scan_check(r)
tm = time.gmtime(t)
ok("16 threads: scan_check? code 512, the first frame's time, 2 s, 0.1 Mbit/s a track, nothing missing",
   rc == 0 and sc.get("code") == 512 and sc.get("start") == dict(y=tm.tm_year, d=tm.tm_yday, h=tm.tm_hour, m=tm.tm_min, s=float(tm.tm_sec)) and
   abs(sc["length"]["s"] - 2.0) < 1e-3 and abs(sc.get("total", 0) - 0.1) < 1e-6 and sc.get("missing") == 0, sc)
sent[label] = frames
fs.close()
json.dump({k: len(v) for k, v in sent.items()}, open(os.path.join(tdir, "sent.json"), "w"))
with open(os.path.join(tdir, "frames.bin"), "wb") as f:
    for k in sorted(sent):
        f.write(b"".join(sent[k]))
chk.done()
PY
echo "$OUT"
check "the FS's night went through (failed: $(grep -c '^FAILED' <<<"$OUT"))" test "$RC" = 0
# the control port cannot be taken: 40 idle connections, then 32 that drip
# a byte a second; each time the FS connects and is answered at once
run python3 - "$(dirname "$0")/../tools" "$RD_CTL" <<'PY'
import socket, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, port = split(sys.argv[2])
fails = []
for what, n, drip in [("40 idle connections", 40, False), ("32 dripping connections", 32, True)]:
    conns = [socket.create_connection((host, port)) for _ in range(n)]
    if drip:
        for c in conns:
            c.sendall(b"st")
        time.sleep(1.0)
        for c in conns:
            c.sendall(b"a")
    t0 = time.monotonic()
    fs = mk5cn.MK5CN(host, port, timeout=5)
    ip2, rc, r = fs.send("status?\n")
    dt = time.monotonic() - t0
    ok = ip2 == 0 and rc == 0 and dt < 1.0
    print("%s %s: the FS is answered in %.3f s (%r)" % ("ok:" if ok else "FAILED:", what, dt, r))
    if not ok:
        fails.append(what)
    ip2, rc, r = fs.send("record?\n")
    if not (ip2 == 0 and rc == 0):
        fails.append(what + ": a second command")
    fs.close()
    for c in conns:
        c.close()
sys.exit(1 if fails else 0)
PY
echo "$OUT"
check "the control port is never taken: the FS is served at once past idle and dripping connections ($(tr '\n' ' ' <<<"$OUT"))" test "$RC" = 0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
# every recording, frame by frame, is what was sent during its scan
run python3 - "$T_DIR" "$PACK" <<'PY'
import json, os, subprocess, sys
tdir, pack = sys.argv[1], sys.argv[2]
sent = json.load(open(os.path.join(tdir, "sent.json")))
blob = open(os.path.join(tdir, "frames.bin"), "rb").read()
F, off, bad = 8032, 0, []
for name in sorted(sent):
    want = blob[off:off + sent[name] * F]
    off += sent[name] * F
    got = subprocess.run(["recfs", "cat", pack, name], capture_output=True).stdout
    if got != want:
        bad.append("%s: %d bytes, want %d" % (name, len(got), len(want)))
print("%d recordings compared" % len(sent))
assert not bad, bad
PY
check "23 recordings, each exactly the frames sent in its scan ($OUT)" test "$RC" = 0

# SIGHUP (the terminal recfsd was started from closed) mid-scan: the scan
# is sealed and recfsd exits 0, as for SIGTERM (it died with 129, the scan
# unsealed)
check "recfsd ready again" start_recfsd -F vdif -S 8 -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
expect_reply "record=on:hup" "record=on:hup" '!record = 0 ;'
python3 - "$port" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(100):
    s.sendto(struct.pack("<QIIII", i, 10, 52 << 24 | i, 8032 // 8, 1 << 26) + bytes(8032 - 16), ("127.0.0.1", int(sys.argv[1])))
PY
check "record? counts the 100 frames" wait_reply "record?" '!record \? 0 : on : 1 : hup : 803200 ;' 200
kill -HUP "$RD_PID"
wait "$RD_PID"
RD_RC=$?
check "SIGHUP mid-scan: recfsd exits 0 ($(tr '\n' ' ' <"$RD_LOG"))" test "$RD_RC" = 0
check "SIGHUP: the scan sealed whole" test "$(recfs cat "$PACK" hup | wc -c)" = 803200
run fsck.recfs -n "$PACK"
check "SIGHUP: fsck clean (exit $RC)" test "$RC" = 0
finish
