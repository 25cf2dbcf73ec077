#!/bin/bash
# recfsd restarted after a kill -9 mid-scan, without fsck (issue 15, item
# 18): the scan the crash left unsealed held the largest extent, and
# record=on answered "pack full ... (delete recordings first)" on a nearly
# empty pack.  recfsd now seals it at start at its durable end, exactly
# where fsck.recfs -y seals a copy of the same members, and records again.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6k: recfsd recovers a crashed scan at start"

make_members 2 128M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd" start_recfsd -i "udp:127.0.0.1:$port" --buffer 32M -c 0.2 "$PACK"
expect_reply "record=on" "record=on:crash" '!record = 0 ;'
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 16M --duration 60 &
ppid=$!
cleanup_add "kill $ppid"
len=0
for ((i = 0; i < 400; i++)); do
	len=$(recfs ls -l "$PACK" 2>/dev/null | awk '$1=="crash"{print $2}')
	[ "${len:-0}" -ge $((4 << 20)) ] && break
	sleep 0.05
done
check "the scan has 4 MiB committed ($len bytes)" test "${len:-0}" -ge $((4 << 20))
kill -9 "$RD_PID"
wait "$RD_PID" 2>/dev/null
kill "$ppid"
wait "$ppid" 2>/dev/null
check "left in state recording" grep -Eq '^crash +[0-9]+ +recording' <<<"$(recfs ls -l "$PACK")"

# what fsck.recfs -y makes of the same members, on a copy; a second copy
# whose first chunk has lost its checksum on every member
CPACK="" DPACK=""
for m in $MEMBERS; do
	cp --sparse=always "$m" "$m.copy"
	cp --sparse=always "$m" "$m.bad"
	CPACK="$CPACK,$m.copy"
	DPACK="$DPACK,$m.bad"
done
CPACK=${CPACK#,} DPACK=${DPACK#,}
run fsck.recfs -y "$CPACK"
check "fsck -y seals the copy (exit $RC)" test "$RC" = 1
flen=$(recfs ls -l "$CPACK" | awk '$1=="crash"{print $2}')

# restarted without fsck: the crashed scan is sealed where fsck sealed it
check "recfsd restarts on the crashed pack" start_recfsd -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
check "it says it recovered the scan ($(grep recovered "$RD_LOG"))" grep -q "recovered 1 crashed recording" "$RD_LOG"
rlen=$(recfs ls -l "$PACK" | awk '$1=="crash" && $3=="sealed"{print $2}')
check "sealed at fsck's durable end (${rlen:-unsealed} = $flen, >= $len committed)" \
	test "${rlen:-x}" = "$flen" -a "${flen:-0}" -ge "$len"
expect_reply "record=on after the restart" "record=on:after" '!record = 0 ;'
check "a scan records" recfs-play -q --gen counter --size $((8192 * 200)) --rate 50M --udp "127.0.0.1:$port"
check "recfsd took it" wait_drained "$port"
expect_reply "record=off" "record=off" '!record = 0 ;'
check "scan_check? once sealed" grep -q '^!scan_check ? 0 : 1 : after : raw : 8192 :' <<<"$(scan_checked)"
stop_recfsd
check "recfsd stopped cleanly" test "$RD_RC" = 0
run fsck.recfs -n "$PACK"
check "fsck -n finds the pack clean (exit $RC)" test "$RC" = 0
run recfs-play --check counter "$PACK" crash
check "the recovered scan is counter blocks ($OUT)" grep -q "'crash': $flen bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
cmp -s <(recfs cat "$PACK" crash) <(recfs cat "$CPACK" crash)
check "byte for byte what fsck recovered" test $? = 0

# a crashed scan whose first chunk lost its checksum on every member
# (PR_SLOT_BAD, which no fsck repairs): sealed all the same, and recfsd
# says what is left for fsck.recfs
for m in ${DPACK//,/ }; do
	csum_off=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(4096), 128)[0])' "$m")
	printf '\xff%.0s' $(seq 16) | dd of="$m" bs=1 seek="$csum_off" conv=notrunc status=none
done
check "recfsd starts on it" start_recfsd -i "udp:127.0.0.1:$port" --buffer 16M "$DPACK"
check "the checker's line names the bad slot" grep -q "PR_SLOT_BAD: recording 'crash': chunk 0" "$RD_LOG"
check "the scan is recovered" grep -q "recovered 1 crashed recording" "$RD_LOG"
check "the problem left is named ($(tail -1 "$RD_LOG"))" grep -q "1 problem left that fsck.recfs -p does not repair: see fsck.recfs -n" "$RD_LOG"
expect_reply "record=on" "record=on:after2" '!record = 0 ;'
check "a scan records" recfs-play -q --gen counter --size $((8192 * 50)) --rate 50M --udp "127.0.0.1:$port"
check "recfsd took it" wait_drained "$port"
expect_reply "record=off" "record=off" '!record = 0 ;'
stop_recfsd
check "recfsd stopped cleanly" test "$RD_RC" = 0
dlen=$(recfs ls -l "$DPACK" | awk '$1=="crash" && $3=="sealed"{print $2}')
check "sealed at the same end (${dlen:-unsealed} = $flen)" test "${dlen:-x}" = "$flen"
finish
