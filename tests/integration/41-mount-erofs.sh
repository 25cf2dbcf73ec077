#!/bin/bash
# 41-mount-erofs: the mount is read-only (every modifying call is EROFS and
# the members stay byte-identical), uid=/gid=/umask= set ownership and
# mode, and mount.recfs follows mount(8)'s helper convention.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "41-mount-erofs: read-only semantics, options, mount.recfs"

make_members 2 128M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c 1000000 /dev/urandom >"$T_DIR/src"
check "write rec" write_rec "$PACK" rec "$T_DIR/src"
M=$T_DIR/mnt

check "mount uid=1234,gid=2345,umask=027" mount_pack "$PACK" "$M" -o uid=1234,gid=2345,umask=027
check "owner from uid=/gid=" test "$(stat -c %u:%g "$M/rec")" = 1234:2345
check "mode 0444 & ~umask" test "$(stat -c %a "$M/rec")" = 440
check "root dir mode 0555 & ~umask" test "$(stat -c %a "$M")" = 550
check "readable by root" cmp "$T_DIR/src" "$M/rec"
check "unmount" unmount_pack "$M"

check "mount" mount_pack "$PACK" "$M"
snap=$(snapshot $MEMBERS)
RO="Read-only file system"
expect_err "touch new file: EROFS" '!0' "$RO" touch "$M/new"
expect_err "touch existing: EROFS" '!0' "$RO" touch "$M/rec"
expect_err "rm: EROFS" '!0' "$RO" rm -f "$M/rec"
expect_err "mv: EROFS" '!0' "$RO" mv "$M/rec" "$M/rec2"
expect_err "echo >: EROFS" '!0' "$RO" bash -c "echo hi > '$M/rec'"
expect_err "echo >>: EROFS" '!0' "$RO" bash -c "echo hi >> '$M/rec'"
expect_err "echo > new: EROFS" '!0' "$RO" bash -c "echo hi > '$M/new'"
expect_err "truncate: EROFS" '!0' "$RO" truncate -s 0 "$M/rec"
expect_err "chmod: EROFS" '!0' "$RO" chmod 600 "$M/rec"
expect_err "chown: EROFS" '!0' "$RO" chown 1:1 "$M/rec"
expect_err "setfattr: EROFS" '!0' "$RO" setfattr -n user.recfs.state -v x "$M/rec"
expect_err "setfattr -x: EROFS" '!0' "$RO" setfattr -x user.recfs.state "$M/rec"
expect_err "mkdir: EROFS" '!0' "$RO" mkdir "$M/d"
expect_err "ln -s: EROFS" '!0' "$RO" ln -s rec "$M/l"
expect_err "ln: EROFS" '!0' "$RO" ln "$M/rec" "$M/l2"
expect_err "python open for write: EROFS" '!0' "Errno 30" python3 -c "open('$M/rec', 'r+b')"
check "still there and intact" cmp "$T_DIR/src" "$M/rec"
check "unmount" unmount_pack "$M"
expect_unchanged "after write attempts" "$snap" $MEMBERS

# mount(8) helper convention: mount.recfs SPEC DIR [-sfnv] [-o OPTS],
# returns once mounted (the driver goes to the background)
check "mount.recfs -f (fake) mounts nothing" mount.recfs "$PACK" "$M" -f -o rw
check "fake: not mounted" bash -c "! mountpoint -q '$M'"
check "mount.recfs PACK DIR -o ..." mount.recfs "$PACK" "$M" -n -o rw,defaults,nofail,noatime,x-systemd.automount,uid=7
cleanup_add "mountpoint -q '$M' && umount '$M'"
check "mounted when the helper returns" mountpoint -q "$M"
line=$(grep " $M " /proc/mounts)
check "/proc/mounts: source is the pack, type fuse.recfs, ro" \
	grep -Eq "^$PACK $M fuse.recfs ro," <<<"$line"
check "helper options applied (uid=7)" test "$(stat -c %u "$M/rec")" = 7
check "helper mount reads" cmp "$T_DIR/src" "$M/rec"
check "umount DIR" umount "$M"
check "unmounted" wait_unmounted "$M"
expect_err "mount.recfs: an unknown option is refused" 1 "unknown option 'nosuchopt'" \
	mount.recfs "$PACK" "$M" -f -o nosuchopt
check "mount.recfs -s (sloppy): an unknown option is ignored" \
	mount.recfs "$PACK" "$M" -f -o nosuchopt,ro -s
check "mount.recfs -s: mounts with an unknown option" mount.recfs "$PACK" "$M" -s -o nosuchopt
check "-s: mounted" mountpoint -q "$M"
check "umount DIR" umount "$M"
check "unmounted" wait_unmounted "$M"

# mount(8) itself: `mount -t recfs` and an fstab line find the helper in
# /sbin.  Done in a private mount namespace where a folder holding only
# mount.recfs is bound over /usr/sbin, so nothing is installed.
H=$T_DIR/sbin
mkdir -p "$H"
cp "$RECFS_BIN/mount.recfs" "$H/"
printf '%s %s recfs ro,uid=9,nofail,x-test 0 0\n' "$PACK" "$M" >"$T_DIR/fstab"
if unshare -m --propagation private true 2>/dev/null; then
	run unshare -m --propagation private bash -c "
		trap \"mountpoint -q '$M' && umount '$M'\" EXIT
		mount --bind '$H' /usr/sbin || exit 10
		mount -t recfs -o uid=5 '$PACK' '$M' || exit 11
		[ \$(stat -c %u '$M/rec') = 5 ] || exit 12
		cmp '$T_DIR/src' '$M/rec' || exit 13
		grep -q ' $M fuse.recfs ro,' /proc/self/mounts || exit 14
		umount '$M' || exit 15
		mount -T '$T_DIR/fstab' '$M' || exit 16
		[ \$(stat -c %u '$M/rec') = 9 ] || exit 17
		cmp '$T_DIR/src' '$M/rec' || exit 18
		umount '$M' || exit 19"
	check "mount -t recfs and an fstab line (mount -T) work: $OUT" test "$RC" = 0
else
	echo "skipped mount(8) checks: no mount namespaces here"
fi

# usage errors
check "--help" bash -c "recfs-mount --help | grep -q 'Usage: recfs-mount'"
check "--version" bash -c "recfs-mount --version | grep -q '^recfs-mount [0-9]'"
refused "unknown option refused" "unknown option 'bogus'" recfs-mount -f -o bogus "$PACK" "$M"
refused "bad uid refused" "option uid 'x': not a number; want 0 to 4294967295" recfs-mount -f -o uid=x "$PACK" "$M"
refused "missing mount point refused" "mount point $T_DIR/nodir" recfs-mount -f "$PACK" "$T_DIR/nodir"
refused "not a pack refused" "src: not a recfs member" recfs-mount -f "$T_DIR/src" "$M"
check "nothing left mounted" bash -c "! mountpoint -q '$M'"
finish
