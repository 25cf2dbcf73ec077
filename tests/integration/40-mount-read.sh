#!/bin/bash
# 40-mount-read: recfs-mount shows recordings as plain read-only files that
# ordinary tools read byte-exactly (ls, stat, find, du, cat, cmp, sha256sum,
# dd at odd offsets, tail, cp, tar, getfattr, Python mmap and pread across
# every chunk/member boundary and at EOF, fio random reads with verify).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "40-mount-read: read a mounted pack with ordinary tools"

CS=65536
make_members 3 256M
check "mkfs 3 members, 64 KiB chunks" mkfs.recfs -f -q -c 64K "$PACK"

S=$T_DIR/src
mkdir -p "$S" "$T_DIR/out"
head -c 5000000 /dev/urandom >"$S/odd"          # not a chunk multiple
head -c $((CS * 3 * 4)) /dev/urandom >"$S/exact" # whole rows
head -c 1 /dev/urandom >"$S/tiny"
: >"$S/empty"
head -c 300000 /dev/urandom >"$S/vdif"
fio --name=mk --filename="$S/fioref" --rw=write --bs=4k --size=8M --verify=crc32c \
	--do_verify=0 --output=/dev/null
check "write odd" write_rec "$PACK" odd "$S/odd"
check "write exact" write_rec "$PACK" exact "$S/exact"
check "write tiny" write_rec "$PACK" tiny "$S/tiny"
check "write empty" write_rec "$PACK" empty "$S/empty" --size-hint 1
check "write vdif with metadata" write_rec "$PACK" vdif "$S/vdif" --vdif 8032 \
	--source "udp://0.0.0.0:46227" --packets 1000 --dropped 3 --frames-lost 5 \
	--gap 8032:2:0 --gap 80320:3:1
check "write fioref" write_rec "$PACK" fioref "$S/fioref"
NAMES="odd exact tiny empty vdif fioref"

M=$T_DIR/mnt
check "mounts" mount_pack "$PACK" "$M"

# listing and attributes
check "ls lists every recording" test "$(ls "$M" | sort | tr '\n' ' ')" = "empty exact fioref odd tiny vdif "
check "find sees 6 regular files" test "$(find "$M" -type f | wc -l)" = 6
ok=1
for n in $NAMES; do
	want=$(stat -c %s "$S/$n")
	read -r size mode nlink blocks ftype < <(stat -c '%s %a %h %b %F' "$M/$n")
	[ "$size" = "$want" ] || { echo "$n: size $size, want $want"; ok=0; }
	[ "$mode" = 444 ] || { echo "$n: mode $mode"; ok=0; }
	[ "$nlink" = 1 ] || { echo "$n: nlink $nlink"; ok=0; }
	[ "$blocks" = $(((want + 511) / 512)) ] || { echo "$n: blocks $blocks"; ok=0; }
	[ "$ftype" = "regular file" ] || [ "$ftype" = "regular empty file" ] || { echo "$n: $ftype"; ok=0; }
done
check "stat: exact sizes, mode 0444, one link, blocks for du" test $ok = 1
check "inode numbers are distinct" test "$(stat -c %i "$M"/* | sort -u | wc -l)" = 6
check "du -B1 counts the bytes (rounded to 512)" test "$(du -B1 "$M/odd" | cut -f1)" = $(((5000000 + 511) / 512 * 512))
check "ls -l shows sizes" grep -q " 5000000 " <<<"$(ls -l "$M")"
check "df/statfs works" stat -f "$M"
expect_err "a missing name is ENOENT" '!0' "No such file" cat "$M/nope"

# whole-file reads
for n in $NAMES; do
	check "cmp $n" cmp "$S/$n" "$M/$n"
done
check "cat | sha256sum" test "$(cat "$M/odd" | sha256sum)" = "$(sha256sum <"$S/odd")"
check "sha256sum of the file" test "$(sha256sum <"$M/exact")" = "$(sha256sum <"$S/exact")"
check "tail -c 1000" cmp <(tail -c 1000 "$M/odd") <(tail -c 1000 "$S/odd")
check "cp" cp "$M/odd" "$T_DIR/out/odd"
check "cp copy is identical" cmp "$S/odd" "$T_DIR/out/odd"
mkdir -p "$T_DIR/out/tar"
check "tar of the mount" bash -c "tar cf - -C '$M' . | tar xf - -C '$T_DIR/out/tar'"
check "tar copy is identical" diff -r "$S" "$T_DIR/out/tar"

