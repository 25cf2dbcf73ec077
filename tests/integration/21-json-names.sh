#!/bin/bash
# 21-json-names: names that are not UTF-8 in `recfs ls --json` and in
# recfs-record --stats-json.  Every output must decode as strict UTF-8 and
# parse as JSON, and two different names must never read the same: a name
# that is valid UTF-8 is written as is (escaped) with no name_hex; any other
# name gets a lossy "name" (U+FFFD for each bad byte) and "name_hex", its
# exact bytes.
. "$(dirname "$0")/../lib.sh"
TESTWRITE=$RECFS_BIN/../tests/recfs-testwrite
cd "$T_DIR"

make_members 2 64M
mkfs.recfs -q -L names -c 64K "$PACK"
printf 'abc' >src

# name -> hex of its bytes, for python
hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
NAMES=(
	"$(printf '\xc3\xbf')"            # U+00FF, valid
	"$(printf '\xff')"                # the byte 0xFF: must not read as U+00FF
	"$(printf 'x\xef\xbf\xbd')"       # a real U+FFFD, valid
	"$(printf 'x\xff')"               # lossy form of this is x U+FFFD too
	"$(printf 's\xed\xa0\x80')"       # a surrogate, U+D800
	"$(printf 'o\xc0\xaf')"           # overlong '/'
	"$(printf 'b\xf4\x90\x80\x80')"   # above U+10FFFF
	"$(printf 't\xe2\x82')"           # a sequence cut short
	"$(printf 'c\xe2\x82\xac \xf0\x9f\x98\x80')"  # valid 3- and 4-byte forms
	"$(printf 'ctl\t\x01"q\\e')"      # controls, quote, backslash
	$'nl\nx'                          # a newline
)
ok=1
for n in "${NAMES[@]}"; do
	"$TESTWRITE" "$PACK" "$n" src || ok=0
done
"$TESTWRITE" --source "$(printf 'udp:\xfe')" "$PACK" badsource src || ok=0
check "recordings with crafted names are created" test $ok = 1
hexes=()
for n in "${NAMES[@]}"; do hexes+=("$(hex "$n")"); done

recfs ls --json "$PACK" >ls.json
check "recfs ls --json exits 0" test $? = 0

# the checks shared by both outputs: $1 a JSON object with "name"
cat >names.py <<'PY'
import json, sys

def load(path):
    raw = open(path, "rb").read()
    text = raw.decode("utf-8", errors="strict")   # strict: no surrogates, overlongs
    return json.loads(text)

def exact(obj, key="name"):
    """the exact bytes the object names, and whether it was lossless"""
    v = obj[key]
    if key + "_hex" in obj:
        h = obj[key + "_hex"]
        assert h == h.lower() and len(h) % 2 == 0, h
        b = bytes.fromhex(h)
        try:
            b.decode("utf-8")
            raise AssertionError("%s_hex on a valid UTF-8 name %r" % (key, b))
        except UnicodeDecodeError:
            pass
        lossy = b.decode("utf-8", errors="replace")
        # U+FFFD for each bad byte: at least as many as Python's
        assert v.replace("\ufffd", "") == lossy.replace("\ufffd", ""), (v, lossy)
        return b
    return v.encode("utf-8")   # raises on a lone surrogate
PY

check "ls --json: strict UTF-8, valid JSON, each name exactly once, name_hex only where needed" \
	python3 - ls.json "${hexes[@]}" <<'PY'
import sys
sys.path.insert(0, ".")
from names import load, exact
recs = load(sys.argv[1])
want = [bytes.fromhex(h) for h in sys.argv[2:]]
got = [exact(r) for r in recs]
for w in want:
    assert got.count(w) == 1, (w, got)
    r = recs[got.index(w)]
    try:
        w.decode("utf-8")
        assert "name_hex" not in r and r["name"] == w.decode("utf-8"), r
    except UnicodeDecodeError:
        assert "name_hex" in r, r
# what a reader that ignores name_hex sees: still no two (name, name_hex) alike
keys = [(r["name"], r.get("name_hex")) for r in recs]
assert len(set(keys)) == len(keys), keys
by = {exact(r): r for r in recs}
assert by[b"\xff"]["name"] == "\ufffd" and by[b"\xc3\xbf"]["name"] == "\u00ff"
assert by[b"\xff"]["name_hex"] == "ff"
assert by[b"s\xed\xa0\x80"]["name"] == "s\ufffd\ufffd\ufffd"
assert by[b"ctl\t\x01\"q\\e"]["name"] == "ctl\t\x01\"q\\e"
src = [r for r in recs if r["name"] == "badsource"][0]
assert src["source"] == "udp:\ufffd" and src["source_hex"] == "7564703afe", src
PY

# --stats-json writes the name the same way
BAD=$(printf 'r\xed\xa0\x80\xff')
run recfs-record -q --buffer 4M -i gen:counter --size 100K --stats-json stats.json "$PACK" "$BAD"
check "recfs-record with a surrogate in the name (exit $RC)" test "$RC" = 0
check "--stats-json: strict UTF-8, lossy name and exact name_hex" python3 - stats.json <<'PY'
import sys
sys.path.insert(0, ".")
from names import load, exact
j = load(sys.argv[1])
assert j["name"] == "r\ufffd\ufffd\ufffd\ufffd", j["name"]
assert exact(j) == b"r\xed\xa0\x80\xff", j
assert "input_hex" not in j and j["input"] == "gen:counter"
for m in j["members"]:
    assert "path_hex" not in m
PY
GOOD=$(printf 'r\xc3\xbf')
run recfs-record -q --buffer 4M -i gen:counter --size 100K --stats-json good.json "$PACK" "$GOOD"
check "--stats-json: a valid name has no name_hex" python3 - good.json <<'PY'
import sys
sys.path.insert(0, ".")
from names import load
j = load(sys.argv[1])
assert j["name"] == "r\u00ff" and "name_hex" not in j, j
PY
finish
