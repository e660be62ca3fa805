"""Data movement compute definitions: reshape, transpose, concat, slice, pad, tile,
broadcast and gather. Every output element reads one input element."""

from __future__ import annotations

from collections.abc import Sequence

from xweave import te
from xweave.layout import source_index, transform_shape
from xweave.operators.elementwise import broadcast_index


def reshape(x: te.Tensor, out_shape: Sequence[int]):
    """Same elements in row-major order, new shape."""
    in_shape = x.shape

    def body(*idx):
        flat = 0
        for i, extent in zip(idx, out_shape):
            flat = flat * extent + i
        src = []
        for extent in reversed(in_shape):
            src.append(flat % extent)
            flat = flat // extent
        return x[tuple(reversed(src))]

    return te.compute(tuple(out_shape), body, name="reshape")


def transpose(x: te.Tensor, perm: Sequence[int]):
    """Permute dimensions: out[i0, i1, ...] = x[i_inv(0), ...]."""
    perm = list(perm)
    out_shape = tuple(x.shape[p] for p in perm)
    inverse = [perm.index(d) for d in range(len(perm))]
    return te.compute(out_shape, lambda *i: x[tuple(i[inverse[d]] for d in range(len(perm)))],
                      name="transpose")


def layout_transform(x: te.Tensor, src_layout: str, dst_layout: str):
    """The same tensor in another layout (e.g. NCHW -> NCHW16c, see xweave.layout)."""
    shape = transform_shape(x.shape, src_layout, dst_layout)
    return te.compute(shape, lambda *i: x[tuple(source_index(i, src_layout, dst_layout))],
                      name="layout_transform")


def concat(inputs: Sequence[te.Tensor], axis: int, out_shape: Sequence[int]):
    """Join along `axis`: nested lazy conditionals pick the input of each position."""
    offsets = [0]
    for t in inputs:
        offsets.append(offsets[-1] + t.shape[axis])

    def read(k, i):
        return inputs[k][(*i[:axis], i[axis] - offsets[k], *i[axis + 1 :])]

    def body(*i):
        value = read(len(inputs) - 1, i)
        for k in reversed(range(len(inputs) - 1)):
            value = te.if_then_else(i[axis] < offsets[k + 1], read(k, i), value)
        return value

    return te.compute(tuple(out_shape), body, name="concat")


def slice(x: te.Tensor, starts: Sequence[int], steps: Sequence[int],  # noqa: A001
          out_shape: Sequence[int]):
    """out[i] = x[starts + i * steps]."""
    return te.compute(
        tuple(out_shape),
        lambda *i: x[tuple(s + j * st for j, s, st in zip(i, starts, steps))],
        name="slice",
    )


def pad(x: te.Tensor, pads: Sequence[int], mode: str = "constant", value: float = 0.0):
    """Pad every dimension by pads [begin..., end...]: constant, reflect or edge."""
    shape, rank = x.shape, len(x.shape)
    out_shape = tuple(e + pads[d] + pads[d + rank] for d, e in enumerate(shape))

    def source(d, i):
        j = i - pads[d]
        last = shape[d] - 1
        if mode == "edge":
            return te.min(te.max(j, 0), last) if pads[d] or pads[d + rank] else j
        if mode == "reflect" and (pads[d] or pads[d + rank]):
            return last - te.abs(last - te.abs(j))  # mirror at 0 and at last
        return j

    def body(*i):
        src = tuple(source(d, i[d]) for d in range(rank))
        if mode != "constant":
            return x[src]
        inside = te.all(*(c for d in range(rank) if pads[d] or pads[d + rank]
                          for c in (i[d] >= pads[d], i[d] < pads[d] + shape[d])))
        return te.if_then_else(inside, x[src], value)

    return te.compute(out_shape, body, name="pad")


def tile(x: te.Tensor, repeats: Sequence[int]):
    """Repeat x `repeats[d]` times along every dimension."""
    out_shape = tuple(e * r for e, r in zip(x.shape, repeats))
    return te.compute(
        out_shape,
        lambda *i: x[tuple(j if r == 1 else j % e for j, e, r in zip(i, x.shape, repeats))],
        name="tile",
    )


def broadcast_to(x: te.Tensor, out_shape: Sequence[int]):
    """numpy.broadcast_to."""
    out_shape = tuple(out_shape)
    return te.compute(out_shape, lambda *i: x[broadcast_index(x, out_shape, i)],
                      name="broadcast_to")


def gather(x: te.Tensor, indices: te.Tensor, axis: int, out_shape: Sequence[int]):
    """numpy.take(x, indices, axis); negative indices count from the end, out-of-range
    ones are clamped (so a bad index never reads outside x)."""
    extent = x.shape[axis]
    q = len(indices.shape)

    def body(*i):
        index = te.cast(indices[i[axis : axis + q]], "index")
        index = index + te.cast(index < 0, "index") * extent
        index = te.min(te.max(index, 0), extent - 1)
        return x[(*i[:axis], index, *i[axis + q :])]

    return te.compute(tuple(out_shape), body, name="gather")
