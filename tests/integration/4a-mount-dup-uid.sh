#!/bin/bash
# 4a-mount-dup-uid: a checksum-correct directory entry that repeats
# recording A's uid over another extent (B's).  Once A has been read
# through the mount (its chunks are in the driver's cache), reading B must
# never return A's bytes: the cache is keyed by the extent too, and the
# directory refuses both entries (a uid is unique: FORMAT.md 5).  The
# mount, recfs ls and recfs cat name both; fsck.recfs repairs it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "4a-mount-dup-uid: two directory entries with one uid"
HELPER=$RECFS_BIN/../tests/fsck-helper

make_members 2 64M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c 400000 /dev/urandom >"$T_DIR/A"
head -c 400000 /dev/urandom >"$T_DIR/B"
check "write A" write_rec "$PACK" A "$T_DIR/A"
check "write B" write_rec "$PACK" B "$T_DIR/B"
M=$T_DIR/mnt
# readall FILE: read it whole, bytes to /dev/null (errors stay visible)
readall() { cat "$1" >/dev/null; }

check "mount" mount_pack "$PACK" "$M"
check "A reads right through the mount (now cached)" cmp "$M/A" "$T_DIR/A"
check "B's entry rewritten with A's uid" "$HELPER" set-entry "$PACK" B uid @A
sleep 1.2 # the mount re-reads the directory at most once a second

# read_b: B through the mount must fail, and never with A's bytes
read_b() {
	python3 - "$M/B" "$T_DIR/A" <<'PY'
import errno, os, sys
p, A = sys.argv[1:]
a = open(A, 'rb').read()
try:
    fd = os.open(p, os.O_RDONLY)
except OSError as e:
    print("open B: %s" % e)
    sys.exit(0 if e.errno == errno.EUCLEAN else 1)
try:
    got = os.pread(fd, 65536 * 3, 0)
except OSError as e:
    print("read B: %s" % e)
    sys.exit(1)
if got == a[:len(got)]:
    print("B returned A's bytes (%d)" % len(got))
else:
    print("B returned bytes (%d), not A's" % len(got))
sys.exit(1)
PY
}
check "B: refused (EUCLEAN) through the mount, never A's bytes" read_b
for r in A B; do
	expect_err "$r: refused through the mount" '!0' "Structure needs cleaning" readall "$M/$r"
done
if grep -q "'A' (entry 0) and 'B' (entry 1) have the same uid" "$T_DIR/mount.log"; then
	pass "the mount logs both entries"
else
	fail "no log line naming both entries: $(tail -3 "$T_DIR/mount.log")"
fi
check "unmount" unmount_pack "$M"

expect_err "recfs cat A names both" 1 "'A' \(entry 0\) and 'B' \(entry 1\) have the same uid.*fsck" \
	sh -c 'recfs cat "$1" A >/dev/null' - "$PACK"
expect_err "recfs cat B names both" 1 "'A' \(entry 0\) and 'B' \(entry 1\) have the same uid.*fsck" \
	sh -c 'recfs cat "$1" B >/dev/null' - "$PACK"
run recfs ls "$PACK"
if [ "$RC" = 0 ] && ! grep -qx 'A\|B' <<<"$OUT" &&
	grep -q "'A' (entry 0) and 'B' (entry 1) have the same uid" <<<"$OUT"; then
	pass "recfs ls hides both and names them"
else
	fail "recfs ls: exit $RC: $OUT"
fi

snap=$(snapshot $MEMBERS)
expect_err "recfs rm A names both" 1 "'A' \(entry 0\) and 'B' \(entry 1\) have the same uid" \
	recfs rm "$PACK" A
expect_unchanged "recfs rm A refused" "$snap" $MEMBERS
printf 'x' >"$T_DIR/x"
expect_err "no new recording by either name" '!0' "'A' \(entry 0\) and 'B' \(entry 1\) have the same uid" \
	write_rec "$PACK" B "$T_DIR/x"

expect_err "fsck -n reports it" 4 "PR_ENT_DUPUID" fsck.recfs -n "$PACK"
run fsck.recfs -y "$PACK"
if [ "$RC" = 1 ] && grep -q "PR_ENT_DUPUID: recording 'B' (entry 1) has the same uid as 'A' (entry 0)" <<<"$OUT"; then
	pass "fsck -y repairs it"
else
	fail "fsck -y: exit $RC: $OUT"
fi
check "fsck clean afterwards" fsck.recfs -n "$PACK"
check "A reads right afterwards" cmp <(recfs cat "$PACK" A) "$T_DIR/A"
expect_err "B fails its checksums under its new uid" 1 "checksum" sh -c 'recfs cat "$1" B >/dev/null' - "$PACK"
check "mount again" mount_pack "$PACK" "$M"
check "A reads right through the mount" cmp "$M/A" "$T_DIR/A"
expect_err "B: EIO through the mount" '!0' "Input/output error" readall "$M/B"
check "unmount" unmount_pack "$M"
finish
