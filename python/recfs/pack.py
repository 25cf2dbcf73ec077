# SPDX-License-Identifier: MIT
"""Pack assembly (FORMAT.md 3), the bitmap (4) and the directory (5)."""
import errno
import mmap
import os
import stat
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from .format import (BLOCK, ENTRY_SIZE, ENT_MAGIC, MAX_MEMBERS, SLOT_SIZE, STATE_FREE,
                     STATE_NAMES, STATE_RECORDING, U64_MAX, Error, ChecksumError, Super,
                     bitmap_decode, chunk_csum, entry_decode, entry_magic_seq, fmt_time,
                     pack_seed, sdecode, text, uuid_str)


_PREADV = hasattr(os, "preadv")
if hasattr(os, "pread"):
    def _pread(m, n, off):
        return os.pread(m.fd, n, off)
else:  # Windows: no positioned read; one reader per member at a time
    def _pread(m, n, off):
        with m.lock:
            os.lseek(m.fd, off, os.SEEK_SET)
            return os.read(m.fd, n)


def _strerror(e):
    return os.strerror(e.errno) if e.errno else str(e)


def split_spec(spec):
    """a PACK argument or a sequence of paths -> list of str paths"""
    if isinstance(spec, (str, bytes, os.PathLike)):
        s = os.fsdecode(spec)
        if not s:
            raise Error(errno.EINVAL, "empty pack: give member paths separated by commas")
        paths = s.split(",")
        if any(p == "" for p in paths):
            raise Error(errno.EINVAL, "pack '%s': empty member path" % s)
        if len(paths) > MAX_MEMBERS:
            raise Error(errno.E2BIG, "pack '%s': more than %d members" % (s, MAX_MEMBERS))
        return paths
    paths = [os.fsdecode(p) for p in spec]
    if not paths:
        raise Error(errno.EINVAL, "empty pack: give member paths separated by commas")
    if any(p == "" for p in paths):
        raise Error(errno.EINVAL, "pack '%s': empty member path" % ",".join(paths))
    if len(paths) > MAX_MEMBERS:
        raise Error(errno.E2BIG, "pack '%s': more than %d members" % (",".join(paths), MAX_MEMBERS))
    return paths


def _whole_disk(rdev):
    base = "/sys/dev/block/%d:%d" % (os.major(rdev), os.minor(rdev))
    if not os.path.exists(base + "/partition"):
        return rdev
    try:
        with open(base + "/../dev") as f:
            ma, mi = f.read().strip().split(":")
        return os.makedev(int(ma), int(mi))
    except (OSError, ValueError):
        return rdev


def _same_storage(a, b):
    if stat.S_ISBLK(a.st_mode) and stat.S_ISBLK(b.st_mode):
        return (a.st_rdev == b.st_rdev or _whole_disk(a.st_rdev) == b.st_rdev
                or a.st_rdev == _whole_disk(b.st_rdev))
    return (not stat.S_ISBLK(a.st_mode) and not stat.S_ISBLK(b.st_mode)
            and a.st_dev == b.st_dev and a.st_ino == b.st_ino)


def _paths_distinct(paths):
    """None, or (errno, message) of the first problem, as the C tools check"""
    st = []
    for i, p in enumerate(paths):
        try:
            st.append(os.stat(p))
        except OSError as e:
            return e.errno, "%s: %s" % (p, _strerror(e))
        for j in range(i):
            if paths[i] == paths[j]:
                return errno.EINVAL, "%s is named twice" % p
            if _same_storage(st[i], st[j]):
                return errno.EINVAL, "%s and %s are the same member" % (paths[j], p)
    return None


