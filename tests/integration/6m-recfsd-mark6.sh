#!/bin/bash
# recfsd --dialect mark6, driven as a Mark6 station drives cplane: one
# connection (tests/tools/mk5cn.py's, the rc found as mk5cn/mk6cn find it),
# drudg's record=START:DURATION:GB:SCAN:EXP:STATION line with its padding
# and its mk6=rtime?  RATE; queries, input_stream, group and scan_info in
# cplane's layout (its own return code after the VSI-S one, no spaces
# around the separators), record? read as Haystack's M6_CC reads it.  Every
# refused command leaves the members unchanged.  Then scan_set= reaches
# scans older than the last 8 (from the pack's directory) and disk2file=
# copies the second recording of a two-input scan (scan_set=SCAN_b, as
# jive5ab's scan_set=LABEL_dsname), compared byte for byte with what was
# sent; and a daemon started without --dialect answers jive5ab's layout
# as before and finds the first daemon's scans on the pack.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
. "$(dirname "$0")/../tools/udp-lib.sh"
echo "6m: recfsd in Mark6 cplane's dialect; scan_set and disk2file beyond the last 8 scans"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
expect_err "--dialect: an unknown one is refused" '!0' "--dialect 'cplane': want jive5ab or mark6" \
	recfsd --dialect cplane "$PACK"
pa=$(free_port)
pb=$(free_port)
check "recfsd ready (--dialect mark6, inputs a and b)" start_recfsd --dialect mark6 -F vdif \
	-i "a=udp:127.0.0.1:$pa" -i "b=udp:127.0.0.1:$pb" --buffer 16M "$PACK"

run python3 - "$(dirname "$0")/../tools" "$RD_CTL" "$pa" "$pb" "$T_DIR" "$PACK" <<'PY'
import calendar, hashlib, os, socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, cport = split(sys.argv[2])
pa, pb, tdir, members = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6].split(",")
m6 = mk5cn.MK5CN(host, cport)
chk = mk5cn.Checks(m6)
ok, txn = chk.ok, chk.txn
def fields(reply):
    """cplane's reply split as written (Response.py: '!' NAME ('?'|'=')
    then the fields joined by ':', ';'): [rc, cplane rc, ...]"""
    body = reply.rstrip("\n")
    assert body.endswith(";"), body
    q = min(i for i in (body.find("?"), body.find("=")) if i >= 0)
    return body[q + 1:-1].split(":")
def m6cc_state(ret):
    """Haystack's M6_CC.py (Mark6 command and control, main()): the
    recording state after record? is info[2] of what follows '?'"""
    pos = ret.find("?")
    info = ret[(pos + 1):].split(':')
    return info[2]

