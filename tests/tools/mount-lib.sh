# Helpers for the recfs-mount tests (tests/integration/4*-mount-*.sh).
# Source after tests/lib.sh.
TESTWRITE=${TESTWRITE:-$RECFS_BIN/../tests/recfs-testwrite}

# wait_mounted DIR PID: poll until DIR is a mount point (20 s at most);
# fails early when PID (the driver) has exited.
wait_mounted() {
	local dir=$1 pid=${2:-} i
	for ((i = 0; i < 800; i++)); do
		mountpoint -q "$dir" && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
		sleep 0.025
	done
	return 1
}

# wait_unmounted DIR: poll until DIR is no longer a mount point (10 s).
wait_unmounted() {
	local i
	for ((i = 0; i < 400; i++)); do
		mountpoint -q "$1" || return 0
		sleep 0.025
	done
	return 1
}

# kill_own PID PATTERN: kill PID only if it is still the process we started
# (its command line contains PATTERN): a reaped PID may have been reused.
kill_own() {
	grep -qaF -- "$2" "/proc/$1/cmdline" 2>/dev/null && kill "$1"
}

# force_unmount DIR: for cleanups.  fusermount3 -u; when that fails (a
# process still has a file open: busy), a lazy unmount, so that killing
# the driver afterwards leaves no dead mount ("Transport endpoint is not
# connected") behind.
force_unmount() {
	mountpoint -q "$1" || return 0
	fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1"
}

# mount_pack PACK DIR [OPTIONS...]: starts `recfs-mount -f` in the
# background (log in $T_DIR/mount.log), sets MOUNT_PID, registers the
# unmount, waits for the mount.  Fails if it does not appear.
mount_pack() {
	local pack=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	recfs-mount -f "$@" "$pack" "$dir" 2>>"$T_DIR/mount.log" &
	MOUNT_PID=$!
	cleanup_add "kill_own $MOUNT_PID '$dir'"
	cleanup_add "force_unmount '$dir'"
	wait_mounted "$dir" "$MOUNT_PID" && return 0
	echo "mount_pack: $dir did not appear; driver log:" >&2
	tail -5 "$T_DIR/mount.log" >&2
	return 1
}

# unmount_pack DIR: fusermount3 -u, then wait for the driver to exit 0.
unmount_pack() {
	fusermount3 -u "$1" || return 1
	wait "$MOUNT_PID"
}

# write_rec PACK NAME FILE [testwrite options...]
write_rec() {
	local pack=$1 name=$2 file=$3
	shift 3
	"$TESTWRITE" "$@" "$pack" "$name" "$file"
}

# member_offset MEMBER_FILE SRC OFFSET: byte offset in MEMBER_FILE where the
# 4 KiB of SRC at OFFSET are stored (-1 if not found).  Data is random, so a
# 4 KiB match is unique.
member_offset() {
	python3 - "$@" <<'PY'
import sys
m, src, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, 'rb') as f:
    f.seek(off)
    needle = f.read(4096)
pos, base, found = 0, 0, -1
with open(m, 'rb') as f:
    prev = b''
    while True:
        blk = f.read(64 << 20)
        if not blk:
            break
        hay = prev + blk
        i = hay.find(needle)
        if i >= 0:
            found = base - len(prev) + i
            break
        prev = hay[-4096:]
        base += len(blk)
print(found)
PY
}
