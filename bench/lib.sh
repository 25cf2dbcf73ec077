# Shared by the bench/*.sh scripts (sourced after they cd to the top).
. tests/tools/udp-lib.sh

# bytes SIZE: 4096, 64K, 1.5G, 2GiB, 1T as a byte count
bytes() { python3 -c '
import sys
s=sys.argv[1].upper().rstrip("B").rstrip("I")
m={"K":1<<10,"M":1<<20,"G":1<<30,"T":1<<40}
print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))' "$1"; }

# file_members N MIB: N files of MIB MiB in $TMP (m0.img ...), written in
# full with O_DIRECT so that a recorder overwrites allocated blocks and
# does not pay for the file system's block allocation; sets MEM
file_members() {
	local i
	MEM=()
	for ((i = 0; i < $1; i++)); do
		dd if=/dev/zero of="$TMP/m$i.img" bs=1M count="$2" oflag=direct status=none || exit 1
		MEM+=("$TMP/m$i.img")
	done
}

# sparse_members N BYTES DIR: N sparse files of BYTES in DIR (m0.img ...);
# sets PACK, their comma-separated list
sparse_members() {
	local i
	PACK=""
	for ((i = 0; i < $1; i++)); do
		truncate -s "$2" "$3/m$i.img"
		PACK=${PACK:+$PACK,}$3/m$i.img
	done
}

# throttle_members NAME BPS read|write: disk-bound members.  Each of MEM
# becomes a loop device with direct I/O whose reads or writes the cgroup-v1
# blkio controller throttles to BPS bytes/s (run as root); IN_CG runs a
# command inside that cgroup ("${IN_CG[@]}" cmd ...: nothing without -T).
# throttle_undo, from the script's cleanup, detaches and removes them.
LOOPS=() CG="" IN_CG=()
throttle_members() {
	local i l
	CG=/sys/fs/cgroup/blkio/$1.$$
	mkdir "$CG" || exit 1
	for ((i = 0; i < ${#MEM[@]}; i++)); do
		l=$(losetup --direct-io=on -f --show "${MEM[i]}") || exit 1
		LOOPS+=("$l")
		echo "$(lsblk -dno MAJ:MIN "$l" | tr -d ' ') $2" >"$CG/blkio.throttle.$3_bps_device"
		MEM[i]=$l
	done
	# run "$@" inside the throttled cgroup
	IN_CG=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG")
}
throttle_undo() {
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
}
