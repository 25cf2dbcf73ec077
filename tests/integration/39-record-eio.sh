#!/bin/bash
# 39-record-eio: a member whose data area fails with a real block-layer EIO
# mid-recording.  Both members are loop devices; member 1's backing file
# lives on a tiny FUSE filesystem (errfs below, the kernel protocol spoken
# straight on /dev/fuse by python3) that, once armed, answers every request
# touching the member's data area with EIO, as a device-mapper table of
# linear + error + linear would: the metadata region at the start and the
# backup superblock at the end stay readable and writable.  The loop driver
# turns that EIO into a failed request ("I/O error, dev loopN" in the kernel
# log), so the recorder's O_DIRECT write gets EIO from the block layer, not
# ENOSPC from a full filesystem as in 35-record-ioerror.  (Device-mapper
# itself is not used: kernels without CONFIG_BLK_DEV_DM, such as the
# development VM's, have loop and FUSE but no dm-error.)  The recorder commits
# what is durable, seals, exits 3 naming the member and the error, and the
# sealed prefix reads back verified once the error is lifted.
. "$(dirname "$0")/../lib.sh"
echo "39-record-eio: a member's data area fails with EIO mid-recording"

if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null || ! command -v python3 >/dev/null ||
	[ ! -c /dev/fuse ]; then
	fail "needs root, losetup, python3 and FUSE (/dev/fuse) to make a member fail with EIO"
	finish
	exit
fi

# errfs MNT BACKING STATE: one file, MNT/m1.img, whose bytes are BACKING's.
# SIGUSR1 reads "LO HI" from STATE.ctl and from then on fails every read and
# write that touches [LO, HI) with EIO; SIGUSR2 lifts it.  STATE says
# "armed LO HI" or "clear" once a switch is in effect, and "failed N" counts
# the requests refused.  Files are opened direct_io (no page cache between
# the loop device and the backing file, as with a disk).
cat >"$T_DIR/errfs.py" <<'PY'
import ctypes, errno, os, signal, struct, sys
mnt, backing, state = sys.argv[1:4]
bfd = os.open(backing, os.O_RDWR)
fail = None
nfailed = 0


def show():
	with open(state + ".tmp", "w") as f:
		f.write(("armed %d %d" % fail if fail else "clear") + " failed %d\n" % nfailed)
	os.replace(state + ".tmp", state)


def arm(sig, frm):
	global fail
	with open(state + ".ctl") as f:
		fail = tuple(int(x) for x in f.read().split())
	show()


def disarm(sig, frm):
	global fail
	fail = None
	show()


signal.signal(signal.SIGUSR1, arm)
signal.signal(signal.SIGUSR2, disarm)
fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other" % fd
if libc.mount(b"errfs", mnt.encode(), b"fuse.errfs", 6, opts.encode()) != 0:  # nosuid,nodev
	sys.exit("errfs: mount %s: %s" % (mnt, os.strerror(ctypes.get_errno())))
show()
ROOT, FILE = 1, 2


def attr(ino):
	size, mode, nlink = (0, 0o40755, 2) if ino == ROOT else (os.fstat(bfd).st_size, 0o100644, 1)
	return struct.pack("<6Q10I", ino, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0,
			   mode, nlink, 0, 0, 0, 4096, 0)


def io(off, n, do):
	global nfailed
	if fail and off < fail[1] and off + n > fail[0]:
		nfailed += 1
		show()
		return -errno.EIO, b""
	return 0, do()


