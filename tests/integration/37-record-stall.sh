#!/bin/bash
# 37-record-stall: a member that stops accepting writes for a while (its
# filesystem frozen with fsfreeze) does not cost a datagram: the ring
# absorbs the pause, the maximum ring fill and the member's worst write
# latency show it, and the recording is complete and byte-identical.
. "$(dirname "$0")/../lib.sh"
echo "37-record-stall: the ring absorbs a 1.5 s disk pause"

if [ "$(id -u)" != 0 ] || ! command -v fsfreeze >/dev/null; then
	fail "needs root and fsfreeze to freeze a member's filesystem"
	finish
	exit
fi
FS=$T_DIR/fs
truncate -s 300M "$T_DIR/fs.img"
check "ext4 image" mkfs.ext4 -q -F "$T_DIR/fs.img"
mkdir "$FS"
check "loop-mount it" mount -o loop "$T_DIR/fs.img" "$FS"
cleanup_add "umount '$FS'"
cleanup_add "fsfreeze -u '$FS'"
truncate -s 100M "$FS/m1.img"
truncate -s 100M "$T_DIR/m0.img"
PACK=$T_DIR/m0.img,$FS/m1.img
MEMBERS="$T_DIR/m0.img $FS/m1.img"
check "mkfs: one member on the ext4" mkfs.recfs -f -q -c 256K "$PACK"

F=8032
N=5000  # 40 MB at 10 MB/s: 4 s
# through_pause NAME BUFFER: record N frames sent at 10 MB/s into NAME
# while member 1's filesystem is frozen for 1.5 s, stop the recorder 1 s
# after the sender; RC its exit status, its statistics in $T_DIR/NAME.json
through_pause() {
	local name=$1 port pid ppid
	port=$(free_port)
	recfs-record -q --buffer "$2" -c 0.2 -i "udp:127.0.0.1:$port" --format vdif -d 60 \
		--stats-json "$T_DIR/$name.json" "$PACK" "$name" 2>"$T_DIR/$name.err" &
	pid=$!
	cleanup_add "kill $pid"
	check "$name: recorder bound" wait_bound "$port"
	recfs-play -q --gen vdif --threads 2 --size $((F * N)) --rate 10M --udp "127.0.0.1:$port" &
	ppid=$!
	cleanup_add "kill $ppid"
	sleep 1
	fsfreeze -f "$FS"
	sleep 1.5
	fsfreeze -u "$FS"
	wait $ppid
	sleep 1
	kill -INT $pid
	wait $pid
	RC=$?
}

through_pause stall 64M
check "recorder finished (exit $RC: $(tail -1 "$T_DIR/stall.err"))" test "$RC" = 0
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("ring max %d bytes, member 1 worst write %.2f s" % (j["ring_max_fill_bytes"], j["members"][1]["latency_max_s"]))' "$T_DIR/stall.json"
check "no datagram lost, none dropped, no frame missing; the ring held the pause; member 1 waited" python3 -c '
import json,sys
j=json.load(open(sys.argv[1])); d=j["datagrams"]; v=j["vdif"]
assert d["received"]==5000 and d["dropped_ring_full"]==0 and d["dropped_kernel"]==0, d
assert v["frames_lost"]==0, v
assert j["ring_max_fill_bytes"] >= 10*1000*1000, j["ring_max_fill_bytes"]   # 1 s+ of 10 MB/s
assert j["members"][1]["latency_max_s"] >= 1.0, j["members"]
' "$T_DIR/stall.json"
run recfs-play --check vdif "$PACK" stall
check "recording complete and verified ($OUT)" grep -q "'stall': $((F * N)) bytes, sealed, vdif: $N frames, 0 missing, 0 bad" <<<"$OUT"

# The same pause with a ring too small for it (4 MiB: 0.4 s at 10 MB/s):
# the ring fills, and the datagrams that arrive meanwhile are dropped and
# counted, stored as the recording's dropped count and as gaps in its loss
# map, never written as garbage; the rest is recorded and verifies.
through_pause full 4M
check "small ring: recorder finished (exit $RC: $(tail -1 "$T_DIR/full.err"))" test "$RC" = 0
read -r ringfull drops lost len < <(python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); d=j["datagrams"]
print(d["dropped_ring_full"], d["dropped_ring_full"] + d["dropped_kernel"], j["vdif"]["frames_lost"], j["bytes"])' "$T_DIR/full.json")
check "small ring: datagrams dropped for the full ring ($ringfull)" test "${ringfull:-0}" -gt 100
# frames dropped after the last one recorded (the ring still full when the
# stream ended, on a loaded machine) have no later frame to show the gap:
# the loss map holds every other dropped one
last=$(recfs cat "$PACK" full | tail -c "$F" | python3 -c 'import sys; print(int.from_bytes(sys.stdin.buffer.read()[32:40], "little"))')
tail=$((N - 1 - last))
check "small ring: every dropped one is a lost frame in the loss map or after the last frame ($lost + $tail)" \
	test "$((lost + tail))" = "$drops"
check "small ring: the rest was recorded ($len bytes = $N - $drops frames)" test "$len" = $(((N - drops) * F))
check "small ring: the entry stores the drops and the lost frames" python3 -c '
import json,sys; e=[r for r in json.load(sys.stdin) if r["name"]=="full"][0]
assert e["dropped"]==int(sys.argv[1]) and e["frames_lost"]==int(sys.argv[2]), e' "$drops" "$lost" < <(recfs ls --json "$PACK")
run recfs-play --check vdif "$PACK" full
check "small ring: what was recorded verifies, the gap seen as missing frames ($OUT)" \
	grep -q "'full': $len bytes, sealed, vdif: $((N - drops)) frames, $lost missing, 0 bad" <<<"$OUT"
finish
