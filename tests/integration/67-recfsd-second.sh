#!/bin/bash
# recfsd: a scan that starts at a VDIF second.  record=START:DURATION:GB:SCAN (Mark6 cplane), START a
# VEX time (Mark6's start time), opens the recording at the first frame 0 of
# a second at or after START: a time already past starts at the next second
# boundary, a future one at exactly that second.  Frames before it are idle.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "67: recfsd starts scans at a VDIF second boundary"

make_members 2 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd -F vdif ready" start_recfsd -F vdif -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
expect_reply "a day past the year's end is refused" "record=2026y366d00h00m00s:::x" "!record = 8 : '2026y366d00h00m00s' is not on, off, nthread, mk6 or a start time.*"
expect_reply "seconds past 59 are refused" "record=2026y001d00h00m60s:::x" '!record = 8 : .*start time.*'
expect_reply "a short field is refused" "record=2026y1d00h00m00s:::x" '!record = 8 : .*start time.*'
expect_reply "trailing junk is refused" "record=2026y001d00h00m00sx:::x" '!record = 8 : .*start time.*'

# 1000 frames a second of 1032 bytes, VDIF time = the wall clock
recfs-play -q --gen vdif --frame-size 1032 --frame-rate 1000 --rate 1032000 --duration 30 --udp "127.0.0.1:$port" &
ppid=$!
cleanup_add "kill $ppid"
sleep 0.3
vex() { date -u -d "@$1" +%Yy%jd%Hh%Mm%Ss; }
# a start in the past: the next second boundary
expect_reply "record= a past start time" "record=$(vex $(($(date +%s) - 100))):::past" '!record = 0 ;'
sleep 1.6
expect_reply "record=off" "record=off" '!record = 1 ;'
# a start 2 to 3 s ahead: that very second (cancelled 1 s later, before it)
t=$(($(date +%s) + 3))
expect_reply "record= a start 2 s ahead" "record=$(vex "$t"):::future" '!record = 0 ;'
sleep 1
expect_reply "record=off before it started: an empty scan" "record=off" '!record = 1 ;'
t=$(($(date +%s) + 2))
expect_reply "record= a start 2 s ahead, again" "record=$(vex "$t"):::future2" '!record = 0 ;'
sleep 3.5
expect_reply "record=off" "record=off" '!record = 1 ;'
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
recfs cat "$PACK" past >"$T_DIR/past.vdif"
recfs cat "$PACK" future2 >"$T_DIR/future2.vdif"
frames() {
	python3 - "$1" "${2:-0}" <<'PY'
import calendar, struct, sys
d = open(sys.argv[1], "rb").read()
F = 1032
assert d and len(d) % F == 0, "length %d" % len(d)
hs = [struct.unpack_from("<II", d, k) for k in range(0, len(d), F)]
ep = (hs[0][1] >> 24) & 63
t0 = calendar.timegm((2000 + ep // 2, 7 if ep % 2 else 1, 1, 0, 0, 0)) + (hs[0][0] & 0x3fffffff)
fn = [h[1] & 0xffffff for h in hs]
sec = [h[0] & 0x3fffffff for h in hs]
seq = [s * 1000 + f for s, f in zip(sec, fn)]
assert fn[0] == 0, "first frame number %d" % fn[0]
bad = [i for i in range(1, len(seq)) if seq[i] != seq[i - 1] + 1]
assert not bad, "breaks at %s" % bad[:5]
want = int(sys.argv[2])
assert not want or t0 == want, "starts at %d, not %d" % (t0, want)
print("%d frames from frame 0 of %d" % (len(seq), t0))
PY
}
run frames "$T_DIR/past.vdif"
check "past start: the recording begins with a frame 0, then every frame in order ($OUT)" test "$RC" = 0
run frames "$T_DIR/future2.vdif" "$t"
check "future start: it begins with frame 0 of exactly that second ($OUT)" test "$RC" = 0
recfs ls -l "$PACK"
check "the scan cancelled before its second holds nothing" \
	eval '! recfs ls "$PACK" | grep -qw future || recfs ls -l "$PACK" | grep -Eq "^future +0 "'
finish
