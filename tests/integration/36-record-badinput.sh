#!/bin/bash
# 36-record-badinput: every bad start is refused with a one-line message,
# exit status 1, and the members byte-identical (the recording is created
# only when the first byte arrives).
. "$(dirname "$0")/../lib.sh"
echo "36-record-badinput: refused starts leave the pack alone"

make_members 2 64M
check "mkfs" mkfs.recfs -f -q -c 256K "$PACK"
printf hello >"$T_DIR/hello"
check "one recording" recfs-record -q --buffer 8M "$PACK" taken <"$T_DIR/hello"
R="recfs-record -q --buffer 8M"

refused "unknown pack" "$T_DIR/nope.img" $R "$T_DIR/nope.img,${MEMBERS#* }" x </dev/null
truncate -s 64M "$T_DIR/blank.img"
refused "a member that is not recfs" "blank.img" $R "$T_DIR/blank.img" x </dev/null
refused "existing name" "recording 'taken' already exists" $R "$PACK" taken <"$T_DIR/hello"
refused "invalid name with a slash" "name" $R "$PACK" "a/b" <"$T_DIR/hello"
refused "empty name" "name" $R "$PACK" "" <"$T_DIR/hello"
refused "name too long" "name" $R "$PACK" "$(printf 'n%.0s' {1..300})" <"$T_DIR/hello"
refused "zero-length input" "no data from stdin; recording 'z' not created" $R "$PACK" z </dev/null
check "zero-length: exit status 1" test "$RC" = 1
: >"$T_DIR/empty"
refused "zero-length file" "no data from $T_DIR/empty; recording 'z' not created" $R -i "file:$T_DIR/empty" "$PACK" z
refused "missing input file" "$T_DIR/missing: cannot open: No such file" $R -i "file:$T_DIR/missing" "$PACK" z
refused "unknown input" "--input: 'tcp:1' is not" $R -i tcp:1 "$PACK" z
refused "bad udp port" "--input: 'udp:99999' is not" $R -i udp:99999 "$PACK" z
refused "unknown format" "--format: 'mk5b' is not raw or vdif" $R --format mk5b "$PACK" z
refused "--packet-size on stdin" "--packet-size and --strip apply to udp input only" $R --packet-size 1000 "$PACK" z </dev/null
refused "--rate on stdin" "--rate paces the gen: inputs only" $R --rate 1M "$PACK" z </dev/null
refused "vdif frame not a multiple of 8" "--frame-size 1001 is not usable" $R -i gen:vdif --frame-size 1001 "$PACK" z
refused "missing NAME" "expected PACK and NAME" $R "$PACK"
refused "bad size" "--size 'lots': not a number; want 1 to " $R --size lots "$PACK" z
refused "zero queue depth" "--queue-depth '0': too small; want 1 to 256" $R -Q 0 "$PACK" z

# UDP: port in use
PORT=$(free_port)
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", int(sys.argv[1]))); print("bound", flush=True); time.sleep(60)' "$PORT" >"$T_DIR/holder" &
hpid=$!
cleanup_add "kill $hpid"
for ((i = 0; i < 100; i++)); do grep -q bound "$T_DIR/holder" && break; sleep 0.05; done
refused "port in use" "udp:127.0.0.1:$PORT: cannot bind: Address already in use" $R -i "udp:127.0.0.1:$PORT" -d 1 "$PACK" z
kill $hpid
# UDP with nothing arriving
refused "no datagrams before --duration" "no data from udp:127.0.0.1:$PORT; recording 'z' not created" \
	$R -i "udp:127.0.0.1:$PORT" -d 0.5 "$PACK" z

# a second writer while one records: refused by the pack lock
recfs-record -q --buffer 8M -i gen:counter --rate 1M "$PACK" live 2>/dev/null &
pid=$!
cleanup_add "kill $pid"
sleep 0.5
expect_err "second writer refused" 1 "lock|busy|in use" $R "$PACK" second </dev/null
kill -INT $pid
wait $pid
check "the first writer sealed normally" grep -Eq '^live +[0-9]+ +sealed' <<<"$(recfs ls -l "$PACK")"
check "the refused names do not exist" test -z "$(recfs ls "$PACK" | grep -E '^(z|second)$')"

# help and version
check "--help" bash -c "recfs-record --help | grep -q 'Usage: recfs-record'"
# an input that cannot be opened: the engine's descriptors were left 0
# (static zero) in recfs-record, so the cleanup closed standard input
strace -f -qq -e trace=close -o "$T_DIR/close.trace" recfs-record -q -i "file:$T_DIR/absent" \
	"$PACK" absent </dev/null >/dev/null 2>"$T_DIR/absent.err"
# and the engine's message named the program ("(null): ..." before)
check "input that cannot be opened: named by the program" \
	grep -q "^recfs-record: $T_DIR/absent: cannot open" "$T_DIR/absent.err"
check "input that cannot be opened: strace ran" test -s "$T_DIR/close.trace"
check "input that cannot be opened: standard input is not closed" \
	bash -c '! grep -E "close\(0\)" "$1"' _ "$T_DIR/close.trace"
check "--version" bash -c "recfs-record --version | grep -q '^recfs-record [0-9]'"
check "play --help" bash -c "recfs-play --help | grep -q 'Usage: recfs-play'"
expect_err "play: unknown recording" 1 "nope" recfs-play "$PACK" nope --udp 127.0.0.1:9
expect_err "play: no destination" 1 "--udp HOST:PORT is required" recfs-play "$PACK" taken
# a member left out: both recorders refuse the pack, naming the member, and
# write nothing (a degraded pack is read-only)
m0=${MEMBERS%% *}
snap=$(snapshot $MEMBERS)
expect_err "record: a member left out is named" 1 "^recfs-record: the pack has 2 members: member 1 \(UUID [0-9a-f-]+\) is missing$" \
	$R "$m0" lone </dev/null
expect_err "recfsd: a member left out is named" 1 "^recfsd: the pack has 2 members: member 1 \(UUID [0-9a-f-]+\) is missing$" \
	recfsd -i udp:127.0.0.1:0 "$m0"
expect_unchanged "a member left out" "$snap" $MEMBERS
finish
