# SPDX-License-Identifier: MIT
"""A recording as a seekable read-only raw file: chunks fetched by a thread
pool (os.pread releases the GIL, so members are read at once), whole chunks
verified, read ahead of a sequential reader."""
import io
from collections import OrderedDict

from .format import sdecode


class RecordingFile(io.RawIOBase):
    """Raw file over one recording; Pack.open wraps it in io.BufferedReader."""

    def __init__(self, pack, entry, verify=True, readahead=None):
        super().__init__()
        self._p = pack
        self._e = entry
        self._verify = verify
        self._cs = cs = pack.geom.chunk_size
        self._size = entry.committed_len
        self._nchunks = (self._size + cs - 1) // cs
        self._full = self._size // cs
        if readahead is None:
            # enough to keep every member busy, without holding GiBs of big chunks
            m = pack.geom.members
            readahead = min(max(32 << 20, 2 * m * cs), max(256 << 20, m * cs))
        self._ahead = max(1, (readahead + cs - 1) // cs)   # chunks in flight ahead
        self._pos = 0
        self._next = 0          # where a sequential reader goes next
        self._fut = OrderedDict()  # chunk -> Future of its committed bytes
        self._hints = {}           # chunk -> its checksum slot (csum, len), read ahead
        self.name = sdecode(entry.name)
        self.entry = entry

    # ------------------------------------------------------------ io.RawIOBase
    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, off, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pos = off
        elif whence == io.SEEK_CUR:
            pos = self._pos + off
        elif whence == io.SEEK_END:
            pos = self._size + off
        else:
            raise ValueError("invalid whence (%r)" % whence)
        if pos < 0:
            raise OSError(22, "negative seek position %d" % pos)
        self._pos = pos
        return pos

    @property
    def size(self):
        return self._size

    def _schedule(self, c0, c1):
        """futures for chunks [c0, c1) not yet asked for; slots read once for the lot"""
        want = [c for c in range(c0, min(c1, self._nchunks)) if c not in self._fut]
        if not want:
            return
        hints = self._hints
        if self._verify and want[0] < self._full and want[0] not in hints:
            # the table's slots for many chunks in one read (16 KiB: 1024
            # chunks), not one small (O_DIRECT: uncached) read per call
            a = want[0]
            b = min(max(want[-1] + 1, a + 1024), self._full)
            hints.clear()
            try:
                for k, s in enumerate(self._p._slots(self._e, a, b - a)):
                    hints[a + k] = s
            except OSError:
                pass   # each chunk then reads its slot itself and names what fails
        pool = self._p._pool
        for c in want:
            self._fut[c] = pool.submit(self._p._fetch, self._e, c, self._verify, hints.get(c))

    def readinto(self, b):
        if self.closed:
            raise ValueError("I/O operation on closed file")
        pos, cs = self._pos, self._cs
        if pos >= self._size or len(b) == 0:
            return 0
        n = min(len(b), self._size - pos)
        c0, c1 = pos // cs, (pos + n - 1) // cs + 1
        seq = pos == self._next
        self._schedule(c0, c1 + (self._ahead if seq else 0))
        # what is behind the reader goes; so does what a jump left behind
        for c in list(self._fut):
            if c < c0 or (not seq and c >= c1 + self._ahead):
                self._fut.pop(c).cancel()
        mv = memoryview(b).cast("B")
        done = 0
        for c in range(c0, c1):
            f = self._fut[c]
            try:
                data = f.result()
            except Exception:
                self._fut.pop(c, None)
                if done:
                    break      # what came before the bad chunk; the next read raises
                raise
            a = pos + done - c * cs
            k = min(len(data) - a, n - done)
            mv[done:done + k] = data[a:a + k]
            done += k
            if a + k == len(data):
                self._fut.pop(c, None)
                self._p.buf_put(data)
        self._pos = self._next = pos + done
        return done

    def readall(self):
        out = bytearray()
        step = max(self._cs, 4 << 20)
        while True:
            b = bytearray(step)
            n = self.readinto(b)
            if not n:
                return bytes(out)
            out += memoryview(b)[:n]

    def close(self):
        for f in self._fut.values():
            f.cancel()     # buffers of fetched chunks are left to the collector
        self._fut.clear()
        super().close()
