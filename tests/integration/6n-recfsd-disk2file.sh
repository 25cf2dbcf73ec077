#!/bin/bash
# recfsd's data pull as jive5ab 3.1 answers it (scan_set_vbs.cc,
# disk2file_vbs.cc, reset_vbs.cc), over one connection as mk5cn talks:
# scan_set's forms (no name: the last scan, or the one before while one
# records; inc, dec, next), reset=abort of a running disk2file (the FS's
# disk2file=abort) into a FIFO whose reader the test holds back, so the
# copy is still running when it is aborted: it stops at once, what it
# wrote is a prefix of the range and the FIFO is closed, disk2file? says
# where it stopped, and the next disk2file= copies; a FIFO without a
# reader is refused at once (the control port never blocks on DEST).
# scan_check?'s arguments: jive5ab's STRICT and BYTES, recfsd's RECORDING.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6n: recfsd scan_set forms, disk2file and reset=abort"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd ready (vdif, udps)" start_recfsd -F vdif -S 8 -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
mkfifo "$T_DIR/fifo"

run python3 - "$(dirname "$0")/../tools" "$RD_CTL" "$port" "$T_DIR" <<'PY'
import calendar, errno, os, select, socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
import mk5cn
from vsi import split
host, cport = split(sys.argv[2])
dport, tdir = int(sys.argv[3]), sys.argv[4]
fs = mk5cn.MK5CN(host, cport)
chk = mk5cn.Checks(fs)
ok, txn = chk.ok, chk.txn
def scan_set_q():
    return fs.send("scan_set?\n")[2]

