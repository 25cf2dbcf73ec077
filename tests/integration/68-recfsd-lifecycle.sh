#!/bin/bash
# recfsd from start to stop: readiness on --ready-fd, sd_notify and stdout
# (a sender started on READY=1 loses nothing), the pack mounted and read
# beside the running daemon, a line of many statements, and SIGTERM with a
# scan open: the scan is sealed whole and recfsd exits 0.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
echo "68: recfsd readiness, mount beside it, SIGTERM mid-scan"

counter_ok() { # FILE: one run of 8 KiB counter blocks
	python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
B = 8192
assert d and len(d) % B == 0, "length %d" % len(d)
f = int.from_bytes(d[:8], "little")
assert all(int.from_bytes(d[k*B:k*B+8], "little") == f + k for k in range(len(d) // B)), "break"' "$1"
}

make_members 4 128M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)

# --- readiness: READY=1 on --ready-fd and NOTIFY_SOCKET, the ready line on
# stdout, all once the input is bound
check "a notification socket" notify_listen "$T_DIR/notify.sock" "$T_DIR/notify.out"
mkfifo "$T_DIR/ready"
NOTIFY_SOCKET=$T_DIR/notify.sock recfsd -l 127.0.0.1:0 -i "udp:127.0.0.1:$port" --buffer 32M \
	--ready-fd 3 "$PACK" >"$T_DIR/out" 2>"$T_DIR/log" 3>"$T_DIR/ready" &
RD_PID=$!
cleanup_add "kill -9 $RD_PID"
read -r -t 20 line <"$T_DIR/ready"
check "--ready-fd: READY=1 ($line)" test "$line" = READY=1
check "the input is bound at READY=1" test -n "$(ss -Hlun "sport = :$port")"
wait $NOTIFY_PID
check "sd_notify: READY=1 on NOTIFY_SOCKET" grep -qx READY=1 "$T_DIR/notify.out"
RD_CTL=$(sed -n '1s/^ready control=\([^ ]*\).*/\1/p' "$T_DIR/out")
check "the first line on stdout names the control port ($(head -n 1 "$T_DIR/out"))" test -n "$RD_CTL"

# --- a sender started the moment record=on answers loses nothing: the
# receiver, idle between scans, opens the scan before its next datagram
expect_reply "record=on, the sender started on its reply" "record=on:first" '!record = 0 ;'
check "300 datagrams sent" recfs-play -q --gen counter --size $((8192 * 300)) --rate 50M --udp "127.0.0.1:$port"
check "recfsd took them" wait_drained "$port"
expect_reply "record=off" "record=off" '!record = 1 ;'
check "scan_check? once sealed" grep -q '^!scan_check ? 0 : 1 : first : raw : 0 : .* : 8192 : 1 : [0-9]* : 0 ;$' <<<"$(scan_checked)"
run recfs-play --check counter "$PACK" first
check "every datagram sent after record=on's reply is in the scan ($OUT)" \
	grep -q "2457600 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"

# --- a scan running; the pack mounted and read beside recfsd
expect_reply "record=on" "record=on:live" '!record = 0 ;'
recfs-play -q --gen counter --udp "127.0.0.1:$port" --rate 20M --duration 60 &
ppid=$!
cleanup_add "kill $ppid"
M=$T_DIR/mnt
check "mount the pack while recfsd records" mount_pack "$PACK" "$M"
for ((i = 0; i < 200; i++)); do
	[ "$(stat -c %s "$M/live" 2>/dev/null || echo 0)" -ge $((2 << 20)) ] && break
	sleep 0.05
done
check "the live scan grows in the mount" test "$(stat -c %s "$M/live")" -ge $((2 << 20))
head -c $((2 << 20)) "$M/live" >"$T_DIR/head.bin"
check "its first 2 MiB read through the mount are counter blocks" counter_ok "$T_DIR/head.bin"
check "recfs ls beside recfsd lists it as recording" grep -Eq '^live +[0-9]+ +recording' <<<"$(recfs ls -l "$PACK")"

# --- many statements on one line: each answered, in order, on one line;
# more than 64: refused whole, nothing carried out
line=$(printf 'version?;%.0s' $(seq 60))
got=$(vsi "$line")
check "60 statements on a line: 60 replies" test "$(grep -o '!version ? 0 : recfsd : [^ ]* ;' <<<"$got" | wc -l)" = 60
line=$(printf 'record=off;%.0s' $(seq 65))
expect_reply "65 statements on a line are refused, none run" "$line" \
	'!error = 3 : more than 64 statements on a line, none carried out ;'
expect_reply "the scan goes on" "record?" '!record \? 0 : on : 2 : live : [0-9]+ ;'

# --- SIGTERM with the scan open
sleep 0.5
kill -TERM "$RD_PID"
wait "$RD_PID"; rc=$?
check "SIGTERM mid-scan: recfsd exits 0 (got $rc)" test "$rc" = 0
check "it says it sealed the open scan" grep -q "sealing the open scan" "$T_DIR/log"
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
check "live is sealed" grep -Eq '^live +[0-9]+ +sealed' <<<"$(recfs ls -l "$PACK")"
recfs cat "$PACK" live >"$T_DIR/live.bin"
for ((i = 0; i < 100; i++)); do
	[ "$(stat -c %s "$M/live")" = "$(stat -c %s "$T_DIR/live.bin")" ] && break
	sleep 0.05
done
check "the mount reads the sealed scan, every byte" cmp "$M/live" "$T_DIR/live.bin"
check "unmount" unmount_pack "$M"
check "the sealed scan is one run of counter blocks, longer than what the mount read" \
	eval 'counter_ok "$T_DIR/live.bin" && test "$(stat -c %s "$T_DIR/live.bin")" -gt $((2 << 20))'
run fsck.recfs -n "$PACK"
check "fsck clean after SIGTERM (exit $RC)" test "$RC" = 0
finish
