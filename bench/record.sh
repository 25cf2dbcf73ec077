#!/bin/bash
# bench/record.sh: recfs-record against fio on the same members, in one run.
#
# For each queue depth: fio writes every member at once (one job per
# member, bs = chunk, direct=1, ioengine=libaio, that iodepth) over exactly
# the blocks the recording will use, then recfs-record records gen:counter
# at full speed with --queue-depth that depth.  Printed: both throughputs,
# both CPU seconds per GB (user+system of the whole process, /usr/bin/time),
# and the ratios.  Targets (the brief): throughput >= 0.97 x fio, CPU per
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
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=${RECFS_BIN:-$PWD/${BUILD:-build}/bin}
MEMBERS_ARG="" N=4 PER=1G CHUNK=1M DEPTHS=4 BUF=256M REPEAT=1 DIR=/var/tmp
while getopts "m:n:s:c:Q:b:r:d:h" o; do
	case $o in
	m) MEMBERS_ARG=$OPTARG ;; n) N=$OPTARG ;; s) PER=$OPTARG ;; c) CHUNK=$OPTARG ;;
	Q) DEPTHS=$OPTARG ;; b) BUF=$OPTARG ;; r) REPEAT=$OPTARG ;; d) DIR=$OPTARG ;;
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
trap 'rm -rf "$TMP"' EXIT
if [ -n "$MEMBERS_ARG" ]; then
	PACK=$MEMBERS_ARG
	IFS=, read -r -a MEM <<<"$PACK"
	N=${#MEM[@]}
else
	MEM=()
	for ((i = 0; i < N; i++)); do
		f=$TMP/m$i.img
		# written once in full, so fio and the recorder both overwrite
		# allocated blocks (no first-write allocation cost for either)
		dd if=/dev/zero of="$f" bs=1M count=$(((PER_B >> 20) + 128)) oflag=direct status=none
		MEM+=("$f")
	done
	PACK=$(IFS=,; echo "${MEM[*]}")
fi
"$BIN/mkfs.recfs" -f -q -c "$CHUNK" "$PACK" || exit 1
# member order is the pack's; the data region starts at the same offset on all
DOFF=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(4096), 144)[0])' "${MEM[0]}")
TOTAL=$((PER_B * N))

echo "bench/record.sh: $N members ($([ -n "$MEMBERS_ARG" ] && echo "$PACK" || echo "files in $DIR")), $((PER_B >> 20)) MiB each, chunk $CHUNK, ring $BUF"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/{printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
printf "%5s %12s %12s %8s %12s %12s %8s\n" depth "fio MB/s" "rec MB/s" ratio "fio cpu/GB" "rec cpu/GB" ratio
RES=$TMP/results
: >"$RES"
for ((rep = 0; rep < REPEAT; rep++)); do
	for Q in $DEPTHS; do
		jobs=()
		for ((i = 0; i < N; i++)); do
			jobs+=(--name="m$i" --filename="${MEM[$i]}" --offset="$DOFF" --size="$PER_B")
		done
		/usr/bin/time -f "%U %S" -o "$TMP/fio.time" fio --output-format=json --output="$TMP/fio.json" \
			--group_reporting --rw=write --bs="$CHUNK_B" --direct=1 --ioengine=libaio \
			--iodepth="$Q" "${jobs[@]}" || exit 1
		"$BIN/recfs" rm "$PACK" bench >/dev/null 2>&1
		/usr/bin/time -f "%U %S" -o "$TMP/rec.time" "$BIN/recfs-record" -q -b "$BUF" -Q "$Q" \
			-i gen:counter --size "$TOTAL" --stats-json "$TMP/rec.json" "$PACK" bench 2>"$TMP/rec.err" ||
			{ cat "$TMP/rec.err" >&2; exit 1; }
		python3 - "$TMP" "$Q" "$TOTAL" >>"$RES" <<'PY'
import json, sys
d, q, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
f = json.load(open(d + "/fio.json"))["jobs"][0]["write"]
fio_bw = f["bw_bytes"]
fio_cpu = sum(map(float, open(d + "/fio.time").read().split()[-2:]))
r = json.load(open(d + "/rec.json"))
rec_bw = r["rate_bytes_per_s"]
rec_cpu = sum(map(float, open(d + "/rec.time").read().split()[-2:]))
gb = total / 1e9
print(q, fio_bw, rec_bw, fio_cpu / gb, rec_cpu / gb)
PY
		tail -1 "$RES" | awk '{printf "%5d %12.0f %12.0f %8.3f %12.3f %12.3f %8.3f\n", $1, $2/1e6, $3/1e6, $3/$2, $4, $5, ($4 > 0 ? $5/$4 : 0)}'
	done
done
echo "median per depth (targets: throughput ratio >= 0.97, CPU ratio <= 1.25):"
python3 - "$RES" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    q, a, b, c, d = line.split()
    rows.setdefault(int(q), []).append((float(a), float(b), float(c), float(d)))
for q in sorted(rows):
    v = rows[q]
    tr = st.median(b / a for a, b, c, d in v)
    cr = st.median(d / c for a, b, c, d in v if c > 0)
    print("depth %d: fio %.0f MB/s, recfs-record %.0f MB/s, throughput ratio %.3f %s; "
          "CPU %.3f vs %.3f s/GB, ratio %.3f %s" % (
        q, st.median(a for a, *_ in v) / 1e6, st.median(b for _, b, *_ in v) / 1e6, tr,
        "PASS" if tr >= 0.97 else "below target",
        st.median(c for *_, c, _ in v), st.median(d for *_, d in v), cr,
        "PASS" if cr <= 1.25 else "above target"))
PY
