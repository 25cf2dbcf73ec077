#!/bin/bash
# Queries do not walk the bitmap (issue 15, item 16): on a 2 x 15 TiB pack
# (sparse files: 15.7 M rows of 1 MiB chunks), status? and dir_info? answer
# in well under a millisecond, a record=on is not delayed by 8 clients
# polling status? (it took 4.6 s when every status? walked the bitmap for
# 19 ms), and the free-space figures stay exact through a scan.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6i: free space kept, not walked"

size=15T
truncate -s $size "$T_DIR/probe" 2>/dev/null || size=1T
rm -f "$T_DIR/probe"
make_members 2 $size
check "mkfs on 2 x $size sparse files" mkfs.recfs -q "$PACK"
port=$(free_port)
check "recfsd" start_recfsd -i "udp:127.0.0.1:$port" --buffer 16M -m 127.0.0.1:0 "$PACK"

# status? and dir_info? round trips, 200 each
out=$(python3 -c '
import sys, time
sys.path.insert(0, sys.argv[1])
from vsi import VSI, split
v = VSI(*split(sys.argv[2]))
for q in ("status?", "dir_info?"):
    v.cmd(q)
    t = time.monotonic()
    for i in range(200):
        v.cmd(q)
    print("%s %.3f" % (q, (time.monotonic() - t) / 200 * 1e3))
' "$(dirname "$0")/../tools" "$RD_CTL")
echo "round trips (ms): $out"
for q in status dir_info; do
	ms=$(awk -v q="$q?" '$1 == q {print $2}' <<<"$out")
	check "$q? answers in $ms ms on average (under 5 ms)" awk -v v="$ms" 'BEGIN{exit !(v != "" && v < 5)}'
done

# record=on while 8 clients poll status?
out=$(timeout 120 python3 "$(dirname "$0")/../tools/status-poll.py" "$RD_CTL" 8 1 polled)
echo "$out"
on=$(sed -n 's/^record_on_s \([0-9.]*\) .*/\1/p' <<<"$out")
check "record=on beside 8 status? pollers answered 0 in ${on:-?} s (under 1 s)" \
	awk -v v="$on" -v o="$out" 'BEGIN{exit !(v != "" && v < 1 && o ~ /reply !record = 0 ; !record = 1 ;/)}'

# a scan: the figures before, during and after agree with the recordings
cap=$(recfs info "$PACK" | sed -n 's/^capacity:.*(\([0-9]*\) bytes)/\1/p')
expect_reply "dir_info? before: all free" "dir_info?" "!dir_info \\? 0 : 0 : 0 : $cap : $cap ;"
expect_reply "record=on" "record=on:s2" '!record = 0 ;'
sleep 0.3
check "datagrams sent 0.3 s after record=on" recfs-play -q --gen counter --size $((8192 * 400)) --rate 50M --udp "127.0.0.1:$port"
check "recfsd took them" wait_drained "$port"
lat=$(curl -s "http://$RD_MX/metrics" | awk '$1 ~ /^recfsd_scan_start_latency_seconds/ {print $2}')
check "start latency counts from record=on's arrival ($lat s >= 0.3)" awk -v v="$lat" 'BEGIN{exit !(v >= 0.3 && v < 30)}'
expect_reply "record=off" "record=off" '!record = 1 ;'
check "scan_check? once sealed" grep -q '^!scan_check ? 0 : 2 : s2 : raw : 0 : .* : 8192 : 1 : ' <<<"$(scan_checked)"
alloc=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; print(sum(r["allocated"] for r in json.load(sys.stdin)))')
check "rows back at seal: the scans hold $alloc bytes" test "$alloc" -gt 0 -a "$alloc" -lt $((64 << 20))
expect_reply "dir_info? after: free is capacity less the recordings' rows" "dir_info?" \
	"!dir_info \\? 0 : 1 : $((8192 * 400)) : $cap : $((cap - alloc)) ;"
scrape; free=$(metric recfsd_pack_largest_free_bytes)
check "largest free extent in the metrics ($free)" test "$free" = $((cap - alloc))
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
finish
