#!/bin/bash
# 43-mount-integrity: a corrupted chunk gives EIO for exactly its byte
# range and a log line naming it (-o noverify returns the bytes); a pack
# with a missing member is refused with its name, and -o degraded mounts it
# with EIO only for the chunks on the missing member, listed in
# user.recfs.unreadable; a member failing while mounted fails only its
# chunks, with a log line naming it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "43-mount-integrity: checksums on read, missing members, degraded mounts"

CS=65536
make_members 2 128M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c $((16 * CS)) /dev/urandom >"$T_DIR/src"
check "write rec" write_rec "$PACK" rec "$T_DIR/src"

# find chunk 5 on its member and flip one byte in it
BAD=5
where=""
for m in $MEMBERS; do
	o=$(member_offset "$m" "$T_DIR/src" $((BAD * CS)))
	[ "$o" -ge 0 ] && { where="$m:$o"; break; }
done
check "chunk $BAD located on a member" test -n "$where"
mfile=${where%:*} moff=${where#*:}
flip_byte "$mfile" $((moff + 1000))
check "the byte is changed on the member" bash -c "! cmp -s <(dd if='$mfile' bs=1 skip=$((moff + 1000)) count=1 2>/dev/null) <(dd if='$T_DIR/src' bs=1 skip=$((BAD * CS + 1000)) count=1 2>/dev/null)"

M=$T_DIR/mnt
exact_eio() {
	python3 - "$M/rec" "$T_DIR/src" $CS $BAD <<'PY'
import errno, os, sys
path, src, cs, bad = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ref = open(src, 'rb').read()
fd = os.open(path, os.O_RDONLY)
lo, hi = bad * cs, (bad + 1) * cs
def eio(off, n):
    try:
        os.pread(fd, n, off)
    except OSError as e:
        return e.errno == errno.EIO
    return False
# every read that starts in the bad chunk fails
for off in (lo, lo + 1, lo + 1000, lo + 4096, hi - 4096, hi - 1):
    assert eio(off, 1), "read at %d did not fail" % off
    assert eio(off, 3 * cs), "long read at %d did not fail" % off
# reads outside it succeed, up to its first byte and from its end
for (off, n) in ((0, lo), (lo - 1, 1), (lo - 4096, 4096), (hi, 1), (hi, len(ref) - hi),
                 (hi - 4096 + 4096, 4096)):
    assert os.pread(fd, n, off) == ref[off:off + n], "read %d+%d wrong" % (off, n)
# a read running into the bad chunk returns the bytes before it
got = os.pread(fd, 20, lo - 10)
assert got == ref[lo - 10:lo], "short read before the bad chunk: %d bytes" % len(got)
PY
}
check "mount (verify on)" mount_pack "$PACK" "$M"
check "dd of the chunk before the bad one" cmp <(dd if="$M/rec" bs=64K skip=$((BAD - 1)) count=1 2>/dev/null) \
	<(dd if="$T_DIR/src" bs=64K skip=$((BAD - 1)) count=1 2>/dev/null)
expect_err "dd of the bad chunk: EIO" '!0' "Input/output error" dd if="$M/rec" of=/dev/null bs=64K skip=$BAD count=1
check "dd of the chunk after the bad one" cmp <(dd if="$M/rec" bs=64K skip=$((BAD + 1)) count=1 2>/dev/null) \
	<(dd if="$T_DIR/src" bs=64K skip=$((BAD + 1)) count=1 2>/dev/null)
expect_err "cat of the whole file: EIO" '!0' "Input/output error" cat "$M/rec"
check "EIO exactly at the bad chunk's range (page cache)" exact_eio
check "the size is intact after failed reads" test "$(stat -c %s "$M/rec")" = $((16 * CS))
check "every chunk but the bad one still reads right" cmp -n $((BAD * CS)) "$T_DIR/src" "$M/rec"
check "the log names the recording and the byte range" \
	grep -q "rec: bytes $((BAD * CS))-$(((BAD + 1) * CS - 1)): checksum mismatch" "$T_DIR/mount.log"
check "unmount" unmount_pack "$M"

check "mount -o direct_io" mount_pack "$PACK" "$M" -o direct_io
check "EIO exactly at the bad chunk's range (direct_io)" exact_eio
check "unmount" unmount_pack "$M"

check "mount -o noverify" mount_pack "$PACK" "$M" -o noverify
run cmp "$T_DIR/src" "$M/rec"
check "noverify: the bytes come back, differing at the flipped byte only" \
	grep -q "differ: byte $((BAD * CS + 1000 + 1))," <<<"$OUT"
check "noverify: the rest is right" cmp -n $((BAD * CS + 1000)) "$T_DIR/src" "$M/rec"
check "noverify: the rest is right (after)" cmp -i $((BAD * CS + 1001)) "$T_DIR/src" "$M/rec"
check "unmount" unmount_pack "$M"

# member 0's copy of a chunk's checksum slot damaged (a member that missed
# an update): the data is intact, the other member's copy vouches for it
HELPER=$RECFS_BIN/../tests/fsck-helper
# chunk $BAD mended first: the flipped byte back from the source
dd if="$T_DIR/src" of="$mfile" bs=1 skip=$((BAD * CS + 1000)) seek=$((moff + 1000)) count=1 conv=notrunc status=none
SLOTC=7
read -r sfile soff < <("$HELPER" where "$PACK" slot rec $SLOTC | head -1)
check "member 0's slot of chunk $SLOTC located ($sfile at ${soff:-?})" test -n "$soff"
dd if=/dev/zero of="$sfile" bs=16 seek=$((soff / 16)) count=1 conv=notrunc status=none
check "library: reads the recording, taking the other slot copy" cmp <(recfs cat "$PACK" rec) "$T_DIR/src"
: >"$T_DIR/mount.log"
check "mount with member 0's slot damaged" mount_pack "$PACK" "$M"
check "mount: chunk $SLOTC reads right through the other member's slot" \
	cmp <(dd if="$M/rec" bs=64K skip=$SLOTC count=1 2>/dev/null) \
	<(dd if="$T_DIR/src" bs=64K skip=$SLOTC count=1 2>/dev/null)
check "mount: and no error is logged for it" bash -c "! grep -q 'bytes $((SLOTC * CS))-' '$T_DIR/mount.log'"
check "unmount" unmount_pack "$M"

# missing member
make_members 3 128M d
check "mkfs 3 members" mkfs.recfs -f -q -c 64K "$PACK"
head -c $((32 * CS + 12345)) /dev/urandom >"$T_DIR/src3"
check "write rec" write_rec "$PACK" rec "$T_DIR/src3"
check "write a second rec" write_rec "$PACK" two "$T_DIR/src"
mv "$T_DIR/d1.img" "$T_DIR/d1.gone"
MEMBERS="$T_DIR/d0.img $T_DIR/d2.img"
PACK2="$T_DIR/d0.img,$T_DIR/d2.img"
refused "a missing member is refused, naming it" "member 1 .*missing" recfs-mount -f "$PACK2" "$M"
check "nothing mounted" bash -c "! mountpoint -q '$M'"

check "mount -o degraded" mount_pack "$PACK2" "$M" -o degraded
check "degraded: names listed" test "$(ls "$M" | tr '\n' ' ')" = "rec two "
check "degraded: user.recfs.unreadable listed" getfattr -n user.recfs.unreadable "$M/rec"
check "degraded: exactly the chunks on the missing member fail" python3 - "$M/rec" "$T_DIR/src3" $CS <<'PY'
import errno, os, sys
path, src, cs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ref = open(src, 'rb').read()
val = os.getxattr(path, 'user.recfs.unreadable').decode()
ranges = [tuple(int(x) for x in l.split('-')) for l in val.split()]
bad = set()
for (a, b) in ranges:
    assert a % cs == 0 and (b + 1) % cs == 0 or b == len(ref) - 1, "range %d-%d" % (a, b)
    for k in range(a // cs, b // cs + 1):
        bad.add(k)
n = (len(ref) + cs - 1) // cs
# one member of three: every third chunk
assert n // 3 <= len(bad) <= n // 3 + 1, "%d unreadable of %d chunks" % (len(bad), n)
ks = sorted(bad)
assert all(b - a == 3 for a, b in zip(ks, ks[1:])), "not every third chunk: %s" % ks
fd = os.open(path, os.O_RDONLY)
for k in range(n):
    off, ln = k * cs, min(cs, len(ref) - k * cs)
    try:
        got = os.pread(fd, ln, off)
        assert k not in bad, "chunk %d on the missing member was readable" % k
        assert got == ref[off:off + ln], "chunk %d wrong" % k
    except OSError as e:
        assert e.errno == errno.EIO and k in bad, "chunk %d: %s" % (k, e)
PY
check "degraded: the size is intact after failed reads" test "$(stat -c %s "$M/rec")" = $((32 * CS + 12345))
check "degraded: metadata still there" test "$(getfattr --only-values -n user.recfs.state "$M/rec")" = sealed
check "unmount" unmount_pack "$M"
mv "$T_DIR/d1.gone" "$T_DIR/d1.img"
check "all members back: mount" mount_pack "$T_DIR/d2.img,$T_DIR/d0.img,$T_DIR/d1.img" "$M"
check "all members back: every byte reads" cmp "$T_DIR/src3" "$M/rec"
expect_err "all members back: no unreadable attribute" '!0' "No such attribute" \
	getfattr -n user.recfs.unreadable "$M/rec"
check "unmount" unmount_pack "$M"

# a member that fails while mounted (here: cut short under the driver)
make_members 2 128M f
check "mkfs 2 members" mkfs.recfs -f -q -c 64K "$PACK"
head -c $((8 * CS)) /dev/urandom >"$T_DIR/src4"
check "write rec" write_rec "$PACK" rec "$T_DIR/src4"
check "mount" mount_pack "$PACK" "$M" -o direct_io
: >"$T_DIR/mount.log"
truncate -s 1M "$T_DIR/f1.img"
check "a failing member: its chunks fail, the others read" python3 - "$M/rec" "$T_DIR/src4" $CS <<'PY'
import errno, os, sys
path, src, cs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ref = open(src, 'rb').read()
fd = os.open(path, os.O_RDONLY)
good = bad = 0
for k in range(len(ref) // cs):
    try:
        assert os.pread(fd, cs, k * cs) == ref[k * cs:(k + 1) * cs], "chunk %d wrong" % k
        good += 1
    except OSError as e:
        assert e.errno == errno.EIO, "chunk %d: %s" % (k, e)
        bad += 1
assert good == bad == 4, "%d good, %d bad" % (good, bad)
PY
check "the log names the failing member" grep -q "member $T_DIR/f1.img ends at" "$T_DIR/mount.log"
check "user.recfs.unreadable lists the failed member's 4 chunks" python3 - "$M/rec" $CS <<'PY'
import os, sys
path, cs = sys.argv[1], int(sys.argv[2])
val = os.getxattr(path, 'user.recfs.unreadable').decode()
ranges = [tuple(int(x) for x in l.split('-')) for l in val.split()]
assert len(ranges) == 4 and all(b - a == cs - 1 for a, b in ranges), val
PY
check "unmount" unmount_pack "$M"
finish
