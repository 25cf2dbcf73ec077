#!/bin/bash
# bench/read.sh: reading a recording through recfs-mount against reading
# the members raw, in one run on one member set.
#
#   bench/read.sh            (MEMBERS=4 CHUNK=1M SIZE=2G by default)
#   MEMBERS=2 SIZE=4G BENCH_DIR=/mnt/scratch bench/read.sh
#
# Every row runs REPEAT (3) times: first fio's sequential read of the raw
# members (one job per member, direct=1, bs = chunk size: the physical
# limit, "raw"), then the recording through a fresh mount (nothing in the
# page cache): dd bs=1M, fio with 1 reader, or fio with 4 parallel readers
# (each a quarter), under several driver options.  Each mount read is
# divided by the raw read just before it (this machine is shared: rates
# drift by 2x within a minute), and the median ratio is printed.
# 3. the time from starting recfs-mount to a visible mount of a pack with
#    10,000 recordings.
# Prints MB/s, % of raw and the driver's CPU time per GiB.  Needs root (FUSE, bdi readahead).
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
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
	[ -x "$t" ] || { echo "read.sh: $t missing: run 'make all $BUILD/tests/recfs-testwrite $BUILD/tests/slowpread.so'" >&2; exit 1; }
done
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

sparse_members "$NMEM" "$MSIZE" "$DIR"
mkfs.recfs -f -q -c "$CHUNK" "$PACK" || exit 1
echo "read.sh: $NMEM file-backed members in $DIR, chunk $CHUNK, recording $SIZE"
head -c "$SIZE_B" /dev/urandom | "$TW" --size-hint "$SIZE_B" "$PACK" big - || exit 1
sync

