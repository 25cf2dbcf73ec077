#!/bin/bash
# bench/udp.sh: the highest UDP rate recfs-record holds with zero loss.
#
# Over loopback, recfs-play --gen vdif sends 8032-byte VDIF frames at rising
# rates.  At each rate, first a bare recvmmsg-and-discard receiver (the
# ceiling, build/bench/recfs-udpsink) and then recfs-record --format vdif
# onto a pack of file members receive the same stream for the step's
# duration.  Zero loss: every datagram sent was received (kernel socket
# drops included), none dropped for a full ring, no VDIF frame missing.
# Both receivers run SCHED_FIFO when permitted (the recorder's default).
# Printed: per step both results, with each receiver's CPU (user+system of
# the whole process) per GB received; at the end the highest zero-loss rate
# each reached (the rate the sender achieved, which on a small machine falls
# short of the target at the top) and their ratio (target: recorder >= 0.90
# x ceiling).  When a receiver lost nothing at any step, its figure is the
# sender's limit, not its own: the CPU per GB then says how close it is.
#
# Usage: bench/udp.sh [options]
#   -t SECONDS   duration of each step (default 10; the brief asks 30)
#   -R "RATES"   rates in bytes/s (default "250M 500M 1G 1500M 2G 2500M 3G 3500M 4G 4500M")
#   -n N         file members (default 4), in -d DIR (default /var/tmp)
#   -b SIZE      recorder ring buffer (default 1G)
#   -Q DEPTH     recorder queue depth (default: the recorder's)
#   -c TX:RX     CPU lists for the sender and for the receiver under test
#                (taskset; default 0:1-LAST, "none" to leave them unpinned)
# Pinning stands in for a sender on another host: over loopback the sender
# pays for delivery into the receiver's socket, and on a small machine an
# unpinned sender and receiver take CPU from each other, so the result
# would say more about the scheduler than about the receiver.
# Needs free disk for one step's data (largest rate x duration); steps that
# would not fit in half the free space are skipped.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=${RECFS_BIN:-$PWD/${BUILD:-build}/bin}
SINK=${BUILD:-build}/bench/recfs-udpsink
T=10 RATES="250M 500M 1G 1500M 2G 2500M 3G 3500M 4G 4500M" N=4 DIR=/var/tmp BUF=1G QD=""
CPUS=$([ "$(nproc)" -ge 2 ] && echo "0:1-$(($(nproc) - 1))" || echo none)
while getopts "t:R:n:d:b:Q:c:h" o; do
	case $o in
	t) T=$OPTARG ;; R) RATES=$OPTARG ;; n) N=$OPTARG ;; d) DIR=$OPTARG ;; b) BUF=$OPTARG ;;
	Q) QD="-Q $OPTARG" ;; c) CPUS=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 1 ;;
	esac
done
PIN_TX="" PIN_RX=""
if [ "$CPUS" != none ]; then
	PIN_TX="taskset -c ${CPUS%%:*}" PIN_RX="taskset -c ${CPUS#*:}"
	{ $PIN_TX true && $PIN_RX true; } 2>/dev/null ||
		{ echo "bench/udp.sh: -c $CPUS: not CPU lists this machine has" >&2; exit 1; }
fi
make -s "$SINK" "$BIN/recfs-record" "$BIN/recfs-play" >/dev/null || exit 1

