#!/bin/bash
# bench/daemon.sh: recfsd as a station runs it.
#
#  1. Scan-switch gap: over one continuous gen:counter UDP stream at each
#     rate, back-to-back scans of -s seconds ("record=off;record=on:NEXT;"
#     on one line); the scans concatenated must be one unbroken run of
#     counter blocks.  Printed: the datagrams missing between scans (target
#     0), and those dropped inside scans.
#  2. record=on to first datagram: recfsd's own measure (metric
#     recfsd_scan_start_latency_seconds: from the statement handled to the
#     scan's first datagram in the ring), over every scan of step 1 at the
#     lowest rate; median and max.  Target: median under 1 ms.
#  3. 1, 2 and 4 inputs at the same total rate: the rate recorded, the
#     datagrams sent that no recording holds, and recfsd's CPU per GB,
#     against recfs-record with one input on the same members (same rate,
#     same stream).
#
# Usage: bench/daemon.sh [options]
#   -R "RATES"   step 1 rates in bytes/s (default "200M 500M 1G")
#   -s SECONDS   scan length (default 0.5), -k N scans per rate (default 20)
#   -r RATE      step 3 total rate (default 400M), -t SECONDS its length (10)
#   -n N         file members (default 4), in -d DIR (default /var/tmp)
#   -c TX:RX     CPU lists for the senders and the receiver (default 0:1-LAST,
#                "none" to leave them unpinned; as bench/udp.sh)
#   -T BPS       disk-bound: the members become loop devices (direct I/O)
#                whose writes the cgroup-v1 blkio controller throttles to BPS
#                bytes/s each; step 3 then also runs fio (one libaio job per
#                member, 1M blocks, depth 4) on them, and the recorders run
#                in that cgroup too (run as root)
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=${RECFS_BIN:-$PWD/${BUILD:-build}/bin}
RATES="200M 500M 1G" SCAN=0.5 K=20 RATE3=400M T3=10 N=4 DIR=/var/tmp THROTTLE=""
CPUS=$([ "$(nproc)" -ge 2 ] && echo "0:1-$(($(nproc) - 1))" || echo none)
while getopts "R:s:k:r:t:n:d:c:T:h" o; do
	case $o in
	R) RATES=$OPTARG ;; s) SCAN=$OPTARG ;; k) K=$OPTARG ;; r) RATE3=$OPTARG ;; t) T3=$OPTARG ;;
	n) N=$OPTARG ;; d) DIR=$OPTARG ;; c) CPUS=$OPTARG ;; T) THROTTLE=$(bytes "$OPTARG") ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 1 ;;
	esac
done
PIN_TX="" PIN_RX=""
if [ "$CPUS" != none ]; then
	PIN_TX="taskset -c ${CPUS%%:*}" PIN_RX="taskset -c ${CPUS#*:}"
fi
make -s "$BIN/recfsd" "$BIN/recfs-record" "$BIN/recfs-play" >/dev/null || exit 1

TMP=$(mktemp -d "$DIR/recfs-daemonbench.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	throttle_undo
	rm -rf "$TMP"
}
trap cleanup EXIT
top=0
for r in $RATES $RATE3; do b=$(bytes "$r"); [ "$b" -gt "$top" ] && top=$b; done
span=$(python3 -c "import sys; print(int(max(1.5 * $K * $SCAN + 3, $T3 + 3)))")
per=$((top * span / N * 12 / 10 + (256 << 20)))
echo "writing $N members of $((per >> 20)) MiB in $DIR first"
file_members "$N" $((per >> 20))
if [ -n "$THROTTLE" ]; then
	throttle_members recfs-daemonbench "$THROTTLE" write
	echo "disk-bound: $N loop devices, writes throttled to $((THROTTLE / 1000000)) MB/s each"
fi
PACK=$(IFS=,; echo "${MEM[*]}")
fresh() { "$BIN/mkfs.recfs" -f -q "$PACK"; }
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), kernel $(uname -r); CPUs sender:receiver $CPUS"

