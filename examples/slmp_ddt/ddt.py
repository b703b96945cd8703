"""MPI derived datatypes for the slmp_ddt handler (seed 000 §6.3.2, seed 004 §5.2).

Build a type from nodes, serialise it for the handler's `ddt_desc`, and unpack
a packed stream on the host as a reference:

    t = ddt.contiguous(20, ddt.COMPLEX)      # 20 elements of seed 000's Complex type
    words = t.serialise()                    # bytes for nic_write(img.symbol("ddt_desc"), ...)
    buf = ddt.unpack(t, stream, out)         # what MPI's unpack leaves in `out`

Nodes: Bytes(n) (contiguous bytes: MPI_BYTE, MPI_FLOAT, ...), Vector (count,
blocklen, stride in bytes: MPI_Type_create_hvector), Indexed (blocklen[i],
disp[i] in bytes: MPI_Type_create_hindexed) and Struct (blocklen[i], disp[i],
child[i]: MPI_Type_create_struct), nested. Every node's lower bound is 0 (the
handler's destinations are offsets from the message buffer's start):
displacements and strides must be >= 0, and the extent is the upper bound.

The serialised form (little-endian u32 words; the handler reads the same):
  header  magic 0x31544444 ("DDT1"), word count, root node's word index
  node    kind, size, extent, flags (1 = dense: bytes [0, size), size == extent)
   bytes    -
   vector   count, blocklen, stride, child
   indexed  count, child, blocklen[count], disp[count], prefix[count + 1]
   struct   count, blocklen[count], disp[count], child[count], prefix[count + 1]
prefix[i] is the packed bytes of blocks 0..i-1, so the handler finds the block
of a stream offset by binary search. Limits: DESC_WORDS_MAX words, DEPTH_MAX
levels, sizes, extents, displacements below 2**32.

The reference `unpack` enumerates the typemap (every leaf block in MPI's
order) and copies the stream through it; it does not use the serialised
form, the prefix sums or the handler's seek.
"""

from __future__ import annotations

import struct

MAGIC = 0x31544444
DESC_WORDS_MAX = 4096  # handler.c DDT_DESC_WORDS_MAX (the test reads it from the image)
DEPTH_MAX = 16  # handler.c DDT_DEPTH_MAX
U32 = 1 << 32
BYTES, VECTOR, INDEXED, STRUCT = 1, 2, 3, 4
DENSE = 1


class DatatypeError(ValueError):
    """A type the handler cannot take; the message names the field and its limit."""


def _u32(name, v):
    if not isinstance(v, int) or v < 0 or v >= U32:
        raise DatatypeError(f"{name} = {v!r}: must be an integer in 0..2**32-1")
    return v


class Node:
    size: int
    extent: int
    dense: bool

    def _check(self):
        _u32("size", self.size)
        _u32("extent", self.extent)
        if self.size == 0:
            raise DatatypeError(f"{self!r}: size 0 (empty types are not supported)")

    def children(self):
        return []

    def depth(self):
        return 1 + max((c.depth() for c in self.children()), default=0)

    def serialise(self) -> bytes:
        """The handler's `ddt_desc` bytes for this type as the root."""
        if self.depth() > DEPTH_MAX:
            raise DatatypeError(f"nesting depth {self.depth()} exceeds DEPTH_MAX {DEPTH_MAX}")
        order, index = [], {}

        def visit(n):
            if id(n) in index:
                return
            index[id(n)] = None
            order.append(n)
            for c in n.children():
                visit(c)

        visit(self)
        pos = 3
        for n in order:
            index[id(n)] = pos
            pos += n._words()
        if pos > DESC_WORDS_MAX:
            raise DatatypeError(f"description of {pos} words exceeds DESC_WORDS_MAX {DESC_WORDS_MAX}")
        words = [MAGIC, pos, index[id(self)]]
        for n in order:
            words += n._emit(index)
        assert len(words) == pos
        return struct.pack(f"<{len(words)}I", *words)

    def _head(self, kind):
        return [kind, self.size, self.extent, DENSE if self.dense else 0]


class Bytes(Node):
    def __init__(self, n):
        self.size = self.extent = _u32("Bytes.n", n)
        self.dense = True
        self._check()

    def _words(self):
        return 4

    def _emit(self, index):
        return self._head(BYTES)

    def __repr__(self):
        return f"Bytes({self.size})"


class Vector(Node):
    """count blocks of blocklen children, block i at i * stride bytes."""

    def __init__(self, count, blocklen, stride, child):
        self.count, self.blocklen = _u32("Vector.count", count), _u32("Vector.blocklen", blocklen)
        self.stride, self.child = _u32("Vector.stride", stride), child
        self.size = count * blocklen * child.size
        self.extent = (count - 1) * stride + blocklen * child.extent if count else 0
        self.dense = child.dense and child.size == child.extent and (count == 1 or stride == blocklen * child.extent)
        self._check()

    def children(self):
        return [self.child]

    def _words(self):
        return 8

    def _emit(self, index):
        return self._head(VECTOR) + [self.count, self.blocklen, self.stride, index[id(self.child)]]

    def __repr__(self):
        return f"Vector({self.count}, {self.blocklen}, {self.stride}, {self.child!r})"