def handle(op, node, body):
	if op == 26:  # INIT: protocol 7.31 at most, 1 MiB requests (BIG_WRITES | MAX_PAGES)
		major, minor, ra, flags = struct.unpack_from("<4I", body)
		return 0, struct.pack("<4I2H2I2HI7I", 7, min(minor, 31), ra, (1 << 5) | (1 << 22),
				      16, 12, 1 << 20, 1, 256, 0, 0, *[0] * 7)
	if op == 1:  # LOOKUP
		if node == ROOT and body.rstrip(b"\0") == b"m1.img":
			return 0, struct.pack("<4Q2I", FILE, 1, 3600, 3600, 0, 0) + attr(FILE)
		return -errno.ENOENT, b""
	if op in (3, 4):  # GETATTR, SETATTR (nothing to change)
		return 0, struct.pack("<Q2I", 3600, 0, 0) + attr(node)
	if op in (14, 27):  # OPEN (FOPEN_DIRECT_IO), OPENDIR
		return 0, struct.pack("<Q2I", 0, 1 if op == 14 else 0, 0)
	if op == 15:  # READ
		fh, off, size = struct.unpack_from("<QQI", body)
		return io(off, size, lambda: os.pread(bfd, size, off))
	if op == 16:  # WRITE: fuse_write_in is 40 bytes, then the data
		fh, off, size = struct.unpack_from("<QQI", body)
		return io(off, size, lambda: struct.pack("<2I", os.pwrite(bfd, body[40:40 + size], off), 0))
	if op == 20:  # FSYNC
		os.fsync(bfd)
		return 0, b""
	if op in (18, 25, 28, 29, 30):  # RELEASE, FLUSH, READDIR (empty), RELEASEDIR, FSYNCDIR
		return 0, b""
	if op == 17:  # STATFS
		return 0, struct.pack("<5Q10I", 0, 0, 0, 0, 0, 4096, 255, 4096, 0, *[0] * 6)
	return -errno.ENOSYS, b""


while True:
	try:
		req = os.read(fd, (1 << 20) + 65536)
	except OSError as e:
		if e.errno == errno.ENOENT:  # an interrupted request
			continue
		break  # ENODEV: unmounted
	ln, op, unique, node = struct.unpack_from("<2I2Q", req)
	if op in (2, 36, 42):  # FORGET, INTERRUPT, BATCH_FORGET: no reply
		continue
	err, out = (0, b"") if op == 38 else handle(op, node, req[40:ln])  # 38: DESTROY
	try:
		os.write(fd, struct.pack("<IiQ", 16 + len(out), err, unique) + out)
	except OSError as e:
		if e.errno != errno.ENOENT:
			raise
	if op == 38:
		break
PY

# wait_for SECONDS CMD...: polls CMD every 50 ms
wait_for() {
	local i n=$(($1 * 20)); shift
	for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.05; done
	return 1
}
state_is() { grep -Eq "$1" "$T_DIR/errfs" 2>/dev/null; }

MNT=$T_DIR/errfs.mnt
mkdir "$MNT"
truncate -s 256M "$T_DIR/m0.img" "$T_DIR/m1.img"
python3 "$T_DIR/errfs.py" "$MNT" "$T_DIR/m1.img" "$T_DIR/errfs" 2>"$T_DIR/errfs.log" &
fpid=$!
# at exit: the loop devices go first, while errfs still answers their last
# requests, then errfs, then its mount
cleanup_add "umount -l '$MNT'"
cleanup_add "kill $fpid"
wait_for 10 test -e "$MNT/m1.img"
check "errfs mounted on $MNT $(cat "$T_DIR/errfs.log")" test -f "$MNT/m1.img"
l0=$(losetup -f --show "$T_DIR/m0.img") && cleanup_add "losetup -d $l0"
l1=$(losetup -f --show "$MNT/m1.img") && cleanup_add "losetup -d $l1"
check "member 0 on $l0, member 1 on $l1 over errfs" test -b "$l0" -a -b "$l1"
PACK=$l0,$l1
MEMBERS="$l0 $l1"
check "mkfs 2 members" mkfs.recfs -f -q -c 256K "$PACK"
# (m1.img holds member 1's bytes: errfs has no cache)
read -r doff boff < <(python3 -c 'import struct,sys; print(*struct.unpack_from("<QQ", open(sys.argv[1],"rb").read(4096), 144))' "$T_DIR/m1.img")
check "data area read from the superblock ([$doff, $boff))" test "$doff" -gt 0 -a "$boff" -gt "$doff"

