#!/bin/bash
# 46-mount-reuse: a file kept open on a sealed recording that is deleted
# while mounted, its space then taken by a new recording: reads through
# the old descriptor return the old bytes (cached) or ESTALE, never the
# new recording's bytes, and log no checksum mismatch (that is no
# corruption).  With and without checksum checking, direct and cached.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "46-mount-reuse: open file on a deleted recording whose space is reused"

make_members 2 64M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c 400000 /dev/urandom >"$T_DIR/A"
head -c 400000 /dev/urandom >"$T_DIR/B"
check "write old" write_rec "$PACK" old "$T_DIR/A"
M=$T_DIR/mnt

# reader MOUNTED_FILE: opens it, reads chunk 0, deletes the recording,
# writes another into its space, reads chunks 1-5 through the old fd
reader() {
	python3 - "$1" "$T_DIR/A" "$T_DIR/B" "$PACK" "$TESTWRITE" <<'PY'
import errno, os, subprocess, sys, time
p, A, B, pack, tw = sys.argv[1:]
a, b = open(A, 'rb').read(), open(B, 'rb').read()
cs = 65536
fd = os.open(p, os.O_RDONLY)
if os.pread(fd, cs, 0) != a[:cs]:
    sys.exit("chunk 0 is wrong before the delete")
subprocess.check_call(["recfs", "rm", pack, "old"], stdout=subprocess.DEVNULL)
subprocess.check_call([tw, pack, "new", B])
time.sleep(0.2)
bad = 0
for rnd in range(2):
    for k in range(1, 6):
        try:
            got = os.pread(fd, cs, k * cs)
        except OSError as e:
            if e.errno != errno.ESTALE:
                print("chunk %d: %s (want ESTALE)" % (k, e)); bad += 1
            continue
        if got == b[k * cs:(k + 1) * cs]:
            print("chunk %d: the NEW recording's bytes" % k); bad += 1
        elif got != a[k * cs:(k + 1) * cs]:
            print("chunk %d: neither old nor new bytes (%d)" % (k, len(got))); bad += 1
    os.listdir(os.path.dirname(p))  # a directory reload in between
    time.sleep(1.1)
sys.exit(1 if bad else 0)
PY
}

for opts in direct_io,noverify direct_io noverify verify; do
	: >"$T_DIR/mount.log"
	if ! check "mount -o $opts" mount_pack "$PACK" "$M" -o "$opts"; then
		break
	fi
	check "-o $opts: the old fd never reads the new recording" reader "$M/old"
	if grep -q 'checksum mismatch\|no checksum' "$T_DIR/mount.log"; then
		fail "-o $opts: a reused recording logged as corruption: $(grep -m1 checksum "$T_DIR/mount.log")"
	else
		pass "-o $opts: no corruption logged"
	fi
	check "new reads right" cmp "$M/new" "$T_DIR/B"
	check "unmount" unmount_pack "$M"
	recfs rm "$PACK" new >/dev/null
	write_rec "$PACK" old "$T_DIR/A" || break
done
finish
