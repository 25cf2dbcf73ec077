#!/bin/bash
# bench/read.sh: reading a recording through recfs-mount against reading
# the members raw, in one run on one member set.
#
#   bench/read.sh            (MEMBERS=4 CHUNK=1M SIZE=2G by default)
#   MEMBERS=2 SIZE=4G BENCH_DIR=/mnt/scratch bench/read.sh
#
# 1. fio sequential read of the raw members: one job per member, direct=1,
#    bs = chunk size: the physical limit, "raw".
# 2. one recording of SIZE through the mount, each measurement in a fresh
#    mount (nothing in the page cache): dd bs=1M, fio with 1 reader, fio
#    with 4 parallel readers (each a quarter), under several driver options.
# 3. the time from starting recfs-mount to a visible mount of a pack with
#    10,000 recordings.
# Prints MB/s and the ratio to raw.  Needs root (FUSE, bdi readahead).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$PWD/$BUILD/bin
TW=$PWD/$BUILD/tests/recfs-testwrite
NMEM=${MEMBERS:-4}
CHUNK=${CHUNK:-1M}
SIZE=${SIZE:-2G}
NREC=${NREC:-10000}
DIR=${BENCH_DIR:-/var/tmp}/recfs-bench.$$
export PATH=$BIN:$PATH

for t in "$BIN/recfs-mount" "$BIN/mkfs.recfs" "$TW"; do
	[ -x "$t" ] || { echo "read.sh: $t missing: run 'make all $BUILD/tests/recfs-testwrite'" >&2; exit 1; }
done
bytes() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }
SIZE_B=$(bytes "$SIZE")
CHUNK_B=$(bytes "$CHUNK")
PER=$((SIZE_B / NMEM))
MSIZE=$((PER + (256 << 20)))

mkdir -p "$DIR/mnt"
MPID=""
cleanup() {
	mountpoint -q "$DIR/mnt" && fusermount3 -u "$DIR/mnt"
	[ -n "$MPID" ] && wait "$MPID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PACK=""
for ((i = 0; i < NMEM; i++)); do
	truncate -s $MSIZE "$DIR/m$i.img"
	PACK=${PACK:+$PACK,}$DIR/m$i.img
done
mkfs.recfs -f -q -c "$CHUNK" "$PACK" || exit 1
echo "read.sh: $NMEM file-backed members in $DIR, chunk $CHUNK, recording $SIZE"
head -c "$SIZE_B" /dev/urandom | "$TW" --size-hint "$SIZE_B" "$PACK" big - || exit 1
sync

fio_bw() { # fio args...: aggregate read bytes/s
	fio --output-format=json --group_reporting "$@" 2>/dev/null |
		python3 -c "import json,sys; j=json.load(sys.stdin); print(int(j['jobs'][0]['read']['bw_bytes']))"
}

mount_it() { # options...
	"$BIN/recfs-mount" -f "$@" "$PACK" "$DIR/mnt" 2>>"$DIR/mount.log" &
	MPID=$!
	for ((i = 0; i < 400; i++)); do
		mountpoint -q "$DIR/mnt" && return 0
		sleep 0.01
	done
	echo "read.sh: mount failed: $(cat "$DIR/mount.log")" >&2
	exit 1
}
umount_it() {
	fusermount3 -u "$DIR/mnt"
	wait "$MPID"
	MPID=""
}

measure() { # tool: prints bytes/s
	local t0 t1 f=$DIR/mnt/big
	case $1 in
	dd)
		t0=$(date +%s%N)
		dd if="$f" of=/dev/null bs=1M status=none || return 1
		t1=$(date +%s%N)
		echo $((SIZE_B * 1000000000 / (t1 - t0)))
		;;
	fio1) fio_bw --name=r --filename="$f" --rw=read --bs=1M --size="$SIZE_B" --readonly ;;
	fio4) fio_bw --name=r --filename="$f" --rw=read --bs=1M --numjobs=4 --size=$((SIZE_B / 4)) \
		--offset_increment=$((SIZE_B / 4)) --readonly ;;
	esac
}

mbs() { echo $(($1 / 1000000)); }
pct() { echo $(($1 * 100 / RAW)); }

