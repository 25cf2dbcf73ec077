#!/bin/bash
# recfsd with 2 and 4 inputs: one writer per input over the same members, a
# scan records SCAN_LABEL per input, each a continuous run of its own
# stream with its own loss map.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "61: recfsd with several inputs"

# verify_run NAME: the recording is whole counter blocks, serials consecutive
verify_run() {
	recfs cat "$PACK" "$1" >"$T_DIR/r.bin" || return 1
	python3 - "$T_DIR/r.bin" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
B = 8192
if not d or len(d) % B:
    sys.exit("length %d is not whole blocks" % len(d))
first = int.from_bytes(d[:8], "little")
for k in range(len(d) // B):
    if int.from_bytes(d[k * B:k * B + 8], "little") != first + k:
        sys.exit("break at block %d" % k)
PY
}

for n in 2 4; do
	make_members 4 128M "n$n-"
	check "mkfs ($n inputs)" mkfs.recfs -q -c 256K "$PACK"
	args=() ports=() labels=()
	for ((i = 0; i < n; i++)); do
		ports[i]=$(free_port)
		labels[i]=in$i
		args+=(-i "in$i=udp:127.0.0.1:${ports[i]}")
	done
	check "recfsd with $n inputs is ready" start_recfsd "${args[@]}" --buffer 16M "$PACK"
	pids=()
	for ((i = 0; i < n; i++)); do
		recfs-play -q --gen counter --udp "127.0.0.1:${ports[i]}" --rate 4M --duration 8 &
		pids[i]=$!
		cleanup_add "kill ${pids[i]}"
	done
	sleep 0.5
	expect_reply "$n inputs: record=on" "record=on:a$n" '!record = 0 ;'
	sleep 1
	expect_reply "$n inputs: record? names the scan" "record?" '!record \? 0 : on : 1 : a'$n' : [0-9]+ ;'
	expect_reply "$n inputs: record=off" "record=off" '!record = 1 ;'
	expect_reply "$n inputs: second scan" "record=on:b$n" '!record = 0 ;'
	sleep 1
	expect_reply "$n inputs: record=off" "record=off" '!record = 1 ;'
	got=$(scan_checked)
	check "$n inputs: scan_check? one summary of $n recordings ($got)" \
		grep -Eq "^!scan_check \\? 0 : 2 : b$n : raw : .* : $n : [0-9]+ : 0 ;$" <<<"$got"
	got=$(for ((k = 0; k < n; k++)); do scan_checked $k; done)
	check "$n inputs: scan_check? K names each input's recording ($got)" \
		test "$(grep -o "b${n}_in[0-9]" <<<"$got" | sort -u | wc -l)" = "$n"
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
	stop_recfsd
	check "$n inputs: recfsd exits 0" test "$RD_RC" = 0
	recfs ls -l "$PACK" >"$T_DIR/ls"
	for s in a$n b$n; do
		for ((i = 0; i < n; i++)); do
			name=${s}_in$i
			check "$name sealed, nothing dropped" grep -Eq "^$name +[0-9]+ +sealed .* raw +0 +0$" "$T_DIR/ls"
			check "$name is one run of its stream" verify_run "$name"
		done
	done
	check "$n inputs: exactly $((2 * n)) recordings" test "$(grep -c sealed "$T_DIR/ls")" = $((2 * n))
	run fsck.recfs -n "$PACK"
	check "$n inputs: fsck clean (exit $RC)" test "$RC" = 0
done
finish