TMP=$(mktemp -d "$DIR/recfs-udpbench.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
avail=$(($(df -k --output=avail "$DIR" | tail -1) * 1024))
max=0
for r in $RATES; do b=$(bytes "$r"); [ $((b * T)) -gt $max ] && [ $((b * T)) -lt $((avail / 2)) ] && max=$((b * T)); done
per=$((max / N + (512 << 20)))
# written once in full, as bench/record.sh does: a recorder writes raw
# disks, so it must not pay for the file system's block allocation (ext4
# converts unwritten extents in kernel workers, on the receiver's CPU)
echo "writing $N members of $((per >> 20)) MiB in $DIR first"
file_members "$N" $((per >> 20))
PACK=$(IFS=,; echo "${MEM[*]}")
"$BIN/mkfs.recfs" -f -q "$PACK" || exit 1

sent_of() { sed -n 's/.*sent \([0-9]*\) datagrams.*/\1/p' "$1"; }
# the rate the sender really reached, MB/s (it falls short when the CPUs are busy)
rate_of() { sed -n 's/.*sent \([0-9]*\) datagrams, .* in \([0-9.]*\) s.*/\1 \2/p' "$1" | awk '{printf "%d", $1 * 8032 / $2 / 1e6}'; }

echo "bench/udp.sh: 8032-byte VDIF frames over 127.0.0.1, $T s per step, recorder onto $N file members in $DIR, ring $BUF, CPUs sender:receiver $CPUS"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/{printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
printf "%6s | %6s %10s %7s %6s | %6s %10s %7s %8s %7s %9s %6s\n" target sent "sink recv" lost "cpu/GB" sent "rec recv" lost ringfull frames "ring max" "cpu/GB"
best_sink=0 best_rec=0 sink_ok=1 rec_ok=1 sink_cpu="" rec_cpu=""
for r in $RATES; do
	rb=$(bytes "$r")
	if [ $((rb * T)) -gt "$max" ]; then echo "$r: skipped (needs $((rb * T >> 20)) MiB of disk)"; continue; fi
	[ $sink_ok = 0 ] && [ $rec_ok = 0 ] && break
	# the ceiling
	P=$(free_port)
	$PIN_RX "$SINK" "127.0.0.1:$P" 1 >"$TMP/sink.out" &
	spid=$!; PIDS+=($spid)
	wait_bound "$P"
	$PIN_TX "$BIN/recfs-play" --gen vdif --rate "$rb" --duration "$T" --udp "127.0.0.1:$P" 2>"$TMP/play1.err"
	wait $spid
	s_sent=$(sent_of "$TMP/play1.err")
	s_recv=$(awk '/^datagrams/{print $2}' "$TMP/sink.out")
	s_cpu=$(awk '/^datagrams/{printf "%.3f", $8 / ($4 ? $4 : 1) * 1e9}' "$TMP/sink.out")
	s_lost=$((s_sent - s_recv))
	# the recorder
	P=$(free_port)
	$PIN_RX "$BIN/recfs-record" -q $QD -b "$BUF" -i "udp:127.0.0.1:$P" --format vdif -d $((T + 30)) \
		--stats-json "$TMP/rec.json" "$PACK" step 2>"$TMP/rec.err" &
	rpid=$!; PIDS+=($rpid)
	wait_bound "$P"
	$PIN_TX "$BIN/recfs-play" --gen vdif --rate "$rb" --duration "$T" --udp "127.0.0.1:$P" 2>"$TMP/play2.err"
	sleep 1
	kill -INT $rpid
	wait $rpid
	r_sent=$(sent_of "$TMP/play2.err")
	read -r r_recv r_full r_kern r_frames r_ringmax r_cpu < <(python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); d=j["datagrams"]; v=j["vdif"]; c=j["cpu"]
print(d["received"], d["dropped_ring_full"], d["dropped_kernel"], v["frames_lost"], j["ring_max_fill_bytes"],
      "%.3f" % ((c["user_s"] + c["system_s"]) / max(j["bytes"], 1) * 1e9))' "$TMP/rec.json")
	r_lost=$((r_sent - r_recv))
	"$BIN/recfs" rm "$PACK" step >/dev/null
	s_rate=$(rate_of "$TMP/play1.err")
	r_rate=$(rate_of "$TMP/play2.err")
	printf "%6d | %6d %10d %7d %6s | %6d %10d %7d %8d %7d %9s %6s\n" $((rb / 1000000)) "$s_rate" "$s_recv" "$s_lost" \
		"$s_cpu" "$r_rate" "$r_recv" "$r_lost" "$r_full" "$r_frames" "$((r_ringmax >> 20)) MiB" "$r_cpu"
	# a step counts at the rate the sender reached
	if [ $sink_ok = 1 ] && [ "$s_lost" = 0 ]; then
		[ "$s_rate" -gt "$best_sink" ] && best_sink=$s_rate && sink_cpu=$s_cpu
	else
		sink_ok=0
	fi
	if [ $rec_ok = 1 ] && [ "$r_lost" = 0 ] && [ "$r_full" = 0 ] && [ "$r_frames" = 0 ]; then
		[ "$r_rate" -gt "$best_rec" ] && best_rec=$r_rate && rec_cpu=$r_cpu
	else
		rec_ok=0
	fi
done
echo "(rates in MB/s; 'sent' is the rate the sender reached; lost = sent - received; cpu/GB: CPU seconds per GB received)"
echo "highest zero-loss rate reached: bare receiver $best_sink MB/s (${sink_cpu:-?} CPU s/GB), recfs-record $best_rec MB/s (${rec_cpu:-?} CPU s/GB)"
[ $sink_ok = 1 ] && echo "the bare receiver lost nothing at any step: its figure is the sender's limit"
[ $rec_ok = 1 ] && echo "recfs-record lost nothing at any step: its figure is the sender's limit"
python3 -c 'import sys; s,r=int(sys.argv[1]),int(sys.argv[2]); print("ratio %.3f (target >= 0.90): %s" % (r/s, "PASS" if r >= 0.9*s else "below target") if s else "no zero-loss step for the bare receiver")' "$best_sink" "$best_rec"