raw_runs=()
for ((r = 0; r < ${REPEAT:-3}; r++)); do
	raw_runs+=($(fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$PER \
		$(for ((i = 0; i < NMEM; i++)); do echo --name=m$i --filename=$DIR/m$i.img; done)))
done
RAW=$(printf '%s\n' "${raw_runs[@]}" | sort -n | sed -n "$(((${REPEAT:-3} + 1) / 2))p")
RAW1=$(fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$PER --name=m0 --filename="$DIR/m0.img")
printf '%-44s %8s %6s %8s   %s\n' "what (median of ${REPEAT:-3} runs)" "MB/s" "% raw" "drv ms/GiB" "(each run)"
printf '%-44s %8s %6s %8s   (%s)\n' "raw: fio direct, 1 job per member" "$(mbs $RAW)" 100 - \
	"$(for b in "${raw_runs[@]}"; do echo -n "$(mbs $b) "; done)"
printf '%-44s %8s %6s %8s\n' "raw: fio direct, member 0 alone" "$(mbs $RAW1)" "$(pct $RAW1)" -

REPEAT=${REPEAT:-3}
row() { # label tool mount-options...: median of REPEAT fresh mounts
	local label=$1 tool=$2 bw r all=() cpus=() cpu
	shift 2
	for ((r = 0; r < REPEAT; r++)); do
		mount_it "$@"
		bw=$(measure "$tool") || bw=0
		# driver CPU (user+sys) per GiB read, in ms
		cpu=$(awk -v b="$SIZE_B" '{printf "%d", ($14 + $15) * 10 * 1073741824 / b}' "/proc/$MPID/stat")
		umount_it
		all+=("$bw")
		cpus+=("$cpu")
	done
	bw=$(printf '%s\n' "${all[@]}" | sort -n | sed -n "$(((REPEAT + 1) / 2))p")
	cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "$(((REPEAT + 1) / 2))p")
	printf '%-44s %8s %6s %8s   (%s)\n' "$label" "$(mbs $bw)" "$(pct $bw)" "$cpu" \
		"$(for b in "${all[@]}"; do echo -n "$(mbs $b) "; done)"
}

row "mount: dd bs=1M (defaults)" dd
row "mount: fio 1 reader bs=1M" fio1
row "mount: fio 4 readers bs=1M" fio4
row "mount: dd, -o noverify" dd -o noverify
row "mount: dd, -o direct_io" dd -o direct_io
row "mount: fio 4 readers, -o direct_io" fio4 -o direct_io
row "mount: dd, -o readahead_kb=0 (kernel 128 KiB)" dd -o readahead_kb=0
row "mount: dd, -o readahead_kb=1024" dd -o readahead_kb=1024
row "mount: dd, -o readahead_kb=16384" dd -o readahead_kb=16384
row "mount: dd, -o prefetch=0 (no driver read-ahead)" dd -o prefetch=0
row "mount: dd, -o prefetch=0,io_threads=0" dd -o prefetch=0,io_threads=0
row "mount: dd, -o max_background=4" dd -o max_background=4
row "mount: dd, -o max_background=128" dd -o max_background=128
row "mount: dd, -o clone_fd" dd -o clone_fd
row "mount: dd, -s (single-threaded loop)" dd -s

# mount time with NREC recordings
for ((i = 0; i < NMEM; i++)); do rm -f "$DIR/m$i.img"; done
truncate -s 2G "$DIR/n0.img"
mkfs.recfs -f -q -c 64K -n $((NREC + 256)) "$DIR/n0.img" || exit 1
"$TW" --many "$NREC" --bytes 1000 "$DIR/n0.img" r || exit 1
PACK=$DIR/n0.img
times=()
for ((k = 0; k < 5; k++)); do
	t0=$(date +%s%N)
	"$BIN/recfs-mount" -f "$PACK" "$DIR/mnt" 2>>"$DIR/mount.log" &
	MPID=$!
	until mountpoint -q "$DIR/mnt"; do sleep 0.001; done
	t1=$(date +%s%N)
	times+=($(((t1 - t0) / 1000000)))
	n=$(ls "$DIR/mnt" | wc -l)
	umount_it
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
echo "mount of $NREC recordings (start to visible, 5 runs): ${sorted}ms, median ${med} ms (listed $n)"
