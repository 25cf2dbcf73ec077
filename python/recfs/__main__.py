# SPDX-License-Identifier: MIT
"""python -m recfs ls|cat|info|verify PACK: the admin tool's read side, in Python."""
import argparse
import json
import os
import sys

from .format import Error, fmt_size, sdecode
from .pack import Pack

PROG = "recfs"


def _die(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    return 1


def _out_name(b):
    out = sys.stdout.buffer
    out.write(b"".join(b"\\%03o" % c if c < 0x20 or c == 0x7F or c == 0x5C else bytes([c])
                       for c in b))


def _bytes_arg(s, what):
    mul = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = s
    k = 1
    i = len(t)
    while i and not t[i - 1].isdigit():
        i -= 1
    num, sfx = t[:i], t[i:]
    if sfx:
        if sfx[0].lower() not in mul or sfx[1:] not in ("", "i", "B", "b", "iB", "ib"):
            raise Error(22, "%s '%s': not a number" % (what, s))
        k = mul[sfx[0].lower()]
    if not num or not num.isascii() or not num.isdigit():
        raise Error(22, "%s '%s': not a number" % (what, s))
    v = int(num) * k
    if v >= 1 << 64:
        raise Error(34, "%s '%s': too large" % (what, s))
    return v


def _check_output(spec):
    """refuse to write over a member of the pack (recfs cat > /dev/sdb)"""
    import stat
    from .pack import _same_storage, split_spec
    try:
        out = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return
    if not stat.S_ISREG(out.st_mode) and not stat.S_ISBLK(out.st_mode):
        return
    for m in split_spec(spec):
        try:
            if _same_storage(out, os.stat(m)):
                raise Error(17, "standard output (redirected) is member %s of the pack: "
                            "refusing to write over it" % m)
        except FileNotFoundError:
            pass


def cmd_ls(a):
    _check_output(a.pack)
    p = Pack(a.pack)
    for w in p.dup_uid_warnings():
        sys.stderr.write("%s: %s\n" % (PROG, w))
    recs = p.ls(reload=False)
    if a.json:
        sys.stdout.write(json.dumps(recs, indent=None).replace("}, {", "},\n {") + "\n")
        return 0
    out = sys.stdout.buffer
    if a.long:
        out.write(("%-24s %14s %-9s %-24s %-24s %10s %6s %10s %10s\n" % (
            "NAME", "SIZE", "STATE", "START", "END", "MB/s", "FORMAT", "LOST", "DROPPED")).encode())
    for e, r in zip(p.entries(), recs):
        _out_name(e.name)
        if a.long:
            pad = 24 - len(e.name) if len(e.name) < 24 else 0
            out.write(("%s %14d %-9s %-24s %-24s %10.2f %6s %10d %10d\n" % (
                " " * pad, r["size"], r["state"], r["start"], r["end"],
                (r["size"] / ((e.end_ns - e.start_ns) / 1e9) if e.end_ns > e.start_ns else 0.0) / 1e6, r["format"], r["frames_lost"], r["dropped"])).encode())
            for g in r["gaps"]:
                out.write(("    gap at byte %d: %d frames lost (thread %d)\n"
                           % (g["offset"], g["frames"], g["thread"])).encode())
            if r["gaps_coalesced"]:
                out.write(b"    (more gaps than fit: nearby gaps merged)\n")
        else:
            out.write(b"\n")
    return 0


def cmd_info(a):
    p = Pack(a.pack, degraded=True)
    i = p.info()
    print("label:          %s" % i["label"])
    print("uuid:           %s" % i["uuid"])
    print("created:        %s" % i["created"])
    print("format:         v%d (compat 0x%x, incompat 0x%x)" % (i["version"], i["compat"], i["incompat"]))
    print("members:        %d (%d present)" % (len(i["members"]), i["members_present"]))
    for m in i["members"]:
        print("  %2d  %-8s %s  %s" % (m["index"], m["state"], m["uuid"], m["path"] or "-"))
    for path, why in i["left_out"]:
        print("left out:       %s: %s" % (path, why))
    print("chunk size:     %s" % fmt_size(i["chunk_size"]))
    print("capacity:       %s (%d bytes)" % (fmt_size(i["capacity"]), i["capacity"]))
    print("used:           %s (%.1f%%)" % (fmt_size(i["used"]),
                                           100.0 * i["used"] / i["capacity"] if i["capacity"] else 0))
    print("free:           %s" % fmt_size(i["free"]))
    print("largest free:   %s" % fmt_size(i["largest_free"]))
    print("recordings:     %d (room for %d)" % (i["recordings"], i["dir_capacity"]))
    if i["bad_entries"]:
        print("warning:        %d damaged directory entries skipped: run fsck.recfs" % i["bad_entries"])
    if i["members_present"] != len(i["members"]):
        print("warning:        pack is degraded: data on missing or damaged members is unreadable")
    return 0


def cmd_cat(a):
    off = _bytes_arg(a.offset, "--offset") if a.offset is not None else 0
    length = _bytes_arg(a.length, "--length") if a.length is not None else None
    _check_output(a.pack)
    p = Pack(a.pack)
    raw = p.open(a.name, verify=not a.no_verify, buffering=0)
    if off > raw.size:
        raise Error(22, "--offset %d is past the end of '%s' (%d bytes)" % (off, raw.name, raw.size))
    raw.seek(off)
    out = sys.stdout.buffer
    left = raw.size - off if length is None else min(length, raw.size - off)
    step = max(p.geom.chunk_size, 4 << 20)
    buf = bytearray(step)
    try:
        while left:
            n = raw.readinto(memoryview(buf)[:min(step, left)])
            if not n:
                break
            out.write(memoryview(buf)[:n])
            left -= n
        out.flush()
    except BrokenPipeError:
        try:
            sys.stdout = None
        finally:
            return 0
    return 0


def cmd_verify(a):
    """read every (or each named) recording whole, checking every chunk"""
    p = Pack(a.pack)
    names = [os.fsencode(n) for n in a.names] if a.names else [e.name for e in p.entries()]
    bad = 0
    for n in names:
        f = p.open(n, buffering=0)
        total = 0
        buf = bytearray(max(p.geom.chunk_size, 4 << 20))
        while True:
            try:
                k = f.readinto(buf)
            except Error as e:
                sys.stderr.write("%s: %s\n" % (PROG, e.msg))
                bad += 1
                # go on after the bad chunk
                cs = p.geom.chunk_size
                f.seek((f.tell() // cs + 1) * cs)
                continue
            if not k:
                break
            total += k
        if not a.quiet:
            sys.stdout.buffer.write(b"%s: %d bytes verified\n" % (n, total))
    if bad:
        return _die("%d chunk%s failed verification" % (bad, "" if bad == 1 else "s"))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m recfs",
                                 description="Read a recfs pack (members comma-separated, any order).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ls", help="list recordings")
    s.add_argument("-l", "--long", action="store_true")
    s.add_argument("--json", action="store_true")
    s.add_argument("pack")
    s = sub.add_parser("info", help="the pack: members, geometry, space")
    s.add_argument("pack")
    s = sub.add_parser("cat", help="write a recording to standard output")
    s.add_argument("--offset")
    s.add_argument("--length")
    s.add_argument("--no-verify", action="store_true")
    s.add_argument("pack")
    s.add_argument("name", type=os.fsencode)
    s = sub.add_parser("verify", help="read recordings whole, checking every chunk")
    s.add_argument("-q", "--quiet", action="store_true")
    s.add_argument("pack")
    s.add_argument("names", nargs="*")
    a = ap.parse_args(argv)
    try:
        return {"ls": cmd_ls, "info": cmd_info, "cat": cmd_cat, "verify": cmd_verify}[a.cmd](a)
    except Error as e:
        return _die(e.msg)
    except OSError as e:
        return _die(str(e))


if __name__ == "__main__":
    sys.exit(main())
