"""The bridge's store of array values: one pack file of blobs and its index.

Owns: how the capture keeps the values of fields and ndarrays around each
call, and how ``kiln-quadrants run --keep`` keeps Kiln's: every distinct
value once, named by its content (``blob_id``: a hash of its dtype, shape
and bytes), so that a field a call leaves unchanged costs no new byte. A
store ``NAME`` is two files in one directory: ``NAME.pack``, the values'
bytes (C order, each blob starting at a multiple of ``ALIGN``; compressed
with zlib when that saves an eighth of them), and
``NAME.idx``, one JSON line per blob (``BlobEntry``: its id, offset, numpy
dtype and shape, and its codec and stored size when compressed), appended after the blob's bytes are written. Both are
only appended to, and flushed after every blob, so a process that ends at
any point (``os._exit``, a signal) leaves a store whose every indexed blob
is whole; a last index line cut short is not read. docs/quadrants-ir.md §5.4.

Must never: rewrite or reorder what a store holds, index a blob before its
bytes are written, read past a blob's bytes, or import Quadrants.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import IO, Any, NotRequired, TypedDict

import numpy as np

# Each blob starts at a multiple of this many bytes (a cache line), so
# that a blob mapped from the file is aligned for any dtype.
ALIGN = 64
# A value is stored compressed (zlib, its fastest level) when that saves at
# least an eighth of its bytes: a grid mostly zero, a field of few values.
CODEC = "zlib"


class BlobEntry(TypedDict):
    """One blob of a store's index (``NAME.idx``)."""

    id: str
    offset: int
    # numpy's spelling of the dtype, with its byte order (`<f4`, `|b1`).
    dtype: str
    shape: list[int]
    # Only for a value stored compressed: `zlib`, and the bytes it takes.
    codec: NotRequired[str]
    size: NotRequired[int]


class BudgetExceeded(Exception):
    """Storing a blob would take a store past its budget (``--max-disk``)."""


def _c_order(arr: Any) -> np.ndarray:
    """``arr`` as a C-ordered array of its own shape (np.ascontiguousarray
    would make a 0-D array 1-D)."""
    a = np.asarray(arr)
    return a if a.flags.c_contiguous else a.copy(order="C")