fio_bw() { # fio args...: aggregate read bytes/s (0 when fio failed)
	fio --output-format=json --group_reporting "$@" 2>/dev/null |
		python3 -c "
import json, sys
try: print(int(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes']))
except Exception: print(0)"
}

PRELOAD="" # an LD_PRELOAD shim for the driver (the disk-bound rows)
mount_it() { # options...
	env ${PRELOAD:+LD_PRELOAD=$PRELOAD} "$BIN/recfs-mount" -f "$@" "$PACK" "$DIR/mnt" 2>>"$DIR/mount.log" &
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


REPEAT=${REPEAT:-3}
raw() { # the physical limit: one fio job per member, direct, bs = chunk
	fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$PER \
		$(for ((i = 0; i < NMEM; i++)); do echo --name=m$i --filename=$DIR/m$i.img; done)
}
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }

printf '%-46s %6s %6s %6s %9s   %s\n' "what (median of $REPEAT)" "MB/s" "raw" "%raw" "drv ms/GiB" \
	"(each run: mount/raw MB/s)"
row() { # label tool mount-options...: REPEAT x (raw, then a fresh mount)
	local label=$1 tool=$2 bw rw r bws=() raws=() pcts=() cpus=() cpu each=""
	shift 2
	for ((r = 0; r < REPEAT; r++)); do
		rw=$(raw)
		[ "${rw:-0}" -gt 0 ] 2>/dev/null || { echo "read.sh: raw fio read failed" >&2; exit 1; }
		mount_it "$@"
		bw=$(measure "$tool") || bw=0
		# driver CPU (user+sys) per GiB read, in ms
		cpu=$(awk -v b="$SIZE_B" '{printf "%d", ($14 + $15) * 10 * 1073741824 / b}' "/proc/$MPID/stat")
		umount_it
		bws+=("$bw")
		raws+=("$rw")
		pcts+=($((bw * 100 / rw)))
		cpus+=("$cpu")
		each="$each$((bw / 1000000))/$((rw / 1000000)) "
	done
	printf '%-46s %6s %6s %6s %9s   (%s)\n' "$label" $(($(median "${bws[@]}") / 1000000)) \
		$(($(median "${raws[@]}") / 1000000)) "$(median "${pcts[@]}")" "$(median "${cpus[@]}")" "$each"
}

if [ -z "${ONLY_DISK_BOUND:-}" ]; then
RAW1=$(fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$PER --name=m0 --filename="$DIR/m0.img")
echo "raw, member 0 alone: $((RAW1 / 1000000)) MB/s"
row "mount: dd bs=1M (defaults)" dd
row "mount: fio 1 reader bs=1M" fio1
row "mount: fio 4 readers bs=1M" fio4
row "mount: dd, -o noverify" dd -o noverify
row "mount: dd, -o direct_io" dd -o direct_io
row "mount: fio 4 readers, -o direct_io" fio4 -o direct_io
row "mount: dd, -o readahead_kb=0 (kernel's 128)" dd -o readahead_kb=0
row "mount: dd, -o readahead_kb=16384" dd -o readahead_kb=16384
row "mount: dd, -o prefetch=0,io_threads=0" dd -o prefetch=0,io_threads=0
row "mount: dd, -o max_background=12 (kernel's)" dd -o max_background=12
row "mount: dd, -o max_background=128" dd -o max_background=128
row "mount: dd, -o clone_fd" dd -o clone_fd
row "mount: dd, -s (single-threaded loop)" dd -s
# verify and noverify mounts alternated.  Both compute every chunk's
# checksum (noverify uses it to tell a deleted recording's reused space
# apart, and returns mismatching bytes instead of EIO), so on intact data
# the two should match: this row checks that noverify gained nothing
# hidden.  The checksum's own cost is no longer measured here.
vb=() nb=()
for ((r = 0; r < 2 * REPEAT - 1; r++)); do
	mount_it
	vb+=($(measure dd))
	umount_it
	mount_it -o noverify
	nb+=($(measure dd))
	umount_it
done
v=$(median "${vb[@]}") n=$(median "${nb[@]}")
[ "${n:-0}" -gt 0 ] 2>/dev/null || { echo "read.sh: the noverify dd runs failed" >&2; exit 1; }
echo "verify vs noverify: dd verify $((v / 1000000)) MB/s, noverify $((n / 1000000)) MB/s (medians of $((2 * REPEAT - 1)) alternated runs): verify is $((v * 1000 / n / 10)).$((v * 1000 / n % 10))% of noverify"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

# A disk-bound run: fio and the driver run under tests/tools/slowpread.so,
# which makes each member file serve one pread at a time, taking
# SLOW_ACCESS_US (2000) plus its length at SLOW_MBS (150): a disk's access
# time and media rate.  The members, not this machine's two CPUs, are then
# the limit, and a reader that does not keep every member busy shows it.
# SLOW_MBS=0 skips it.
SLOW_MBS=${SLOW_MBS:-150}
SLOW_ACCESS_US=${SLOW_ACCESS_US:-2000}
SHIM=$PWD/$BUILD/tests/slowpread.so
if [ "$SLOW_MBS" != 0 ] && [ -f "$SHIM" ]; then
	echo "disk-bound: every member one request at a time, ${SLOW_ACCESS_US} us + ${SLOW_MBS} MB/s each ($SHIM)"
	export SLOWPREAD_MATCH=$DIR/m SLOWPREAD_MBS=$SLOW_MBS SLOWPREAD_ACCESS_US=$SLOW_ACCESS_US
	raw() {
		LD_PRELOAD=$SHIM fio_bw --direct=1 --rw=read --bs="$CHUNK_B" --size=$((SIZE_B / NMEM)) \
			$(for ((i = 0; i < NMEM; i++)); do echo --name=m$i --filename=$DIR/m$i.img; done)
	}
	PRELOAD=$SHIM # the mounts from now on see the emulated disks too
	SIZE_FULL=$SIZE_B
	# about 3 s of reading at the emulated aggregate rate
	SIZE_B=$((NMEM * SLOW_MBS * 3000000 / 1048576 * 1048576))
	[ $SIZE_B -gt $SIZE_FULL ] && SIZE_B=$SIZE_FULL
	measure() {
		local t0 t1
		case $1 in
		dd)
			t0=$(date +%s%N)
			dd if="$DIR/mnt/big" of=/dev/null bs=1M count=$((SIZE_B >> 20)) status=none || return 1
			t1=$(date +%s%N)
			echo $((SIZE_B * 1000000000 / (t1 - t0)))
			;;
		fio1) fio_bw --name=r --filename="$DIR/mnt/big" --rw=read --bs=1M --size="$SIZE_B" --readonly ;;
		fio4) fio_bw --name=r --filename="$DIR/mnt/big" --rw=read --bs=1M --numjobs=4 \
			--size=$((SIZE_B / 4)) --offset_increment=$((SIZE_FULL / 4)) --readonly ;;
		esac
	}
	row "disk-bound: dd (defaults)" dd
	row "disk-bound: fio 1 reader" fio1
	row "disk-bound: fio 4 readers" fio4
	row "disk-bound: dd, -o noverify" dd -o noverify
	row "disk-bound: dd, -o direct_io" dd -o direct_io
	row "disk-bound: dd, -o readahead_kb=0" dd -o readahead_kb=0
	row "disk-bound: dd, -o prefetch=0,io_threads=0" dd -o prefetch=0,io_threads=0
	row "disk-bound: dd, prefetch=0,io_threads=0,readahead_kb=0" dd -o prefetch=0,io_threads=0,readahead_kb=0
	row "disk-bound: dd, direct_io,prefetch=0,io_threads=0" dd -o direct_io,prefetch=0,io_threads=0
	SIZE_B=$SIZE_FULL
	unset SLOWPREAD_MATCH
else
	echo "disk-bound run skipped ($SHIM missing, or SLOW_MBS=0)"
fi

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
