#!/bin/bash
# bench/record.sh: recfs-record against fio on the same members, in one run.
#
# For each queue depth: fio writes every member at once (one job per
# member, bs = chunk, direct=1, ioengine=libaio, that iodepth) over exactly
# the blocks the recording will use, then recfs-record records gen:counter
# at full speed with --queue-depth that depth.  Printed: both throughputs,
# both CPU seconds per GB (user+system of the whole process, /usr/bin/time),
# and the ratios, and the recorder's commits and its slowest.  Targets (the brief): throughput >= 0.97 x fio, CPU per
# GB <= 1.25 x fio.
#
# Usage: bench/record.sh [options]
#   -m a,b,c     members to use (DESTROYED: formatted with mkfs.recfs -f)
#   -n N         number of file members in a temporary folder (default 4)
#   -s SIZE      bytes written per member (default 1G)
#   -c CHUNK     chunk size (default 1M)
#   -Q "D ..."   queue depths to run (default 4, the recorder's default)
#   -b SIZE      recorder ring buffer (default 256M)
#   -r N         repeat each depth N times (default 1)
#   -d DIR       folder for the file members (default /var/tmp)
#   -C "S ..."   recorder commit intervals to run (default 1, the default)
#   -T BPS       disk-bound: the file members become loop devices (direct
#                I/O) whose writes the cgroup-v1 blkio controller throttles
#                to BPS bytes/s each, and fio and the recorder both run in
#                that cgroup; fio then also runs with an fdatasync per member
#                every (commit interval x fio's rate) bytes: the durability
#                ceiling the recorder is held to (run as root)
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=${RECFS_BIN:-$PWD/${BUILD:-build}/bin}
MEMBERS_ARG="" N=4 PER=1G CHUNK=1M DEPTHS=4 BUF=256M REPEAT=1 DIR=/var/tmp INTERVALS=1 THROTTLE=""
while getopts "m:n:s:c:Q:b:r:d:C:T:h" o; do
	case $o in
	m) MEMBERS_ARG=$OPTARG ;; n) N=$OPTARG ;; s) PER=$OPTARG ;; c) CHUNK=$OPTARG ;;
	Q) DEPTHS=$OPTARG ;; b) BUF=$OPTARG ;; r) REPEAT=$OPTARG ;; d) DIR=$OPTARG ;;
	C) INTERVALS=$OPTARG ;; T) THROTTLE=$(bytes "$OPTARG") ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 1 ;;
	esac
done
for t in fio python3 /usr/bin/time "$BIN/recfs-record" "$BIN/mkfs.recfs" "$BIN/recfs"; do
	command -v "$t" >/dev/null || { echo "bench/record.sh: $t not found (make; make deps)" >&2; exit 1; }
done
PER_B=$(bytes "$PER")
CHUNK_B=$(bytes "$CHUNK")
PER_B=$((PER_B / CHUNK_B * CHUNK_B))

TMP=$(mktemp -d "$DIR/recfs-bench.XXXXXX")
cleanup() {
	throttle_undo
	rm -rf "$TMP"
}
trap cleanup EXIT
if [ -n "$MEMBERS_ARG" ]; then
	PACK=$MEMBERS_ARG
	IFS=, read -r -a MEM <<<"$PACK"
	N=${#MEM[@]}
else
	# written once in full, so fio and the recorder both overwrite
	# allocated blocks (no first-write allocation cost for either)
	file_members "$N" $(((PER_B >> 20) + 128))
	PACK=$(IFS=,; echo "${MEM[*]}")
fi
if [ -n "$THROTTLE" ]; then
	[ -z "$MEMBERS_ARG" ] || { echo "bench/record.sh: -T takes file members (-n), not -m" >&2; exit 1; }
	throttle_members recfs-recordbench "$THROTTLE" write
	PACK=$(IFS=,; echo "${MEM[*]}")
fi
"$BIN/mkfs.recfs" -f -q -c "$CHUNK" "$PACK" || exit 1
# member order is the pack's; the data region starts at the same offset on all
DOFF=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(4096), 144)[0])' "${MEM[0]}")
TOTAL=$((PER_B * N))

