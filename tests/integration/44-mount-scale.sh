#!/bin/bash
# 44-mount-scale: a pack with 10,000 recordings mounts and lists them all
# (the 100 ms mount target is measured by bench/read.sh, not asserted
# here); 100 mount/unmount cycles leave nothing behind; a long-running
# mount keeps its descriptor count and memory flat over 1,000 opens and
# over repeated whole reads of a 4200-chunk recording.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "44-mount-scale: 10,000 recordings, 100 mounts, no leaks"

N=10000
make_members 1 1G
check "mkfs with room for $N recordings" mkfs.recfs -f -q -c 64K -n 10240 "$PACK"
check "write $N small recordings" "$TESTWRITE" --many $N --bytes 1000 "$PACK" r
M=$T_DIR/mnt
t0=$(date +%s%N)
check "mount" mount_pack "$PACK" "$M"
t1=$(date +%s%N)
echo "mount of $N recordings visible after $(((t1 - t0) / 1000000)) ms"
check "ls lists $N" test "$(ls "$M" | wc -l)" = $N
check "ls -l stats them all" test "$(ls -l "$M" | grep -c '^-r--r--r-- 1 .* 1000 ')" = $N
check "find counts $N" test "$(find "$M" -type f | wc -l)" = $N
check "first and last recording read right" python3 - "$M" <<'PY'
import sys
m = sys.argv[1]
for i in (0, 1, 4999, 9999):
    want = bytes((i + j) & 0xff for j in range(1000))
    got = open("%s/r%06d" % (m, i), "rb").read()
    assert got == want, "r%06d differs" % i
PY
check "unmount" unmount_pack "$M"

# 100 mount/unmount cycles: each comes up, reads, goes away, exits 0
make_members 2 64M s
check "mkfs small pack" mkfs.recfs -f -q -c 64K "$PACK"
head -c 300000 /dev/urandom >"$T_DIR/src"
check "write rec" write_rec "$PACK" rec "$T_DIR/src"
fails=0
for ((i = 0; i < 100; i++)); do
	mount_pack "$PACK" "$M" || { fails=$((fails + 1)); echo "cycle $i: no mount"; continue; }
	cmp -s "$T_DIR/src" "$M/rec" || { fails=$((fails + 1)); echo "cycle $i: bad data"; }
	unmount_pack "$M" || { fails=$((fails + 1)); echo "cycle $i: unmount/exit failed"; }
done
check "100 mount/read/unmount cycles" test $fails = 0
check "nothing left mounted" bash -c "! mountpoint -q '$M' && ! grep -q ' $M ' /proc/mounts"
check "no driver left running" bash -c "! grep -qaF '$M' /proc/$MOUNT_PID/cmdline 2>/dev/null"

# SIGTERM to the driver unmounts and exits cleanly
check "mount for SIGTERM" mount_pack "$PACK" "$M"
kill -TERM "$MOUNT_PID"
wait "$MOUNT_PID"
check "SIGTERM: the driver exits 0" test $? = 0
check "SIGTERM: unmounted" wait_unmounted "$M"

# one mount, 1,000 open/read/close cycles: descriptors and RSS stay flat
check "mount for the leak check" mount_pack "$PACK" "$M"
fds() { ls "/proc/$MOUNT_PID/fd" | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$MOUNT_PID/status"; }
python3 - "$M/rec" 50 <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    with open(sys.argv[1], 'rb') as f:
        f.read()
PY
fd0=$(fds) rss0=$(rss)
check "1,000 open/read/close + stat + getfattr cycles" python3 - "$M/rec" 1000 <<'PY'
import os, sys
p = sys.argv[1]
for i in range(int(sys.argv[2])):
    fd = os.open(p, os.O_RDONLY)
    os.pread(fd, 4096, (i * 7919) % 300000)
    os.close(fd)
    os.stat(p)
    os.getxattr(p, 'user.recfs.state')
    os.listxattr(p)
PY
fd1=$(fds) rss1=$(rss)
echo "driver fds $fd0 -> $fd1, RSS $rss0 -> $rss1 KiB"
check "descriptor count unchanged" test "$fd1" = "$fd0"
if [[ ${BUILD:-build} == *asan* ]]; then
	echo "RSS check skipped under ASan (its quarantine holds freed memory)"
else
	check "RSS grew by less than 8 MiB" test $((rss1 - rss0)) -lt 8192
fi
check "unmount" unmount_pack "$M"

# a recording of more than 4096 chunks (several checksum-slot pages) read
# whole 12 times through one mount: memory stays flat after the first
make_members 1 320M l
check "mkfs for a long recording" mkfs.recfs -f -q -c 64K "$PACK"
check "write 4200 chunks" bash -c "head -c $((4200 * 65536)) /dev/zero |
	'$TESTWRITE' --size-hint $((4200 * 65536)) '$PACK' long -"
check "mount for the long leak check" mount_pack "$PACK" "$M" -o direct_io
for i in 1 2; do dd if="$M/long" of=/dev/null bs=1M status=none; done
rss0=$(rss)
check "10 whole reads of 4200 chunks" bash -c \
	"for i in 1 2 3 4 5 6 7 8 9 10; do dd if='$M/long' of=/dev/null bs=1M status=none || exit 1; done"
rss1=$(rss)
echo "long recording: driver RSS $rss0 -> $rss1 KiB"
if [[ ${BUILD:-build} != *asan* ]]; then
	check "RSS grew by less than 4 MiB over 10 reads" test $((rss1 - rss0)) -lt 4096
fi
check "unmount" unmount_pack "$M"
finish
