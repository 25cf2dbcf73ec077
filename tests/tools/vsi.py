#!/usr/bin/env python3
"""A small VSI-S client for recfsd's tests: send statements, read the
reply lines.  Usage as a module (VSI(host, port).cmd("record?")) or as a
script: vsi.py HOST:PORT 'stmt' ['stmt' ...] prints one reply per line."""
import socket
import sys


class VSI:
    def __init__(self, host, port, timeout=20.0):
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        self.f = self.s.makefile("rb")

    def line(self, text):
        """Send one line (several statements allowed); return the reply line."""
        self.s.sendall(text.encode() + b"\n")
        r = self.f.readline()
        if not r:
            raise EOFError("recfsd closed the connection")
        return r.decode().rstrip("\r\n")

    def cmd(self, stmt):
        if not stmt.rstrip().endswith(";"):
            stmt += ";"
        return self.line(stmt)

    def close(self):
        self.f.close()
        self.s.close()


def split(where):
    host, _, port = where.rpartition(":")
    return host or "127.0.0.1", int(port)


if __name__ == "__main__":
    v = VSI(*split(sys.argv[1]))
    for a in sys.argv[2:]:
        print(v.cmd(a))
