# SPDX-License-Identifier: MIT
"""The on-disk format (FORMAT.md, version 1): structures and their checks.

Written from FORMAT.md; every check here is one the specification names.
"""
import errno
import struct
import uuid as _uuid

import xxhash

BLOCK = 4096
VERSION = 1
MAX_MEMBERS = 64
CHUNK_MIN = 64 << 10
CHUNK_MAX = 64 << 20
DIR_MAX = 1 << 24
ENTRY_SIZE = 1024
SLOT_SIZE = 16
NAME_MAX = 255
GAPS_MAX = 32
SB_MAGIC = b"RECFSPK1"
BMP_MAGIC = 0x504D4252
ENT_MAGIC = 0x544E4552
U64_MAX = (1 << 64) - 1

STATE_FREE, STATE_RECORDING, STATE_SEALED = 0, 1, 2
STATE_NAMES = {STATE_RECORDING: "recording", STATE_SEALED: "sealed"}


class Error(OSError):
    """A pack, a member or a recording refused, with the C tools' message."""

    def __init__(self, err, msg):
        super().__init__(err, msg)
        self.msg = msg

    def __str__(self):
        return self.msg


class ChecksumError(Error):
    """Data that does not match its checksum: names the chunk and the byte range."""

    def __init__(self, msg, chunk=None, start=None, end=None):
        super().__init__(errno.EIO, msg)
        self.chunk, self.start, self.end = chunk, start, end


def xxh3(data, seed=0):
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def pack_seed(pack_uuid):
    return xxh3(pack_uuid)


def chunk_seed(uid, k):
    return xxh3(struct.pack("<Q", k), uid)


def chunk_csum(uid, k, data):
    return xxh3(data, chunk_seed(uid, k))


def align_up(x, a):
    return (x + a - 1) // a * a


def uuid_str(b):
    return str(_uuid.UUID(bytes=bytes(b)))


def cstr(b):
    """bytes up to the first NUL"""
    i = b.find(b"\0")
    return bytes(b if i < 0 else b[:i])


def sdecode(b):
    """bytes to str for messages and paths, every byte kept (surrogateescape)"""
    return b.decode("utf-8", "surrogateescape")


