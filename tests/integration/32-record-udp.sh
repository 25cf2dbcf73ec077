#!/bin/bash
# 32-record-udp: UDP round trips over 127.0.0.1: recfs-play sends a VDIF
# recording one frame per datagram into recfs-record --input udp:
# --format vdif, and a raw recording with 8-byte sequence prefixes into
# --strip 8; contents byte-identical, datagram counters right, wrong-sized
# datagrams counted and not written.
. "$(dirname "$0")/../lib.sh"
echo "32-record-udp: recfs-play -> recfs-record over loopback"

make_members 2 128M
check "mkfs 2 members" mkfs.recfs -f -q -c 256K "$PACK"
B="--buffer 16M -q"
F=8032


# --- VDIF, one frame per datagram
check "source recording" recfs-record $B -i gen:vdif --threads 2 --size $((F * 2000)) "$PACK" src
recfs cat "$PACK" src >"$T_DIR/src.vdif"
PORT=$(free_port)
recfs-record $B -i "udp:127.0.0.1:$PORT" --format vdif --size $((F * 2000)) --stats-json "$T_DIR/u.json" \
	"$PACK" got 2>"$T_DIR/rec.err" &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
run recfs-play --rate 40M "$PACK" src --udp "127.0.0.1:$PORT"
check "recfs-play sent 2000 datagrams ($OUT)" grep -q "sent 2000 datagrams" <<<"$OUT"
wait $pid
rc=$?
check "recorder stopped at --size (exit $rc: $(tail -1 "$T_DIR/rec.err"))" test "$rc" = 0
check "udp vdif: byte-identical" cmp <(recfs cat "$PACK" got) "$T_DIR/src.vdif"
check "udp vdif: 2000 datagrams, none wrong, dropped or lost, frame size learned" python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); d=j["datagrams"]; v=j["vdif"]
assert d["received"]==2000 and d["wrong_size"]==0 and d["dropped_ring_full"]==0, d
assert v["frames_lost"]==0 and v["frame_size"]==8032, v' "$T_DIR/u.json"
check "udp vdif recording is vdif" grep -Eq '^got +16064000 +sealed.* vdif ' <<<"$(recfs ls -l "$PACK")"
run recfs-play --check vdif "$PACK" got
check "udp vdif: frames verified ($OUT)" grep -q "2000 frames, 0 missing, 0 bad" <<<"$OUT"

