#!/usr/bin/env python3
"""record=on while clients poll status? (issue 15, item 16).

usage: status-poll.py HOST:PORT NPOLLERS SECONDS SCAN
  NPOLLERS connections each send lines of 8 "status?" and read the reply,
  over and over; once they run, a record=on:SCAN and a record=off are
  timed from another connection.  Prints "record_on_s X record_off_s Y
  polls N reply R".
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vsi import VSI, split  # noqa: E402

where, npoll, secs, scan = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
host, port = split(where)
stop = threading.Event()
polls = [0]
lock = threading.Lock()


def poller():
    v = VSI(host, port)
    while not stop.is_set():
        v.line("status?;" * 8)
        with lock:
            polls[0] += 8
    v.close()


ts = [threading.Thread(target=poller, daemon=True) for _ in range(npoll)]
for t in ts:
    t.start()
deadline = time.time() + 10
while time.time() < deadline and polls[0] < npoll * 8:
    time.sleep(0.01)
v = VSI(host, port)
time.sleep(secs)
t0 = time.monotonic()
r = v.cmd("record=on:" + scan)
t_on = time.monotonic() - t0
t0 = time.monotonic()
r2 = v.cmd("record=off")
t_off = time.monotonic() - t0
stop.set()
for t in ts:
    t.join(30)
print("record_on_s %.4f record_off_s %.4f polls %d reply %s %s" % (t_on, t_off, polls[0], r, r2))
