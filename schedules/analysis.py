"""What a schedule template needs to know about a loop-stage kernel: its stages.

A stage is what one `te.compute` became: the top-level loop nests named
`<stage>.<axis>` (and `<stage>_init.<axis>` for a reduction's init), writing one
buffer — a temporary or a kernel output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Attribute, Block, SSAValue

from xweave.dialects import loop
from xweave.passes.loop_utils import enclosing_loops, perfect_nest
from xweave.target import MachineModel, machine_model, target_of


@dataclass
class Stage:
    """One te stage of a kernel, as loop nests."""

    name: str
    buffer: SSAValue
    is_output: bool
    spatial: list[tuple[str, int]] = field(default_factory=list)  # (loop name, extent)
    reduce: list[tuple[str, int]] = field(default_factory=list)
    has_init: bool = False
    reads: list[tuple[int, list[set[str]]]] = field(default_factory=list)
    """Kernel arguments read by the update nest: (argument index, per dimension the
    names of the loops its index uses)."""
    operands: int = 0
    """How many buffers the update nest reads besides its own (a contraction such as
    conv or matmul reads two; a pooling window one)."""
    windowed: set[str] = field(default_factory=set)
    """Loops that share an index with another loop in some read of the update nest
    (`x` and `rx` in `data[..., x + rx]`): the read slides along them."""
    operand_reads: list[tuple[int | None, Attribute, list[set[str]]]] = field(default_factory=list)
    """Every read of the update nest but of its own buffer: (kernel argument index or
    None for a temporary, element type, per dimension the names of the loops its index
    uses)."""

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce)

    @property
    def work(self) -> int:
        """Iterations of the update nest."""
        total = 1
        for _, extent in self.spatial + self.reduce:
            total *= extent
        return total

    def axis(self, name: str) -> str:
        """The full loop name of axis `name` (`conv2d.rc` for `rc`)."""
        return f"{self.name}.{name}"

    def extent(self, loop_name: str) -> int:
        return dict(self.spatial + self.reduce)[loop_name]


@dataclass
class KernelInfo:
    """The stages of one kernel in program order, and which one the schedule is built around."""

    name: str
    stages: list[Stage]
    tags: list[str]
    machine: MachineModel
    """The target's machine model (from the module's `xweave.target`)."""

    @property
    def anchor(self) -> Stage:
        """The stage a schedule is built around: the biggest reduction, else the output."""
        reductions = [s for s in self.stages if s.is_reduction]
        if reductions:
            return max(reductions, key=lambda s: s.work)
        outputs = [s for s in self.stages if s.is_output]
        return outputs[-1] if outputs else self.stages[-1]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def consumers_of(self, stage: Stage) -> list[Stage]:
        """Stages after `stage` that read its buffer."""
        readers = []
        for other in self.stages:
            if other is stage:
                continue
            if any(isinstance(use.operation, loop.LoadOp) and _stage_of_use(use.operation) == other.name
                   for use in stage.buffer.uses):
                readers.append(other)
        return readers


def _stage_of_use(op) -> str | None:
    """The stage whose loop nest contains `op` (named by its outermost loop)."""
    loops = enclosing_loops(op)
    if not loops or not loops[0].name_str:
        return None
    return loops[0].name_str.split(".")[0]


def _read_dims(load: loop.LoadOp) -> list[set[str]]:
    """Per dimension of a load, the names of the loops its index uses."""
    names = []
    for operand in load.indices:
        owner = operand.owner
        for_op = owner.parent_op() if isinstance(owner, Block) else None
        names.append(for_op.name_str if isinstance(for_op, loop.ForOp) else None)
    return [{names[d] for d in expr.used_dims() if names[d]} for expr in load.map.data.results]


def _argument_reads(innermost: loop.ForOp, args: list) -> list[tuple[int, list[set[str]]]]:
    return [(args.index(load.memref), _read_dims(load)) for load in innermost.walk()
            if isinstance(load, loop.LoadOp) and load.memref in args]


def _windowed(innermost: loop.ForOp) -> set[str]:
    return {name for load in innermost.walk() if isinstance(load, loop.LoadOp)
            for loops in _read_dims(load) if len(loops) > 1 for name in loops}


def analyse(kernel: func.FuncOp) -> KernelInfo:
    """The stages of a loop-stage kernel that has not been scheduled yet."""
    args = set(kernel.body.block.args)
    stages: dict[str, Stage] = {}
    for op in kernel.body.block.ops:
        if not isinstance(op, loop.ForOp) or not op.name_str or "." not in op.name_str:
            continue
        prefix = op.name_str.split(".")[0]
        nest = perfect_nest(op)
        stores = [s for s in nest[-1].walk() if isinstance(s, loop.StoreOp)]
        if not stores:
            continue
        buffer = stores[-1].memref
        if prefix.endswith("_init"):
            stage = stages.setdefault(prefix[: -len("_init")],
                                      Stage(prefix[: -len("_init")], buffer, buffer in args))
            stage.has_init = True
            continue
        rank = len(buffer.type.get_shape())
        loops = [(f.name_str, f.extent) for f in nest]
        stage = stages.setdefault(prefix, Stage(prefix, buffer, buffer in args))
        stage.spatial, stage.reduce = loops[:rank], loops[rank:]
        stage.reads = _argument_reads(nest[-1], list(kernel.body.block.args))
        stage.windowed = _windowed(nest[-1])
        stage.operands = len({load.memref for load in nest[-1].walk()
                              if isinstance(load, loop.LoadOp) and load.memref is not buffer})
        block_args = list(kernel.body.block.args)
        stage.operand_reads = [
            (block_args.index(load.memref) if load.memref in block_args else None,
             load.memref.type.get_element_type(), _read_dims(load))  # pyright: ignore
            for load in nest[-1].walk()
            if isinstance(load, loop.LoadOp) and load.memref is not buffer]
    tags = [s.name for s in stages.values()]
    return KernelInfo(kernel.sym_name.data, list(stages.values()), tags,
                      machine_model(target_of(kernel)))