F, FPS, EPOCH = 8032, 50, 52                 # 2026 January 1
E0 = calendar.timegm((2026, 1, 1, 0, 0, 0))
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sent_total = 0
def frame(sec, fn, thread):
    w3 = 1 << 26 | thread << 16 | 0x4d68     # 2 bits a sample, station "Mh"
    return struct.pack("<IIIIIIII", sec - E0, EPOCH << 24 | fn, 4 << 24 | F // 8, w3, 0, 0, 0, 0) + \
        struct.pack("<QI", sec * 100 + fn, thread) + bytes(F - 44)
def send(fa, fb, count=True):
    global sent_total
    for i in range(max(len(fa), len(fb))):
        if i < len(fa):
            out.sendto(fa[i], ("127.0.0.1", pa))
        if i < len(fb):
            out.sendto(fb[i], ("127.0.0.1", pb))
    if count:
        sent_total += len(fa) * F + len(fb) * F
def received():
    """tstat= (jive5ab's, in either dialect): the bytes into the rings"""
    f = fields(m6.send("tstat=;\n")[2])
    return int(f[4])
def wait_received():
    for _ in range(500):
        if received() >= sent_total:
            return True
        time.sleep(0.01)
    return False
def sealed():
    for _ in range(500):
        ip2, rc, r = m6.send("scan_check?;\n")
        if rc != 5:
            return r
        time.sleep(0.01)
    return r
def digest():
    h = hashlib.sha256()
    for m in members:
        h.update(open(m, "rb").read())
    return h.hexdigest()

r = txn("dialect?;\n", 0, "dialect?")
ok("dialect? mark6", r == "!dialect?0:mark6;\n", r)
# cplane's input_stream?: label, format, payload size, offset, PSN offset,
# interface, filter address, port, subgroup per stream
r = txn("input_stream?;\n", 0, "input_stream?")
want = ["0", "0", "a", "vdif", "0", "42", "0", "lo", "127.0.0.1", str(pa), "1",
        "b", "vdif", "0", "42", "0", "lo", "127.0.0.1", str(pb), "1"]
ok("input_stream? both inputs in cplane's fields", fields(r) == want, r)
txn("mode = VDIF_8000-512-16-2 ;\n", 0, "mode=")
r = txn("input_stream?b;\n", 0, "input_stream? b")
ok("input_stream? b: its fields, the payload size mode= gives",
   fields(r) == ["0", "0", "b", "vdif", "8032", "42", "0", "lo", "127.0.0.1", str(pb), "1"], r)
r = txn("input_stream=add:a:vdif:8032:42:0:lo:127.0.0.1:%d:1;\n" % pa, 0, "input_stream=add of an input recfsd has")
ok("input_stream=add: done, cplane's own code 0", r == "!input_stream=0:0;\n", r)
txn("input_stream=commit;\n", 0, "input_stream=commit")
r = txn("group?;\n", 0, "group?")
ok("group? the pack, group 1", r == "!group?0:0:1;\n", r)
r = txn("group=open:1;\n", 0, "group=open:1")
ok("group=open:1 answers the group", r == "!group=0:0:1;\n", r)
r = txn("status?;\n", 0, "status?")
ok("status? cplane's: its code, the status word alone", r == "!status?0:0:0x00000001;\n", r)
r = txn("record?;\n", 0, "record? before any scan")
ok("record? off, no scan yet; M6_CC reads 'off'", r == "!record?0:0:off:0:;\n" and m6cc_state(r) == "off", r)
# drudg writes mk6=rtime?%10d; (snap.f): the rate padded to 10
r = txn("rtime?      1024;\n", 0, "rtime? as drudg writes it")
f = fields(r)
ok("rtime? group 1, 1024 Mbit/s, seconds left = GB left at that rate, GB of the pack",
   len(f) == 7 and f[:4] == ["0", "0", "1", "1024"] and abs(float(f[4]) - float(f[5]) * 8e9 / 1024e6) < 1 and
   float(f[6]) >= float(f[5]) > 0, r)
f2 = fields(txn("rtime?;\n", 0, "rtime? without a rate"))
ok("rtime? without a rate: mode='s 512 Mbit/s", f2[3] == "512" and abs(float(f2[4]) - 2 * float(f[4])) < 2, f2)

# refused: the reason, the right code, the members and the inputs unchanged
before, inputs = digest(), txn("input_stream?;\n", 0, "input_stream? before the refusals")
for text, rc, why in [
        ("input_stream=dismount:a;\n", 6, "restart it without --input a="),
        ("input_stream=delete:b;\n", 6, "restart it without --input b="),
        ("input_stream=add:c:vdif:8032:42:0:eth2:10.0.0.1:4001:1;\n", 6, "no input 'c'"),
        ("input_stream=add:a:mark5b;\n", 6, "recfsd binds its inputs when it starts"),
        ("input_stream=add:a:vdif:8032:42:0:lo:127.0.0.1:1;\n", 6, "on port %d" % pa),
        ("input_stream=replace:a;\n", 8, "not add, dismount, delete or commit"),
        ("input_stream?zz;\n", 8, "no input 'zz'"),
        ("group=close:1;\n", 6, "stop recfsd to close it"),
        ("group=unmount;\n", 6, "stop recfsd to unmount it"),
        ("group=new:34;\n", 2, "mkfs.recfs"),
        ("group=protect:1;\n", 2, "never writes over a recording"),
        ("group=open:34;\n", 8, "no group '34'"),
        ("rtime?nan;\n", 8, "rtime? [RATE]"),
        ("rtime?0;\n", 8, "rtime? [RATE]"),
        ("rtime?99999999999999999999;\n", 8, "rtime? [RATE]"),
        ("scan_info?;\n", 4, "no scan recorded yet"),
        ("scan_set=no-such-scan;\n", 8, "no scan or recording 'no-such-scan' on the pack"),
        ("disk2file=%s/x.m5a:::n;\n" % tdir, 6, "no scan was set"),
        ("record=2026y400d00h00m00s:2:1:no0000:r41234:mh;\n", 8, "not on, off, nthread, mk6 or a start time")]:
    r = txn(text, rc, "refused: " + text.strip())
    ok("refused %s: says why" % text.strip(), why in r, r)
ok("refused commands: the members unchanged", digest() == before)
ok("refused commands: the inputs unchanged", txn("input_stream?;\n", 0, "input_stream? after") == inputs)
ok("refused commands: no file written", not os.path.exists(os.path.join(tdir, "x.m5a")))

# drudg's Mark6 line: START : DURATION : GB : SCAN : EXP : STATION with
# its i6 padding; pending until data of START's second arrives, then
# recording; it stops by itself after DURATION seconds of wall clock
start = int(time.time()) + 2
vex = time.strftime("%Yy%jd%Hh%Mm%Ss", time.gmtime(start))
r = txn("record=%s:     2:     1:no0001:r41234:mh;\n" % vex, 0, "Mark6 line")
ok("Mark6 line: cplane's own code", r == "!record=0:0;\n", r)
r = txn("record?;\n", 0, "record? before START")
ok("record? pending before START's data", r == "!record?0:0:pending:1:r41234_mh_no0001;\n" and m6cc_state(r) == "pending", r)
sent = {}
fa = [frame(start + s, fn, 0) for s in range(2) for fn in range(FPS)]
fb = [frame(start + s, fn, 1) for s in range(2) for fn in range(FPS)]
send([frame(start - 1, fn, 0) for fn in range(FPS)], [frame(start - 1, fn, 1) for fn in range(FPS)], False)
send(fa, fb)
ok("Mark6 line: every datagram received", wait_received())
r = txn("record?;\n", 0, "record? once START's data came")
ok("record? recording", r == "!record?0:0:recording:1:r41234_mh_no0001;\n" or time.time() >= start + 2, r)
states = set()
for _ in range(800):
    r = m6.send("record?;\n")[2]
    states.add(m6cc_state(r))
    if m6cc_state(r) == "off":
        break
    time.sleep(0.01)
ok("Mark6 line: stopped by itself at START + DURATION; M6_CC reads off",
   r == "!record?0:0:off:1:r41234_mh_no0001;\n" and time.time() >= start + 2, (r, states))
sealed()
f = fields(txn("scan_info?;\n", 0, "scan_info?"))
tm = time.gmtime(start)
ok("scan_info? cplane's fields: group, scan 1, its name, complete, START's second, 2 s by the data, 2 streams, no loss",
   f == ["0", "0", "1", "1", "r41234_mh_no0001", "complete",
         "%04dy%03dd%02dh%02dm%02d.0000s" % (tm.tm_year, tm.tm_yday, tm.tm_hour, tm.tm_min, tm.tm_sec), "2.000", "2", "0"], f)
sent["r41234_mh_no0001"] = (fa, fb)

# ten more scans with record=on / record=off: scan 1 is then older than
# the last 8 this daemon keeps
t = calendar.timegm((2026, 11, 24, 3, 0, 0))
for k in range(2, 12):
    label = "no%04d" % k
    name = "r41234_mh_" + label
    r = txn("record=on:%s:r41234:mh;\n" % label, 0, "scan %d: record=on" % k)
    ok("scan %d: record=on, cplane's own code" % k, r == "!record=0:0;\n", r)
    fa = [frame(t + s, fn, 0) for s in range(2) for fn in range(FPS)]
    fb = [frame(t + s, fn, 1) for s in range(2) for fn in range(FPS)]
    if k == 4:   # three frames of input a lost on the way
        del fa[60:63]
    send(fa, fb)
    ok("scan %d: every datagram received" % k, wait_received())
    if k == 2:
        f = fields(txn("scan_info?;\n", 0, "scan_info? while recording"))
        ok("scan_info? while recording: scan 2, recording, 2 streams",
           f[:6] == ["0", "0", "1", "2", name, "recording"] and f[8] == "2", f)
    r = txn("record?;\n", 0, "scan %d: record?" % k)
    ok("scan %d: record? recording" % k, r == "!record?0:0:recording:%d:%s;\n" % (k, name), r)
    r = txn("record=off;\n", 0, "scan %d: record=off" % k)
    ok("scan %d: record=off answers cplane's 0 (M6_CC finds a '0')" % k, r == "!record=0:0;\n", r)
    sc = sealed()
    ok("scan %d: scan_check? rc 0" % k, sc.startswith("!scan_check?0:%d:%s:VDIF:64:" % (k, name)), sc)
    sent[name] = (fa, fb)
    t += 10

f = fields(txn("scan_info?4;\n", 0, "scan_info? 4"))
ok("scan_info? 4: complete, 2 s by the data, 2 streams, performance 1 (3 frames lost)",
   f[3:6] == ["4", "r41234_mh_no0004", "complete"] and f[7:] == ["2.000", "2", "1"], f)
f = fields(txn("scan_info?r41234_mh_no0005;\n", 0, "scan_info? by name"))
ok("scan_info? 5 by name: performance 0", f[3:6] == ["5", "r41234_mh_no0005", "complete"] and f[9] == "0", f)

# scan_set= beyond the last 8: scan 1, from the pack's directory; its
# scan_check? sums both recordings (jive5ab's '?' for its number)
r = txn("scan_set=r41234_mh_no0001;\n", 0, "scan_set= scan 1, older than the last 8")
r = txn("scan_set?;\n", 0, "scan_set?")
ok("scan_set? names scan 1, number '?'", r == "!scan_set?0:?:r41234_mh_no0001:0:%d;\n" % (100 * F), r)
sc = txn("scan_check?;\n", 0, "scan_check? of scan 1")
tm = time.gmtime(start)
ok("scan_check? of scan 1: both recordings, 64 tracks, START's second, 2 s, nothing missing",
   sc == "!scan_check?0:?:r41234_mh_no0001:VDIF:64:%04dy%03dd%02dh%02dm%02d.0000s:2.0000s:0.100000:0:8032:2:%d:0;\n"
   % (tm.tm_year, tm.tm_yday, tm.tm_hour, tm.tm_min, tm.tm_sec, 2 * 100 * F), sc)
sc = txn("scan_check?::1;\n", 0, "scan_check? ::1 of scan 1")
ok("scan_check?1 (jive5ab's strict): the whole scan", txn("scan_check?1;\n", 0, "scan_check?1").startswith("!scan_check?0:?:r41234_mh_no0001:VDIF:64:"))
ok("scan_check? 1: recording b alone", sc.startswith("!scan_check?0:?:r41234_mh_no0001_b:VDIF:32:"), sc)
r = txn("scan_set=2;\n", 8, "scan_set= by the number of a scan older than the last 8")
ok("scan_set= an old number: refused, its name asked for", "scan 2 is older than the last 8" in r, r)
ok("scan_set= an old number: the choice unchanged", txn("scan_set?;\n", 0, "scan_set?") == "!scan_set?0:?:r41234_mh_no0001:0:%d;\n" % (100 * F))
# jive5ab's search: a part of the name, case ignored, the newest match
r = txn("scan_set=NO0002;\n", 0, "scan_set= a part of a name")
ok("scan_set= a part of the name finds scan 2's recordings",
   txn("scan_set?;\n", 0, "scan_set?") == "!scan_set?0:?:r41234_mh_no0002:0:%d;\n" % (100 * F) and
   txn("scan_check?;\n", 0, "scan_check?").startswith("!scan_check?0:?:r41234_mh_no0002:VDIF:64:"))

# disk2file= of a scan's second recording: scan_set= names it
def pull(sel, dest, args, want, desc):
    txn("scan_set=%s;\n" % sel, 0, desc + ": scan_set=" + sel)
    txn("disk2file=%s%s;\n" % (dest, args), 1, desc + ": disk2file=")
    r = chk.d2f_done(desc + ": disk2file?", "disk2file?;\n")
    ok(desc + ": disk2file? inactive, naming the file", r == "!disk2file?0:inactive:%s;\n" % dest, r)
    got = open(dest, "rb").read()
    ok(desc + ": the bytes are what input b sent", got == want, "%d bytes, want %d" % (len(got), len(want)))
fa, fb = sent["r41234_mh_no0003"]
pull("r41234_mh_no0003_b", os.path.join(tdir, "b3.m5a"), ":%d:+%d:n" % (F, 20 * F), b"".join(fb[1:21]),
     "scan 3 (older than 8), recording b, 20 frames")
# jive5ab's scan_set offsets, taken by disk2file= as its defaults: bytes
# relative to START or the end, times at the recording's data rate (one
# thread of 50 frames a second), a VEX time from the first frame
t3 = calendar.timegm((2026, 11, 24, 3, 0, 10))
for i, (sel, want, desc) in enumerate([
        ("r41234_mh_no0003_b:+%d:+%d" % (F, 20 * F), fb[1:21], "+bytes : +bytes"),
        ("r41234_mh_no0003_b:+1s:+0.5s", fb[50:75], "+1s : +0.5s"),
        ("r41234_mh_no0003_b:%s:-%d" % (time.strftime("%Yy%jd%Hh%Mm%Ss", time.gmtime(t3 + 1)), 10 * F), fb[50:90],
         "a VEX time : -bytes"),
        ("r41234_mh_no0003_b:s+", b"".join(fb)[65536:], "s+"),
        ("r41234_mh_no0003_b:03h00m11.5s:+0.5s", fb[75:100], "a VEX time's lower fields, a fraction : +0.5s"),
        ("r41234_mh_no0003_b:c:-0", b"".join(fb)[len(fb) * F // 2:], "c : -0")]):
    dest = os.path.join(tdir, "off%d.m5a" % i)
    pull(sel, dest, "", want if isinstance(want, bytes) else b"".join(want), "offsets " + desc)
# offsets are checked at scan_set= as jive5ab checks them there (8, the
# choice unchanged): e (1 MB before the end) in a recording under 1 MB
r = txn("scan_set=r41234_mh_no0003_b:e;\n", 8, "scan_set= e (1 MB before the end) in a recording under 1 MB")
ok("e in a recording under 1 MB: out of bound", "out of bound" in r, r)
for bad in ["8032", "+1x", "+1.5m", "+s", "2026y328d25h00m11.5s", "03h61m", "2026y366d03h00m11s", "00m10.5.5s", "03h10s", "+99999999999999999999999",
            "+%d" % (len(fb) * F + 1), "03h00m13s"]:
    r = txn("scan_set=r41234_mh_no0003_b:%s;\n" % bad, 8, "scan_set= offset %s refused" % bad)
ok("a refused offset leaves scan_set as it was", txn("scan_set?;\n", 0, "scan_set?") == "!scan_set?0:?:r41234_mh_no0003_b:%d:%d;\n" % (len(fb) * F // 2, len(fb) * F))
fa, fb = sent["r41234_mh_no0011"]
pull("r41234_mh_no0011_b", os.path.join(tdir, "b11.m5a"), ":::n", b"".join(fb),
     "scan 11 (the last), recording b whole")
fa, fb = sent["r41234_mh_no0001"]
pull("r41234_mh_no0001", os.path.join(tdir, "a1.m5a"), ":::n", b"".join(fa),
     "scan 1 by its name: its first recording, a")
r = txn("scan_info?1;\n", 8, "scan_info? of a scan older than the last 8")
m6.close()
chk.done()
PY
echo "$OUT"
check "a Mark6 session on recfsd (failed: $(grep -c '^FAILED' <<<"$OUT"))" test "$RC" = 0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0

# without --dialect: jive5ab's layout, as before; the first daemon's scans
# are found on the pack
check "recfsd ready (default dialect)" start_recfsd -F vdif -i "a=udp:127.0.0.1:$pa" -i "b=udp:127.0.0.1:$pb" --buffer 16M "$PACK"
recfs ls "$PACK" | tr "\n" " "; echo
expect_reply "dialect? jive5ab by default" "dialect?" '!dialect \? 0 : jive5ab ;'
expect_reply "record? jive5ab's layout" "record?" '!record \? 0 : off ;'
expect_reply "status? jive5ab's layout" "status?" '!status \? 0 : 0x00000001 ;'
expect_reply "rtime? jive5ab's layout" "rtime?" '!rtime \? 0 : <unknown> \(no mode set yet\) : [0-9.]+GB : [0-9.]+% : vdif : 0 : 0MHz : <unknown> Mbps ;'
expect_reply "input_stream? cplane's layout in either dialect" "input_stream?a" \
	"!input_stream \\? 0 : 0 : a : vdif : 0 : 42 : 0 : lo : 127.0.0.1 : $pa : 1 ;"
expect_reply "scan_set= a scan the last daemon recorded" "scan_set=r41234_mh_no0005" '!scan_set = 0 ;'
expect_reply "scan_check? of it, from the pack" "scan_check?" \
	'!scan_check \? 0 : \? : r41234_mh_no0005 : VDIF : 64 : 2026y328d03h00m30\.0000s : 2\.0000s : 0\.100000 : 0 : 8032 : 2 : 1606400 : 0 ;'
stop_recfsd
check "recfsd exits 0 again" test "$RD_RC" = 0
run fsck.recfs -n "$PACK"
check "fsck clean (exit $RC)" test "$RC" = 0
finish
