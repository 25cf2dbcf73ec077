#!/usr/bin/env python3
"""The NASA Field System's side of a FlexBuff, emulated for recfsd's tests.

MK5CN talks as nvi-inc/fs mk5cn/mk5cn.c does: one persistent TCP
connection; before each command what is left unread is drained (a stray
byte there is error -112 and a reconnect in the FS); each command one
send() of the FS's own string; the reply read into a 1024-byte buffer up
to its newline (read_response: at most 1022 bytes, else -109); the return
code found as mk5cn finds it (the first '=' or '?' before the first ':',
then sscanf "%d"); rc 0 and 1 are success, anything else is -900-rc.

The parsers are ported from the FS's C (not copied: the same field order,
the same m5 decoders' rules):
  scan_check?  clib/scan_check_util.c, m5_2_scan_check (FLEXBUFF: mk5b branch)
  record?      clib/disk_record_util.c, m5_2_disk_record
  disk2file?   clib/disk2file_util.c, m5_2_disk2file
  mode?        clib/mk5b_mode_util.c, m5_2_mk5b_mode (VDIF magic branch)
  status?      clib/mk5_status_util.c, mk5_status_get_status / _get_error
  fb_status    quikv/mk5_status.c, mk5_status (the status?/error? loop)
  m5trim, m5sscanf, m5string_decode, m5time_decode: clib/m5_utils.c
"""
import re
import select
import socket
import time

BUFSIZE = 1024  # mk5cn.c: #define BUFSIZE 1024


class FSError(Exception):
    pass


def m5trim(s):
    return s.strip(" ")


def _state(s):
    """The m5 decoders' known/error from a field: blank, '?', 'value ?'."""
    s = m5trim(s)
    if s == "":
        return s, False, False
    if s == "?":
        return s, False, True
    if len(s) > 2 and s.endswith(" ?"):
        return s[:-2], True, True
    return s, True, False


def m5sscanf_int(s):
    s, known, err = _state(s)
    if not known:
        return None
    m = re.match(r"\s*[-+]?\d+", s)
    if not m:
        raise FSError("m5sscanf %%d failed on %r" % s)
    return int(m.group(0))


def m5sscanf_float(s):
    s, known, err = _state(s)
    if not known:
        return None
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s)
    if not m:
        raise FSError("m5sscanf %%f failed on %r" % s)
    return float(m.group(0))


def m5string_decode(s, size=64):
    s, known, err = _state(s)
    if not known:
        return None
    if len(s) >= size:
        raise FSError("m5string_decode: %r longer than %d" % (s, size - 1))
    return s


def m5time_decode(s):
    """year, day, hour, minute, seconds (floats); -1 where absent."""
    s, known, err = _state(s)
    if not known:
        return None
    for key, pat, names in [("y", r"(-?\d+)y(-?\d+)d(-?\d+)h(-?\d+)m([-+\d.eE]+)s", "ydhms"),
                            ("d", r"(-?\d+)d(-?\d+)h(-?\d+)m([-+\d.eE]+)s", "dhms"),
                            ("h", r"(-?\d+)h(-?\d+)m([-+\d.eE]+)s", "hms"),
                            ("m", r"(-?\d+)m([-+\d.eE]+)s", "ms"),
                            ("s", r"([-+\d.eE]+)s", "s")]:
        if key in s:
            m = re.match(pat, s)
            if not m:
                raise FSError("m5time_decode failed on %r" % s)
            t = dict(y=-1, d=-1, h=-1, m=-1, s=-1.0)
            for n, v in zip(names, m.groups()):
                t[n] = float(v) if n == "s" else int(v)
            return t
    raise FSError("m5time_decode: no unit in %r" % s)


def _fields(reply):
    """What the FS's m5_2_* parsers walk: after the first ':' past '?', up
    to ';', split on ':' (strsep)."""
    q = reply.find("?")
    if q < 0:
        raise FSError("-901: no '?' in %r" % reply)
    c = reply.find(":", q + 1)
    if c < 0:
        return []
    rest = reply[c + 1:]
    semi = rest.find(";")
    if semi >= 0:
        rest = rest[:semi]
    return rest.split(":")


