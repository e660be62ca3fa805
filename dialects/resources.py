"""The weight blobs behind `dense_resource` values: bytes in memory, hex text only in
printed IR, alive exactly as long as an attribute that names them.

MLIR keeps a resource's data in a blob that the `dense_resource` attribute's handle
references; xDSL 0.74 keeps every blob as hex text in one dictionary of the builtin
dialect, for the life of the process. Here:

* A `Blob` holds the bytes as a read-only numpy array (any dtype; `view` reinterprets
  them without copying). Hex text is made by `Blob.hex` when a module is printed and
  read by `Blob.from_hex` when one is parsed, nowhere else.
* The attribute holds its blob (`attach`, read by `blob_of`), as MLIR's handle holds a
  reference to its blob: a clone of an op shares the attribute and so the blob, and a
  blob whose last attribute is gone is freed with it. The store maps handles to blobs
  weakly, for the printer (which only knows handles) and for attributes made from a
  handle alone.
* Parsing reads blobs at the end of the text, after the attributes that name them: the
  store keeps them until `claim_parsed` attaches them to the parsed module's attributes
  (`diagnostics.XweaveParser` does, for every parse xweave makes).

Equal handles denote the same resource (as in one MLIR context; xDSL 0.74 renames a
handle that is parsed again but stores its blob under yet another name, losing it);
`ConstantOp.from_array` keeps handles unique by hashing the content into them.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import ArrayAttr, Builtin, DenseResourceAttr, DictionaryAttr
from xdsl.ir import Attribute, Operation

from xweave.errors import ElidedResourceError

ELIDED = "__elided__"
"""What a printed `dialect_resources` entry holds in place of a blob left out."""


class Blob:
    """The bytes of one resource (MLIR's blob: an alignment and the data), or the mark of
    a blob whose data was elided from the text it was parsed from (`data` None).

    `nbytes` and `elided` are known without reading the data (verifiers read only them)."""

    __slots__ = ("data", "alignment", "nbytes", "elided", "__weakref__")

    def __init__(self, data: np.ndarray | None, alignment: int = 1):
        """A blob owning `data` (C-contiguous; made read-only here)."""
        if data is not None:
            assert data.flags.c_contiguous
            data.flags.writeable = False
        self.data = data
        self.alignment = alignment
        self.nbytes = 0 if data is None else data.nbytes
        self.elided = data is None

    @staticmethod
    def of_array(array: np.ndarray) -> Blob:
        """A blob holding a copy of `array`'s bytes, aligned to its element size."""
        copy = np.array(array, order="C", copy=True)
        return Blob(copy, max(copy.dtype.itemsize, 1))

    def view(self, dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
        """The bytes as a read-only array of `dtype` and `shape` (no copy)."""
        assert self.data is not None
        return np.frombuffer(self.data, dtype=dtype).reshape(tuple(shape))

    def same_bytes(self, other: Blob) -> bool:
        return (not self.elided and not other.elided and self.nbytes == other.nbytes
                and np.array_equal(self.data.reshape(-1).view(np.uint8),
                                   other.data.reshape(-1).view(np.uint8)))

    def hex(self) -> str:
        """MLIR's text of the blob: "0x", the alignment as a little-endian u32, the bytes."""
        if self.data is None:
            return ELIDED
        return "0x" + (self.alignment.to_bytes(4, "little") + self.data.tobytes()).hex().upper()

    @staticmethod
    def from_hex(text: str) -> Blob:
        """The blob of MLIR's text form (`ELIDED`: an elided blob); raises ValueError
        for text that is not "0x", a 4-byte alignment and hex bytes."""
        if text == ELIDED:
            return Blob(None)
        if not text.startswith("0x"):
            raise ValueError(f"Blob must be a hex string, got: {text[:32]}")
        raw = bytes.fromhex(text[2:])
        if len(raw) < 4:
            raise ValueError("a blob starts with its alignment (4 bytes), got "
                             f"{len(raw)} byte(s)")
        data = np.frombuffer(raw, np.uint8, offset=4).copy()
        return Blob(data, int.from_bytes(raw[:4], "little") or 1)


_ATTACHED = "_xweave_blob"


def attach(attr: DenseResourceAttr, blob: Blob) -> DenseResourceAttr:
    """Make `attr` hold `blob` (its data lives as long as `attr`); returns `attr`."""
    object.__setattr__(attr, _ATTACHED, blob)
    return attr


def blob_of(attr: DenseResourceAttr) -> Blob | None:
    """The blob `attr` names: the one it holds, else the store's (None: no data)."""
    held = getattr(attr, _ATTACHED, None)
    if held is not None:
        return held
    return resource_store().blob(attr.resource_handle.data)


def resource_array(attr: DenseResourceAttr, dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    """The values of `attr` as a read-only array (no copy). Raises `ElidedResourceError`
    if the IR it was parsed from had them elided, `ValueError` if there is no data or
    it has another size than `dtype` x `shape` needs."""
    key = attr.resource_handle.data
    blob = blob_of(attr)
    if blob is None:
        raise ValueError(f"no data for dense_resource<{key}> (missing from the module's "
                         "dialect_resources section)")
    if blob.elided:
        raise ElidedResourceError(
            f"dense_resource<{key}>: its data was elided when this IR was written (blobs "
            "larger than --elide-resources-larger-than BYTES are left out, by default in "
            "--dump-ir files); write it again with --elide-resources-larger-than 0 to keep "
            "the weights")
    needed = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if blob.nbytes != needed:
        raise ValueError(f"dense_resource<{key}> holds {blob.nbytes} bytes but "
                         f"{needed} are needed")
    return blob.view(dtype, shape)


class _ResourceStore(OpAsmDialectInterface):
    """The builtin dialect's resource store, holding `Blob`s (see the module docstring).

    A handle may name blobs of several live modules (a module and a copy of it parsed
    from its text); the store remembers each weakly and answers with the newest still
    alive. `lookup` and `build_resources` keep the interface's contract (hex text), for
    the printer and for xDSL; xweave reads blobs with `blob` / `blob_of`."""

    def __init__(self) -> None:
        super().__init__()
        self._blobs: dict[str, list[weakref.ref[Blob]]] = {}
        self._parsed: dict[str, Blob] = {}
        """Blobs read by the parser and not yet attached to an attribute (`claim`)."""

    def blob(self, key: str) -> Blob | None:
        """The newest live blob known under `key` (None: none)."""
        parsed = self._parsed.get(key)
        if parsed is not None:
            return parsed
        for ref in reversed(self._blobs.get(key, ())):
            blob = ref()
            if blob is not None:
                return blob
        return None

    def _remember(self, key: str, blob: Blob) -> None:
        refs = self._blobs.setdefault(key, [])
        if not any(ref() is blob for ref in refs):
            refs.append(weakref.ref(blob, lambda ref, key=key: self._forget(key, ref)))

    def _forget(self, key: str, ref: weakref.ref[Blob]) -> None:
        refs = self._blobs.get(key)
        if refs is not None and ref in refs:
            refs.remove(ref)
            if not refs:
                del self._blobs[key]

    def register(self, key: str, blob: Blob) -> tuple[str, Blob]:
        """Remember `blob` under `key`, or under `key_<n>` if a live blob with other
        bytes holds `key`; a live blob with the same bytes is shared instead. Returns
        the key and the blob to use."""
        base, n = key, 0
        while (existing := self.blob(key)) is not None and not existing.elided:
            if existing.same_bytes(blob):
                return key, existing
            n += 1
            key = f"{base}_{n}"
        self._remember(key, blob)
        return key, blob

    def declare_resource(self, key: str) -> str:
        return key

    def parse_resource(self, key: str, val: str) -> None:
        blob = Blob.from_hex(val)
        known = self.blob(key)
        if known is not None and (blob.elided or known.same_bytes(blob)):
            # The same data (a module's text parsed again) is shared; an elided blob
            # never replaces data known under its handle.
            blob = known
        self._remember(key, blob)
        self._parsed[key] = blob

    def claim(self, key: str) -> Blob | None:
        """The blob parsed under `key`, no longer held by the store (None: none)."""
        return self._parsed.pop(key, None) or self.blob(key)

    def lookup(self, key: str) -> str | None:
        blob = self.blob(key)
        return None if blob is None else blob.hex()

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        limit = _ELIDE_LARGER_THAN.get()
        resources = {}
        for key in keys:
            blob = self.blob(key)
            if blob is not None:
                resources[key] = ELIDED if limit and blob.nbytes > limit else blob.hex()
        return resources


def _resource_attrs(attrs: Iterable[Attribute]) -> Iterator[DenseResourceAttr]:
    for attr in attrs:
        if isinstance(attr, DenseResourceAttr):
            yield attr
        elif isinstance(attr, ArrayAttr):
            yield from _resource_attrs(attr.data)
        elif isinstance(attr, DictionaryAttr):
            yield from _resource_attrs(attr.data.values())


def claim_parsed(root: Operation, keys: Iterable[str]) -> None:
    """Attach the blobs parsed under `keys` to the `dense_resource` attributes of the
    ops under `root` that name them, and release the store's hold on them."""
    store = resource_store()
    keys = set(keys)
    if not keys:
        return
    claimed = {key: store.claim(key) for key in keys}
    for op in root.walk():
        for attr in _resource_attrs((*op.properties.values(), *op.attributes.values())):
            blob = claimed.get(attr.resource_handle.data)
            if blob is not None:
                attach(attr, blob)


_ELIDE_LARGER_THAN: ContextVar[int] = ContextVar("elide_resources_larger_than", default=0)


@contextmanager
def eliding_resources(larger_than: int) -> Iterator[None]:
    """While active, modules are printed with every resource blob of more than
    `larger_than` bytes replaced by `ELIDED` (0: every blob printed), as MLIR's
    `--mlir-elide-resource-strings-if-larger`. Such IR parses and verifies, but what
    needs the values (compiling, running, folding it) fails with `ElidedResourceError`."""
    token = _ELIDE_LARGER_THAN.set(max(0, larger_than))
    try:
        yield
    finally:
        _ELIDE_LARGER_THAN.reset(token)


def resource_store() -> _ResourceStore:
    """The builtin dialect's blob store (installed on import)."""
    store = Builtin.get_interface(OpAsmDialectInterface)
    if store is None or not isinstance(store, _ResourceStore):
        fixed = _ResourceStore()
        if store is not None:
            for key, text in store._blob_storage.items():  # blobs already known
                if text:
                    fixed.parse_resource(key, text)
            Builtin._interfaces.remove(store)
        Builtin._interfaces.append(fixed)
        store = fixed
    return store


resource_store()
