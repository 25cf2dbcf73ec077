#!/bin/bash
# 42-mount-live: a recording written while the pack is mounted appears,
# grows as the writer commits (stat, reads up to the committed length,
# a reader following it like tail -f), and turns sealed; the writer is
# never blocked by the mount.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "42-mount-live: reading a recording while it is written"

make_members 2 128M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c 100000 /dev/urandom >"$T_DIR/old"
check "write a sealed recording" write_rec "$PACK" old "$T_DIR/old"
M=$T_DIR/mnt
check "mount" mount_pack "$PACK" "$M"

SIZE=$((4 << 20))
head -c $SIZE /dev/urandom >"$T_DIR/src"
# 16 commits of 256 KiB, 250 ms apart: about 4 s of live recording
t0=$(date +%s%N)
"$TESTWRITE" --sync-every 256K --pace-ms 250 --size-hint 8M "$PACK" live "$T_DIR/src" \
	>"$T_DIR/writer.log" 2>&1 &
WPID=$!
cleanup_add "kill_own $WPID '$T_DIR/src'"

appeared=0
for ((i = 0; i < 400; i++)); do
	[ -e "$M/live" ] && { appeared=1; break; }
	sleep 0.025
done
check "the new recording appears in the mount" test $appeared = 1

# mounting while the writer holds the pack (its exclusive lock) works too
first_pid=$MOUNT_PID
check "a second mount while the writer runs" mount_pack "$PACK" "$T_DIR/mnt2"
check "the second mount lists the live recording" test -e "$T_DIR/mnt2/live"
check "unmount the second mount" unmount_pack "$T_DIR/mnt2"
MOUNT_PID=$first_pid

# a reader that follows the file to its final length
python3 - "$M/live" "$T_DIR/src" >"$T_DIR/follow.log" 2>&1 <<'PY' &
import os, sys, time
path, src = sys.argv[1], sys.argv[2]
ref = open(src, 'rb').read()
fd = os.open(path, os.O_RDONLY)
got = bytearray()
deadline = time.time() + 30
while len(got) < len(ref) and time.time() < deadline:
    b = os.pread(fd, 1 << 20, len(got))
    if not b:
        time.sleep(0.05)
        continue
    got += b
assert len(got) == len(ref), "follower stopped at %d of %d" % (len(got), len(ref))
assert bytes(got) == ref, "follower read wrong bytes"
print("follower ok")
PY
FPID=$!
cleanup_add "kill_own $FPID '$M/live'"

sizes=()
mono=1 prefix=1 saw_recording=0
last=0
while kill -0 $WPID 2>/dev/null; do
	s=$(stat -c %s "$M/live" 2>/dev/null) || s=0
	[ "$s" -ge "$last" ] || mono=0
	if [ "$s" != "$last" ]; then
		sizes+=("$s")
		cmp -n "$s" "$M/live" "$T_DIR/src" >/dev/null 2>&1 || { echo "prefix $s differs"; prefix=0; }
	fi
	last=$s
	st=$(getfattr --only-values -n user.recfs.state "$M/live" 2>/dev/null)
	[ "$st" = recording ] && saw_recording=1
	sleep 0.05
done
wait $WPID
wrc=$?
t1=$(date +%s%N)
check "the writer finished without error" test $wrc = 0
check "the writer was not slowed by the mount (< 12 s)" test $(((t1 - t0) / 1000000)) -lt 12000
echo "sizes seen: ${sizes[*]}"
partial=0
for s in "${sizes[@]}"; do
	[ "$s" -gt 0 ] && [ "$s" -lt $SIZE ] && partial=$((partial + 1))
done
check "the size grew in steps while recording (${#sizes[@]} sizes, $partial partial)" test $partial -ge 3
check "the size never went back" test $mono = 1
check "every size seen was readable and right" test $prefix = 1
check "state was 'recording' while written" test $saw_recording = 1

sealed=0
for ((i = 0; i < 200; i++)); do
	[ "$(getfattr --only-values -n user.recfs.state "$M/live" 2>/dev/null)" = sealed ] &&
		[ "$(stat -c %s "$M/live")" = $SIZE ] && { sealed=1; break; }
	sleep 0.025
done
check "sealed at its final size" test $sealed = 1
check "the whole recording reads right" cmp "$T_DIR/src" "$M/live"
wait $FPID
check "a reader following the growing file read it all (tail -f style)" test $? = 0
cat "$T_DIR/follow.log"
check "the sealed recording is untouched" cmp "$T_DIR/old" "$M/old"

# a recording left unsealed (a crashed or paused recorder)
head -c 333333 /dev/urandom >"$T_DIR/open"
check "write an unsealed recording" write_rec "$PACK" open "$T_DIR/open" --open --size-hint 1M
seen=0
for ((i = 0; i < 200; i++)); do
	[ -e "$M/open" ] && { seen=1; break; }
	sleep 0.025
done
check "the unsealed recording appears" test $seen = 1
check "unsealed: state recording" test "$(getfattr --only-values -n user.recfs.state "$M/open")" = recording
check "unsealed: reads its committed bytes" cmp "$T_DIR/open" "$M/open"

# a recording deleted while mounted disappears
check "recfs rm while mounted" recfs rm "$PACK" old
gone=0
for ((i = 0; i < 200; i++)); do
	if ! ls "$M" | grep -qx old && ! stat "$M/old" >/dev/null 2>&1; then gone=1; break; fi
	sleep 0.025
done
check "the deleted recording disappears from the mount" test $gone = 1
check "the others stay" cmp "$T_DIR/src" "$M/live"
check "unmount" unmount_pack "$M"
check "no error logged" test ! -s "$T_DIR/mount.log"
finish
