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
