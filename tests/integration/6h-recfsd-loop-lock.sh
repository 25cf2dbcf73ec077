#!/bin/bash
# The pack lock reaches through loop devices (issue 15, item 14): with
# recfsd on loop devices, every tool that writes refuses their backing
# files (as `losetup -j` finds them), members unchanged; and the other way
# round, with recfsd on the files, their loop devices.  A loop device that
# nobody holds does not stand in the way.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6h: the pack lock through loop devices"

if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null; then
	fail "needs root and losetup for loop devices"
	finish
	exit
fi

make_members 2 64M
FILES=$MEMBERS
l0=$(losetup -f --show "$T_DIR/m0.img") && cleanup_add "losetup -d $l0"
l1=$(losetup -f --show "$T_DIR/m1.img") && cleanup_add "losetup -d $l1"
check "loop devices $l0 $l1 over the members" test -b "$l0" -a -b "$l1"
check "mkfs on the loop devices" mkfs.recfs -f -q -c 256K "$l0,$l1"

# --- recfsd on the loop devices: the backing files are refused
check "recfsd on the loop devices" start_recfsd -i "udp:127.0.0.1:$(free_port)" --buffer 32M "$l0,$l1"
check "losetup -j finds the loop device of m0.img" grep -q "^$l0:" <<<"$(losetup -j "$T_DIR/m0.img")"
MEMBERS=$FILES
refused "mkfs -f on the backing files" "m[01].img: in use through loop device /dev/loop[0-9]+" \
	mkfs.recfs -f -q "$T_DIR/m0.img,$T_DIR/m1.img"
refused "fsck -y on the backing files" "in use through loop device" fsck.recfs -y "$T_DIR/m0.img,$T_DIR/m1.img"
refused "recfs rm on the backing files" "in use through loop device" recfs rm "$T_DIR/m0.img,$T_DIR/m1.img" x
refused "recfs-record on the backing files" "in use through loop device" \
	recfs-record -q -i gen:counter --size 1M "$T_DIR/m0.img,$T_DIR/m1.img" x
check "read-only tools still read the backing files" recfs ls "$T_DIR/m0.img,$T_DIR/m1.img"
expect_reply "recfsd still answers" "status?" '!status \? 0 : 0x[0-9a-f]+ .*'
stop_recfsd
check "recfsd stopped cleanly" test "$RD_RC" = 0

# --- attached but held by nobody: no refusal
check "mkfs -f on the backing files of unheld loop devices" mkfs.recfs -f -q -c 256K "$T_DIR/m0.img,$T_DIR/m1.img"

# --- recfsd on the files: their loop devices are refused
check "recfsd on the files" start_recfsd -i "udp:127.0.0.1:$(free_port)" --buffer 32M "$T_DIR/m0.img,$T_DIR/m1.img"
refused "mkfs -f on loop devices of locked files" "its backing file .*m[01].img is in use by another writer" \
	mkfs.recfs -f -q "$l0,$l1"
stop_recfsd
check "recfsd stopped cleanly" test "$RD_RC" = 0
finish
