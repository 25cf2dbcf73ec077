#!/bin/bash
# 31-record-vdif: gen:vdif frames (standard and legacy headers, several
# threads) verified frame by frame; a VDIF stream with deliberately removed
# frames recorded with --format vdif: the loss counters and the gap map are
# stored with the recording (recfs ls -l shows them) and in --stats-json.
. "$(dirname "$0")/../lib.sh"
echo "31-record-vdif: VDIF generator, frame checks and the stored loss map"

make_members 3 128M
check "mkfs 3 members" mkfs.recfs -f -q -c 256K "$PACK"
B="--buffer 16M -q"
F=8032

check "gen:vdif, 4 threads" recfs-record $B -i gen:vdif --threads 4 --frame-rate 50 --size $((F * 1000)) "$PACK" v4
run recfs-play --check vdif "$PACK" v4
check "gen:vdif verified: 1000 frames, none missing ($OUT)" grep -q "1000 frames, 0 missing, 0 bad, 0 bad bytes" <<<"$OUT"
check "recorded as vdif with its frame size" grep -Eq '^v4 +8032000 +sealed.* vdif +0 ' <<<"$(recfs ls -l "$PACK")"
check "gen:vdif legacy headers, 1000-byte frames" recfs-record $B -i gen:vdif --legacy --frame-size 1000 --size 500000 "$PACK" leg
run recfs-play --check vdif --frame-size 1000 "$PACK" leg
check "legacy frames verified ($OUT)" grep -q "500 frames, 0 missing, 0 bad, 0 bad bytes" <<<"$OUT"
check "legacy: headers carry the legacy bit" test "$(recfs cat "$PACK" leg | head -c 4 | od -An -tx1 | awk '{print $4}')" \
	= "$(printf '%02x' $((0x$(recfs cat "$PACK" leg | head -c 4 | od -An -tx1 | awk '{print $4}') | 0x40)))"