def parse_scan_check(reply):
    """clib/scan_check_util.c, the FLEXBUFF (mk5b) branch: scan, label,
    type, code (tracks x threads), start, length, total (track rate),
    missing, error (jive5ab: the frame size)."""
    f = _fields(reply)
    out = {}
    for i, v in enumerate(f, 1):
        if i == 1:
            out["scan"] = m5sscanf_int(v)
            out["label"] = m5string_decode(v)  # the C falls through to case 2
        elif i == 2:
            out["label"] = m5string_decode(v)
        elif i == 3:
            out["type"] = m5string_decode(v)
            if out["type"] is None:
                break
        elif i == 4:
            out["code"] = m5sscanf_int(v)
        elif i == 5:
            out["start"] = m5time_decode(v)
        elif i == 6:
            out["length"] = m5time_decode(v)
        elif i == 7:
            out["total"] = m5sscanf_float(v)
        elif i == 8:
            out["missing"] = m5sscanf_int(v)
        elif i == 9:
            out["error"] = m5string_decode(v)
        else:
            break
    return out


def parse_record(reply):
    """clib/disk_record_util.c m5_2_disk_record: status, scan, label."""
    f = _fields(reply)
    out = {}
    for i, v in enumerate(f, 1):
        if i == 1:
            out["status"] = m5string_decode(v)
        elif i == 2:
            out["scan"] = m5sscanf_int(v)
        elif i == 3:
            out["label"] = m5string_decode(v)
        else:
            break
    return out


def parse_disk2file(reply):
    """clib/disk2file_util.c m5_2_disk2file: status, destination, start,
    current and end bytes (%Ld), option; later fields ignored."""
    f = _fields(reply)
    out = {}
    keys = [("status", 33), ("destination", 129), ("start", 0), ("current", 0), ("end", 0), ("option", 33)]
    for (k, size), v in zip(keys, f):
        out[k] = m5string_decode(v, size) if size else m5sscanf_int(v)
    return out


def parse_mode(reply):
    """clib/mk5b_mode_util.c m5_2_mk5b_mode, a magic (VDIF_...) source:
    magic, format, tracks, track bit rate (bit/s: mk5b_mode_2_m5 logs it
    over 1e6), frame size."""
    f = _fields(reply)
    out = {}
    for i, v in enumerate(f, 1):
        if i == 1:
            out["magic"] = m5string_decode(v)
        elif i == 2:
            out["format"] = m5string_decode(v)
        elif i == 3:
            out["tracks"] = m5sscanf_int(v)
        elif i == 4:
            out["tbitrate"] = m5sscanf_float(v)
        elif i == 5 and out.get("magic", "") and out["magic"].upper().startswith("VDIF"):
            out["framesize"] = m5sscanf_int(v)
        else:
            break
    return out


def parse_status_word(reply):
    """clib/mk5_status_util.c mk5_status_get_status: after the first ':'
    past '?', a hex number ending at '\\0', ' ' or ':'."""
    q = reply.find("?")
    c = reply.find(":", q + 1) if q >= 0 else -1
    if q < 0 or c < 0:
        raise FSError("EFORMAT_STATUS: %r" % reply)
    m = re.match(r"\s*(0[xX])?([0-9a-fA-F]+)", reply[c + 1:])
    if not m:
        raise FSError("ESTATUSWORD: %r" % reply)
    end = reply[c + 1 + m.end():]
    if end and end[0] not in " :":
        raise FSError("ESTATUSWORD: %r" % reply)
    return int(m.group(2), 16)


def parse_error(reply):
    """mk5_status_get_error: between ':' and ';', colons to commas."""
    q = reply.find("?")
    c = reply.find(":", q + 1) if q >= 0 else -1
    s = reply.find(";", c + 1) if c >= 0 else -1
    if q < 0 or c < 0 or s < 0:
        raise FSError("EFORMAT_ERROR: %r" % reply)
    return re.sub(r" *: *", ",", reply[c + 1:s].strip(" "))


def fb_status(fs, name="fb_status"):
    """quikv/mk5_status.c mk5_status, the FS's fb_status (and mk5_status):
    status? (its reply read into 128 bytes); while bit 0x2 is set and
    fewer than 11 messages were made, error? and status? again.  Returns
    the lines the FS logs and the errors it logs: -302 when more than the
    status was logged, -303 (-304 after a failed exchange) when the error
    bit is still set at the end."""
    lines, errs = [], []
    nmsg, ierr, word = 0, 0, 0
    while True:
        ip2, rc, reply = fs.send("status?\n")
        if ip2 < 0:
            ierr = ip2
            break
        try:
            word = parse_status_word(reply[:127])
        except FSError as e:
            ierr = str(e)
            break
        lines.append("%s/status,0x%08X%s" % (name, word, ",error(s) pending" if word & 0x2 else ""))
        nmsg += 1
        if not word & 0x2 or nmsg >= 11:
            break
        ip2, rc, reply = fs.send("error?\n")
        ierr = ip2
        if ierr == 0:
            try:
                lines.append("%s/error,%s" % (name, parse_error(reply[:511 - len(name) - 7])))
                nmsg += 1
            except FSError as e:
                ierr = str(e)
        if ierr != 0:
            break
    if nmsg > 1:
        errs.append(-302)
    if word & 0x2:
        errs.append(-303 if ierr == 0 else -304)
    return lines, errs