def blob_id(arr: np.ndarray) -> str:
    """A value's name in a store: 32 hex digits of BLAKE2b over its dtype,
    shape and bytes (C order). Equal values of one dtype and shape have
    one id; any other two have different ids."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{arr.dtype.str}{list(arr.shape)}".encode())
    h.update(_c_order(arr).reshape(-1).view(np.uint8).data)
    return h.hexdigest()


def read_index(directory: Path, name: str) -> dict[str, BlobEntry]:
    """A store's index by blob id (empty for a store not made yet). A last
    line cut short (the process ended while writing it) is not read."""
    path = Path(directory) / f"{name}.idx"
    if not path.exists():
        return {}
    out: dict[str, BlobEntry] = {}
    for line in path.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            entry: BlobEntry = json.loads(line)
            out[entry["id"]] = entry
    return out


class Pack:
    """A store open for appending: ``put`` each value, get its id. Ids in
    ``elsewhere`` (another store's index, read with ``Reader``) are not
    stored again. ``budget``: the most bytes ``NAME.pack`` may hold (None:
    no limit)."""

    def __init__(self, directory: Path, name: str, budget: int | None = None, elsewhere: set[str] | None = None):
        self.directory = Path(directory)
        self.name = name
        self.budget = budget
        self.known = set(read_index(self.directory, name)) | (elsewhere or set())
        self._pack: IO[bytes] | None = None
        self._idx: IO[str] | None = None
        pack = self.directory / f"{name}.pack"
        self.size = pack.stat().st_size if pack.exists() else 0

    def _open(self) -> tuple[IO[bytes], IO[str]]:
        if self._pack is None or self._idx is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._pack = open(self.directory / f"{self.name}.pack", "ab")
            self._idx = open(self.directory / f"{self.name}.idx", "a")
        return self._pack, self._idx

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more (padding included) stay within the budget."""
        return self.budget is None or self.size + nbytes + ALIGN <= self.budget

    def put(self, arr: Any) -> str:
        """Stores ``arr`` unless a value equal to it is stored already; its
        id. BudgetExceeded when it does not fit."""
        arr = _c_order(arr)
        bid = blob_id(arr)
        if bid in self.known:
            return bid
        if not self.fits(arr.nbytes):
            raise BudgetExceeded(f"{arr.nbytes} bytes more would pass the budget of {self.budget}")
        pack, idx = self._open()
        offset = -(-self.size // ALIGN) * ALIGN
        raw = arr.reshape(-1).view(np.uint8).data
        packed = zlib.compress(raw, 1) if arr.nbytes >= ALIGN else None
        entry: BlobEntry = {"id": bid, "offset": offset, "dtype": arr.dtype.str, "shape": [int(s) for s in arr.shape]}
        data: bytes | memoryview = raw
        if packed is not None and len(packed) <= arr.nbytes - arr.nbytes // 8:
            entry["codec"], entry["size"], data = CODEC, len(packed), packed
        pack.write(b"\0" * (offset - self.size))
        pack.write(data)
        pack.flush()
        self.size = offset + len(data)
        idx.write(json.dumps(entry) + "\n")
        idx.flush()
        self.known.add(bid)
        return bid

    def close(self) -> None:
        for f in (self._pack, self._idx):
            if f is not None:
                f.close()
        self._pack = self._idx = None


class Reader:
    """The values of one or more stores (a capture's, a replay's), by id."""

    def __init__(self, *stores: tuple[Path, str]):
        self.where: dict[str, tuple[Path, BlobEntry]] = {}
        for directory, name in stores:
            for bid, entry in read_index(directory, name).items():
                self.where.setdefault(bid, (Path(directory) / f"{name}.pack", entry))

    def ids(self) -> set[str]:
        return set(self.where)

    def entry(self, bid: str) -> BlobEntry:
        """The blob's index entry; KeyError when no store holds it."""
        return self.where[bid][1]

    def load(self, bid: str) -> np.ndarray:
        """A copy of the value (its own memory, writeable); KeyError when no
        store holds it."""
        path, e = self.where[bid]
        dtype = np.dtype(e["dtype"])
        count = int(np.prod(e["shape"], dtype=np.int64))
        with open(path, "rb") as f:
            if "codec" in e:
                f.seek(e["offset"])
                arr = np.frombuffer(bytearray(zlib.decompress(f.read(e.get("size", 0)))), dtype=dtype)
            else:
                arr = np.fromfile(f, dtype=dtype, count=count, offset=e["offset"])
        if arr.size != count:
            raise ValueError(f"{path}: blob {bid} is cut short ({arr.size} of {count} elements)")
        return arr.reshape(e["shape"])


def load(directory: str | os.PathLike[str], bid: str) -> np.ndarray:
    """A value by id from any store in ``directory`` or its ``capture/``
    (a capture's directory, or a ``--keep`` directory): how a person reads
    the ids that ``manifest.json`` and ``calls.jsonl`` name."""
    d = Path(directory)
    stores = [(p.parent, p.stem) for sub in (d, d / "capture") for p in sorted(sub.glob("*.idx"))]
    return Reader(*stores).load(bid)


def main(argv: list[str] | None = None) -> int:
    """``python -m kiln_quadrants.pack DIR ID OUT.npy``: one value as .npy."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m kiln_quadrants.pack DIR ID OUT.npy", file=sys.stderr)
        return 2
    try:
        arr = load(args[0], args[1])
    except KeyError:
        print(f"kiln_quadrants.pack: error: no store in {args[0]} holds {args[1]}", file=sys.stderr)
        return 1
    np.save(args[2], arr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
