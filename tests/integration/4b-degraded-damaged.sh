#!/bin/bash
# 49-degraded-damaged: a member that is given but damaged (truncated after
# mkfs, or with no valid superblock) is treated like a missing one in
# degraded mode: `recfs info` lists it, named, with the reason; recfs-mount
# -o degraded mounts, names it, and only the chunks striped onto it read as
# EIO.  Without degraded the refusal names the damaged member.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "4b-degraded-damaged: truncated and unreadable members in degraded mode"

CS=65536
make_members 4 64M
check "mkfs 4 members" mkfs.recfs -f -q -c 64K "$PACK"
head -c $((16 * CS + 777)) /dev/urandom >"$T_DIR/big"
head -c 5000 /dev/urandom >"$T_DIR/small"
check "write big (striped over every member)" write_rec "$PACK" big "$T_DIR/big"
check "write small (one chunk)" write_rec "$PACK" small "$T_DIR/small"

# damage a member that does not hold small's only chunk
m=($MEMBERS)
D=-1
for i in 0 1 2 3; do
	[ "$(member_offset "${m[$i]}" "$T_DIR/small" 0)" -lt 0 ] && { D=$i; break; }
done
check "a member without small's chunk" test "$D" -ge 0
DM=${m[$D]}
cp --sparse=always "$DM" "$T_DIR/saved.img"
truncate -s 1M "$DM"

# recfs info (always degraded) lists it, named, with the reason
run recfs info "$PACK"
check "info runs with a truncated member (exit $RC)" test "$RC" = 0
check "info: the truncated member is DAMAGED, named" \
	grep -Eq "^ +$D +DAMAGED +[0-9a-f-]+ +$DM\$" <<<"$OUT"
check "info: the reason is given" \
	grep -q "^left out: *$DM: device is 1048576 bytes, smaller than the pack's member size 67108864" <<<"$OUT"
check "info: 3 of 4 present, degraded warning" \
	bash -c 'grep -q "members: *4 (3 present)" <<<"$1" && grep -q "pack is degraded" <<<"$1"' _ "$OUT"

# without degraded: refused, naming the damaged member
refused "ls with a truncated member names it" "$(basename "$DM"): device is 1048576 bytes, smaller than" \
	recfs ls "$PACK"
M=$T_DIR/mnt
mkdir -p "$M"
expect_err "mount without degraded is refused, naming the member" 1 \
	"$(basename "$DM"): device is 1048576 bytes, smaller than" recfs-mount -f "$PACK" "$M"
check "nothing mounted" bash -c "! mountpoint -q '$M'"

# mount -o degraded: EIO exactly for the chunks on the damaged member
degraded_reads() {
	python3 - "$M" "$T_DIR/big" "$T_DIR/small" $CS <<'PY'
import errno, os, sys
mnt, big, small, cs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
assert sorted(os.listdir(mnt)) == ["big", "small"], os.listdir(mnt)
assert open(os.path.join(mnt, "small"), "rb").read() == open(small, "rb").read()
ref = open(big, "rb").read()
path = os.path.join(mnt, "big")
assert os.stat(path).st_size == len(ref)
val = os.getxattr(path, "user.recfs.unreadable").decode()
bad = set()
for l in val.split():
    a, b = (int(x) for x in l.split("-"))
    bad.update(range(a // cs, b // cs + 1))
n = (len(ref) + cs - 1) // cs
ks = sorted(bad)
# one member of four: every fourth chunk
assert len(ks) in (n // 4, n // 4 + 1) and all(b - a == 4 for a, b in zip(ks, ks[1:])), ks
fd = os.open(path, os.O_RDONLY)
for k in range(n):
    off, ln = k * cs, min(cs, len(ref) - k * cs)
    try:
        got = os.pread(fd, ln, off)
        assert k not in bad, "chunk %d on the damaged member was readable" % k
        assert got == ref[off:off + ln], "chunk %d wrong" % k
    except OSError as e:
        assert e.errno == errno.EIO and k in bad, "chunk %d: %s" % (k, e)
os.close(fd)
PY
}
: >"$T_DIR/mount.log"
check "mount -o degraded with a truncated member" mount_pack "$PACK" "$M" -o degraded
check "mount: the log names the damaged member and why" \
	grep -q "degraded: $DM (member $D) left out: device is 1048576 bytes, smaller" "$T_DIR/mount.log"
check "degraded: small reads back, big gives EIO only on the damaged member's chunks" degraded_reads
check "unmount" unmount_pack "$M"

# a member with no valid superblock (primary and backup overwritten): its
# index is unknown, so the member shows as MISSING and the device is named
cp --sparse=always "$T_DIR/saved.img" "$DM"
dd if=/dev/zero of="$DM" bs=4096 count=1 conv=notrunc status=none
dd if=/dev/zero of="$DM" bs=4096 seek=$((64 * 256 - 1)) count=1 conv=notrunc status=none
run recfs info "$PACK"
check "info runs with a member without superblocks (exit $RC)" test "$RC" = 0
check "info: that member is MISSING" grep -Eq "^ +$D +MISSING" <<<"$OUT"
check "info: the device is named with the reason" \
	grep -q "^left out: *$DM: not a recfs member: primary superblock: .*; backup: " <<<"$OUT"
refused "ls without degraded names it" "$(basename "$DM"): not a recfs member" recfs ls "$PACK"
: >"$T_DIR/mount.log"
check "mount -o degraded with a member without superblocks" mount_pack "$PACK" "$M" -o degraded
check "mount: the log names the missing member and the device left out" \
	bash -c "grep -q 'degraded: member $D (UUID [0-9a-f-]*) is missing' '$T_DIR/mount.log' &&
		 grep -q 'degraded: $DM left out: not a recfs member' '$T_DIR/mount.log'"
check "degraded: same reads as with the member truncated" degraded_reads
check "unmount" unmount_pack "$M"

# the member back: everything reads
cp --sparse=always "$T_DIR/saved.img" "$DM"
run recfs info "$PACK"
check "member back: info shows all present" grep -q "members: *4 (4 present)" <<<"$OUT"
check "member back: no member left out" bash -c "! grep -q 'left out' <<<\"\$1\"" _ "$OUT"
check "member back: big reads in full" cmp <(recfs cat "$PACK" big) "$T_DIR/big"
finish
