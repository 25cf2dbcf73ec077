#!/bin/bash
# 00-layout: the source layout stays what DESIGN.md ("Layout") says.
#  - No C source or header over 1,000 lines (fs/, recorder/, mkfs/, fsck/,
#    admin/, bench/).
#  - struct rr, the engine's state, is defined in recorder/engine/ only, and
#    the engine's private headers (rr.h, rcv.h) are included from there only:
#    outside it struct rr is incomplete, so a field access does not compile.
#    A translation unit outside the engine that reads a field is refused by
#    the compiler here, the same one with only the public calls is not.
#  - No program's main() over 150 lines: it reads as the program's steps.
#  - recfsd's calls point one way: the scan model (scan.o, ds.o) calls
#    nothing of the keywords (ctl*.o), the metrics (rdmetrics.o, prom.o),
#    the VSI-S transport (vsis.o) or the wiring (main.o); the keywords and
#    the metrics call nothing of the wiring.  Read from the objects' symbol
#    tables (nm), so a call hidden behind a macro counts too.
#  - Headers cross a folder only where they are public: in recorder/ and
#    bench/, another folder's header is named only as "engine/engine.h" or
#    "common/*.h"; no source climbs out of its folder with "../" except
#    the white-box unit tests and the library's own check/ pass files.
#  - The mount's calls point one way, ops -> cache -> node -> log (and
#    librecfs): node.o calls nothing of cache.o or ops.o, cache.o nothing
#    of ops.o, log.o nothing of the others, none anything of main.o; read
#    from the symbol tables as for recfsd.
#  - The engine prints nothing and keeps no global state (engine.h): its
#    objects name no stderr or perror, and hold nothing in .data or .bss
#    but a sanitizer's own __ symbols (a program's flag, rr_conf.stop_flag,
#    replaced the global rr_signal).
. "$(dirname "$0")/../lib.sh"
echo "00-layout: file sizes, main()s, the engine's private state"
cd "$(dirname "$0")/../.."

# --- no source file over 1,000 lines
big=$(find fs recorder mkfs fsck admin bench -name '*.[ch]' -type f 2>/dev/null |
	xargs wc -l | awk '$2 != "total" && $1 > 1000 {print $2 " (" $1 " lines)"}')
check "no source file over 1,000 lines${big:+: $big}" test -z "$big"

# --- no main over 150 lines (from "int main(" to the closing brace at
# column 0)
long=$(grep -rl --include='*.c' '^int main(' fs recorder mkfs fsck admin bench tests/tools 2>/dev/null |
	while read -r f; do
		awk -v f="$f" '/^int main\(/ {s = NR} s && /^}/ {if (NR - s + 1 > 150) print f " (" NR - s + 1 " lines)"; s = 0}' "$f"
	done)
check "no main() over 150 lines${long:+: $long}" test -z "$long"

# --- struct rr is the engine's
defs=$(grep -rlE '^struct rr \{' --include='*.[ch]' fs recorder mkfs fsck admin bench tests python 2>/dev/null)
check "struct rr is defined once, in recorder/engine/rr.h (found in: ${defs:-none})" \
	test "$defs" = recorder/engine/rr.h
priv=$(grep -rlE '#include[[:space:]]*"([^"]*/)?(rr|rcv)\.h"' --include='*.[ch]' fs recorder mkfs fsck admin bench tests 2>/dev/null |
	grep -v '^recorder/engine/')
check "the engine's private headers are included from recorder/engine/ only${priv:+: $priv}" test -z "$priv"

# --- other folders' headers: the public ones only
cross=$(grep -rnE '#include[[:space:]]*"(engine|common|record|recfsd|play)/[^"]*"' --include='*.[ch]' recorder bench 2>/dev/null |
	grep -vE '"(engine/engine\.h|common/[a-z_]+\.h)"')
check "recorder/ and bench/ name another folder's private header nowhere${cross:+: $cross}" test -z "$cross"
climb=$(grep -rlE '#include[[:space:]]*"\.\./' --include='*.[ch]' fs recorder mkfs fsck admin bench tests 2>/dev/null |
	grep -vE '^(tests/unit/|fs/lib/check/)')
check "no header reached through ../ outside the white-box tests${climb:+: $climb}" test -z "$climb"

