#!/bin/bash
# 45-mount-stress: parallel random readers on several recordings, directory
# listings and xattr reads, beside a live writer, through a mount with a
# tiny chunk cache (constant eviction, entries shared between threads):
# every byte read is right and nothing is logged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "45-mount-stress: concurrent readers, listings and a writer"

make_members 3 256M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
for n in a b c d; do
	head -c $((3 << 20)) /dev/urandom >"$T_DIR/$n"
	check "write $n" write_rec "$PACK" $n "$T_DIR/$n"
done
head -c $((4 << 20)) /dev/urandom >"$T_DIR/live"

# run in the background only: the subshell becomes python3 (exec), so
# $! is the reader itself and the cleanup can kill it by PID
reader() { # file seconds seed
	exec python3 - "$M/$1" "$T_DIR/$1" "$2" "$3" <<'PY'
import os, random, sys, time
path, src, secs, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
ref = open(src, 'rb').read()
rnd = random.Random(seed)
fd = os.open(path, os.O_RDONLY)
end, n = time.time() + secs, 0
while time.time() < end:
    off = rnd.randrange(0, len(ref))
    ln = rnd.choice((1, 100, 4096, 65536, 65537, 200000, 1 << 20))
    got = os.pread(fd, ln, off)
    assert got == ref[off:off + ln], "%s: pread(%d, %d) wrong" % (path, ln, off)
    n += 1
print("%s: %d reads ok" % (path, n))
PY
}

for opts in direct_io,cache_mb=1,prefetch=2,io_threads=2 cache_mb=1; do
	M=$T_DIR/mnt
	check "mount -o $opts" mount_pack "$PACK" "$M" -o "$opts"
	pids=()
	for n in a b c d; do
		reader $n 6 $RANDOM >"$T_DIR/r.$n.log" 2>&1 &
		pids+=($!)
		cleanup_add "kill_own $! '$M/'"
	done
	reader a 6 $RANDOM >"$T_DIR/r.a2.log" 2>&1 &
	pids+=($!)
	cleanup_add "kill_own $! '$M/'"
	"$TESTWRITE" --sync-every 128K --pace-ms 100 --size-hint 8M "$PACK" "live-$RANDOM" \
		"$T_DIR/live" >"$T_DIR/w.log" 2>&1 &
	wpid=$!
	cleanup_add "kill_own $wpid '$T_DIR/live'"
	lsfail=0
	t_end=$(($(date +%s) + 5))
	while [ "$(date +%s)" -lt $t_end ]; do
		ls -l "$M" >/dev/null || lsfail=1
		getfattr -d "$M"/a >/dev/null 2>&1 || lsfail=1
		stat "$M"/live-* >/dev/null 2>&1
	done
	rfail=0
	for p in "${pids[@]}"; do wait "$p" || rfail=1; done
	wait $wpid
	check "$opts: the writer finished" test $? = 0
	check "$opts: 5 parallel random readers read right" test $rfail = 0
	[ $rfail = 0 ] || cat "$T_DIR"/r.*.log
	check "$opts: listings and xattrs never failed" test $lsfail = 0
	check "$opts: every recording still reads right" bash -c "cmp '$T_DIR/a' '$M/a' && cmp '$T_DIR/d' '$M/d'"
	check "$opts: unmount" unmount_pack "$M"
done
check "no error logged" test ! -s "$T_DIR/mount.log"
finish
