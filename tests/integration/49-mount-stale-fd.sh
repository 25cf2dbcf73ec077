#!/bin/bash
# 49-mount-stale-fd: a file kept open on a recording that is deleted and
# whose directory index is then reused by a new recording (looked up
# through the mount: the kernel then knows both).  The old descriptor
# must keep getting ESTALE from read and fstat, as the man page promises,
# and close(2) must succeed; never EIO (the kernel's answer for an inode
# it marked bad, as it does when a node id comes back with another
# generation).  Direct I/O and page cache.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "49-mount-stale-fd: ESTALE on a deleted recording's open file after its index is reused"

make_members 2 64M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
head -c 2000000 /dev/urandom >"$T_DIR/A"
head -c 300000 /dev/urandom >"$T_DIR/B"
M=$T_DIR/mnt

# stale MOUNTED_DIR: opens old, reads a little, deletes it, records new
# (it takes old's directory index), looks new up through the mount, then
# reads, fstats and closes the old descriptor
stale() {
	python3 - "$1" "$T_DIR/A" "$T_DIR/B" "$PACK" "$TESTWRITE" <<'PY'
import errno, os, subprocess, sys, time
d, A, B, pack, tw = sys.argv[1:]
a, b = open(A, 'rb').read(), open(B, 'rb').read()
ino_old = os.stat(d + "/old").st_ino
fd = os.open(d + "/old", os.O_RDONLY)
if os.pread(fd, 4096, 0) != a[:4096]:
    sys.exit("old reads wrong before the delete")
subprocess.check_call(["recfs", "rm", pack, "old"], stdout=subprocess.DEVNULL)
subprocess.check_call([tw, pack, "new", B])
time.sleep(1.1)  # past the entry and attribute timeouts
bad = 0
st = os.stat(d + "/new")
if st.st_ino != ino_old:
    print("new has inode %d, not the reused index's %d" % (st.st_ino, ino_old)); bad += 1
if open(d + "/new", 'rb').read() != b:
    print("new reads wrong"); bad += 1
for off in (1900000, 1000000, 4096):
    try:
        got = os.pread(fd, 4096, off)
        if got != a[off:off + 4096]:
            print("read at %d: not the old bytes" % off); bad += 1
    except OSError as e:
        if e.errno != errno.ESTALE:
            print("read at %d: %s (want ESTALE)" % (off, e)); bad += 1
try:
    os.fstat(fd)
    print("fstat succeeded (want ESTALE)"); bad += 1
except OSError as e:
    if e.errno != errno.ESTALE:
        print("fstat: %s (want ESTALE)" % e); bad += 1
try:
    os.close(fd)
except OSError as e:
    print("close: %s (want success)" % e); bad += 1
# the new recording is unaffected; old is gone (the kernel then forgets
# its inode, and the driver frees the old node)
if open(d + "/new", 'rb').read() != b:
    print("new reads wrong afterwards"); bad += 1
if os.path.exists(d + "/old"):
    print("old still exists"); bad += 1
time.sleep(0.2)
if open(d + "/new", 'rb').read() != b or os.stat(d + "/new").st_ino != ino_old:
    print("new reads wrong after old was forgotten"); bad += 1
sys.exit(1 if bad else 0)
PY
}

# churn MOUNTED_DIR: 20 times, a recording named r is opened, deleted and
# recorded again (same index each time); every third old descriptor stays
# open to the end, the others are closed at once: old nodes pile up and
# are freed out of order.  Every old descriptor gets ESTALE, every close
# succeeds, r always reads as its newest contents.
churn() {
	python3 - "$1" "$PACK" "$TESTWRITE" "$T_DIR" <<'PY'
import errno, os, subprocess, sys, time
d, pack, tw, tmp = sys.argv[1:]
held, bad = [], 0
def rec(i):
    data = bytes([i]) * (70000 + i)
    open(tmp + "/r.data", 'wb').write(data)
    subprocess.check_call([tw, pack, "r", tmp + "/r.data"])
    time.sleep(0.15)  # the mount re-reads the directory at most every 100 ms
    return data
data = rec(0)
for i in range(1, 21):
    fd = os.open(d + "/r", os.O_RDONLY)
    if os.pread(fd, 100, 0) != data[:100]:
        print("round %d: r reads wrong" % i); bad += 1
    subprocess.check_call(["recfs", "rm", pack, "r"], stdout=subprocess.DEVNULL)
    data = rec(i)
    os.listdir(d)
    if open(d + "/r", 'rb').read() != data:
        print("round %d: new r reads wrong" % i); bad += 1
    held.append(fd)
    if i % 3:
        try:
            os.pread(held[-1], 100, 65536)
        except OSError as e:
            if e.errno != errno.ESTALE:
                print("round %d: old read: %s" % (i, e)); bad += 1
        os.close(held.pop())
time.sleep(1.1)  # past the attribute timeout
for fd in held:
    try:
        os.fstat(fd)
        print("fstat of an old descriptor succeeded"); bad += 1
    except OSError as e:
        if e.errno != errno.ESTALE:
            print("old fstat: %s" % e); bad += 1
    os.close(fd)
sys.exit(1 if bad else 0)
PY
}

for opts in direct_io default; do
	check "write old" write_rec "$PACK" old "$T_DIR/A"
	o=()
	[ "$opts" = default ] || o=(-o "$opts")
	: >"$T_DIR/mount.log"
	if ! check "mount ($opts)" mount_pack "$PACK" "$M" "${o[@]}"; then
		break
	fi
	check "$opts: old fd: ESTALE from read and fstat, close succeeds" stale "$M"
	check "$opts: 20 deletes and reuses with descriptors left open" churn "$M"
	recfs rm "$PACK" r >/dev/null
	check "$opts: unmount" unmount_pack "$M"
	recfs rm "$PACK" new >/dev/null
done
finish
