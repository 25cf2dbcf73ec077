#!/bin/bash
# 47-mount-live-readers: several readers on a recording while it is
# written, through a mount with a tiny chunk cache: a follower (tail -f),
# readers of the growing last chunk (whose cached copy keeps getting too
# short, while others still read from it) and random readers.  Every byte
# read is right, no read fails, nothing is logged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "47-mount-live-readers: concurrent readers on a live recording"

make_members 2 128M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
SIZE=$((3 << 20))
head -c $SIZE /dev/urandom >"$T_DIR/src"
M=$T_DIR/mnt

# reader KIND SEED: background only (the subshell becomes python3, so $!
# is the reader and the cleanup can kill it)
reader() {
	exec python3 - "$M/live" "$T_DIR/src" "$1" "$2" <<'PY'
import errno, os, random, sys, time
path, src, kind, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ref = open(src, 'rb').read()
rnd = random.Random(seed)
t_end = time.time() + 60
while not os.path.exists(path):
    if time.time() > t_end: sys.exit("live never appeared")
    time.sleep(0.01)
fd = os.open(path, os.O_RDONLY)
n, pos, stable = 0, 0, 0
while time.time() < t_end:
    size = os.fstat(fd).st_size
    if kind == "follow":
        got = os.pread(fd, 1 << 20, pos)
        want = ref[pos:pos + len(got)]
        pos += len(got)
    elif kind == "tail":
        off = max(0, size - rnd.choice((1, 4096, 30000, 65536, 100000)))
        got = os.pread(fd, 1 << 17, off)
        want = ref[off:off + len(got)]
    else:
        if size == 0: continue
        off = rnd.randrange(0, size)
        got = os.pread(fd, rnd.choice((512, 65536, 65537, 300000)), off)
        want = ref[off:off + len(got)]
    if got != want:
        sys.exit("%s: wrong bytes (size %d)" % (kind, size))
    n += 1
    if size == len(ref):
        stable += 1
        if stable > 50 and (kind != "follow" or pos == len(ref)): break
if kind == "follow" and pos != len(ref):
    sys.exit("follower stopped at %d of %d" % (pos, len(ref)))
print("%s: %d reads ok" % (kind, n))
PY
}

check "mount -o cache_mb=1,prefetch=2" mount_pack "$PACK" "$M" -o cache_mb=1,prefetch=2
"$TESTWRITE" --sync-every 4K --pace-ms 3 --size-hint 4M "$PACK" live "$T_DIR/src" \
	>"$T_DIR/w.log" 2>&1 &
wpid=$!
cleanup_add "kill_own $wpid '$T_DIR/src'"
pids=()
for kind in follow tail tail tail random random; do
	reader $kind $RANDOM >"$T_DIR/r.${#pids[@]}.log" 2>&1 &
	pids+=($!)
	cleanup_add "kill_own $! '$M/live'"
done
wait $wpid
check "the writer finished" test $? = 0
rfail=0
for p in "${pids[@]}"; do wait "$p" || rfail=1; done
check "a follower, 3 tail and 2 random readers read right, no read failed" test $rfail = 0
cat "$T_DIR"/r.*.log
check "live reads right after sealing" cmp "$M/live" "$T_DIR/src"
check "unmount" unmount_pack "$M"
check "nothing logged" test ! -s "$T_DIR/mount.log"
[ -s "$T_DIR/mount.log" ] && head -5 "$T_DIR/mount.log"
finish