class Member:
    """One open member: a path, a descriptor, a size."""

    def __init__(self, path, direct=True):
        self.path = path
        try:
            st = os.stat(path)
        except OSError as e:
            raise Error(e.errno, "%s: %s" % (path, _strerror(e))) from None
        if not stat.S_ISBLK(st.st_mode) and not stat.S_ISREG(st.st_mode):
            raise Error(errno.ENOTBLK, "%s: not a block device or regular file" % path)
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        self.direct = False
        try:
            if direct and hasattr(os, "O_DIRECT"):
                try:
                    self.fd = os.open(path, flags | os.O_DIRECT)
                    self.direct = True
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        raise
            if not self.direct:
                self.fd = os.open(path, flags)
        except OSError as e:
            raise Error(e.errno, "%s: %s" % (path, _strerror(e))) from None
        self.st = st
        self.lock = threading.Lock()
        self.blkdev = stat.S_ISBLK(st.st_mode)
        self.size = os.lseek(self.fd, 0, os.SEEK_END) if self.blkdev else st.st_size
        if hasattr(os, "posix_fadvise") and not self.direct:
            try:
                os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass

    def pread(self, n, off, buf=None):
        """exactly n bytes at off (n and off 4096-aligned when direct), into
        buf (a page-aligned mmap of at least n bytes) when given"""
        if buf is not None or self.direct:
            # page-aligned memory, as O_DIRECT wants; handed on without a copy
            buf = memoryview(buf if buf is not None else mmap.mmap(-1, max(n, BLOCK)))
            got = 0
            while got < n:
                r = os.preadv(self.fd, [buf[got:n]], off + got)
                if r <= 0:
                    break
                got += r
            data = buf[:got]
        else:
            data = _pread(self, n, off)
            while 0 < len(data) < n:
                more = _pread(self, n - len(data), off + len(data))
                if not more:
                    break
                data += more
        if len(data) != n:
            raise OSError(errno.EIO, "%s: read at %d: beyond the end" % (self.path, off + len(data)))
        return data

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Pack:
    """A recfs pack, assembled read-only from its members in any order.

    members: "m0.img,m1.img" or a sequence of paths.  degraded: tolerate
    missing members and leave damaged ones out (reads of their chunks fail).
    workers: threads fetching chunks (default: two per member, at least 4).
    direct: read with O_DIRECT where the system and the file system have it
    (Linux; elsewhere, or where it is refused, through the page cache, which
    direct=False asks for).  Reading around the page cache is what keeps a
    sequential read at the members' speed at the least CPU.
    """

    def __init__(self, members, degraded=False, workers=None, direct=True):
        self.degraded = degraded
        self.left_out = []      # (path, why, member index or -1)
        self._m = []
        self._lock = threading.Lock()
        self._pool = None
        paths = split_spec(members)
        self.spec = ",".join(paths)
        bad = _paths_distinct(paths)
        if bad and (bad[0] == errno.EINVAL or not degraded):
            raise Error(*bad)
        devs, why = [], {}
        try:
            for p in paths:
                try:
                    devs.append(Member(p, direct))
                except Error as e:
                    if degraded and e.errno in (errno.ENOENT, errno.ENXIO, errno.EIO):
                        why[p] = e.msg[len(p) + 2:] if e.msg.startswith(p + ": ") else e.msg
                        continue
                    raise
            if not devs and why:
                p = next(iter(why))
                raise Error(errno.ENOENT, "%s: %s" % (p, why[p]))
            self._assemble(devs)
            devs = []
            for p in paths:
                if p in why:
                    self.left_out.append((p, why[p], -1))
            self.load()
        except BaseException:
            for d in devs:
                d.close()
            self.close()
            raise
        nw = workers or max(4, 2 * self.geom.members)
        self._free, self._nbufs = [], nw + max(1, (32 << 20) // self.geom.chunk_size)
        self._pool = ThreadPoolExecutor(nw, thread_name_prefix="recfs")

    # -------------------------------------------------------------- assembly
    def _assemble(self, devs):
        """FORMAT.md 3, Assembly: nothing decided or named depends on the
        order the members are given in"""
        n = len(devs)
        sbs = [None] * n
        known = 0
        for i, d in enumerate(devs):
            try:
                sbs[i] = self._read_super(d, 0)
                if not known:
                    known = sbs[i].member_size
            except Error:
                pass
        # backups: at member_size from a valid primary, else at the device's
        # end (then, with the member_size found there, again)
        tried = [None] * n
        for pas in range(2):
            found = 0
            for i, d in enumerate(devs):
                if sbs[i]:
                    continue
                boff = (known if known else d.size // BLOCK * BLOCK) - BLOCK
                if pas and boff == tried[i]:
                    continue
                tried[i] = boff
                try:
                    sbs[i] = self._read_super(d, boff)
                    if not found:
                        found = sbs[i].member_size
                except Error:
                    pass
            if known or not found:
                break
            known = found
        first_bad = None
        for i, d in enumerate(devs):
            if sbs[i]:
                continue
            why1 = why2 = ""
            try:
                self._read_super(d, 0)
            except Error as e:
                why1 = e.msg
            try:
                self._read_super(d, tried[i])
            except Error as e:
                why2 = e.msg
            bad = "not a recfs member: primary superblock: %s; backup: %s" % (why1, why2)
            first_bad = "%s: %s" % (d.path, bad)
            if not self.degraded:
                raise Error(errno.EUCLEAN, first_bad)
            self.left_out.append((d.path, bad, -1))
        # valid superblocks by member index, then pack UUID, then as given
        ord_ = sorted((i for i in range(n) if sbs[i]),
                      key=lambda i: (sbs[i].member_index, sbs[i].pack_uuid, i))
        if not ord_:
            raise Error(errno.EUCLEAN, first_bad)
        ref = self._majority(devs, sbs, ord_, True, None)
        ref = self._majority(devs, sbs, ord_, False, ref)
        sb = self.sb = sbs[ref]
        self.geom = sb.geom
        for i in ord_:
            s, d = sbs[i], devs[i]
            if s.pack_uuid != sb.pack_uuid:
                raise Error(errno.EXDEV, "%s: member of another pack (%s, label '%s'), not of pack %s"
                            % (d.path, uuid_str(s.pack_uuid), sdecode(s.label), uuid_str(sb.pack_uuid)))
            f = s.diff(sb)
            if f:
                raise Error(errno.EUCLEAN, "%s: inconsistent member: superblock field %s differs "
                            "from the pack's (%s)" % (d.path, f, devs[ref].path))
        self._m = [None] * sb.member_count
        self.present = 0
        for i in ord_:
            s, d = sbs[i], devs[i]
            if self._m[s.member_index]:
                a, b = sorted([self._m[s.member_index].path, d.path], key=os.fsencode)
                raise Error(errno.EINVAL, "%s and %s are both member %d of the pack"
                            % (a, b, s.member_index))
            if d.size < sb.member_size:
                w = ("device is %d bytes, smaller than the pack's member size %d (truncated?)"
                     % (d.size, sb.member_size))
                if not self.degraded:
                    raise Error(errno.EUCLEAN, "%s: %s" % (d.path, w))
                self.left_out.append((d.path, w, s.member_index))
                continue
            self._m[s.member_index] = d
            self.present += 1
        for i in range(n):
            if devs[i] not in self._m:
                devs[i].close()
        if self.present == 0:
            p, w, _ = self.left_out[0]
            raise Error(errno.EUCLEAN, "%s: %s" % (p, w))
        for i in range(sb.member_count):
            if not self._m[i] and not self.degraded:
                raise Error(errno.ENXIO, "pack '%s' has %d members: member %d (UUID %s) is missing"
                            % (sdecode(sb.label), sb.member_count, i, uuid_str(sb.member_uuids[i])))
        self.seed = pack_seed(sb.pack_uuid)
        self.label = sdecode(sb.label)
        self.uuid = uuid_str(sb.pack_uuid)

    @staticmethod
    def _majority(devs, sbs, ord_, by_uuid, ref):
        """the pack_uuid (by_uuid) or, among ref's pack, the whole superblock
        most members carry: its first member in ord_; a tie is refused"""
        same = ((lambda a, b: a.pack_uuid == b.pack_uuid) if by_uuid
                else (lambda a, b: a.diff(b) is None))
        cnt, best, b = {}, 0, None
        for x in ord_:
            if not by_uuid and sbs[x].pack_uuid != sbs[ref].pack_uuid:
                continue
            cnt[x] = sum(1 for y in ord_ if same(sbs[x], sbs[y]))
            if cnt[x] > best:
                best, b = cnt[x], x
        for x in ord_:
            if cnt.get(x) != best or same(sbs[x], sbs[b]):
                continue
            if by_uuid:
                raise Error(errno.EXDEV, "%s and %s are members of different packs (%s, %s), "
                            "each given with as many members: give one pack's members only"
                            % (devs[b].path, devs[x].path, uuid_str(sbs[b].pack_uuid),
                               uuid_str(sbs[x].pack_uuid)))
            raise Error(errno.EUCLEAN, "%s and %s: inconsistent members: superblock field %s "
                        "differs, and as many members agree with each"
                        % (devs[b].path, devs[x].path, sbs[b].diff(sbs[x])))
        return b

    @staticmethod
    def _read_super(d, off):
        if off < 0 or off + BLOCK > d.size:
            raise Error(errno.EUCLEAN, "beyond the end of the device")
        try:
            blk = d.pread(BLOCK, off)
        except OSError as e:
            raise Error(e.errno or errno.EIO, "%s: read at %d: %s" % (d.path, off, _strerror(e))) from None
        return Super(blk)

    def _members(self, first=0):
        """present members, starting at `first`"""
        n = len(self._m)
        for k in range(n):
            d = self._m[(first + k) % n]
            if d:
                yield (first + k) % n, d

    def _meta_read(self, n, off, first=0):
        err = None
        for _, d in self._members(first):
            try:
                return d.pread(n, off)
            except OSError as e:
                err = e
        raise Error(errno.EIO, str(err) if err else "no member of the pack is readable")

    # -------------------------------------------------------------- metadata
    def load(self):
        """(Re)read the bitmap and the directory: what a new `recfs` command sees."""
        g = self.geom
        # bitmap: the valid copy with the highest seq on any member (FORMAT.md 4)
        cands = []
        for m, d in self._members():
            for c in range(2):
                try:
                    h = d.pread(BLOCK, g.bitmap_off + c * g.bitmap_copy_size)
                except OSError:
                    continue
                if int.from_bytes(h[0:4], "little") == 0x504D4252:
                    cands.append((int.from_bytes(h[8:16], "little"), m, c))
        bits, hwm, bseq = None, g.dir_capacity, 0
        for seq, m, c in sorted(cands, key=lambda x: -x[0]):
            try:
                copy = self._m[m].pread(g.bitmap_copy_size, g.bitmap_off + c * g.bitmap_copy_size)
            except OSError:
                continue
            h = bitmap_decode(copy, self.seed)
            if h and h[2] == g.rows and h[0] == c and h[1] & 1 == c and h[3] <= g.dir_capacity:
                bits, bseq, hwm = bytearray(copy[BLOCK:BLOCK + (g.rows + 7) // 8]), h[1], h[3]
                break
        if bits is None:
            bits = bytearray((g.rows + 7) // 8)
        self.bitmap_seq = bseq
        self.dir_hwm = hwm
        # directory: every entry below dir_hwm, newest valid slot over all members
        best = [None] * hwm
        per = 2048
        for first in range(0, hwm, per):
            n = min(per, hwm - first)
            off = g.dir_off + first * 2 * ENTRY_SIZE
            ln = (n * 2 * ENTRY_SIZE + BLOCK - 1) // BLOCK * BLOCK
            readable, err = 0, None
            for m, d in self._members():
                try:
                    buf = memoryview(d.pread(ln, off))
                except OSError as e:
                    err = e
                    continue
                readable += 1
                for k in range(n):
                    for sl in range(2):
                        slot = buf[(2 * k + sl) * ENTRY_SIZE:(2 * k + sl + 1) * ENTRY_SIZE]
                        magic, seq = entry_magic_seq(slot)
                        b = best[first + k]
                        if magic != ENT_MAGIC or seq & 1 != sl or (b and seq <= b.seq):
                            continue
                        e = entry_decode(slot, self.seed, first + k)
                        if e:
                            best[first + k] = e
            if not readable:
                raise Error(errno.EIO, "directory entries %d-%d unreadable on every member: %s"
                            % (first, first + n - 1, err))
        live, bad, names = {}, {}, {}
        for i, e in enumerate(best):
            if not e or e.state == STATE_FREE:
                continue
            if self._extent_ok(e) and e.name not in names:
                live[i] = e
                names[e.name] = i
            else:
                bad[i] = e
        # live entries sharing a uid are all set aside
        byuid = {}
        for i, e in live.items():
            byuid.setdefault(e.uid, []).append(i)
        self.dup_uids = []
        for uid, idx in byuid.items():
            if len(idx) > 1:
                for i in idx:
                    bad[i] = live.pop(i)
                    del names[bad[i].name]
                self.dup_uids.append(sorted(idx))
        self._live, self._bad, self._names = live, bad, names
        # rows in use: the bitmap or any entry's extent (FORMAT.md 4)
        for e in list(live.values()) + list(bad.values()):
            if e.ext_start >= g.capacity:
                continue
            ln = min(e.alloc_len, g.capacity - e.ext_start)
            for r in range(e.ext_start // g.row_bytes,
                           min((e.ext_start + ln + g.row_bytes - 1) // g.row_bytes, g.rows)):
                bits[r >> 3] |= 1 << (r & 7)
        self._bits = bits

    def _extent_ok(self, e):
        g = self.geom
        if e.ext_start % g.row_bytes or e.alloc_len % g.row_bytes:
            return False
        if e.ext_start > g.capacity or e.alloc_len > g.capacity - e.ext_start:
            return False
        if e.committed_len > e.alloc_len:
            return False
        return not (e.state == STATE_RECORDING and e.alloc_len == 0)

    def _entry_read(self, i):
        """entry i's newest valid slot over all members, now"""
        g = self.geom
        off = g.dir_off + i * 2 * ENTRY_SIZE
        boff = off // BLOCK * BLOCK
        best = None
        for _, d in self._members():
            try:
                blk = d.pread(BLOCK, boff)
            except OSError:
                continue
            for sl in range(2):
                s = memoryview(blk)[off - boff + sl * ENTRY_SIZE:off - boff + (sl + 1) * ENTRY_SIZE]
                e = entry_decode(s, self.seed, i)
                if e and e.seq & 1 == sl and (not best or e.seq > best.seq):
                    best = e
        return best

    # -------------------------------------------------------------- queries
    def _dup_uid_msg(self, name):
        for idx in self.dup_uids:
            for i in idx:
                if self._bad[i].name == name:
                    a, b = (self._bad[idx[0]], self._bad[i]) if i != idx[0] else (self._bad[i], self._bad[idx[1]])
                    if a.index > b.index:
                        a, b = b, a
                    return ("recordings '%s' (entry %d) and '%s' (entry %d) have the same uid "
                            "%016x: both are refused until fsck.recfs repairs the directory"
                            % (sdecode(a.name), a.index, sdecode(b.name), b.index, a.uid))
        return None

    def dup_uid_warnings(self):
        """the lines `recfs ls` prints on standard error for entries sharing a uid"""
        out = []
        for idx in self.dup_uids:
            a = self._bad[idx[0]]
            for i in idx[1:]:
                b = self._bad[i]
                out.append((i, "warning: recordings '%s' (entry %d) and '%s' (entry %d) have the same "
                           "uid %016x: both are hidden until fsck.recfs repairs the directory"
                           % (sdecode(a.name), a.index, sdecode(b.name), b.index, a.uid)))
        return [line for _, line in sorted(out)]

    def _lookup(self, name):
        if isinstance(name, dict):
            name = bytes.fromhex(name["name_hex"]) if "name_hex" in name else name["name"]
        if isinstance(name, str):
            name = os.fsencode(name)
        i = self._names.get(bytes(name))
        if i is None:
            msg = self._dup_uid_msg(bytes(name))
            if msg:
                raise Error(errno.EUCLEAN, msg)
            raise Error(errno.ENOENT, "no recording named '%s'" % sdecode(name))
        return self._live[i]

    def entries(self):
        """live entries in directory order (what `recfs ls` walks)"""
        return [self._live[i] for i in sorted(self._live)]

    @staticmethod
    def entry_dict(e):
        """an entry as one object of `recfs ls --json`"""
        d = {}
        d["name"], h = text(e.name)
        if h is not None:
            d["name_hex"] = h
        rate = 0.0
        if e.end_ns > e.start_ns:
            rate = float(e.committed_len) / (float(e.end_ns - e.start_ns) / 1e9)
        d.update({"size": e.committed_len, "state": STATE_NAMES.get(e.state, "free"),
                  "start": fmt_time(e.start_ns), "end": fmt_time(e.end_ns),
                  "start_ns": e.start_ns, "end_ns": e.end_ns,
                  "rate_bytes_per_s": int("%.0f" % rate), "uid": "%016x" % e.uid,
                  "format": {0: "raw", 1: "vdif"}.get(e.format, "unknown"),
                  "frame_size": e.frame_size})
        d["source"], h = text(e.source)
        if h is not None:
            d["source_hex"] = h
        d.update({"allocated": e.alloc_len, "packets": e.packets, "wrong_size": e.wrong_size,
                  "dropped": e.dropped, "frames_lost": e.frames_lost,
                  "out_of_order": e.out_of_order, "invalid": e.invalid,
                  "gaps_coalesced": bool(e.gap_flags & 1),
                  "gaps": [{"offset": o, "frames": f, "thread": t} for o, f, t in e.gaps]})
        return d

    def ls(self, reload=True):
        """The recordings, as `recfs ls --json` lists them (list of dicts, same keys and values).
        Re-reads the directory first unless reload=False."""
        if reload:
            with self._lock:
                self.load()
        return [self.entry_dict(e) for e in self.entries()]

    def info(self):
        """The pack as `recfs info` shows it (a dict)."""
        g = self.geom
        free = largest = run = 0
        for r in range(g.rows):
            if self._bits[r >> 3] >> (r & 7) & 1:
                run = 0
            else:
                run += 1
                free += 1
                largest = max(largest, run)
        members = []
        for i in range(g.members):
            d = self._m[i]
            st = "ok" if d else "MISSING"
            path = d.path if d else None
            for p, w, m in self.left_out:
                if m == i:
                    st, path = "DAMAGED", p
            members.append({"index": i, "state": st, "uuid": uuid_str(self.sb.member_uuids[i]),
                            "path": path})
        return {"label": self.label, "uuid": self.uuid, "created_ns": self.sb.created_ns,
                "created": fmt_time(self.sb.created_ns), "version": self.sb.version,
                "compat": self.sb.compat, "incompat": self.sb.incompat,
                "members": members, "members_present": self.present,
                "left_out": [(p, w) for p, w, _ in self.left_out],
                "chunk_size": g.chunk_size, "capacity": g.capacity,
                "used": g.capacity - free * g.row_bytes, "free": free * g.row_bytes,
                "largest_free": largest * g.row_bytes, "recordings": len(self._live),
                "dir_capacity": g.dir_capacity, "bad_entries": len(self._bad)}

    def open(self, name, verify=True, buffering=-1, readahead=None):
        """A seekable read-only binary file object over a recording: io.BufferedReader,
        or with buffering=0 the raw file (RecordingFile: readinto straight into the
        caller's buffer), as the built-in open.  The recording's entry is re-read
        now: a recording being written reads up to what it had committed at this call."""
        from .reader import RecordingFile
        import io
        with self._lock:
            e = self._lookup(name)
            n = self._entry_read(e.index)
            if n is None or n.state == STATE_FREE or n.uid != e.uid:
                raise Error(errno.ENOENT, "recording '%s' is gone" % sdecode(e.name))
            if not self._extent_ok(n):
                raise Error(errno.EUCLEAN, "recording '%s': entry is inconsistent" % sdecode(e.name))
            if n.seq >= e.seq:
                e = n
                self._live[e.index] = e
        raw = RecordingFile(self, e, verify=verify, readahead=readahead)
        if buffering == 0:
            return raw
        return io.BufferedReader(raw, buffering if buffering > 1 else min(self.geom.chunk_size, 1 << 20))

    # -------------------------------------------------------------- data
    def _slots(self, e, first, n, member=0):
        """(csum, len) of the recording's chunk slots [first, first+n) from the first
        readable member at or after `member`"""
        g = self.geom
        off = g.csum_off + (e.ext_start // g.chunk_size + first) * SLOT_SIZE
        boff = off // BLOCK * BLOCK
        bend = (off + n * SLOT_SIZE + BLOCK - 1) // BLOCK * BLOCK
        buf = self._meta_read(bend - boff, boff, member)
        o = off - boff
        return [(int.from_bytes(buf[o + 16 * k:o + 16 * k + 8], "little"),
                 int.from_bytes(buf[o + 16 * k + 8:o + 16 * k + 12], "little")) for k in range(n)]

    def _fetch(self, e, c, verify, slot=None):
        """the committed bytes of the recording's chunk c, checked if asked"""
        g = self.geom
        cs = g.chunk_size
        clen = min(cs, e.committed_len - c * cs)
        m, moff = g.map(e.ext_start + c * cs)
        d = self._m[m]
        name = sdecode(e.name)
        if not d:
            raise Error(errno.EIO, "'%s': bytes %d-%d are on missing member %d"
                        % (name, c * cs, c * cs + clen - 1, m))
        buf = self._buf_get() if _PREADV else None
        try:
            data = d.pread((clen + BLOCK - 1) // BLOCK * BLOCK, moff, buf)
        except OSError:
            self.buf_put(buf)
            raise Error(errno.EIO, "'%s': bytes %d-%d: read from member %d (%s) failed"
                        % (name, c * cs, c * cs + clen - 1, m, d.path)) from None
        if len(data) != clen:
            data = data[:clen]
        if verify:
            try:
                self._check(e, c, data, slot)
            except BaseException:
                del data
                self.buf_put(buf)
                raise
        return data

    # chunk buffers: page-aligned, reused (a fresh mapping per chunk costs
    # the kernel's zeroing and page faults, more than the checksum)
    def _buf_get(self):
        with self._lock:
            if self._free:
                return self._free.pop()
        return mmap.mmap(-1, self.geom.chunk_size)

    def buf_put(self, data):
        """give back the buffer under a chunk a reader has copied out"""
        b = data.obj if isinstance(data, memoryview) else data
        if not isinstance(b, mmap.mmap) or len(b) != self.geom.chunk_size:
            return
        with self._lock:
            if len(self._free) < 4 * self._nbufs:
                self._free.append(b)

    def _check(self, e, c, data, hint=None):
        """FORMAT.md 6: a full chunk matches its table slot (any member's replica),
        the partial last chunk the entry's tail_csum"""
        cs = self.geom.chunk_size
        full = c < e.committed_len // cs
        if not full:
            if chunk_csum(e.uid, c, data) == e.tail_csum:
                return
        else:
            h = None
            compared, err = False, None
            tries = [hint] if hint else []
            tries += [None] * self.geom.members
            k = -1 if hint else 0
            for t in tries:
                s = t
                if s is None:
                    try:
                        s = self._slots(e, c, 1, k)[0]
                    except Error as x:
                        err = x
                        k += 1
                        continue
                k += 1
                if s[1] != cs:
                    err = Error(errno.EUCLEAN, "'%s': checksum slot of chunk %d is damaged"
                                % (sdecode(e.name), c))
                    continue
                compared = True
                if h is None:
                    h = chunk_csum(e.uid, c, data)
                if h == s[0]:
                    return
            if not compared:
                raise err
        a, b = c * cs, c * cs + len(data) - 1
        raise ChecksumError("'%s': bytes %d-%d (chunk %d): checksum mismatch"
                            % (sdecode(e.name), a, b, c), c, a, b + 1)

    def close(self):
        if self._pool:
            self._pool.shutdown(wait=False)
            self._pool = None
        for d in self._m:
            if d:
                d.close()
        self._m = []

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def __repr__(self):
        return "<recfs.Pack '%s' %s, %d members>" % (self.label, self.uuid, self.geom.members)