# a clean 2-thread stream, 100 frames per second per thread
check "reference stream" recfs-record $B -i gen:vdif --threads 2 --frame-rate 100 --size $((F * 1000)) "$PACK" ref
recfs cat "$PACK" ref >"$T_DIR/ref.vdif"
# remove frames: global 10,11,12 (thread 0: 2, thread 1: 1), 301-302
# (one each), 399-402 crossing a second boundary of thread 1 (frame 199 of
# second 0 and 0 of second 1 ... two each), and 700 (thread 0)
python3 - "$T_DIR/ref.vdif" "$T_DIR/cut.vdif" <<'PY'
import sys
F = 8032
d = open(sys.argv[1], 'rb').read()
drop = {10, 11, 12, 301, 302, 399, 400, 401, 402, 700}
frames = [d[i*F:(i+1)*F] for i in range(len(d)//F)]
open(sys.argv[2], 'wb').write(b''.join(f for i, f in enumerate(frames) if i not in drop))
PY
J=$T_DIR/cut.json
check "record the cut stream with --format vdif" recfs-record $B --format vdif --stats-json "$J" "$PACK" cut <"$T_DIR/cut.vdif"
check "cut: byte-identical" cmp <(recfs cat "$PACK" cut) "$T_DIR/cut.vdif"
check "stats json: 10 lost, 0 out of order, 0 invalid, the gaps at the right bytes" python3 - "$J" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
v = j["vdif"]
assert v["frames_lost"] == 10, v
assert v["out_of_order"] == 0 and v["invalid"] == 0, v
F, T = 8032, 2
drop = {10, 11, 12, 301, 302, 399, 400, 401, 402, 700}
# expected: per thread, a run of dropped frames is one gap, stored at the
# byte offset (in the cut stream) of that thread's next frame
want, pending, pos = [], {}, 0
for i in range(1000):
    t = i % T
    if i in drop:
        pending[t] = pending.get(t, 0) + 1
        continue
    if pending.get(t):
        want.append((pos * F, pending.pop(t), t))
    pos += 1
got = sorted((g["offset"], g["frames"], g["thread"]) for g in v["gaps"])
assert len(want) == 7 and got == sorted(want), (got, sorted(want))
PY
ls_out=$(recfs ls -l "$PACK")
check "ls -l: cut shows 10 frames lost" grep -Eq '^cut +7951680 +sealed.* vdif +10 +0' <<<"$ls_out"
check "ls -l: the stored gap map" test "$(grep -c 'gap at byte' <<<"$(sed -n '/^cut /,/^[a-z]/p' <<<"$ls_out")")" = 7
check "ls -l: gap at byte 3164608 of 2 frames on thread 1" grep -q "gap at byte 3164608: 2 frames lost (thread 1)" <<<"$ls_out"
run recfs-play --check vdif "$PACK" cut
check "checker counts the 10 missing frames ($OUT)" grep -q "990 frames, 10 missing, 0 bad" <<<"$OUT"

# two frames of one thread swapped: one out of order (and one lost at the
# jump that the late frame then fills)
python3 - "$T_DIR/ref.vdif" "$T_DIR/swap.vdif" <<'PY'
import sys
F = 8032
d = open(sys.argv[1], 'rb').read()
fr = [d[i*F:(i+1)*F] for i in range(len(d)//F)]
fr[100], fr[102] = fr[102], fr[100]   # thread 0 frames 50 and 51
open(sys.argv[2], 'wb').write(b''.join(fr))
PY
check "record swapped frames" recfs-record $B --format vdif --stats-json "$T_DIR/swap.json" "$PACK" swap <"$T_DIR/swap.vdif"
check "1 out of order, counted" python3 -c '
import json,sys; v=json.load(open(sys.argv[1]))["vdif"]
assert v["out_of_order"]==1 and v["frames_lost"]==1 and v["invalid"]==0, v' "$T_DIR/swap.json"

# damaged headers are counted as invalid (and, not being attributable to a
# thread, each leaves that thread's sequence one frame short)
python3 - "$T_DIR/ref.vdif" "$T_DIR/bad.vdif" <<'PY'
import sys
F = 8032
d = bytearray(open(sys.argv[1], 'rb').read())
for i in (5, 6, 50):
    d[i*F+8:i*F+12] = b'\xff\xff\xff\xff'   # word 2: version 7, bad length
open(sys.argv[2], 'wb').write(d)
PY
check "record damaged headers" recfs-record $B --format vdif --stats-json "$T_DIR/bad.json" "$PACK" bad <"$T_DIR/bad.vdif"
check "3 invalid frames, 3 gaps, nothing out of order" python3 -c '
import json,sys; v=json.load(open(sys.argv[1]))["vdif"]
assert v["invalid"]==3 and v["frames_lost"]==3 and v["out_of_order"]==0 and len(v["gaps"])==3, v' "$T_DIR/bad.json"
check "damaged stream still byte-identical" cmp <(recfs cat "$PACK" bad) "$T_DIR/bad.vdif"

# many gaps: the table holds 32, neighbours merge, the flag says so
python3 - "$T_DIR/ref.vdif" "$T_DIR/many.vdif" <<'PY'
import sys
F = 8032
d = open(sys.argv[1], 'rb').read()
frames = [d[i*F:(i+1)*F] for i in range(len(d)//F)]
open(sys.argv[2], 'wb').write(b''.join(f for i, f in enumerate(frames) if not (i % 20 == 7 and i < 990)))
PY
check "record 50 gaps" recfs-record $B --format vdif --stats-json "$T_DIR/many.json" "$PACK" many <"$T_DIR/many.vdif"
check "50 frames lost, at most 32 gaps kept, merged flag set" python3 -c '
import json,sys; v=json.load(open(sys.argv[1]))["vdif"]
assert v["frames_lost"]==50 and len(v["gaps"])<=32 and v["gaps_coalesced"] and sum(g["frames"] for g in v["gaps"])==50, v' "$T_DIR/many.json"
finish
