#!/bin/bash
# bench/fsck.sh: fsck.recfs --verify against a raw fio read of the same
# members, in one run on one member set.
#
#   bench/fsck.sh             (MEMBERS=4 CHUNK=1M SIZE=2G REPEAT=3 by default)
#   MEMBERS=2 SIZE=4G BENCH_DIR=/mnt/scratch bench/fsck.sh
#
# One recording of SIZE bytes (recfs-record gen:counter) is verified by
# `fsck.recfs -n --verify` REPEAT times; each run is paired with fio reading
# the same bytes raw just before it (one job per member, direct=1, bs =
# chunk, the recording's rows of each member).  This machine is shared and
# its rates drift, so each fsck rate is divided by its own raw rate and the
# median ratio is printed.  Also: the time of a check without --verify of a
# pack with NREC recordings (metadata only, 64 KiB chunks).
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
BIN=$PWD/$BUILD/bin
NMEM=${MEMBERS:-4}
CHUNK=${CHUNK:-1M}
SIZE=${SIZE:-2G}
REPEAT=${REPEAT:-3}
NREC=${NREC:-5000}
DIR=${BENCH_DIR:-/var/tmp}/recfs-fsck-bench.$$
export PATH=$BIN:$PATH

for t in fsck.recfs mkfs.recfs recfs-record; do
	[ -x "$BIN/$t" ] || { echo "fsck.sh: $BIN/$t missing: run make" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "fsck.sh: fio missing (make deps)" >&2; exit 1; }
SIZE_B=$(bytes "$SIZE")
CHUNK_B=$(bytes "$CHUNK")
PER=$((SIZE_B / NMEM))
MSIZE=$((PER + (256 << 20)))

mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM
sparse_members "$NMEM" "$MSIZE" "$DIR"
DATA_OFF=$(mkfs.recfs -f -c "$CHUNK" "$PACK" | sed -n 's/.*data from byte \([0-9]*\).*/\1/p')
[ -n "$DATA_OFF" ] || { echo "fsck.sh: mkfs failed" >&2; exit 1; }
echo "fsck.sh: $NMEM file-backed members in $DIR, chunk $CHUNK, recording $SIZE"
recfs-record -q -i gen:counter --size "$SIZE_B" "$PACK" big 2>/dev/null || exit 1
sync

fio_bw() {
	fio --output-format=json --group_reporting "$@" 2>/dev/null |
		python3 -c "import json,sys; j=json.load(sys.stdin); print(int(j['jobs'][0]['read']['bw_bytes']))"
}
raw() { # the same bytes fsck reads (the recording's rows on every member):
	# the better of bs=chunk (psync) and bs=8M with 4 in flight (libaio)
	local a b jobs
	jobs=$(for ((i = 0; i < NMEM; i++)); do echo --name=m$i --filename=$DIR/m$i.img; done)
	a=$(fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$PER --offset="$DATA_OFF" --readonly $jobs)
	b=$(fio_bw --direct=1 --rw=read --bs=8M --ioengine=libaio --iodepth=4 --size=$PER \
		--offset="$DATA_OFF" --readonly $jobs)
	echo $((a > b ? a : b))
}
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }

bws=() raws=() pcts=() cpus=() each=""
for ((r = 0; r < REPEAT; r++)); do
	rw=$(raw)
	t0=$(date +%s%N)
	out=$( { /usr/bin/time -f "cpu %U %S" fsck.recfs -n --verify "$PACK"; } 2>&1)
	rc=$?
	t1=$(date +%s%N)
	[ "$rc" = 0 ] || { echo "fsck.sh: fsck exit $rc: $out" >&2; exit 1; }
	bw=$((SIZE_B * 1000000000 / (t1 - t0)))
	cpu=$(awk '/^cpu/ {printf "%d", ($2 + $3) * 1000 * 1073741824 / '"$SIZE_B"'}' <<<"$out")
	bws+=("$bw") raws+=("$rw") pcts+=($((bw * 100 / rw))) cpus+=("$cpu")
	each="$each$((bw / 1000000))/$((rw / 1000000)) "
done
printf '%-34s %7s %7s %5s %11s   %s\n' "what (median of $REPEAT)" "MB/s" "raw" "%raw" "cpu ms/GiB" "(each run: fsck/raw MB/s)"
printf '%-34s %7d %7d %5d %11d   %s\n' "fsck.recfs -n --verify ($SIZE)" $(($(median "${bws[@]}") / 1000000)) \
	$(($(median "${raws[@]}") / 1000000)) "$(median "${pcts[@]}")" "$(median "${cpus[@]}")" "$each"

# metadata only: many recordings
for ((i = 0; i < NREC; i++)); do echo x; done >"$DIR/tiny"
mkfs.recfs -f -q -c 64K -n $((NREC + 16)) "$PACK" || exit 1
for ((i = 0; i < NREC; i++)); do
	recfs-record -q "$PACK" "r$i" <"$DIR/tiny" 2>"$DIR/err" || { echo "fsck.sh: $(cat "$DIR/err")" >&2; exit 1; }
done
t0=$(date +%s%N)
fsck.recfs -n "$PACK" >/dev/null || { echo "fsck.sh: check of $NREC recordings failed" >&2; exit 1; }
t1=$(date +%s%N)
printf '%-34s %7d ms\n' "fsck.recfs -n, $NREC recordings" $(((t1 - t0) / 1000000))
