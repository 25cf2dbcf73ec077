#!/bin/bash
# 30-record-stdin: recfs-record from stdin and file: inputs, byte for byte
# through `recfs cat`; gen:counter checked byte for byte with
# recfs-play --check; the --stats-json report and its fields.
. "$(dirname "$0")/../lib.sh"
echo "30-record-stdin: stdin/file/gen:counter round trips"

make_members 4 128M
check "mkfs 4 members, 64 KiB chunks" mkfs.recfs -f -q -c 64K "$PACK"
B="--buffer 16M -q"

# odd length: neither a chunk, a row nor a block multiple.  The first byte
# is 1, never the counter pattern's 0, so the --check below always fails
# at byte 0.
{ printf '\x01'; head -c 5000000 /dev/urandom; } >"$T_DIR/odd"
check "stdin records" recfs-record $B "$PACK" odd <"$T_DIR/odd"
check "stdin: recfs cat is byte-identical" cmp <(recfs cat "$PACK" odd) "$T_DIR/odd"
check "stdin: sealed at the exact length" \
	grep -Eq '^odd +5000001 +sealed' <<<"$(recfs ls -l "$PACK")"

# a slow pipe: short reads, partial chunks, several commits
(for i in 1 2 3; do head -c 70000 "$T_DIR/odd"; sleep 0.3; done) >"$T_DIR/slow.ref" 2>/dev/null
run recfs-record $B -c 0.1 "$PACK" slow < <(for i in 1 2 3; do head -c 70000 "$T_DIR/odd"; sleep 0.3; done)
check "slow pipe records (exit $RC)" test "$RC" = 0
check "slow pipe: byte-identical" cmp <(recfs cat "$PACK" slow) "$T_DIR/slow.ref"
check "last line says why it stopped" grep -q "'slow' sealed at 210000 bytes.*input ended" <<<"$(tail -1 <<<"$OUT")"

# exactly one row, then one byte
head -c $((65536 * 4)) /dev/urandom >"$T_DIR/row"
check "file: input records" recfs-record $B -i "file:$T_DIR/row" "$PACK" row
check "file: byte-identical" cmp <(recfs cat "$PACK" row) "$T_DIR/row"
printf x >"$T_DIR/one"
check "one byte records" recfs-record $B "$PACK" one <"$T_DIR/one"
check "one byte: byte-identical" cmp <(recfs cat "$PACK" one) "$T_DIR/one"

# gen:counter: every byte a function of its offset
J=$T_DIR/c.json
check "gen:counter 40 MiB" recfs-record $B -i gen:counter --size 40M --stats-json "$J" "$PACK" cnt
run recfs-play --check counter "$PACK" cnt
check "gen:counter verified byte for byte (exit $RC: $OUT)" \
	grep -q "'cnt': 41943040 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
# a name that is not UTF-8 (names may hold any byte but /): --stats-json
# stays valid JSON: the bad byte as U+FFFD, the exact bytes in name_hex, as
# recfs ls --json writes it (test 21 has more)
BADNAME=$(printf 'n\xe9-\x01')
check "a name with a non-UTF-8 byte records" recfs-record $B -i gen:counter --size 1M \
	--stats-json "$T_DIR/bad.json" "$PACK" "$BADNAME"
check "--stats-json of that name is valid JSON, the bytes in name_hex" python3 -c '
import json,sys; j=json.load(open(sys.argv[1], encoding="utf-8")); assert j["name"]=="n\ufffd-\u0001" and j["name_hex"]=="6ee92d01", j' "$T_DIR/bad.json"
check "recfs ls --json writes the name the same way" python3 -c '
import json,sys; assert any(r["name"]=="n\ufffd-\u0001" and r["name_hex"]=="6ee92d01" for r in json.load(sys.stdin))' < <(recfs ls --json "$PACK")
check "gen:counter odd block size" recfs-record $B -i gen:counter --frame-size 1008 --size 3000007 "$PACK" cnt1008
run recfs-play --check counter "$PACK" cnt1008
check "1008-byte blocks verified ($OUT)" grep -q "3000007 bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
check "the recording reads back identical to a regenerated stream" \
	cmp <(recfs cat "$PACK" cnt1008 | head -c 2016 | od -An -tx1) \
	<(python3 -c '
import struct,sys
out=b""
for n in range(2):
    out+=struct.pack("<Q",n)+bytes(i&255 for i in range(1000))
sys.stdout.buffer.write(out)' | od -An -tx1)

# the checker is not vacuous: random data fails it
run recfs-play --check counter "$PACK" odd
check "--check fails on data that is not the pattern (exit $RC)" test "$RC" = 1
check "--check names the first bad byte" grep -q "first at byte 0" <<<"$OUT"
check "stats json is valid JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$J"
check "stats json: bytes, ring max, per-member latency, cpu" python3 -c '
import json,sys
j=json.load(open(sys.argv[1]))
assert j["bytes"]==41943040, j["bytes"]
assert j["ring_max_fill_bytes"]>0
assert len(j["members"])==4 and all(m["writes"]>0 and m["latency_max_s"]>=m["latency_mean_s"]>0 for m in j["members"])
assert j["cpu"]["user_s"]>=0 and j["cpu"]["system_s"]>=0
assert j["stop"]=="--size reached" and j["exit_status"]==0
for k in ("duration_s","rate_bytes_per_s","datagrams","vdif","commits"): assert k in j, k
' "$J"

# --rate paces the generator; --duration stops it
run recfs-record $B -i gen:counter --rate 4M --duration 1 "$PACK" paced
check "paced gen stops on --duration (exit $RC)" test "$RC" = 0
sz=$(recfs ls -l "$PACK" | awk '$1=="paced"{print $2}')
check "4 MB/s for 1 s records about 4 MB (got $sz)" test "$sz" -gt 2500000 -a "$sz" -lt 5000000
run recfs-play --check counter "$PACK" paced
check "paced recording verified" grep -q "counter pattern: 0 bad bytes" <<<"$OUT"

# --progress: the live line (bytes, rate, ring now and max, dropped, lost)
run recfs-record --buffer 16M --progress -i gen:counter --rate 8M -d 1.2 "$PACK" prog
check "--progress draws the live line" grep -Eq $'\r[0-9.]+ [KMG]?i?B +[0-9.]+ [KMG]?i?B/s +ring [0-9.]+ [KMG]?i?B \\(max [0-9.]+ [KMG]?i?B\\) +dropped 0 +lost 0' <<<"$OUT"
check "--progress: ring fill never shown negative" test -z "$(grep -E 'ring [0-9.]+ EiB' <<<"$OUT")"

# SIGINT seals
recfs-record $B -i gen:counter --rate 2M "$PACK" sig 2>"$T_DIR/sig.err" &
pid=$!
cleanup_add "kill $pid"
sleep 1
kill -INT $pid
wait $pid
rc=$?
check "SIGINT: exit 0 (got $rc)" test "$rc" = 0
check "SIGINT: last line says so" grep -q "'sig' sealed at .*stopped by signal" <(tail -1 "$T_DIR/sig.err")
check "SIGINT: sealed" grep -Eq '^sig +[0-9]+ +sealed' <<<"$(recfs ls -l "$PACK")"
run recfs-play --check counter "$PACK" sig
check "SIGINT: content verified" grep -q "counter pattern: 0 bad bytes" <<<"$OUT"
finish