class _Blocks(Node):
    def _init(self, name, blocklens, disps, kids):
        if len(blocklens) != len(disps) or len(kids) != len(disps) or not blocklens:
            raise DatatypeError(f"{name}: blocklens, disps (and types) must have the same length >= 1")
        self.blocklens = [_u32(f"{name}.blocklen[{i}]", b) for i, b in enumerate(blocklens)]
        self.disps = [_u32(f"{name}.disp[{i}]", d) for i, d in enumerate(disps)]
        self.kids = kids
        self.prefix = [0]
        for b, k in zip(self.blocklens, kids):
            self.prefix.append(self.prefix[-1] + b * k.size)
        self.size = self.prefix[-1]
        self.extent = max(d + b * k.extent for b, d, k in zip(self.blocklens, self.disps, kids))
        pos, dense = 0, True
        for b, d, k in zip(self.blocklens, self.disps, kids):
            dense &= k.dense and k.size == k.extent and d == pos
            pos = d + b * k.extent
        self.dense = dense and self.size == self.extent
        self._check()


class Indexed(_Blocks):
    """Block i: blocklen[i] children at disp[i] bytes (hindexed)."""

    def __init__(self, blocklens, disps, child):
        self.child = child
        self._init("Indexed", list(blocklens), list(disps), [child] * len(blocklens))

    def children(self):
        return [self.child]

    def _words(self):
        return 6 + 3 * len(self.blocklens) + 1

    def _emit(self, index):
        return (self._head(INDEXED) + [len(self.blocklens), index[id(self.child)]] + self.blocklens + self.disps +
                self.prefix)

    def __repr__(self):
        return f"Indexed({self.blocklens}, {self.disps}, {self.child!r})"


class Struct(_Blocks):
    """Block i: blocklen[i] elements of types[i] at disp[i] bytes."""

    def __init__(self, blocklens, disps, types):
        self._init("Struct", list(blocklens), list(disps), list(types))

    def children(self):
        return self.kids

    def _words(self):
        return 5 + 4 * len(self.blocklens) + 1

    def _emit(self, index):
        return (self._head(STRUCT) + [len(self.blocklens)] + self.blocklens + self.disps +
                [index[id(k)] for k in self.kids] + self.prefix)

    def __repr__(self):
        return f"Struct({self.blocklens}, {self.disps}, {self.kids!r})"


# ---- MPI's constructors, as seed 000's type strings name them


def ctg(count, child):
    """MPI_Type_contiguous: contiguous bytes stay one Bytes node."""
    if isinstance(child, Bytes):
        return Bytes(count * child.size)
    return Vector(count, 1, child.extent, child)


def vec(count, blocklen, stride, child):
    """MPI_Type_vector: stride in elements of child."""
    return Vector(count, blocklen, stride * child.extent, child)


def hvec(count, blocklen, stride, child):
    """MPI_Type_create_hvector: stride in bytes."""
    return Vector(count, blocklen, stride, child)


FLOAT = Bytes(4)
# Seed 000 Fig. 6.5, as FPsPIN's run_eval.sh spells them (spcl/FPsPIN,
# fpga/app/pspin/deps/pspin/examples/datatypes): dt-1 Simple "ctg(27648)[float]",
# dt-0 Complex "hvec(2 1 18432)[hvec(2 1 12288)[hvec(2 1 6144)[vec(32 6 8)[ctg(18)[float]]]]]".
# Both pack 110592 bytes (108 KiB) per element; 20 elements are the 2160 KB
# messages of Fig. 6.8. Complex overlaps itself (extent 55152 < size).
SIMPLE = ctg(27648, FLOAT)
COMPLEX = hvec(2, 1, 18432, hvec(2, 1, 12288, hvec(2, 1, 6144, vec(32, 6, 8, ctg(18, FLOAT)))))


def message(count, elem):
    """A receive of `count` elements: element i at i * extent (MPI's rule)."""
    return ctg(count, elem)


# ---- the reference: the typemap, enumerated


def pieces(node, base=0):
    """(destination, length) of every leaf block in typemap order, adjacent
    ones merged."""
    out = []

    def walk(n, b):
        if isinstance(n, Bytes):
            if out and out[-1][0] + out[-1][1] == b:
                out[-1][1] += n.size
            else:
                out.append([b, n.size])
        elif isinstance(n, Vector):
            for i in range(n.count):
                for j in range(n.blocklen):
                    walk(n.child, b + i * n.stride + j * n.child.extent)
        else:
            for bl, d, k in zip(n.blocklens, n.disps, n.kids):
                for j in range(bl):
                    walk(k, b + d + j * k.extent)

    walk(node, base)
    return [(d, n) for d, n in out]


def overlaps(node):
    """Whether the typemap writes some byte twice (MPI: an erroneous receive
    type; its unpack result depends on write order)."""
    end = 0
    for d, n in sorted(pieces(node)):
        if d < end:
            return True
        end = max(end, d + n)
    return False


def unpack(node, stream, out, plan=None):
    """Copy `stream` (packed bytes, at most node.size) into `out` (a writable
    buffer of at least node.extent bytes) through the typemap, in order: what
    MPI's serial unpack leaves. Returns out."""
    mv = memoryview(out).cast("B")
    src = memoryview(stream).cast("B")
    pos = 0
    for d, n in plan if plan is not None else pieces(node):
        if pos >= len(src):
            break
        n = min(n, len(src) - pos)
        mv[d:d + n] = src[pos:pos + n]
        pos += n
    return out


def pack(node, buf):
    """The stream MPI's pack makes of `buf` (the sender's side)."""
    mv = memoryview(buf).cast("B")
    return b"".join(bytes(mv[d:d + n]) for d, n in pieces(node))
