#!/bin/bash
# recfsd under faults: a pack that fills mid-scan, a member that fails mid-
# scan, and kill -9 mid-scan.  The daemon seals what fits or what is
# durable, says why on the control line, refuses new scans while it cannot
# record, and fsck recovers a killed daemon's scan as it does recfs-record's.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "63: recfsd: pack full, member error, kill -9"

counter_ok() { # NAME [PACK]: the recording is one run of counter blocks
	recfs cat "${2:-$PACK}" "$1" | python3 -c '
import sys
d = sys.stdin.buffer.read()
B = 8192
assert d and len(d) % B == 0, "length %d" % len(d)
f = int.from_bytes(d[:8], "little")
assert all(int.from_bytes(d[k*B:k*B+8], "little") == f + k for k in range(len(d) // B)), "break"'
}

# --- the pack fills mid-scan
make_members 2 24M f
check "mkfs small pack" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd ready" start_recfsd -i "udp:127.0.0.1:$port" --buffer 16M "$PACK"
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 20M --duration 30 &
ppid=$!
cleanup_add "kill $ppid"
expect_reply "full: record=on" "record=on:big" '!record = 0 ;'
check "full: the scan halts when the pack is full" wait_reply "record?" '!record \? 0 : halted : 1 : big : [0-9]+ : pack full.*' 100
expect_reply "full: status? says full" "status?" '!status \? 0 : 0x00000083 : 4 : pack full.*'
expect_reply "full: error? reads the pending error (jive5ab's fields)" "error?" '!error \? 0 : 4 : pack full. scan .big. stopped : 20[0-9]{2}y[0-9]{3}d[0-9]{2}h[0-9]{2}m[0-9.]+s :  :  ;'
expect_reply "full: status? drops the error bit once read (the FS's fb_status stops asking)" "status?" '!status \? 0 : 0x00000081 ;'
expect_reply "full: error? with nothing pending: five empty fields, as jive5ab" "error?" '!error \? 0 :  :  :  :  :  ;'
expect_reply "full: record=off answers 4 with the reason" "record=off" '!record = 4 : pack full.*big.*'
expect_reply "full: a new scan is refused with the reason" "record=on:more" '!record = 4 : pack full.*'
alloc=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin) if x["name"]=="big"][0]; print(r["state"], r["size"], r["allocated"])')
check "full: big sealed at the last byte that fits ($alloc)" awk '{exit !($1=="sealed" && $2==$3 && $2>0)}' <<<"$alloc"
check "full: big is whole and in order" counter_ok big
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
refused "recfs rm beside recfsd, pointing at delete=" "in use by another writer.*recfs ctl delete=NAME" recfs rm "$PACK" big
expect_reply "full: delete=big frees the space" "delete=big" '!delete = 0 ;'
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 1M --duration 30 &
ppid=$!
cleanup_add "kill $ppid"
expect_reply "full: scans are taken again" "record=on:more" '!record = 0 ;'
sleep 0.5
expect_reply "full: record=off" "record=off" '!record = 1 ;'
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
stop_recfsd
check "full: recfsd exits 0" test "$RD_RC" = 0
check "full: the new scan is whole and in order" counter_ok more

# --- two inputs fill the pack: each stream's recording gets half of it,
# whichever creates first, and the one that fills first is reported while
# the other goes on (the second to create once got a quarter and stopped
# unreported, its datagrams counted idle)
make_members 2 48M two
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
pa=$(free_port) pb=$(free_port)
check "recfsd with 2 inputs ready" start_recfsd -i "a=udp:127.0.0.1:$pa" -i "b=udp:127.0.0.1:$pb" --buffer 32M "$PACK"
expect_reply "two: record=on" "record=on:two" '!record = 0 ;'
# the slow stream first, so that it creates its recording first
recfs-play -q --gen counter --udp "127.0.0.1:$pb" --rate 2M --duration 60 &
pidb=$!
cleanup_add "kill $pidb"
for ((i = 0; i < 100; i++)); do recfs ls "$PACK" 2>/dev/null | grep -qw two_b && break; sleep 0.05; done
recfs-play -q --gen counter --udp "127.0.0.1:$pa" --rate 20M --duration 60 &
pida=$!
cleanup_add "kill $pida"
check "two: status? reports the fast stream full while the slow one records" \
	wait_reply "status?" "!status \\? 0 : 0x0000005b : 4 : pack full. scan 'two_a' stopped : [0-9ydhms.]+ ;" 150
expect_reply "two: record? still on" "record?" '!record \? 0 : on : 1 : two : [0-9]+ ;'
expect_reply "two: record=off answers 4, naming the stream that stopped" "record=off" "!record = 4 : pack full. scan 'two_a' stopped ;"
kill "$pida" "$pidb" 2>/dev/null; wait "$pida" "$pidb" 2>/dev/null
stop_recfsd
cap=$(recfs info "$PACK" | sed -n 's/^capacity:.*(\([0-9]*\) bytes)/\1/p')
sz=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; r={x["name"]: x for x in json.load(sys.stdin)}; print(r["two_a"]["size"], r["two_a"]["allocated"])')
check "two: two_a, created second, filled an extent of half the pack ($sz of $cap)" \
	awk -v c="$cap" '{exit !($1 == $2 && $2 >= 0.45 * c)}' <<<"$sz"