# dd at odd offsets and sizes, across chunk (64 KiB), member and row
# (192 KiB) boundaries and the end of file
ok=1
for sc in 0:1 12345:77777 65535:2 65536:65536 131071:131074 196607:65538 196608:1 \
	4999999:1 4999990:100 4999000:5000 333333:999999; do
	s=${sc%:*} c=${sc#*:}
	a=$(dd if="$M/odd" iflag=skip_bytes,count_bytes skip="$s" count="$c" bs=65536 2>/dev/null | sha256sum)
	b=$(dd if="$S/odd" iflag=skip_bytes,count_bytes skip="$s" count="$c" bs=65536 2>/dev/null | sha256sum)
	[ "$a" = "$b" ] || { echo "dd skip=$s count=$c differs"; ok=0; }
done
check "dd at odd offsets and sizes" test $ok = 1
check "dd bs=1M" cmp <(dd if="$M/odd" bs=1M 2>/dev/null) "$S/odd"

# extended attributes
X=$(getfattr -d "$M/vdif" 2>/dev/null)
ok=1
for kv in 'user.recfs.format="vdif"' 'user.recfs.frame_size="8032"' \
	'user.recfs.source="udp://0.0.0.0:46227"' 'user.recfs.packets="1000"' \
	'user.recfs.dropped="3"' 'user.recfs.frames_lost="5"' 'user.recfs.state="sealed"' \
	'user.recfs.sealed="yes"' 'user.recfs.gaps_coalesced="no"'; do
	grep -qxF "$kv" <<<"$X" || { echo "missing $kv"; ok=0; }
done
grep -Eq '^user.recfs.uid="[0-9a-f]{16}"$' <<<"$X" || { echo "uid"; ok=0; }
grep -Eq '^user.recfs.start="20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"$' <<<"$X" || { echo "start"; ok=0; }
grep -Eq '^user.recfs.end="20[0-9]{2}-' <<<"$X" || { echo "end"; ok=0; }
grep -Eq '^user.recfs.rate="[0-9]+ B/s' <<<"$X" || { echo "rate"; ok=0; }
check "getfattr -d shows the metadata" test $ok = 1
check "gap list" test "$(getfattr --only-values -n user.recfs.gaps "$M/vdif")" = "$(printf '8032 2 0\n80320 3 1')"
expect_err "unknown xattr is ENODATA" '!0' "No such attribute" getfattr -n user.recfs.nope "$M/vdif"
check "unique ids differ" test "$(getfattr --only-values -n user.recfs.uid "$M/odd")" != "$(getfattr --only-values -n user.recfs.uid "$M/exact")"

# Python: mmap, and pread across every chunk boundary and at EOF
check "python mmap and boundary preads" python3 - "$M/odd" "$S/odd" $CS <<'PY'
import mmap, os, sys, hashlib
path, src, cs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ref = open(src, 'rb').read()
with open(path, 'rb') as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    assert hashlib.sha256(m).digest() == hashlib.sha256(ref).digest(), "mmap differs"
    assert m[cs - 3:cs + 3] == ref[cs - 3:cs + 3]
    m.close()
fd = os.open(path, os.O_RDONLY)
size = len(ref)
for b in range(cs, size, cs):
    for (o, n) in ((b - 3, 6), (b - 1, 1), (b, 1), (b - 4097, 8193)):
        got = os.pread(fd, n, o)
        assert got == ref[o:o + n], "pread(%d, %d) differs" % (o, n)
assert os.pread(fd, 100, size - 5) == ref[-5:], "read at EOF"
assert os.pread(fd, 10, size) == b"", "read past EOF"
assert os.pread(fd, 10, size + 12345) == b"", "read far past EOF"
os.close(fd)
PY

bdi=/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb
if [ -w "$bdi" ]; then
	check "the mount's read-ahead is raised to 4096 KiB" test "$(cat "$bdi")" = 4096
	# a mount point with a space (\040 in /proc/self/mountinfo)
	MS="$T_DIR/mnt with space"
	MPID0=$MOUNT_PID
	if check "mount at a path with a space" mount_pack "$PACK" "$MS"; then
		head -c 1 "$MS/fioref" >/dev/null
		check "read-ahead raised there too" \
			test "$(cat "/sys/class/bdi/$(mountpoint -d "$MS")/read_ahead_kb")" = 4096
		fusermount3 -u "$MS"
		wait $MOUNT_PID
	fi
	MOUNT_PID=$MPID0
fi
check "fio random reads verify" fio --name=rv --filename="$M/fioref" --rw=randread --bs=4k \
	--size=8M --verify=crc32c --readonly --output="$T_DIR/fio.out"
check "fio 4 parallel random readers verify" fio --name=rv --filename="$M/fioref" \
	--rw=randread --bs=4k --size=8M --numjobs=4 --verify=crc32c --readonly \
	--output="$T_DIR/fio4.out"
check "unmount" unmount_pack "$M"

# the same reads with the page cache bypassed: every request reaches the
# driver at the caller's offsets
check "mount -o direct_io" mount_pack "$PACK" "$M" -o direct_io
check "direct_io: python boundary preads" python3 - "$M/odd" "$S/odd" $CS <<'PY'
import os, sys
path, src, cs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ref = open(src, 'rb').read()
fd = os.open(path, os.O_RDONLY)
for b in range(cs, len(ref), cs):
    for (o, n) in ((b - 3, 6), (b - 1, 1), (b, 1), (b - 70000, 200000)):
        o = max(o, 0)
        assert os.pread(fd, n, o) == ref[o:o + n], "pread(%d, %d) differs" % (o, n)
assert os.pread(fd, 100, len(ref) - 5) == ref[-5:]
assert os.pread(fd, 10, len(ref)) == b""
PY
for n in $NAMES; do
	check "direct_io: cmp $n" cmp "$S/$n" "$M/$n"
done
check "direct_io: fio random reads verify" fio --name=rv --filename="$M/fioref" \
	--rw=randread --bs=4k --size=8M --numjobs=2 --verify=crc32c --readonly \
	--output="$T_DIR/fio5.out"
check "unmount (direct_io)" unmount_pack "$M"
check "no error logged" test ! -s "$T_DIR/mount.log"
finish