# start_d ARGS...: recfsd in the background; sets DPID, CTL, MX
start_d() {
	rm -f "$TMP/d.out" "$TMP/d.err"
	$PIN_RX "${IN_CG[@]}" "$BIN/recfsd" -l 127.0.0.1:0 -m 127.0.0.1:0 "$@" "$PACK" >"$TMP/d.out" 2>"$TMP/d.err" &
	DPID=$!
	PIDS+=($DPID)
	local i
	for ((i = 0; i < 400; i++)); do grep -q '^ready ' "$TMP/d.out" 2>/dev/null && break; sleep 0.05; done
	CTL=$(sed -n 's/.*control=\([^ ]*\).*/\1/p' "$TMP/d.out")
	MX=$(sed -n 's/.*metrics=\([^ ]*\).*/\1/p' "$TMP/d.out")
	[ -n "$CTL" ] || { cat "$TMP/d.err"; exit 1; }
}
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; } # clock ticks
TICK=$(getconf CLK_TCK)

echo
echo "1. scan-switch gap: $K back-to-back scans of $SCAN s per rate"
printf "%8s %8s %7s %12s %12s %9s\n" "rate" "MB/s" scans "between" "dropped" "blocks"
LAT=""
for r in $RATES; do
	fresh
	P=$(free_port)
	start_d -i "udp:127.0.0.1:$P" -b 512M
	$PIN_TX "$BIN/recfs-play" -q --gen counter --rate "$(bytes "$r")" \
		--duration "$(python3 -c "print(3 * $K * $SCAN + 10)")" --udp "127.0.0.1:$P" &
	SPID=$!
	PIDS+=($SPID)
	sleep 0.5
	python3 - tests/tools "$CTL" "$K" "$SCAN" "$MX" "$TMP/elapsed" >"$TMP/lat" <<'PY'
import sys, time, urllib.request
sys.path.insert(0, sys.argv[1])
from vsi import VSI, split
v = VSI(*split(sys.argv[2]))
k, s, mx = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
t0 = time.monotonic()
def lat():
    t = urllib.request.urlopen("http://%s/metrics" % mx).read().decode()
    return [l.split()[-1] for l in t.splitlines() if l.startswith("recfsd_scan_start_latency_seconds{")][0]
assert v.cmd("record=on:g0000") == "!record = 0 ;"
for i in range(1, k):
    time.sleep(s)
    print(lat())
    r = v.line("record=off;record=on:g%04d;" % i)
    # off answers 1 (initiated, as jive5ab), the next scan's on 0
    assert r == "!record = 1 ; !record = 0 ;", r