class MK5CN:
    def __init__(self, host, port, timeout=20.0):
        self.addr = (host, int(port))
        self.timeout = timeout
        self.log = []
        self.s = socket.create_connection(self.addr, timeout=timeout)
        self.s.setblocking(False)
        self.first = True

    def _drain(self):
        """drain_input_stream: -112 when the server closed the socket;
        anything else left unread is thrown away (the FS logs nothing)."""
        while True:
            try:
                b = self.s.recv(4096)
            except BlockingIOError:
                return 0
            except OSError:
                return -110
            if not b:
                return -112
            self.log.append(("drained", b))

    def _read_response(self):
        """read_response: byte by byte, at most BUFSIZE - 2, to '\\n'."""
        out = bytearray()
        end = time.monotonic() + self.timeout
        num = BUFSIZE
        while num > 2:
            try:
                c = self.s.recv(1)
            except OSError as e:
                if not isinstance(e, BlockingIOError):
                    return -105, out.decode(errors="replace")
                left = end - time.monotonic()
                if left <= 0:
                    return -104, out.decode(errors="replace")
                select.select([self.s], [], [], left)
                continue
            if not c:
                return -107, out.decode(errors="replace")
            out += c
            num -= 1
            if c == b"\n":
                return 0, out.decode(errors="replace")
        return -109, out.decode(errors="replace")

    def send(self, text):
        """One FS transaction: text exactly as the FS writes it (with its
        own '\\n' and any trailing bytes).  Returns (ip2, rc, reply)."""
        if not self.first:
            e = self._drain()
            if e:
                return e, None, ""
        self.first = False
        self.s.sendall(text.encode())
        ip2, reply = self._read_response()
        self.log.append((text, reply))
        if ip2:
            self.s.close()
            return ip2, None, reply
        colon = reply.find(":")
        p = -1
        for ch in "=? ":
            p = reply.find(ch)
            if p >= 0 and not (colon >= 0 and p > colon):
                break
            p = -1
        m = re.match(r"\s*([-+]?\d+)", reply[p + 1:]) if p >= 0 else None
        if not m:
            return -899, None, reply
        rc = int(m.group(1))
        return (0 if rc in (0, 1) else -900 - rc), rc, reply

    def close(self):
        self.s.close()


class Checks:
    """The tests' assertions over one MK5CN connection: ok() prints an
    'ok:' or 'FAILED:' line (tests/run.sh counts them through the shell's
    check on the exit status), txn() is one FS transaction expecting an rc,
    and with it the ip[2] mk5cn reports (0, or -900-rc), unless ip names
    another; done() exits 1 when anything failed."""

    def __init__(self, fs):
        self.fs = fs
        self.fails = []

    def ok(self, desc, cond, info=""):
        print(("ok: " if cond else "FAILED: ") + desc + (" (%s)" % (info,) if info != "" and not cond else ""))
        if not cond:
            self.fails.append(desc)
        return cond

    def txn(self, text, want_rc, desc, ip=None):
        ip2, rc, reply = self.fs.send(text)
        want_ip = ip if ip is not None else (0 if want_rc in (0, 1) else -900 - want_rc)
        self.ok("%s: rc %s" % (desc, want_rc), rc == want_rc and ip2 == want_ip,
                "ip2 %s rc %s reply %r" % (ip2, rc, reply))
        return reply

    def d2f_done(self, desc, query="disk2file?\n", secs=20.0):
        """disk2file? until the copy is inactive (each reply checked for
        rc 0); the last reply"""
        end = time.monotonic() + secs
        while True:
            r = self.txn(query, 0, desc)
            if "inactive" in r or time.monotonic() > end:
                return r
            time.sleep(0.01)

    def done(self):
        raise SystemExit(1 if self.fails else 0)