# --- VDIF with frames missing on the wire: the same loss map as from a file
python3 - "$T_DIR/src.vdif" "$T_DIR/cut.vdif" <<'PY'
import sys
F = 8032
d = open(sys.argv[1], 'rb').read()
fr = [d[i*F:(i+1)*F] for i in range(len(d)//F)]
open(sys.argv[2], 'wb').write(b''.join(f for i, f in enumerate(fr) if i not in (7, 8, 9, 500, 1501)))
PY
check "cut source from a file" recfs-record $B --format vdif --stats-json "$T_DIR/cutfile.json" "$PACK" cutsrc <"$T_DIR/cut.vdif"
PORT=$(free_port)
recfs-record $B -i "udp:127.0.0.1:$PORT" --format vdif --size $((F * 1995)) --stats-json "$T_DIR/cutudp.json" \
	"$PACK" cutudp 2>/dev/null &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
run recfs-play --rate 40M "$PACK" cutsrc --udp "127.0.0.1:$PORT"
wait $pid
check "udp with missing frames: byte-identical" cmp <(recfs cat "$PACK" cutudp) "$T_DIR/cut.vdif"
check "udp with missing frames: 5 lost, same gaps as from the file" python3 -c '
import json,sys
a=json.load(open(sys.argv[1]))["vdif"]; b=json.load(open(sys.argv[2]))["vdif"]
assert a["frames_lost"]==5 and a["gaps"]==b["gaps"] and len(a["gaps"])==4, (a, b)' "$T_DIR/cutudp.json" "$T_DIR/cutfile.json"
check "udp with missing frames: ls -l shows them" grep -Eq '^cutudp +[0-9]+ +sealed.* vdif +5 ' <<<"$(recfs ls -l "$PACK")"

# --- raw, 4000-byte payloads behind an 8-byte sequence number, and a
# short last datagram that must be counted, not written
head -c $((4000 * 300 + 123)) /dev/urandom >"$T_DIR/raw"
check "raw source" recfs-record $B "$PACK" raw <"$T_DIR/raw"
PORT=$(free_port)
recfs-record --buffer 16M -i "udp:127.0.0.1:$PORT" --strip 8 --duration 3 --stats-json "$T_DIR/r.json" \
	"$PACK" rawgot 2>"$T_DIR/rec2.err" &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
run recfs-play --packet-size 4000 --sequence --rate 20M "$PACK" raw --udp "127.0.0.1:$PORT"
check "sent 301 datagrams ($OUT)" grep -q "sent 301 datagrams" <<<"$OUT"
wait $pid
rc=$?
check "raw recorder stopped at --duration (exit $rc)" test "$rc" = 0
check "raw: sequence numbers stripped, payload byte-identical" \
	cmp <(recfs cat "$PACK" rawgot) <(head -c $((4000 * 300)) "$T_DIR/raw")
check "raw: 301 received, 1 wrong size" python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))["datagrams"]
assert d["received"]==301 and d["wrong_size"]==1 and d["dropped_ring_full"]==0, d' "$T_DIR/r.json"
check "raw: the summary names the counters" grep -q "301 received, 1 wrong size, 0 dropped" "$T_DIR/rec2.err"

# --- a generated stream straight from recfs-play --gen
PORT=$(free_port)
recfs-record $B -i "udp:127.0.0.1:$PORT" --packet-size 8192 --size $((8192 * 500)) "$PACK" gen 2>/dev/null &
pid=$!
cleanup_add "kill $pid"
check "recorder bound to udp:$PORT" wait_bound "$PORT"
check "recfs-play --gen counter" recfs-play -q --gen counter --size $((8192 * 500)) --rate 20M --udp "127.0.0.1:$PORT"
wait $pid
run recfs-play --check counter "$PACK" gen
check "generated udp stream verified byte for byte ($OUT)" grep -q "4096000 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"

# --- readiness: --ready-fd and sd_notify say when a datagram is recorded.
# The sender starts the moment READY=1 arrives, with no wait_bound: every
# datagram must be in the recording.
PORT=$(free_port)
mkfifo "$T_DIR/ready"
check "a notification socket" notify_listen "$T_DIR/notify.sock" "$T_DIR/notify.out"
NOTIFY_SOCKET=$T_DIR/notify.sock recfs-record $B -q -i "udp:127.0.0.1:$PORT" --packet-size 8192 \
	--size $((8192 * 300)) --ready-fd 3 "$PACK" ready 3>"$T_DIR/ready" &
pid=$!
cleanup_add "kill $pid"
read -r -t 20 line <"$T_DIR/ready"
check "--ready-fd: READY=1 once the socket is bound ($line)" test "$line" = READY=1
check "recfs-play right after READY=1" recfs-play -q --gen counter --size $((8192 * 300)) --rate 50M --udp "127.0.0.1:$PORT"
wait $pid
check "recorder exits 0 after exactly its --size" test $? = 0
run recfs-play --check counter "$PACK" ready
check "every datagram sent after READY=1 recorded ($OUT)" grep -q "2457600 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
wait $NOTIFY_PID
check "sd_notify: READY=1 on NOTIFY_SOCKET" grep -qx READY=1 "$T_DIR/notify.out"
expect_err "--ready-fd on a closed descriptor" 1 "--ready-fd 97: not an open descriptor" \
	recfs-record -i "udp:127.0.0.1:$PORT" --ready-fd 97 "$PACK" never
finish
