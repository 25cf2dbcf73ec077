#!/bin/bash
# kill -9 of a real recorder mid-recording on file-backed members, then
# fsck -y: the recording is found unsealed, recovered to a durable end at
# or past its last commit, sealed, and the recovered prefix is checked byte
# for byte (gen:counter: every byte a function of its offset).
. "$(dirname "$0")/../lib.sh"
echo "50-fsck-kill9: recorder killed, fsck recovers"
command -v recfs-record >/dev/null || { fail "recfs-record not built"; exit 1; }

make_members 2 256M
check "mkfs" mkfs.recfs -f -q -c 64K "$PACK"
for round in 1 2; do
	name=k9-$round
	recfs-record -q -b 16M -c 0.2 -i gen:counter --rate 20000000 "$PACK" "$name" &
	pid=$!
	cleanup_add "kill -9 $pid"
	sleep 1.$((round * 3))
	run fsck.recfs -n "$PACK"
	check "$name: fsck -n beside the live recorder exits 0 ($RC)" test "$RC" = 0
	check "$name: ... and says it is being recorded" \
		grep -q "recording '$name' is being recorded" <<<"$OUT"
	kill -9 $pid
	wait $pid 2>/dev/null
	row=$(recfs ls -l "$PACK" | awk -v n="$name" '$1 == n')
	committed=$(awk '{print $2}' <<<"$row")
	check "$name: left in the recording state" grep -q " recording " <<<"$row"
	check "$name: something was committed before the kill" test "${committed:-0}" -gt 0

	snap=$(snapshot $MEMBERS)
	run fsck.recfs -n "$PACK"
	check "$name: fsck -n finds it (exit 4)" test "$RC" = 4
	expect_unchanged "$name: fsck -n" "$snap" $MEMBERS

	run fsck.recfs -y "$PACK"
	check "$name: fsck -y recovers (exit 1)" test "$RC" = 1
	line=$(grep "PR_REC_CRASHED: recording '$name'" <<<"$OUT")
	check "$name: reported as a crashed recording" test -n "$line"
	sealed=$(sed -n 's/.*Seal it at \([0-9]*\) bytes? yes/\1/p' <<<"$line")
	check "$name: sealed at or past its last commit ($sealed >= $committed)" \
		test "${sealed:-0}" -ge "$committed"
	check "$name: nothing reported lost" grep -q ", 0 bytes lost" <<<"$line"

	run fsck.recfs -y --verify "$PACK"
	check "$name: second run clean, every chunk verifies (exit $RC)" test "$RC" = 0
	run recfs-play --check counter "$PACK" "$name"
	check "$name: recovered prefix byte for byte ($OUT)" \
		grep -q "'$name': $sealed bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
done
# the first recording survived the second crash and its recovery untouched
run recfs-play --check counter "$PACK" k9-1
check "k9-1 intact after the second crash" grep -q "sealed, counter pattern: 0 bad bytes" <<<"$OUT"
finish
