#!/bin/bash
# 35-record-ioerror: a member that fails data writes mid-recording.  Member 1
# lives on a small tmpfs (mounted here) with its metadata blocks allocated
# up front: its data writes fail with ENOSPC once the tmpfs is full.  The
# recorder commits what is durable, seals, exits 3 naming the member, and
# the sealed prefix reads back verified.
. "$(dirname "$0")/../lib.sh"
echo "35-record-ioerror: injected member write error"

if [ "$(id -u)" != 0 ]; then
	fail "needs root to mount a tmpfs for the failing member"
	finish
	exit
fi
make_members 2 64M
check "mkfs 2 members" mkfs.recfs -f -q -c 256K "$PACK"
m1=${MEMBERS#* }
doff=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(4096), 144)[0])' "$m1")
check "data offset read from the superblock ($doff)" test "$doff" -gt 0
SMALL=$T_DIR/small
mkdir "$SMALL"
# room for the metadata plus 4 MiB of data
check "mount a small tmpfs" mount -t tmpfs -o size=$(((doff >> 20) + 5))m tmpfs "$SMALL"
cleanup_add "umount '$SMALL'"
cp --sparse=always "$m1" "$SMALL/m1.img"
# allocate the metadata region and the backup superblock now
dd if="$m1" of="$SMALL/m1.img" bs=1M count=$((doff >> 20)) conv=notrunc status=none
dd if="$m1" of="$SMALL/m1.img" bs=4096 skip=$(((64 << 20) / 4096 - 1)) seek=$(((64 << 20) / 4096 - 1)) \
	conv=notrunc status=none
P2="${MEMBERS%% *},$SMALL/m1.img"

run recfs-record --buffer 8M -i gen:counter --stats-json "$T_DIR/s.json" "$P2" broken
check "member error: exit status 3 (got $RC)" test "$RC" = 3
last=$(tail -1 <<<"$OUT")
check "member error: the last line names the member ($last)" grep -q "member 1 ($SMALL/m1.img): write failed" <<<"$last"
check "member error: and says the recording was sealed" grep -q "'broken' sealed at [0-9]* bytes" <<<"$last"
len=$(recfs ls -l "$P2" | awk '$1=="broken"{print $2}')
state=$(recfs ls -l "$P2" | awk '$1=="broken"{print $3}')
check "member error: recording sealed ($state, $len bytes)" test "$state" = sealed -a "${len:-0}" -gt 0
check "member error: stopped near the tmpfs limit ($len bytes)" test "$len" -lt $((16 << 20))
run recfs-play --check counter "$P2" broken
check "member error: sealed prefix verified ($OUT)" grep -q "'broken': $len bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
check "member error: stats json says why" python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); assert j["stop"]=="member write error" and j["exit_status"]==3, j' "$T_DIR/s.json"
finish