time.sleep(s)
print(lat())
assert v.cmd("record=off") == "!record = 1 ;"
open(sys.argv[6], "w").write("%f\n" % (time.monotonic() - t0))
PY
	# the sender outlasts the scans (each takes its length plus a scrape
	# and a round trip); stopped once the last one is off
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	kill -TERM "$DPID"; wait "$DPID"
	[ -z "$LAT" ] && LAT=$(cat "$TMP/lat")
	# the scans concatenated, streamed: each 8 KiB block starts with its serial
	read -r between blocks < <(for ((i = 0; i < K; i++)); do "$BIN/recfs" cat "$PACK" "$(printf g%04d $i)"; done |
		python3 -c '
import sys
B = 8192
f = sys.stdin.buffer
gap = n = 0
last = None
while True:
    d = f.read(B * 1024)
    if not d:
        break
    for k in range(0, len(d), B):
        s = int.from_bytes(d[k:k + 8], "little")
        if last is not None and s != last + 1:
            gap += s - last - 1
        last = s
        n += 1
print(gap, n)')
	dropped=$("$BIN/recfs" ls --json "$PACK" | python3 -c 'import json,sys; print(sum(r["dropped"] for r in json.load(sys.stdin)))')
	mbs=$(python3 -c "print(int($blocks * 8192 / $(cat "$TMP/elapsed") / 1e6))")
	printf "%8s %8s %7s %12s %12s %9s\n" "$r" "$mbs" "$K" "$between" "$dropped" "$blocks"
done
echo "(between: counter blocks missing where one scan ends and the next begins, target 0; dropped: inside scans)"

echo
echo "2. record=on to first datagram (recfsd's own clock, $K scans at the first rate)"
python3 - <<PY
v = sorted(float(x) * 1e3 for x in """$LAT""".split())
print("median %.3f ms, max %.3f ms over %d scans (target: median < 1 ms)" % (v[len(v) // 2], v[-1], len(v)))
PY

echo
echo "3. inputs at $RATE3 in total for $T3 s: recorded rate and CPU per GB"
printf "%-22s %10s %10s %10s %10s\n" "" "MB/s" "dropped" "missing" "CPU s/GB"
total=$(bytes "$RATE3")
run3() { # N: recfsd with N inputs, each at total/N
	local n=$1 args=() ports=() i
	fresh
	for ((i = 0; i < n; i++)); do ports[i]=$(free_port); args+=(-i "udp:127.0.0.1:${ports[i]}"); done
	start_d "${args[@]}" -b $((512 / n))M
	python3 tests/tools/vsi.py "$CTL" "record=on:m$n" >/dev/null
	local c0 t0 pl=()
	c0=$(cpu_of "$DPID"); t0=$(date +%s.%N)
	for ((i = 0; i < n; i++)); do
		$PIN_TX "$BIN/recfs-play" --gen counter --rate $((total / n)) --duration "$T3" --udp "127.0.0.1:${ports[i]}" \
			2>"$TMP/sent.$i" &
		pl+=($!)
	done
	wait "${pl[@]}"
	sleep 0.5
	python3 tests/tools/vsi.py "$CTL" "record=off" "scan_check?" >/dev/null
	local c1 t1
	c1=$(cpu_of "$DPID"); t1=$(date +%s.%N)
	kill -TERM "$DPID"; wait "$DPID"
	"$BIN/recfs" ls --json "$PACK" | python3 -c '
import json, sys
recs = json.load(sys.stdin)
b = sum(r["size"] for r in recs); lost = sum(r["dropped"] for r in recs)
cpu = (int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3])
print("%-22s %10d %10d %10d %10.3f" % (sys.argv[4], b / float(sys.argv[5]) / 1e6, lost,
      int(sys.argv[6]) - b // 8192, cpu / (b / 1e9) if b else 0))' \
		"$c0" "$c1" "$TICK" "recfsd, $n input(s)" "$T3" "$(sent "$TMP"/sent.*)"
	rm -f "$TMP"/sent.*
}
sent() { cat "$@" | sed -n 's/.*sent \([0-9]*\) datagrams.*/\1/p' | awk '{s += $1} END {print s + 0}'; }
# the reference: recfs-record, one input, the same stream
fresh
P=$(free_port)
$PIN_RX "${IN_CG[@]}" "$BIN/recfs-record" -q -b 512M -i "udp:127.0.0.1:$P" --stats-json "$TMP/rec.json" "$PACK" ref 2>/dev/null &
RPID=$!
PIDS+=($RPID)
wait_bound "$P"
$PIN_TX "$BIN/recfs-play" --gen counter --rate "$total" --duration "$T3" --udp "127.0.0.1:$P" 2>"$TMP/sent.0"
sleep 0.5
kill -INT "$RPID"; wait "$RPID"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); c = j["cpu"]; d = j["datagrams"]
print("%-22s %10d %10d %10d %10.3f" % ("recfs-record, 1 input", j["bytes"] / float(sys.argv[2]) / 1e6,
      d["dropped_ring_full"] + d["dropped_kernel"], int(sys.argv[3]) - j["bytes"] // 8192,
      (c["user_s"] + c["system_s"]) / (j["bytes"] / 1e9)))' "$TMP/rec.json" "$T3" "$(sent "$TMP/sent.0")"
rm -f "$TMP"/sent.*
for n in 1 2 4; do run3 "$n"; done
if [ -n "$THROTTLE" ]; then
	# the members' own ceiling: fio on the same throttled devices
	args=()
	for l in "${LOOPS[@]}"; do args+=(--name="$(basename "$l")" --filename="$l"); done
	"${IN_CG[@]}" fio --output-format=json --output="$TMP/fio.json" --rw=write --bs=1M --direct=1 \
		--ioengine=libaio --iodepth=4 --time_based --runtime="$T3" --offset=64M "${args[@]}" >/dev/null
	python3 -c '
import json, sys
bw = sum(j["write"]["bw_bytes"] for j in json.load(open(sys.argv[1]))["jobs"])
print("%-22s %10d" % ("fio, all members", bw / 1e6))' "$TMP/fio.json"
fi
echo "(MB/s over the sending time; dropped: counted by the recorder (ring full, kernel); missing: datagrams"
echo " sent and not in a recording, dropped or not (target 0); CPU: the recorder's user+system per GB recorded)"
