# recfsd helpers for the integration tests (sourced after tests/lib.sh).

# start_recfsd ARGS...: starts recfsd in the background with a control port
# the kernel picks, waits for its ready line; sets RD_PID, RD_CTL
# (127.0.0.1:PORT) and RD_MX (metrics, when --metrics was given).  The
# daemon is killed at exit if the test has not stopped it.
start_recfsd() {
	local out=$T_DIR/recfsd.$RANDOM.out
	RD_LOG=$T_DIR/recfsd.$RANDOM.log
	show_log_on_failure "$RD_LOG"
	recfsd -l 127.0.0.1:0 "$@" >"$out" 2>"$RD_LOG" &
	RD_PID=$!
	cleanup_add "kill -9 $RD_PID"
	local i line=""
	for ((i = 0; i < 200; i++)); do
		line=$(head -n 1 "$out" 2>/dev/null)
		[ -n "$line" ] && break
		kill -0 "$RD_PID" 2>/dev/null || break
		sleep 0.05
	done
	RD_READY=$line
	RD_CTL=$(sed -n 's/.*control=\([^ ]*\).*/\1/p' <<<"$line")
	RD_MX=$(sed -n 's/.*metrics=\([^ ]*\).*/\1/p' <<<"$line")
	[ -n "$RD_CTL" ]
}

# stop_recfsd: SIGTERM, wait; sets RD_RC
stop_recfsd() {
	kill -TERM "$RD_PID" 2>/dev/null
	wait "$RD_PID"
	RD_RC=$?
}

# vsi STMT...: one reply line per statement (python client)
vsi() { python3 "$(dirname "${BASH_SOURCE[0]}")/vsi.py" "$RD_CTL" "$@"; }

# expect_reply DESC STMT REGEX: the reply to STMT matches REGEX (whole line)
expect_reply() {
	local d=$1 s=$2 want=$3 got
	got=$(vsi "$s" 2>&1)
	if grep -Eqx -- "$want" <<<"$got"; then pass "$d"; else fail "$d: '$s' answered '$got', want /$want/"; fi
}

# wait_reply STMT REGEX [TRIES]: poll until the reply matches (TRIES x 0.1 s)
wait_reply() {
	local i
	for ((i = 0; i < ${3:-100}; i++)); do
		grep -Eqx -- "$2" <<<"$(vsi "$1")" && return 0
		sleep 0.1
	done
	return 1
}

# scan_checked: the scan_check? reply once the scan is sealed (it answers
# 5 while the seal is still going: 16 lanes on a loaded machine); 20 s at
# most
scan_checked() {
	local i got
	for ((i = 0; i < 200; i++)); do
		got=$(vsi "scan_check?${1:+ : : $1}")
		[[ $got == '!scan_check ? 5 '* ]] || break
		sleep 0.1
	done
	echo "$got"
}

# need_prometheus: PY3 is the system python3 with prometheus_client (the
# Prometheus project's own parser); without it the test fails and ends
need_prometheus() {
	PY3=/usr/bin/python3
	$PY3 -c 'import prometheus_client' 2>/dev/null && return 0
	fail "needs python3-prometheus-client (make deps installs it)"
	finish
	exit
}

# scrape: recfsd's /metrics (RD_MX) as it was written, into $T_DIR/m.txt
scrape() { curl -sf "http://$RD_MX/metrics" >"$T_DIR/m.txt"; }
# metric 'NAME{LABELS}': that sample's value in the last scrape, as written
metric() { awk -v k="$1" '$1 == k {print $2}' "$T_DIR/m.txt"; }

# scrape_parsed: scrape, then parse it with prometheus_client
# (need_prometheus first) into $T_DIR/m, a 'name{labels} value' line a
# sample, labels sorted, values as Python floats (0.0)
scrape_parsed() {
	scrape || return 1
	$PY3 - "$T_DIR/m.txt" >"$T_DIR/m" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        lab = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, lab, s.value))
PY
}
# val 'NAME{LABELS}': that sample's value in the last scrape_parsed
val() { awk -v k="$1" '$1 == k {print $2}' "$T_DIR/m"; }