class Geom:
    """The layout mkfs computes (FORMAT.md 2, Geometry)."""

    def __init__(self, members, member_size, chunk_size, dir_capacity):
        if not 1 <= members <= MAX_MEMBERS:
            raise Error(errno.EINVAL, "member count %d out of range 1..%d" % (members, MAX_MEMBERS))
        if chunk_size & (chunk_size - 1) or not CHUNK_MIN <= chunk_size <= CHUNK_MAX:
            raise Error(errno.EINVAL, "chunk size %d is not a power of two from 64 KiB to 64 MiB" % chunk_size)
        if not 1 <= dir_capacity <= DIR_MAX:
            raise Error(errno.EINVAL, "directory capacity %d out of range 1..%d" % (dir_capacity, DIR_MAX))
        if member_size > 1 << 62:
            raise Error(errno.EFBIG, "member size %d too large" % member_size)
        self.members = members
        self.chunk_size = chunk_size
        self.dir_capacity = dir_capacity
        self.member_size = member_size // BLOCK * BLOCK
        rows_max = self.member_size // chunk_size
        self.bitmap_off = BLOCK
        self.bitmap_copy_size = BLOCK + align_up((rows_max + 7) // 8, BLOCK)
        self.dir_off = self.bitmap_off + 2 * self.bitmap_copy_size
        self.csum_off = self.dir_off + align_up(dir_capacity * 2 * ENTRY_SIZE, BLOCK)
        self.csum_size = align_up(members * rows_max * SLOT_SIZE, BLOCK)
        self.data_off = align_up(self.csum_off + self.csum_size, max(chunk_size, 1 << 20))
        need = self.data_off + chunk_size + BLOCK
        if self.member_size < need:
            raise Error(errno.ENOSPC, "members of %d bytes are too small: this geometry needs "
                        "at least %d bytes per member" % (self.member_size, need))
        self.backup_off = self.member_size - BLOCK
        self.rows = (self.backup_off - self.data_off) // chunk_size
        self.row_bytes = chunk_size * members
        self.capacity = self.rows * self.row_bytes

    def map(self, logical):
        """(member, offset on it) of a logical byte (FORMAT.md 1)"""
        c = logical // self.chunk_size
        return c % self.members, (self.data_off + (c // self.members) * self.chunk_size
                                  + logical % self.chunk_size)


_SB = struct.Struct("<8sIIQQ16s16sIIIIQQQQQQQQQQ64s32x1024s")


class Super:
    """A superblock (FORMAT.md 3), decoded and checked; raises Error(EUCLEAN/EPROTONOSUPPORT)."""

    def __init__(self, blk):
        (magic, self.version, sb_size, self.compat, self.incompat, self.pack_uuid,
         self.member_uuid, self.member_index, self.member_count, self.chunk_size,
         self.dir_capacity, self.member_size, self.rows, self.created_ns, self.bitmap_off,
         self.bitmap_copy_size, self.dir_off, self.csum_off, self.csum_size, self.data_off,
         self.backup_off, label, uuids) = _SB.unpack_from(blk, 0)
        if magic != SB_MAGIC:
            raise Error(errno.EUCLEAN, "no recfs superblock (bad magic)")
        if struct.unpack_from("<Q", blk, 4088)[0] != xxh3(bytes(blk[:4088])):
            raise Error(errno.EUCLEAN, "superblock checksum mismatch")
        if self.version != VERSION:
            raise Error(errno.EPROTONOSUPPORT, "format version %d not supported (this is %d)"
                        % (self.version, VERSION))
        if sb_size != BLOCK:
            raise Error(errno.EUCLEAN, "superblock size %d is not %d" % (sb_size, BLOCK))
        if self.incompat:
            raise Error(errno.EPROTONOSUPPORT, "unknown incompatible features 0x%x" % self.incompat)
        if b"\0" not in label:
            raise Error(errno.EUCLEAN, "superblock label is not NUL-terminated")
        self.label = cstr(label)
        self.member_uuids = [uuids[16 * i:16 * i + 16] for i in range(MAX_MEMBERS)]
        if not 1 <= self.member_count <= MAX_MEMBERS or self.member_index >= self.member_count:
            raise Error(errno.EUCLEAN, "member index %d of %d out of range"
                        % (self.member_index, self.member_count))
        if self.member_uuid != self.member_uuids[self.member_index]:
            raise Error(errno.EUCLEAN, "member UUID does not match the member list")
        try:
            g = Geom(self.member_count, self.member_size, self.chunk_size, self.dir_capacity)
        except Error as e:
            raise Error(errno.EUCLEAN, "superblock geometry invalid: %s" % e.msg) from None
        if (g.member_size, g.rows, g.bitmap_off, g.bitmap_copy_size, g.dir_off, g.csum_off,
                g.csum_size, g.data_off, g.backup_off) != (
                self.member_size, self.rows, self.bitmap_off, self.bitmap_copy_size, self.dir_off,
                self.csum_off, self.csum_size, self.data_off, self.backup_off):
            raise Error(errno.EUCLEAN, "superblock layout fields are inconsistent")
        self.geom = g

    _DIFF = ("version", "compat", "incompat", "pack_uuid", "member_count", "chunk_size",
             "dir_capacity", "member_size", "rows", "created_ns", "bitmap_off",
             "bitmap_copy_size", "dir_off", "csum_off", "csum_size", "data_off", "backup_off",
             "label", "member_uuids")

    def diff(self, o):
        """the first field, in FORMAT.md 3's order, on which two members'
        superblocks disagree, or None"""
        for f in self._DIFF:
            if getattr(self, f) != getattr(o, f):
                return f
        return None


_BMP = struct.Struct("<IIQQQI")


def bitmap_decode(copy, seed):
    """(copy, seq, nbits, dir_hwm) of a valid bitmap copy, or None (FORMAT.md 4)"""
    magic, cp, seq, nbits, bits_csum, hwm = _BMP.unpack_from(copy, 0)
    if magic != BMP_MAGIC:
        return None
    if struct.unpack_from("<Q", copy, 4088)[0] != xxh3(bytes(copy[:4088]), seed):
        return None
    nbytes = (nbits + 7) // 8
    if cp > 1 or nbytes > len(copy) - BLOCK or seq == 0 or seq == U64_MAX:
        return None
    if bits_csum != xxh3(bytes(copy[BLOCK:BLOCK + nbytes]), seed):
        return None
    return cp, seq, nbits, hwm


_ENT = struct.Struct("<IIQBBHIQQQQQQQI4x64sQQQQQQII")
_GAP = struct.Struct("<QIH2x")


class Entry:
    """One directory slot, decoded (FORMAT.md 5)."""
    __slots__ = ("index", "seq", "state", "format", "name", "flags", "uid", "ext_start",
                 "alloc_len", "committed_len", "tail_csum", "start_ns", "end_ns", "frame_size",
                 "source", "packets", "wrong_size", "dropped", "frames_lost", "out_of_order",
                 "invalid", "gap_count", "gap_flags", "gaps")


def entry_magic_seq(slot):
    magic, _, seq = struct.unpack_from("<IIQ", slot, 0)
    return magic, seq


def entry_decode(slot, seed, index):
    """the slot's entry if it is valid for entry `index`, else None"""
    e = Entry()
    (magic, idx, e.seq, e.state, e.format, name_len, e.flags, e.uid, e.ext_start, e.alloc_len,
     e.committed_len, e.tail_csum, e.start_ns, e.end_ns, e.frame_size, source, e.packets,
     e.wrong_size, e.dropped, e.frames_lost, e.out_of_order, e.invalid, e.gap_count,
     e.gap_flags) = _ENT.unpack_from(slot, 0)
    if magic != ENT_MAGIC:
        return None
    if struct.unpack_from("<Q", slot, 1016)[0] != xxh3(bytes(slot[:1016]), seed):
        return None
    if idx != index or e.state > STATE_SEALED or e.seq == 0 or e.seq == U64_MAX:
        return None
    e.index = index
    e.name = b""
    if e.state != STATE_FREE:
        name = bytes(slot[720:720 + name_len]) if name_len <= NAME_MAX else b""
        if not 1 <= name_len <= NAME_MAX or b"\0" in name or b"/" in name or name in (b".", b".."):
            return None
        e.name = name
    if e.gap_count > GAPS_MAX or e.committed_len > e.alloc_len:
        return None
    e.source = cstr(source[:63])     # at most 63 bytes shown, as the C decoder keeps
    e.gaps = [_GAP.unpack_from(slot, 208 + 16 * i) for i in range(e.gap_count)]
    return e


# ------------------------------------------------------------ JSON text as the C tools give it
def _utf8_len(b, i):
    """length of the well-formed UTF-8 sequence at b[i], 0 if there is none"""
    c = b[i]
    n = len(b) - i
    if c < 0x80:
        return 1
    lo, hi = 0x80, 0xBF
    if 0xC2 <= c <= 0xDF:
        k = 2
    elif 0xE0 <= c <= 0xEF:
        k = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        k = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return 0
    if n < k or not lo <= b[i + 1] <= hi:
        return 0
    for j in range(2, k):
        if b[i + j] & 0xC0 != 0x80:
            return 0
    return k


def text(b):
    """bytes as `recfs ls --json` shows them: UTF-8, each stray byte U+FFFD.
    Returns (text, hex of the bytes when they are not well-formed UTF-8, else None)."""
    try:
        return b.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    out, i = [], 0
    while i < len(b):
        k = _utf8_len(b, i)
        if k == 0:
            out.append("\ufffd")
            k = 1
        else:
            out.append(b[i:i + k].decode("utf-8"))
        i += k
    return "".join(out), b.hex()


def fmt_time(ns):
    if ns == 0:
        return "-"
    import time
    t = time.gmtime(ns // 1000000000)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour,
                                                    t.tm_min, t.tm_sec,
                                                    (ns % 1000000000) // 1000000)


def fmt_size(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = float(b), 0
    while v >= 1024 and u < 6:
        v /= 1024
        u += 1
    return "%d B" % b if u == 0 else "%.2f %s" % (v, units[u])
