#!/bin/bash
# recfsd's /metrics, scraped with curl and parsed with the Prometheus
# project's own text parser (python3-prometheus-client): per-input and
# per-stream counters equal what was sent, idle datagrams apart, VDIF frames
# lost counted, ring, member and pack figures present and sane, the scan's
# state followed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "66: recfsd metrics, parsed by prometheus_client"
need_prometheus

make_members 3 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
pa=$(free_port) pb=$(free_port)
check "recfsd with metrics ready" start_recfsd -F vdif -i "a=udp:127.0.0.1:$pa" -i "b=udp:127.0.0.1:$pb" \
	-m 127.0.0.1:0 --buffer 16M "$PACK"
check "the ready line names the metrics port ($RD_READY)" test -n "$RD_MX"

# send PORT SEC FIRST LAST [SKIP...]: VDIF frames of thread 0, 1032 bytes
send() {
	python3 - "$@" <<'PY'
import socket, struct, sys, time
port, sec, a, b = (int(x) for x in sys.argv[1:5])
skip = {int(x) for x in sys.argv[5:]}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
F = 1032
for fn in range(a, b):
    if fn in skip:
        continue
    s.sendto(struct.pack("<IIII", sec, fn, F // 8, 1 << 26) + bytes(F - 16), ("127.0.0.1", port))
    if fn % 100 == 0:
        time.sleep(0.002)
PY
}

check "scrape before any scan" scrape_parsed
check "parsed: scans_total 0" test "$(val 'recfsd_scans_total{}')" = 0.0
check "parsed: not recording" test "$(val 'recfsd_recording{}')" = 0.0
cap=$(val 'recfsd_pack_capacity_bytes{}')
check "pack capacity is the pack's ($cap)" test "${cap%.0}" = "$(recfs info "$PACK" | sed -n 's/^capacity:.*(\([0-9]*\) bytes)/\1/p')"

send "$pa" 99 0 20 # idle: before the scan
check "recfsd took the idle datagrams" wait_drained "$pa"
expect_reply "record=on" "record=on:m1" '!record = 0 ;'
sleep 0.2
send "$pa" 100 0 1000 100 101 102 # 997 frames, 3 lost: 4 chunks, every member
check "recfsd took the scan's datagrams" wait_drained "$pa"
check "scrape while recording" scrape_parsed
check "recording 1 while the scan runs" test "$(val 'recfsd_recording{}')" = 1.0
check "scan_info names the scan and its state" test "$(val 'recfsd_scan_info{name="m1",scan="1",state="recording"}')" = 1.0
check "frames lost so far: 3" test "$(val 'recfsd_vdif_frames_lost_total{input="a",stream="a"}')" = 3.0
expect_reply "record=off" "record=off" '!record = 1 ;'
# the seal ends the scan: scrape until the scan is idle and sealed (its
# recording's rows out of the free figure), not after a fixed sleep
sealed() {
	scrape_parsed || return 1
	[ "$(val 'recfsd_scan_info{name="m1",scan="1",state="idle"}')" = 1.0 ] || return 1
	local used
	used=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(sum(r["allocated"] for r in j) if all(r["state"] == "sealed" for r in j) else -1)')
	[ "$used" -ge 0 ] && [ "$(val 'recfsd_pack_free_bytes{}')" = "$((${cap%.0} - used)).0" ]
}
for _ in $(seq 200); do sealed && break; sleep 0.1; done
check "scrape after the scan (sealed)" sealed
check "input a: 1017 datagrams (20 idle + 997)" test "$(val 'recfsd_input_datagrams_total{input="a"}')" = 1017.0
check "input b: none" test "$(val 'recfsd_input_datagrams_total{input="b"}')" = 0.0
check "idle: 20 datagrams, 20640 bytes" test "$(val 'recfsd_idle_datagrams_total{input="a",stream="a"}')/$(val 'recfsd_idle_bytes_total{input="a",stream="a"}')" = 20.0/20640.0
check "recorded: 997 frames of 1032 bytes" test "$(val 'recfsd_recorded_bytes_total{input="a",stream="a"}')" = "$((997 * 1032)).0"
check "VDIF frames lost: 3 (in the sealed scan)" test "$(val 'recfsd_vdif_frames_lost_total{input="a",stream="a"}')" = 3.0
check "nothing dropped" test "$(val 'recfsd_ring_full_dropped_datagrams_total{input="a",stream="a"}')$(val 'recfsd_input_kernel_dropped_datagrams_total{input="a"}')" = 0.00.0
check "ring size as asked, fill now 0" test "$(val 'recfsd_ring_size_bytes{input="a",stream="a"}')/$(val 'recfsd_ring_fill_bytes{input="a",stream="a"}')" = "$((16 << 20)).0/0.0"
fmax=$(val 'recfsd_ring_fill_max_bytes{input="a",stream="a"}')
check "ring fill max seen ($fmax)" awk -v v="$fmax" 'BEGIN{exit !(v > 0 && v <= 16777216)}'
for m in 0 1 2; do
	p=$(awk -v m="$m" -F, '{print $(m+1)}' <<<"$PACK")
	w=$(val "recfsd_member_writes_total{member=\"$m\",path=\"$p\"}")
	check "member $m written ($w writes), no errors" test "${w%.0}" -gt 0 -a "$(val "recfsd_member_write_errors_total{member=\"$m\",path=\"$p\"}")" = 0.0
done
len=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; print([r["size"] for r in json.load(sys.stdin) if r["name"]=="m1_a"][0])')
check "written bytes cover the recording ($len)" awk -v w="$(val 'recfsd_written_bytes_total{input="a",stream="a"}')" -v l="$len" 'BEGIN{exit !(w >= l)}'
check "scans_total 1, scan idle" test "$(val 'recfsd_scans_total{}') $(val 'recfsd_scan_info{name="m1",scan="1",state="idle"}')" = "1.0 1.0"
free=$(val 'recfsd_pack_free_bytes{}')
used=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; print(sum(r["allocated"] for r in json.load(sys.stdin)))')
check "pack free is capacity less the recordings' rows ($free)" test "${free%.0}" = "$((${cap%.0} - used))"
check "404 for another path" test "$(curl -s -o /dev/null -w '%{http_code}' "http://$RD_MX/other")" = 404
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
check "the stored loss map agrees: 3 frames lost" grep -Eq '^m1_a .* vdif +3 +0$' <<<"$(recfs ls -l "$PACK")"
finish
