#!/bin/bash
# mkfs.recfs: formats file and block-device members; refuses every bad input
# with a one-line message and leaves the members byte-identical.
. "$(dirname "$0")/../lib.sh"
cd "$T_DIR"

make_members 4 64M
run mkfs.recfs -L first -c 256K -n 100 $MEMBERS
check "mkfs on 4 members given as arguments" test "$RC" = 0
check "summary names the label" grep -q "label: *first" <<<"$OUT"
check "summary lists members in order" grep -Eq "^ +3 +$T_DIR/m3.img" <<<"$OUT"
check "summary shows the chunk" grep -q "chunk size: *256.00 KiB" <<<"$OUT"
check "summary shows the directory capacity" grep -q "max recordings: *100" <<<"$OUT"
uuid=$(sed -n 's/^ *uuid: *//p' <<<"$OUT")
run recfs info "$T_DIR/m2.img,$T_DIR/m0.img,$T_DIR/m3.img,$T_DIR/m1.img"
check "info assembles members given out of order" test "$RC" = 0
check "info shows the same uuid" grep -q "uuid: *$uuid" <<<"$OUT"
check "info shows 4 members present" grep -q "members: *4 (4 present)" <<<"$OUT"

# --- refusals, each leaving the members untouched
refused "existing pack without -f" "m0.img already holds recfs pack 'first'" mkfs.recfs "$PACK"
# a recfs member that does not open (damaged superblocks) is still recognised
cp "$T_DIR/m0.img" "$T_DIR/m0.keep"
printf '\x02' | dd of="$T_DIR/m0.img" bs=1 seek=8 conv=notrunc status=none
size=$(stat -c %s "$T_DIR/m0.img")
printf '\x02' | dd of="$T_DIR/m0.img" bs=1 seek=$((size - 4096 + 8)) conv=notrunc status=none
refused "damaged recfs member without -f" "m0.img holds a damaged or unsupported recfs member; use -f" mkfs.recfs "$PACK"
cp "$T_DIR/m0.keep" "$T_DIR/m0.img"
refused "chunk not a power of two" "chunk-size '100K': not a power of two; want 64K to 64M" mkfs.recfs -f -c 100K "$PACK"
refused "chunk too small" "chunk-size '32K': too small; want 64K to 64M" mkfs.recfs -f -c 32K "$PACK"
refused "chunk too large" "chunk-size '128M': too large; want 64K to 64M" mkfs.recfs -f -c 128M "$PACK"
refused "zero directory" "max-recordings '0': too small; want 1 to 16777216" mkfs.recfs -f -n 0 "$PACK"
refused "label too long" "label '.*' is longer than 63 bytes" mkfs.recfs -f -L "$(printf 'x%.0s' {1..64})" "$PACK"
refused "same member twice" "m1.img is named twice" mkfs.recfs -f "$T_DIR/m0.img,$T_DIR/m1.img,$T_DIR/m1.img"
ln -s m1.img "$T_DIR/alias.img"
refused "same member under two names" "are the same member" mkfs.recfs -f "$T_DIR/m1.img,$T_DIR/alias.img"
refused "missing member file" "nope.img: No such file or directory" mkfs.recfs -f "$T_DIR/m0.img,$T_DIR/nope.img"
mkdir "$T_DIR/adir"
refused "a directory as member" "adir: not a block device or regular file" mkfs.recfs -f "$T_DIR/m0.img,$T_DIR/adir"
truncate -s 1M "$T_DIR/tiny.img"
MEMBERS="$MEMBERS $T_DIR/tiny.img"
refused "member too small" "too small" mkfs.recfs -f "$PACK,$T_DIR/tiny.img"
refused "pack with no member" "empty member path" mkfs.recfs -f "$T_DIR/m0.img,,$T_DIR/m1.img"
expect_err "no arguments is a usage error" 16 "Usage" mkfs.recfs

# a member held by another writer (flock, as recfs-record holds it)
flock -o "$T_DIR/m2.img" sleep 60 &
holder=$!
cleanup_add "kill $holder"
for ((i = 0; i < 100; i++)); do flock -n "$T_DIR/m2.img" true || break; sleep 0.02; done
refused "member locked by a writer" "m2.img: in use by another writer" mkfs.recfs -f "$PACK"
kill $holder; wait $holder 2>/dev/null

# foreign signatures, found with libblkid
make_members 2 64M s
mkfs.ext4 -q -F "$T_DIR/s1.img"
refused "ext4 signature" "s1.img holds a file system signature \(ext4\); use -f" mkfs.recfs "$PACK"
printf 'label: gpt\n,\n' | sfdisk -q "$T_DIR/s0.img" >/dev/null 2>&1
refused "partition table" "s0.img holds a partition table \(gpt\)" mkfs.recfs "$T_DIR/s0.img"
run mkfs.recfs -f -q "$PACK"
check "-f overwrites foreign signatures" test "$RC" = 0 -a -z "$OUT"
blkid -p "$T_DIR/s1.img" >/dev/null 2>&1; rc=$?
check "-f wiped the ext4 signature (blkid finds nothing)" test "$rc" = 2
blkid -p "$T_DIR/s0.img" >/dev/null 2>&1; rc=$?
check "-f wiped the partition table (blkid finds nothing)" test "$rc" = 2
check "the pack is usable after -f" recfs info "$PACK"

# block devices (loop), one of them mounted elsewhere
make_members 3 80M l
l0=$(losetup -f --show "$T_DIR/l0.img") && cleanup_add "losetup -d $l0"
l1=$(losetup -f --show "$T_DIR/l1.img") && cleanup_add "losetup -d $l1"
l2=$(losetup -f --show "$T_DIR/l2.img") && cleanup_add "losetup -d $l2"
run mkfs.recfs -L loops "$l0,$l1"
check "mkfs on loop block devices" test "$RC" = 0
run recfs info "$l1,$l0"
check "info on loop block devices" grep -q "label: *loops" <<<"$OUT"
mkfs.ext4 -q -F "$l2"
mkdir -p "$T_DIR/mnt"
snap=$(snapshot "$T_DIR/l2.img")
mount -o ro,noload "$l2" "$T_DIR/mnt" && cleanup_add "umount '$T_DIR/mnt'"
expect_err "mounted member refused even with -f" '!0' "$l2 is mounted" mkfs.recfs -f "$l2"
umount "$T_DIR/mnt"
expect_unchanged "mounted member" "$snap" "$T_DIR/l2.img"

# a million-entry directory
make_members 2 8G dir
run mkfs.recfs -q -n 1000000 "$PACK"
check "mkfs with 1,000,000 directory entries" test "$RC" = 0
head -c 100000 /dev/urandom >"$T_DIR/d.src"
"$RECFS_BIN/../tests/recfs-testwrite" "$PACK" one "$T_DIR/d.src"
run recfs info "$PACK"
check "info: room for 1000000 recordings" grep -q "recordings: *1 (room for 1000000)" <<<"$OUT"
check "the recording reads back" cmp <(recfs cat "$PACK" one) "$T_DIR/d.src"

# mkfs writes metadata only: well under a second for a large sparse pack
make_members 4 2T big
start=$(date +%s%N)
run mkfs.recfs -q "$PACK"
end=$(date +%s%N)
check "mkfs on 4 x 2 TiB members succeeds" test "$RC" = 0
echo "mkfs on 4 x 2 TiB: $(((end - start) / 1000000)) ms"
used=$(du -k "$T_DIR/big0.img" | cut -f1)
check "mkfs wrote little (under 1 MiB per 2 TiB member, was ${used} KiB)" test "$used" -lt 1024
finish
