#!/bin/bash
# 48-mount-cache-budget: the chunk cache keeps to cache_mb even when
# chunks are large (read-ahead shrinks instead): after sequential and
# parallel reads of a recording of 4 MiB chunks with cache_mb=4, the
# driver's resident memory stays far below what the old minimum of
# 2 x prefetch + 2 requests' chunks (14 chunks, 56 MiB) took.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "48-mount-cache-budget: the chunk cache keeps to cache_mb"

make_members 2 64M
check "mkfs -c 4M" mkfs.recfs -f -q -c 4M "$PACK"
head -c $((48 << 20)) /dev/urandom >"$T_DIR/src"
check "write a 48 MiB recording" write_rec "$PACK" big "$T_DIR/src"
M=$T_DIR/mnt
check "mount -o cache_mb=4" mount_pack "$PACK" "$M" -o cache_mb=4,direct_io
check "sequential read right" cmp "$M/big" "$T_DIR/src"
pids=()
for n in 1 2 3 4; do
	dd if="$M/big" of=/dev/null bs=1M iflag=direct skip=$((n * 8)) status=none &
	pids+=($!)
	cleanup_add "kill_own $! '$M/big'"
done
rfail=0
for p in "${pids[@]}"; do wait "$p" || rfail=1; done
check "4 parallel readers" test $rfail = 0
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$MOUNT_PID/status")
echo "driver VmRSS ${rss} kB"
limit=40
# ASan's shadow memory and quarantine add their own; the plain build is the check
[[ ${BUILD:-build} == *asan* ]] && limit=96
check "driver resident memory under $limit MiB (${rss} kB)" test "${rss:-999999}" -lt $((limit << 10))
check "unmount" unmount_pack "$M"
check "nothing logged" test ! -s "$T_DIR/mount.log"
finish