# 32 MB/s for at most 12 s if the error never came
recfs-record --buffer 64M -i gen:counter --rate 32M --size 384M --stats-json "$T_DIR/s.json" \
	"$PACK" eio 2>"$T_DIR/rec.err" &
rpid=$!
rdone=
cleanup_add '[ -n "$rdone" ] || kill $rpid'
committed() { recfs ls -l "$PACK" 2>/dev/null | awk '$1=="eio"{print $2}'; }
has_commit() { [ "$(committed)" -gt 0 ] 2>/dev/null; }
wait_for 10 has_commit
c0=$(committed)
check "the recording committed before the error (${c0:-nothing} bytes)" test "${c0:-0}" -gt 0
# the error: member 1's data area, metadata and backup superblock untouched
echo "$doff $boff" >"$T_DIR/errfs.ctl"
kill -USR1 $fpid
wait_for 5 state_is '^armed'
check "member 1's data area fails from now on ($(cat "$T_DIR/errfs"))" state_is '^armed'
t0=$(date +%s.%N)
if ! wait_for 30 eval '! kill -0 $rpid 2>/dev/null'; then
	fail "the recorder still runs 30 s after the error: $(tail -3 "$T_DIR/rec.err")"
	kill -9 $rpid
fi
wait $rpid
rc=$?
rdone=1
t1=$(date +%s.%N)
echo "recorder stopped $(python3 -c "print('%.2f' % ($t1 - $t0))") s after the error was armed"
read -r _ _ _ _ nfail < "$T_DIR/errfs"
check "errfs refused member 1 requests with EIO ($nfail)" test "${nfail:-0}" -gt 0
check "member error: exit status 3 (got $rc)" test "$rc" = 3
last=$(tail -1 "$T_DIR/rec.err")
check "member error: the last line names member 1 ($last)" grep -Fq "member 1 ($l1): write failed at byte " <<<"$last"
check "member error: and the error is EIO" grep -Fq "of 'eio': Input/output error;" <<<"$last"
check "member error: and says the recording was sealed" grep -Eq "'eio' sealed at [0-9]+ bytes" <<<"$last"
said=$(sed -n "s/.*'eio' sealed at \([0-9]*\) bytes.*/\1/p" <<<"$last")
at=$(sed -n 's/.*write failed at byte \([0-9]*\) .*/\1/p' <<<"$last")
check "member error: stats json says why" python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); assert j["stop"]=="member write error" and j["exit_status"]==3, j' "$T_DIR/s.json"
# The seal is metadata only: it is on the pack while the data area still fails.
ls_out=$(recfs ls -l "$PACK")
len=$(awk '$1=="eio"{print $2}' <<<"$ls_out")
state=$(awk '$1=="eio"{print $3}' <<<"$ls_out")
check "member error: recording sealed ($state, $len bytes)" test "$state" = sealed -a "${len:-0}" -gt 0
check "member error: sealed at the length it said ($len = ${said:-?})" test "$len" = "${said:-x}"
check "member error: nothing committed before the error is lost ($len >= $c0)" test "$len" -ge "$c0"
check "member error: nothing from the failed write on is in it ($len <= ${at:-?})" test "$len" -le "${at:-0}"
# While the error stands every read of member 1's chunks fails too, as the
# dead disk's would: the reader must say so, not hand out other bytes.
expect_err "error standing: reading the recording fails naming member 1" '!0' \
	"read from member 1 \\($l1\\) failed" recfs-play --check counter "$PACK" eio
# So the data is verified with the error lifted: the member's data area then
# holds exactly what reached it before the error, which is what checks the
# recorder's claim that every byte it sealed was durable and nothing from the
# failed write on was counted.
kill -USR2 $fpid
wait_for 5 state_is '^clear'
check "the error is lifted ($(cat "$T_DIR/errfs"))" state_is '^clear'
run recfs-play --check counter "$PACK" eio
check "member error: sealed prefix verified ($OUT)" grep -q "'eio': $len bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
run fsck.recfs -n "$PACK"
check "fsck -n: the pack is clean (exit $RC: $(tail -1 <<<"$OUT"))" test "$RC" = 0
finish
