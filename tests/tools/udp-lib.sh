# UDP helpers shared by the recorder tests (through tests/lib.sh) and
# bench/udp.sh (through bench/lib.sh).

# free_port: a UDP port on 127.0.0.1 nobody is bound to now
free_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_bound PORT: until a UDP socket is bound there (the receiver is
# ready); 10 s at most
wait_bound() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -n "$(ss -Hlun "sport = :$1" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_drained PORT...: until the receiver has taken every datagram queued
# on each UDP socket bound to PORT (Recv-Q empty twice running), then
# 0.1 s for it to act on its last batch; 20 s at most.  A test that sent
# a finite stream waits here before record=on or record=off, not for a
# fixed time: on a loaded machine the receiver may lag by seconds.
wait_drained() {
	local p i empty
	for p in "$@"; do
		empty=0
		for ((i = 0; i < 400 && empty < 2; i++)); do
			if [ "$(ss -Hlun "sport = :$p" 2>/dev/null | awk '{s += $2} END {print s + 0}')" = 0 ]; then
				empty=$((empty + 1))
			else
				empty=0
			fi
			sleep 0.05
		done
		[ "$empty" -ge 2 ] || return 1
	done
	sleep 0.1
}

# notify_listen SOCK OUT: a systemd-style notification socket at SOCK; the
# first message it gets goes to OUT (20 s at most).  Sets NOTIFY_PID and
# returns once SOCK exists.
notify_listen() {
	python3 - "$1" >"$2" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(20)
print(s.recv(256).decode(), flush=True)
PY
	NOTIFY_PID=$!
	cleanup_add "kill $NOTIFY_PID"
	local i
	for ((i = 0; i < 100; i++)); do [ -S "$1" ] && return 0; sleep 0.05; done
	return 1
}