# VDIF: 8000-byte payloads, one thread, 50 frames a second, a udps sequence
F, FPS, EPOCH = 8032, 50, 52
E0 = calendar.timegm((2026, 1, 1, 0, 0, 0))
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
seq = 0
def frame(sec, fn):
    w = (sec - E0, EPOCH << 24 | fn, 4 << 24 | F // 8, 1 << 26 | 0x4d68)
    return struct.pack("<IIIIIIII", *w, 0, 0, 0, 0) + struct.pack("<Q", sec * 100 + fn) + bytes(F - 40)
def record(label, frames):
    global seq
    txn("record = on : %s ; \n" % label, 0, label + ": record=on")
    for fr in frames:
        out.sendto(struct.pack("<Q", seq) + fr, ("127.0.0.1", dport))
        seq += 1
    for _ in range(500):
        b = fs.send("record?\n")[2].rstrip(" ;\n").split(":")
        if len(b) >= 5 and int(b[4]) >= len(frames) * F:
            break
        time.sleep(0.01)
def stop(label):
    txn("record = off : %s ; \n" % label, 1, label + ": record=off")
    for _ in range(500):
        if fs.send("scan_check?\n")[1] != 5:
            break
        time.sleep(0.01)

# nothing recorded yet: jive5ab's 6s and 4
r = txn("scan_set = ; \n", 6, "scan_set = ; before any scan")
ok("scan_set = ; before any scan says so", "there are no scans recorded in this session" in r, r)
r = txn("scan_set = inc ;\n", 6, "scan_set=inc before any scan")
ok("scan_set=inc: no scan to increment from", "no recorded scan to increment from" in r, r)
r = txn("scan_set = next ;\n", 4, "scan_set=next before any search")
ok("scan_set=next: no search string given yet", "no search string given yet" in r, r)
r = txn("reset = abort ;\n", 6, "reset=abort with nothing running")
ok("reset=abort: nothing running to abort", "nothing running to abort" in r, r)
txn("reset = ;\n", 6, "reset= without an argument")
r = txn("reset = ss ;\n", 6, "reset=ss (a Mark5 reset)")
ok("reset=ss: does not apply", "does not apply to reset" in r, r)
txn("reset ?\n", 2, "reset? (a command only)")

# four scans: 1 of 4 s (1.6 MB, the one copied into the FIFO), 2-4 of 1 s
t = calendar.timegm((2026, 11, 24, 5, 0, 0))
sent = {}
for k, secs in [(1, 4), (2, 1), (3, 1), (4, 1)]:
    label = "t1_no%04d" % k
    sent[k] = [frame(t + s, fn) for s in range(secs) for fn in range(FPS)]
    record(label, sent[k])
    if k == 1:
        r = txn("scan_set = ; \n", 6, "scan_set = ; while the first scan records")
        ok("scan_set = ; recording the first scan: not enough scans", "not enough scans" in r, r)
    if k == 4:
        txn("scan_set = ; \n", 0, "scan_set = ; while scan 4 records")
        r = scan_set_q()
        ok("scan_set = ; while recording: the scan before (3), its bytes", r == "!scan_set ? 0 : 3 : t1_no0003 : 0 : %d ;\n" % (FPS * F), r)
    stop(label)
    t += 10
txn("scan_set = ; \n", 0, "scan_set = ; after scan 4")
ok("scan_set = ; the last scan (4)", scan_set_q().startswith("!scan_set ? 0 : 4 : t1_no0004 : "))

# scan_check?'s arguments as jive5ab's: STRICT (0 or 1), BYTES (k, M; a
# recording shorter is 6); recfsd's RECORDING third (an index or a name)
txn("scan_set = 1 ;\n", 0, "scan_set=1")
whole = fs.send("scan_check?\n")[2]
ok("scan_check? of scan 1", whole.startswith("!scan_check ? 0 : 1 : t1_no0001 : VDIF : 32 : "), whole)
for q in ["scan_check? 1\n", "scan_check? 0 : 64k\n", "scan_check? : 8\n", "scan_check? : 1M\n", "scan_check? 1 : 1000000 : 0\n",
          "scan_check? : : t1_no0001\n"]:
    r = txn(q, 0, q.strip())
    ok(q.strip() + ": the same line", r.split(" : ", 1)[1:] == whole.split(" : ", 1)[1:], r)
for q, rc, why in [("scan_check? 2\n", 8, "strict argument has to be 0 or 1"),
                   ("scan_check? 1 : 2M\n", 6, "scan too short to check, need 2097152 bytes, 't1_no0001' has 1606400"),
                   ("scan_check? : 0\n", 8, "need to read more than 0 bytes"),
                   ("scan_check? : 3G\n", 8, "invalid number of bytes"),
                   ("scan_check? : 65M\n", 8, "invalid number of bytes to read '65M' (up to 64 MiB"),
                   ("scan_check? : 64M\n", 6, "scan too short to check, need 67108864 bytes"),
                   ("scan_check? : 5x\n", 8, "invalid number of bytes"),
                   ("scan_check? : : 1\n", 8, "RECORDING '1' is not 0 to 0"),
                   ("scan_check? : : t1_no0002\n", 8, "no recording 't1_no0002' in scan 1")]:
    r = txn(q, rc, q.strip())
    ok(q.strip() + ": " + why, why in r, r)

# inc and dec: through the session's scans, wrapping round as jive5ab's
txn("scan_set = 2 ;\n", 0, "scan_set=2")
for word, want in [("inc", 3), ("inc", 4), ("inc", 1), ("dec", 4), ("dec", 3)]:
    txn("scan_set = %s ;\n" % word, 0, "scan_set=%s" % word)
    r = scan_set_q()
    ok("scan_set=%s: scan %d" % (word, want), r.startswith("!scan_set ? 0 : %d : t1_no%04d : " % (want, want)), r)
# a search (case ignored; recfsd: the newest match), then next: the next
# scan after it whose name holds the text, wrapping round
txn("scan_set = T1_NO000 ;\n", 0, "scan_set= a search")
ok("scan_set= a search: the newest match, 4", scan_set_q().startswith("!scan_set ? 0 : 4 : t1_no0004 : "))
for want in [1, 2, 3]:
    txn("scan_set = next ;\n", 0, "scan_set=next")
    r = scan_set_q()
    ok("scan_set=next: scan %d" % want, r.startswith("!scan_set ? 0 : %d : t1_no%04d : " % (want, want)), r)
# scan_set? : scan# : name : start byte : end byte (jive5ab's); the FS's
# data_check_pos (scan_set = : -1000000 ;) on a scan under 1 MB: 8
txn("scan_set = 1 : 05h00m01.5s : +0.5s ;\n", 0, "scan_set= scan 1, a VEX time, +0.5s")
r = scan_set_q()
ok("scan_set? the bytes: 1.5 s to 2 s", r == "!scan_set ? 0 : 1 : t1_no0001 : %d : %d ;\n" % (75 * F, 100 * F), r)
r = txn("scan_set = : -1000000 ;\n", 8, "the FS's data_check_pos on scan 4 (401600 bytes)")
ok("scan_set = : -1000000 ; out of bound, the choice unchanged",
   "out of bound" in r and scan_set_q().startswith("!scan_set ? 0 : 1 : t1_no0001 : %d :" % (75 * F)), r)
txn("scan_set = 3 ;\n", 0, "scan_set=3")
# offsets refused at scan_set= (as jive5ab), the choice unchanged
r = txn("scan_set = t1_no0002 : +2s ;\n", 8, "scan_set= START past a 1 s scan")
ok("scan_set= out of bound: said so, the choice unchanged (3)",
   "out of bound" in r and scan_set_q().startswith("!scan_set ? 0 : 3 : t1_no0003 : "), r)
r = txn("scan_set = : 05h00m31.5s : 05h00m35s ;\n", 8, "scan_set= no name, END past the last scan")
ok("scan_set= no name, END out of bound: the choice unchanged",
   "out of bound" in r and scan_set_q().startswith("!scan_set ? 0 : 3 : t1_no0003 : "), r)
# offsets far past any recording: out of bound, not wrapped round to 0
for off in ["s : +999999999999d", "-999999999999d", "s : +9223372036854775807", "-9223372036854775807"]:
    r = txn("scan_set = t1_no0001 : %s ;\n" % off, 8, "scan_set= %s" % off)
    ok("scan_set= %s: out of bound, the choice unchanged" % off,
       "out of bound" in r and scan_set_q().startswith("!scan_set ? 0 : 3 : t1_no0003 : "), r)

# reset=abort: scan 1 into a FIFO the test reads slowly
fifo = os.path.join(tdir, "fifo")
rd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
txn("scan_set = t1_no0001 ; \n", 0, "scan_set= scan 1")
want = b"".join(sent[1])
txn("disk2file = %s : : : w ; \n " % fifo, 1, "disk2file= into a FIFO (the FS's line)")
got = bytearray()
def read_some(n, secs=20):
    end = time.monotonic() + secs
    while len(got) < n and time.monotonic() < end:
        select.select([rd], [], [], 0.5)
        try:
            b = os.read(rd, n - len(got))
        except BlockingIOError:
            continue
        if not b:
            return False   # EOF
        got.extend(b)
    return True
read_some(100000)
ok("the copy is writing into the FIFO", len(got) == 100000, len(got))
# CURRENT counts a write once it returned: the reader may be ahead of it
for _ in range(1000):
    r = txn("disk2file?\n", 0, "disk2file? while it copies")
    f = [x.strip() for x in r.rstrip(" ;\n").split(":")]
    if len(f) < 5 or not f[4].isdigit() or int(f[4]) >= 100000:
        break
    time.sleep(0.01)
ok("disk2file? active : DEST : 0 : CURRENT : END : w, CURRENT past what was read, short of the end",
   f[1:3] == ["active", fifo] and f[3] == "0" and 100000 <= int(f[4]) < len(want) and f[5:] == [str(len(want)), "w"], f)
r = txn("disk2file = %s/x.m5a : : : w ;\n" % tdir, 6, "disk2file= while one copies")
ok("disk2file= while one copies: jive5ab's 'not whilst', no file", "not whilst disk2file" in r and not os.path.exists(tdir + "/x.m5a"), r)
r = txn("scan_set = ; \n", 6, "scan_set= while disk2file copies")
ok("scan_set= while disk2file copies: not whilst", "not whilst disk2file is in progress" in r, r)
r = txn("delete = t1_no0001 ;\n", 6, "delete= of the recording disk2file copies")
ok("delete= of the recording being copied: refused, its rows stay under the copy", "being copied by disk2file" in r, r)
t0 = time.monotonic()
txn("reset=abort;\n", 0, "reset=abort (the FS's disk2file=abort)")
dt = time.monotonic() - t0
ok("reset=abort answered within 2 s (%.3f s)" % dt, dt < 2.0)
r = txn("disk2file?\n", 0, "disk2file? after the abort")
f = [x.strip() for x in r.rstrip(" ;\n").split(":")]
ok("disk2file? inactive : DEST : 0 : N : END : w : aborted at byte N",
   f[1:3] == ["inactive", fifo] and len(f) == 8 and f[3] == "0" and f[5:7] == [str(len(want)), "w"] and
   f[7] == "aborted at byte %s (0 to %d)" % (f[4], len(want)), f)
n = int(f[4]) if len(f) == 8 and f[4].isdigit() else -1
try:
    d2f = mk5cn.parse_disk2file(r)
except mk5cn.FSError as e:
    d2f = e
ok("the FS's m5_2_disk2file reads it: inactive, DEST, 0, N, END, w",
   d2f == dict(status="inactive", destination=fifo, start=0, current=n, end=len(want), option="w"), d2f)
eof = not read_some(len(want) + 1)
ok("the FIFO closed by the abort: EOF after N bytes", eof and len(got) == n, (eof, len(got), n))
ok("what was written is the range's first N bytes, N short of the end", bytes(got) == want[:n] and 0 < n < len(want), n)
os.close(rd)
# the next disk2file= works: scan 1 whole into a file
dest = os.path.join(tdir, "s1.m5a")
txn("disk2file = %s : : : w ; \n " % dest, 1, "disk2file= after the abort")
r = chk.d2f_done("disk2file?")
ok("disk2file after the abort: inactive, no error", r == "!disk2file ? 0 : inactive : %s ;\n" % dest, r)
ok("disk2file after the abort: scan 1 whole", open(dest, "rb").read() == want)
# jive5ab's resume: what an aborted copy left, completed
part = os.path.join(tdir, "part.m5a")
open(part, "wb").write(want[:100000])
txn("disk2file = %s : : : resume ;\n" % part, 1, "disk2file= resume")
r = chk.d2f_done("disk2file?")
ok("disk2file resume: the file is scan 1 whole", open(part, "rb").read() == want)
r = txn("disk2file = %s : 0 : +1000 : resume ;\n" % part, 6, "disk2file= resume onto a file longer than the range")
ok("resume onto a longer file: refused naming it, the file unchanged", part in r and open(part, "rb").read() == want, r)
txn("scan_set = t1_no0001 : : +1000 ;\n", 0, "scan_set= END 1000")
r = txn("disk2file = %s/late.m5a : 5000 ;\n" % tdir, 8, "disk2file= START after scan_set's END")
ok("START after scan_set's END: refused, no file", "is before START" in r and not os.path.exists(tdir + "/late.m5a"), r)
# a FIFO nobody reads: refused at once, the control port free
t0 = time.monotonic()
r = txn("disk2file = %s : : : w ;\n" % fifo, 4, "disk2file= into a FIFO without a reader")
ok("a FIFO without a reader: refused at once naming it (%.3f s)" % (time.monotonic() - t0),
   fifo in r and "No such device" in r and time.monotonic() - t0 < 2.0, r)
txn("status?\n", 0, "status? after")

# ten scans: inc, dec and next wrap round within the last 8 (3 to 10),
# recfsd's session list
for k in range(5, 11):
    record("t1_no%04d" % k, [frame(t, fn) for fn in range(FPS)])
    stop("t1_no%04d" % k)
    t += 10
for sel, word, want in [("3", "dec", 10), ("10", "inc", 3), ("4", "dec", 3)]:
    txn("scan_set = %s ;\n" % sel, 0, "scan_set=%s" % sel)
    txn("scan_set = %s ;\n" % word, 0, "scan_set=%s from %s" % (word, sel))
    r = scan_set_q()
    ok("scan_set=%s from %s: scan %d" % (word, sel, want), r.startswith("!scan_set ? 0 : %d : t1_no%04d : " % (want, want)), r)
txn("scan_set = t1_no0001 ;\n", 0, "scan_set= scan 1 by name (from the pack's directory)")
r = txn("scan_set = inc ;\n", 6, "scan_set=inc from a scan older than the last 8")
ok("scan_set=inc from scan 1: no recorded scan to increment from", "no recorded scan to increment from" in r, r)
txn("scan_set = T1_NO00 ;\n", 0, "scan_set= a search among 10")
for want in [10, 3, 4]:
    if want != 10:
        txn("scan_set = next ;\n", 0, "scan_set=next")
    r = scan_set_q()
    ok("scan_set= search, next: scan %d" % want, r.startswith("!scan_set ? 0 : %d : t1_no%04d : " % (want, want)), r)
# a scan's recording deleted since (delete=, its rows free for the next
# scan): disk2file= and scan_check? refuse it, they do not read the rows
txn("delete = t1_no0010 ;\n", 0, "delete= scan 10's recording")
txn("scan_set = 10 ;\n", 0, "scan_set=10, the scan whose recording was deleted")
r = txn("disk2file = %s/gone.m5a : : : w ;\n" % tdir, 6, "disk2file= of a deleted recording")
ok("disk2file= of a deleted recording: refused, no file", "was deleted" in r and not os.path.exists(tdir + "/gone.m5a"), r)
r = txn("scan_check?\n", 6, "scan_check? of a deleted recording")
ok("scan_check? of a deleted recording says so", "was deleted" in r, r)
fs.close()
chk.done()
PY
echo "$OUT"
check "scan_set forms, disk2file and reset=abort (failed: $(grep -c '^FAILED' <<<"$OUT"))" test "$RC" = 0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
run fsck.recfs -n "$PACK"
check "fsck clean (exit $RC)" test "$RC" = 0
finish