check "two: two_a is whole and in order" counter_ok two_a
check "two: two_b is whole and in order" counter_ok two_b

# --- a member fails mid-scan (member 1 on a tmpfs that fills, as test 35)
make_members 2 64M e
check "mkfs" mkfs.recfs -f -q -c 256K "$PACK"
m1=${MEMBERS#* }
doff=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(4096), 144)[0])' "$m1")
SMALL=$T_DIR/small
mkdir "$SMALL"
check "mount a small tmpfs" mount -t tmpfs -o size=$(((doff >> 20) + 5))m tmpfs "$SMALL"
cleanup_add "umount '$SMALL'"
cp --sparse=always "$m1" "$SMALL/m1.img"
dd if="$m1" of="$SMALL/m1.img" bs=1M count=$((doff >> 20)) conv=notrunc status=none
dd if="$m1" of="$SMALL/m1.img" bs=4096 skip=$(((64 << 20) / 4096 - 1)) seek=$(((64 << 20) / 4096 - 1)) \
	conv=notrunc status=none
P2="${MEMBERS%% *},$SMALL/m1.img"
port=$(free_port)
check "recfsd on a failing member is ready" start_recfsd -i "udp:127.0.0.1:$port" --buffer 16M -m 127.0.0.1:0 "$P2"
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 20M --duration 30 &
ppid=$!
cleanup_add "kill $ppid"
expect_reply "eio: record=on" "record=on:broken" '!record = 0 ;'
check "eio: the scan halts on the member error" wait_reply "record?" '!record \? 0 : halted : 1 : broken : [0-9]+ : member write error.*' 100
expect_reply "eio: status? flags an error (the member's, or the scan's halt)" "status?" \
	"!status \\? 0 : 0x0000000[23] : 4 : member (I/O error.*$SMALL/m1.img|write error).*"
expect_reply "eio: record=off answers 4" "record=off" '!record = 4 : member write error.*'
# each condition posted once: error? reads them, the failed member is
# then not flagged again (the FS's fb_status ends), scans still refused
e1=$(vsi "error?") e2=$(vsi "error?") e3=$(vsi "error?")
check "eio: error? reads the member's failure, naming it ($e1 / $e2)" grep -qF "member I/O error. no more scans on this pack ($SMALL/m1.img)" <<<"$e1$e2"
check "eio: and the scan's halt ($e1 / $e2)" grep -q "member write error.*scan 'broken' stopped" <<<"$e1$e2"
check "eio: then nothing pending ($e3)" test "$e3" = '!error ? 0 :  :  :  :  :  ;'
expect_reply "eio: status? no longer flags the error" "status?" '!status \? 0 : 0x00000001 ;'
expect_reply "eio: further scans are refused" "record=on:again" '!record = 4 : member I/O error.*'
expect_reply "eio: the refusal posts nothing" "status?" '!status \? 0 : 0x00000001 ;'
check "eio: metrics scraped after the error" curl -sf -o "$T_DIR/eio.metrics" "http://$RD_MX/metrics"
errs() { grep "^recfsd_member_write_errors_total{member=\"$1\"" "$T_DIR/eio.metrics" | awk "{print \$NF}"; }
check "eio: the metrics count the failed member's write errors ($(errs 1))" test "$(errs 1)" -ge 1
check "eio: and none on the good member ($(errs 0))" test "$(errs 0)" = 0
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
stop_recfsd
check "eio: recfsd exits 3 after a member error (got $RD_RC)" test "$RD_RC" = 3
st=$(recfs ls -l "$P2" | awk '$1=="broken"{print $3, $2}')
check "eio: broken sealed at its durable length ($st)" grep -Eq '^sealed [1-9][0-9]*$' <<<"$st"
check "eio: the sealed prefix is whole and in order" counter_ok broken "$P2"

# --- kill -9 mid-scan: fsck recovers the scan to its durable end
make_members 2 64M k
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd ready" start_recfsd -i "udp:127.0.0.1:$port" --buffer 16M -c 0.2 "$PACK"
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 10M --duration 30 &
ppid=$!
cleanup_add "kill $ppid"
expect_reply "kill: record=on" "record=on:crash" '!record = 0 ;'
for ((i = 0; i < 100; i++)); do
	l=$(recfs ls -l "$PACK" 2>/dev/null | awk '$1=="crash"{print $2}')
	[ "${l:-0}" -ge $((4 << 20)) ] && break
	sleep 0.1
done
kill -9 "$RD_PID"; wait "$RD_PID" 2>/dev/null
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
before=$(recfs ls -l "$PACK" | awk '$1=="crash"{print $2}')
check "kill: 4 MiB or more committed before the kill ($before)" test "${before:-0}" -ge $((4 << 20))
run fsck.recfs -y "$PACK"
check "kill: fsck recovers (exit $RC)" test "$RC" = 1
after=$(recfs ls -l "$PACK" | awk '$1=="crash"{print $3, $2}')
check "kill: crash sealed at no less than was committed ($after)" awk -v b="$before" '{exit !($1=="sealed" && $2>=b)}' <<<"$after"
check "kill: the recovered scan is whole and in order" counter_ok crash
run fsck.recfs -n "$PACK"
check "kill: second fsck clean (exit $RC)" test "$RC" = 0
finish
