#!/bin/bash
# bench/pyread.sh: a sequential read through the Python package (python/,
# issue 16) against what the members give fio, on the same members.
#
# One recording of -s bytes (gen:counter) on -n members; then, each from a
# cold cache (the members' pages dropped with POSIX_FADV_DONTNEED):
#   fio         one job per member reading its share of the data area at
#               once, 1 MiB blocks, O_DIRECT, libaio depth 4: the ceiling
#   recfs cat   the C tool to /dev/null (verifying)
#   python      pack.open(name, buffering=0).readinto(4 MiB) to the end,
#               verifying, members read with O_DIRECT (the default) and
#               through the page cache (direct=False); and verify=False
# Printed: MB/s, the ratio to fio (target >= 0.9 when disk-bound) and the
# reader's CPU (user+system) per GB read.
#
# Usage: bench/pyread.sh [options]
#   -n N      members (default 4), files in -d DIR (default /var/tmp)
#   -s SIZE   the recording (default 2G); -c CHUNK mkfs chunk size (1M)
#   -T BPS    disk-bound: the members become loop devices (direct I/O)
#             whose reads the cgroup-v1 blkio controller throttles to BPS
#             bytes/s each, and every reader runs in that cgroup (as root)
#   -r N      runs of each reader (default 3): the median is printed
#   -p PYTHON an interpreter with the package's dependencies (default
#             build/pyenv/bin/python, made by tests/integration/70)
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=${RECFS_BIN:-$PWD/${BUILD:-build}/bin}
N=4 DIR=/var/tmp SIZE=2G CHUNK=1M THROTTLE="" REPEAT=3 PY=$PWD/${BUILD:-build}/pyenv/bin/python
while getopts "n:d:s:c:T:p:r:h" o; do
	case $o in
	n) N=$OPTARG ;; d) DIR=$OPTARG ;; s) SIZE=$OPTARG ;; c) CHUNK=$OPTARG ;;
	T) THROTTLE=$(bytes "$OPTARG") ;; p) PY=$OPTARG ;; r) REPEAT=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 1 ;;
	esac
done
SIZEB=$(bytes "$SIZE")
make -s "$BIN/mkfs.recfs" "$BIN/recfs-record" "$BIN/recfs" >/dev/null || exit 1
"$PY" -c 'import xxhash' || { echo "pyread: $PY has no xxhash (run tests/run.sh 70 first, or -p)"; exit 1; }

TMP=$(mktemp -d "$DIR/recfs-pyread.XXXXXX")
cleanup() {
	throttle_undo
	rm -rf "$TMP"
}
trap cleanup EXIT
per=$((SIZEB / N * 11 / 10 + (256 << 20)))
echo "writing $N members of $((per >> 20)) MiB in $DIR first"
file_members "$N" $((per >> 20))
if [ -n "$THROTTLE" ]; then
	throttle_members recfs-pyread "$THROTTLE" read
	echo "disk-bound: $N loop devices, reads throttled to $((THROTTLE / 1000000)) MB/s each"
fi
PACK=$(IFS=,; echo "${MEM[*]}")
"$BIN/mkfs.recfs" -f -q -c "$CHUNK" "$PACK" || exit 1
"$BIN/recfs-record" -q -i gen:counter --size "$SIZEB" "$PACK" scan || exit 1
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), kernel $(uname -r)"
echo "pack: $N members, chunk $CHUNK, one recording of $SIZEB bytes; python: $("$PY" -V 2>&1)"

# cold: drop the members' cached pages (files and loop devices alike)
cold() {
	"$PY" -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "${MEM[@]}"
}
data_off=$("$PY" -c 'import struct,sys; f=open(sys.argv[1],"rb"); print(struct.unpack_from("<Q", f.read(4096), 144)[0])' "${MEM[0]}")
share=$(((SIZEB / N + (1 << 20) - 1) >> 20 << 20))

printf "%-38s %10s %8s %10s\n" "reader" "MB/s" "of fio" "CPU s/GB"
# fio: each member's share of the data area at once
args=()
for m in "${MEM[@]}"; do args+=(--name="$(basename "$m")" --filename="$m"); done
cold
"${IN_CG[@]}" fio --output-format=json --output="$TMP/fio.json" --rw=read --bs=1M --direct=1 \
	--ioengine=libaio --iodepth=4 --offset="$data_off" --size="$share" "${args[@]}" >/dev/null || exit 1
FIO=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"]
print(sum(x["read"]["io_bytes"] for x in j) / max(x["read"]["runtime"] for x in j) * 1000 / 1e6)' "$TMP/fio.json")
printf "%-38s %10.0f %8s %10s\n" "fio, all members at once" "$FIO" "1.00" "-"

# one reader, -r times: the median MB/s and CPU per GB, from its own clock and rusage
row() {
	local what=$1 out all="" k
	shift
	for ((k = 0; k < REPEAT; k++)); do
		cold
		out=$("${IN_CG[@]}" "$@") || { echo "$what: failed"; return; }
		all="$all $out"
	done
	python3 -c 'import statistics, sys
b, fio = float(sys.argv[2]), float(sys.argv[3])
v = list(map(float, sys.argv[4:]))
s, c = statistics.median(v[0::2]), statistics.median(v[1::2])
print("%-38s %10.0f %8.2f %10.2f" % (sys.argv[1], b / s / 1e6, b / s / 1e6 / fio, c / (b / 1e9)))' \
		"$what" "$SIZEB" "$FIO" $all
}
CATRUN='
import os, resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.monotonic() - t, r.ru_utime + r.ru_stime)'
PYRUN='
import resource, sys, time
import recfs
verify, direct = sys.argv[2] == "1", sys.argv[3] == "1"
t = time.monotonic()
p = recfs.Pack(sys.argv[1], direct=direct)
f = p.open("scan", verify=verify, buffering=0)
buf = bytearray(4 << 20)
n = 0
while True:
    k = f.readinto(buf)
    if not k:
        break
    n += k
r = resource.getrusage(resource.RUSAGE_SELF)
assert n == f.size
print(time.monotonic() - t, r.ru_utime + r.ru_stime)'
row "recfs cat (C, verifying)" python3 -c "$CATRUN" "$BIN/recfs" cat "$PACK" scan
for a in "1 1 verifying (default: O_DIRECT)" "1 0 verifying, direct=False" "0 1 verify=False"; do
	set -- $a
	row "python, ${a#* * }" env PYTHONPATH="$PWD/python" "$PY" -c "$PYRUN" "$PACK" "$1" "$2"
done
echo "(MB/s: the recording's bytes over the reader's wall time from a cold cache; CPU: user+system"
echo " per GB, the interpreter's start and imports included for python)"