# --- and the compiler keeps it so: a field access outside the engine fails
CC=${CC:-cc}
cat >"$T_DIR/public.c" <<'EOF'
#include "engine/engine.h"
int f(struct rr *r);
int f(struct rr *r) { return rr_input_fd(r); }
EOF
cat >"$T_DIR/field.c" <<'EOF'
#include "engine/engine.h"
int f(struct rr *r);
int f(struct rr *r) { return r->in_fd; }
EOF
cc_ok() { LC_ALL=C "$CC" -std=c11 -D_GNU_SOURCE -Werror=implicit-function-declaration -fsyntax-only -Ifs/include -Irecorder "$1" 2>"$T_DIR/cc.err"; }
check "a program using engine.h's calls compiles" cc_ok "$T_DIR/public.c"
run cc_ok "$T_DIR/field.c"
check "a program reading a field of struct rr does not (exit $RC)" test "$RC" != 0
check "... because struct rr is incomplete there" grep -Eq 'undefined type|incomplete' "$T_DIR/cc.err"
# --- recfsd: model <- keywords, metrics <- wiring, never back
O=${BUILD:-build}/obj/recorder/recfsd
defined() { nm --defined-only "$@" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort -u; }
undef() { nm -u "$@" 2>/dev/null | awk '{print $NF}' | sort -u; }
if [ -f "$O/scan.o" ]; then
	up=$(comm -12 <(undef "$O/scan.o" "$O/ds.o") \
		<(defined "$O"/ctl*.o "$O/rdmetrics.o" "$O/prom.o" "$O/vsis.o" "$O/main.o") | tr '\n' ' ')
	check "recfsd's scan model calls nothing above it${up:+: $up}" test -z "$up"
	up=$(comm -12 <(undef "$O"/ctl*.o "$O/rdmetrics.o") <(defined "$O/main.o") | tr '\n' ' ')
	check "recfsd's keywords and metrics call nothing of main.c${up:+: $up}" test -z "$up"
else
	fail "recfsd's objects are built ($O/scan.o)"
fi
# --- the mount: ops -> cache -> node -> log, never back
M=${BUILD:-build}/obj/fs/fuse
if [ -f "$M/node.o" ]; then
	up=$(comm -12 <(undef "$M/log.o") <(defined "$M/node.o" "$M/cache.o" "$M/ops.o" "$M/main.o") | tr '\n' ' ')
	check "the mount's log calls nothing above it${up:+: $up}" test -z "$up"
	up=$(comm -12 <(undef "$M/node.o") <(defined "$M/cache.o" "$M/ops.o" "$M/main.o") | tr '\n' ' ')
	check "the mount's node table calls nothing of the cache, the callbacks or main${up:+: $up}" test -z "$up"
	up=$(comm -12 <(undef "$M/cache.o") <(defined "$M/ops.o" "$M/main.o") | tr '\n' ' ')
	check "the mount's cache calls nothing of the callbacks or main${up:+: $up}" test -z "$up"
	up=$(comm -12 <(undef "$M/ops.o") <(defined "$M/main.o") | tr '\n' ' ')
	check "the mount's callbacks call nothing of main.c${up:+: $up}" test -z "$up"
else
	fail "the mount's objects are built ($M/node.o)"
fi
# --- the engine: no printing, no global state
E=${BUILD:-build}/obj/recorder/engine
if [ -f "$E/engine.o" ]; then
	pr=$(nm -u "$E"/*.o 2>/dev/null | awk '$NF ~ /^(stderr|perror|warn|warnx|err|errx)$/ {print $NF}' |
		sort -u | tr '\n' ' ')
	check "the engine prints nothing of its own${pr:+: it uses $pr}" test -z "$pr"
	gl=$(objdump -t "$E"/*.o 2>/dev/null | awk '$0 ~ / O \.(data|bss)([. ]|\t)/ && $0 !~ /\.rel\.ro/ && $NF !~ /^(__|\.)/ {print $NF}' |
		sort -u | tr '\n' ' ')
	check "the engine keeps no global state${gl:+: $gl}" test -z "$gl"
else
	fail "the engine's objects are built ($E/engine.o)"
fi
finish
