"""The weight blob store behind `dense_resource` values: parse-stable handles, and
printing with large blobs elided."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import Builtin

from xweave.errors import ElidedResourceError


class _ResourceStore(OpAsmDialectInterface):
    """The builtin dialect's blob store, with parse-stable handles.

    xDSL 0.74's store renames a handle that already exists when it is parsed again
    (`w` -> `w_0`) but stores the blob under yet another name, so a module printed and
    re-parsed in the same process loses its weights. Here equal handles denote the same
    resource (as in one MLIR context); `ConstantOp.from_array` keeps handles unique by
    hashing the content into them.
    """

    def declare_resource(self, key: str) -> str:
        self._blob_storage.setdefault(key, "")
        return key

    def parse_resource(self, key: str, val: str) -> None:
        # An elided blob (`ELIDED`) never replaces data already known under its handle.
        if val == ELIDED:
            if key not in self._blob_storage:
                raise KeyError(f"Resource with key {key} wasn't declared")
            if not self._blob_storage[key]:
                self._blob_storage[key] = ELIDED
            return
        super().parse_resource(key, val)

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        resources = super().build_resources(keys)
        limit = _ELIDE_LARGER_THAN.get()
        if limit:
            resources = {k: ELIDED if (len(v) - 10) // 2 > limit else v
                         for k, v in resources.items()}
        return resources


ELIDED = "__elided__"
"""What a printed `dialect_resources` entry holds in place of a blob left out."""

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


def resource_data(key: str) -> str | None:
    """The hex blob stored under `key` (None: no such resource); raises
    `ElidedResourceError` if the IR it was parsed from had it elided."""
    blob = resource_store().lookup(key)
    if blob == ELIDED:
        raise ElidedResourceError(
            f"dense_resource<{key}>: its data was elided when this IR was written (blobs "
            "larger than --elide-resources-larger-than BYTES are left out, by default in "
            "--dump-ir files); write it again with --elide-resources-larger-than 0 to keep "
            "the weights")
    return blob


def resource_store() -> OpAsmDialectInterface:
    """The builtin dialect's blob store, made parse-stable (installed on import)."""
    store = Builtin.get_interface(OpAsmDialectInterface)
    if store is None or not isinstance(store, _ResourceStore):
        fixed = _ResourceStore()
        if store is not None:
            fixed._blob_storage = store._blob_storage  # keep blobs already known
            Builtin._interfaces.remove(store)
        Builtin._interfaces.append(fixed)
        store = fixed
    return store


resource_store()