echo "bench/record.sh: $N members ($([ -n "$MEMBERS_ARG" ] && echo "$PACK" || echo "files in $DIR")), $((PER_B >> 20)) MiB each, chunk $CHUNK, ring $BUF"
[ -n "$THROTTLE" ] && echo "disk-bound: loop devices (direct I/O), writes throttled to $((THROTTLE / 1000000)) MB/s each"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/{printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
printf "%5s %5s %10s %10s %10s %7s %7s %10s %10s %7s %8s %9s\n" depth commit "fio MB/s" "fio+sync" "rec MB/s" "/fio" "/sync" "fio cpu/GB" "rec cpu/GB" ratio commits "max ms"
RES=$TMP/results
: >"$RES"
fio_run() { # OUT [fio options]: fio on every member at once
	local out=$1 jobs=() i
	shift
	for ((i = 0; i < N; i++)); do
		jobs+=(--name="m$i" --filename="${MEM[$i]}" --offset="$DOFF" --size="$PER_B")
	done
	"${IN_CG[@]}" /usr/bin/time -f "%U %S" -o "$out.time" fio --output-format=json --output="$out.json" \
		--group_reporting --rw=write --bs="$CHUNK_B" --direct=1 --ioengine=libaio "$@" "${jobs[@]}" || exit 1
}
for ((rep = 0; rep < REPEAT; rep++)); do
	for Q in $DEPTHS; do
		for C in $INTERVALS; do
			fio_run "$TMP/fio" --iodepth="$Q"
			SYNC=0
			if [ -n "$THROTTLE" ]; then
				# an fdatasync per member every C seconds at fio's own rate
				SYNC=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["jobs"][0]["write"]["bw_bytes"]
print(max(1, int(b / int(sys.argv[3]) * float(sys.argv[2]) / int(sys.argv[4]))))' "$TMP/fio.json" "$C" "$N" "$CHUNK_B")
				fio_run "$TMP/fios" --iodepth="$Q" --fdatasync="$SYNC"
			fi
			"$BIN/recfs" rm "$PACK" bench >/dev/null 2>&1
			"${IN_CG[@]}" /usr/bin/time -f "%U %S" -o "$TMP/rec.time" "$BIN/recfs-record" -q -b "$BUF" -Q "$Q" -c "$C" \
				-i gen:counter --size "$TOTAL" --stats-json "$TMP/rec.json" "$PACK" bench 2>"$TMP/rec.err" ||
				{ cat "$TMP/rec.err" >&2; exit 1; }
			python3 - "$TMP" "$Q" "$TOTAL" "$C" "$SYNC" >>"$RES" <<'PY'
import json, sys
d, q, total, c, sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
f = json.load(open(d + "/fio.json"))["jobs"][0]["write"]
fio_bw = f["bw_bytes"]
fios_bw = json.load(open(d + "/fios.json"))["jobs"][0]["write"]["bw_bytes"] if sync else fio_bw
fio_cpu = sum(map(float, open(d + "/fio.time").read().split()[-2:]))
r = json.load(open(d + "/rec.json"))
rec_bw = r["rate_bytes_per_s"]
rec_cpu = sum(map(float, open(d + "/rec.time").read().split()[-2:]))
gb = total / 1e9
print(q, c, fio_bw, fios_bw, rec_bw, fio_cpu / gb, rec_cpu / gb, r["commits"], r["commit_max_s"])
PY
			tail -1 "$RES" | awk '{printf "%5d %5s %10.0f %10.0f %10.0f %7.3f %7.3f %10.3f %10.3f %7.3f %8d %9.1f\n", $1, $2, $3/1e6, $4/1e6, $5/1e6, $5/$3, $5/$4, $6, $7, ($6 > 0 ? $7/$6 : 0), $8, $9 * 1e3}'
		done
	done
done
echo "median per depth and interval (targets: throughput >= 0.97 x fio, CPU <= 1.25 x fio):"
python3 - "$RES" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    q, c, a, s, b, x, y = line.split()[:7]
    rows.setdefault((int(q), float(c)), []).append((float(a), float(s), float(b), float(x), float(y)))
for k in sorted(rows):
    v = rows[k]
    tr = [b / a for a, s, b, x, y in v]
    sr = [b / s for a, s, b, x, y in v]
    cr = [y / x for a, s, b, x, y in v if x > 0]
    print("depth %d, -c %g: fio %.0f, fio+fdatasync %.0f, recfs-record %.0f MB/s; of fio %.3f (%.3f-%.3f) %s, "
          "of fio+fdatasync %.3f; CPU ratio %.3f %s" % (
        k[0], k[1], st.median(a for a, *_ in v) / 1e6, st.median(s for _, s, *_ in v) / 1e6,
        st.median(b for _, _, b, *_ in v) / 1e6, st.median(tr), min(tr), max(tr),
        "PASS" if st.median(tr) >= 0.97 else "below target", st.median(sr),
        st.median(cr) if cr else 0, "PASS" if cr and st.median(cr) <= 1.25 else "above target"))
PY
