#!/bin/bash
# recfsd: 100 back-to-back scans of 0.2 s cut out of one continuous
# gen:counter UDP stream.  The scans, concatenated, are the stream byte for
# byte from the first scan's first datagram to the last one's last: no
# datagram lost or duplicated at a switch, each scan whole datagrams.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "60: recfsd back-to-back scans over one continuous stream"

make_members 4 128M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd starts and says it is ready" start_recfsd -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
expect_reply "a start time on a raw stream is refused" "record=2026y001d00h00m00s:::s" "!record = 6 : a start time needs --format vdif.*"
check "ready line names the control port and the input" grep -q "control=127.0.0.1:[0-9]* inputs=0=udp:127.0.0.1:$port" <<<"$RD_READY"
check "input bound when ready" test -n "$(ss -Hlun "sport = :$port")"

# the stream: 8192-byte counter blocks, one a datagram, 10 MB/s, 26 s
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 10M --duration 26 &
ppid=$!
cleanup_add "kill $ppid"
sleep 1 # idle datagrams first: counted, not recorded

python3 - "$(dirname "$0")/../tools" "$RD_CTL" >"$T_DIR/replies" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
from vsi import VSI, split
v = VSI(*split(sys.argv[2]))
print(v.cmd("record=on:s000"))
for i in range(1, 100):
    time.sleep(0.2)
    print(v.line("record=off;record=on:s%03d;" % i))
time.sleep(0.2)
print(v.cmd("record=off"))
PY
check "driver ran" test "$(wc -l <"$T_DIR/replies")" = 101
check "record=on answered 0" test "$(head -n 1 "$T_DIR/replies")" = "!record = 0 ;"
check "every switch answered 1 (off initiated) and 0" test "$(sed -n '2,99p' "$T_DIR/replies" | grep -cvxE '!record = 1 ; ?!record = 0 ;')" = 0
check "record=off answered 1, as jive5ab" test "$(tail -n 1 "$T_DIR/replies")" = "!record = 1 ;"
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
stop_recfsd
check "SIGTERM: recfsd exits 0 (log: $(tr '\n' ' ' <"$RD_LOG"))" test "$RD_RC" = 0

recfs ls --json "$PACK" >"$T_DIR/ls.json"
python3 - "$T_DIR/ls.json" <<'PY' >"$T_DIR/scans"
import json, sys
recs = {r["name"]: r for r in json.load(open(sys.argv[1]))}
for i in range(100):
    r = recs.get("s%03d" % i)
    print("s%03d" % i, r["size"] if r else -1, r["state"] if r else "missing",
          r["dropped"] if r else -1, r["packets"] if r else -1)
PY
check "all 100 scans are sealed recordings" test "$(awk '$3=="sealed"' "$T_DIR/scans" | wc -l)" = 100
check "every scan is whole 8192-byte datagrams" test "$(awk '$2 % 8192 != 0 || $2 <= 0' "$T_DIR/scans" | wc -l)" = 0
check "no scan dropped a datagram" test "$(awk '$4 != 0' "$T_DIR/scans" | wc -l)" = 0
check "every datagram a scan received is in it" test "$(awk '$5 * 8192 != $2' "$T_DIR/scans" | wc -l)" = 0

# the scans in order are one run of counter blocks: serials consecutive
for i in $(seq -f %03g 0 99); do recfs cat "$PACK" "s$i"; done >"$T_DIR/all"
run python3 - "$T_DIR/all" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
B = 8192
assert len(d) % B == 0, "not whole blocks"
first = int.from_bytes(d[0:8], "little")
tmpl = bytes(range(256)) * (B // 256 + 1)
for k in range(len(d) // B):
    blk = d[k * B:(k + 1) * B]
    s = int.from_bytes(blk[:8], "little")
    if s != first + k:
        print("break at block %d: serial %d, want %d" % (k, s, first + k)); sys.exit(1)
    if blk[8:] != tmpl[:B - 8]:
        print("bad counter bytes in block %d" % k); sys.exit(1)
print("%d blocks, serials %d..%d, consecutive" % (len(d) // B, first, first + len(d) // B - 1))
PY
check "the scans concatenated are the stream ($OUT)" test "$RC" = 0
run fsck.recfs -n "$PACK"
check "fsck clean after the daemon (exit $RC)" test "$RC" = 0
finish
