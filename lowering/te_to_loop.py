"""convert-te-to-loop: bufferize, and turn every te.compute into a naive loop nest.

Kernels take their result buffers as trailing arguments (destination passing).
Each `te.compute` writes a buffer: a kernel output, or a temporary `loop.alloc`.
Index arithmetic of `te.extract` is folded into the affine map of `loop.load` when
it is affine in the loop variables. `@main` becomes buffer allocations, globals
for constants, and calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import region_dce

from xweave.dialects import loop, te
from xweave.dialects.dtypes import is_unsigned, value_type
from xweave.passes.loop_utils import affine_of

REDUCER_IDENTITY = {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf")}
REDUCER_COMBINE = {
    "sum": arith.AddfOp,
    "prod": arith.MulfOp,
    "max": arith.MaximumfOp,
    "min": arith.MinimumfOp,
}
INTEGER_REDUCER_COMBINE = {"sum": arith.AddiOp, "prod": arith.MuliOp,
                           "max": arith.MaxSIOp, "min": arith.MinSIOp}
UNSIGNED_REDUCER_COMBINE = {**INTEGER_REDUCER_COMBINE, "max": arith.MaxUIOp,
                            "min": arith.MinUIOp}


def _combine(reducer: str, element_type):
    """The arith op combining two values of a reduction over `element_type` elements."""
    if isinstance(element_type, AnyFloat):
        return REDUCER_COMBINE[reducer]
    table = UNSIGNED_REDUCER_COMBINE if is_unsigned(element_type) else INTEGER_REDUCER_COMBINE
    return table[reducer]


def _identity(reducer: str, element_type) -> arith.ConstantOp:
    """The constant a reduction over `element_type` elements starts from."""
    if isinstance(element_type, AnyFloat):
        return _float_constant(REDUCER_IDENTITY[reducer], element_type)
    value = te.Reducer(reducer).identity(element_type)
    return arith.ConstantOp(IntegerAttr(int(value), value_type(element_type)))


def memref_of(t: TensorType) -> MemRefType:
    """The buffer type holding a tensor."""
    return MemRefType(t.get_element_type(), t.get_shape())


# --- te.compute -> loop nest -------------------------------------------------------


@dataclass
class _BodyLowering:
    """Clones a te.compute body into a loop nest, rewriting te ops to loop/scf ops."""

    buffers: dict[SSAValue, SSAValue]  # tensor -> buffer
    te_vars: list[SSAValue]  # te.compute block arguments that are in scope
    loop_vars: list[SSAValue]  # the loop induction variables standing for them

    def lower_block(self, block: Block, mapping: dict[SSAValue, SSAValue],
                    into: Block) -> SSAValue:
        """Clone `block` (minus its te.yield) into `into`; return the yielded value."""
        dims = {v: i for i, v in enumerate(self.te_vars)}
        for op in block.ops:
            if isinstance(op, te.YieldOp):
                return mapping[op.operands[0]]
            if isinstance(op, te.ExtractOp):
                into.add_op(self._load(op, mapping, dims))
                mapping[op.results[0]] = into.last_op.results[0]
            elif isinstance(op, te.IfOp):
                new = self._if(op, mapping)
                into.add_op(new)
                mapping[op.results[0]] = new.results[0]
            else:
                clone = op.clone(value_mapper=mapping)
                into.add_op(clone)
        raise ValueError("te block without te.yield")

    def _load(self, op: te.ExtractOp, mapping, dims) -> loop.LoadOp:
        buffer = self.buffers[op.tensor]
        exprs = [affine_of(i, dims) for i in op.indices]
        if all(e is not None for e in exprs):
            amap = AffineMap(len(self.loop_vars), 0, tuple(exprs))
            return loop.LoadOp(buffer, list(self.loop_vars), AffineMapAttr(amap))
        return loop.LoadOp(buffer, [mapping[i] for i in op.indices])

    def _if(self, op: te.IfOp, mapping) -> scf.IfOp:
        regions = []
        for region in op.regions:
            block = Block()
            value = self.lower_block(region.block, dict(mapping), block)
            block.add_op(scf.YieldOp(value))
            regions.append(Region(block))
        return scf.IfOp(mapping[op.operands[0]], [r.type for r in op.results], regions[0], regions[1])


def _float_constant(value: float, type_) -> arith.ConstantOp:
    return arith.ConstantOp(FloatAttr(value, type_))


def perfect_nest(extents: list[int], names: list[str], hints: list[str | None],
                 fill) -> list[Operation]:
    """A perfect loop nest; `fill(block, induction_vars)` fills the innermost body.

    With no extents (a rank-0 result) the body ops are returned unwrapped.
    """
    fors = [loop.ForOp(0, e, name=n) for e, n in zip(extents, names)]
    for f, hint in zip(fors, hints):
        f.induction_var.name_hint = hint
    for outer, inner in zip(fors, fors[1:]):
        outer.add_ops([inner])
    block = Block()
    fill(block, [f.induction_var for f in fors])
    ops = list(block.ops)
    for op in ops:
        op.detach()
    if not fors:
        return ops
    fors[-1].add_ops(ops)
    return [fors[0]]


def lower_compute(compute: te.ComputeOp, out: SSAValue, buffers: dict,
                  stage: str) -> list[Operation]:
    """The loop nests that fill buffer `out` with the values of `compute`.

    Loops are named `<stage>.<axis>`. A reduction becomes two nests: `<stage>_init`
    stores the reducer's identity, then a perfect nest over the spatial and reduce
    axes updates it, so schedules may reorder reduce axes outside spatial ones.
    """
    shape = list(compute.shape.get_values())
    reduce_shape = list(compute.reduce_shape.get_values())
    reducer = compute.reducer.data if compute.reducer is not None else None
    element_type = compute.results[0].type.get_element_type()
    body = compute.body.block
    hints = [a.name_hint or f"i{d}" for d, a in enumerate(body.args)]
    rank = len(shape)

    def update(block: Block, ivs: list[SSAValue]):
        lowering = _BodyLowering(buffers, list(body.args[: len(ivs)]), ivs)
        value = lowering.lower_block(body, dict(zip(body.args, ivs)), block)
        if reducer is not None:
            acc = loop.LoadOp(out, ivs[:rank])
            combined = _combine(reducer, element_type)(acc.results[0], value)
            block.add_ops([acc, combined])
            value = combined.result
        block.add_op(loop.StoreOp(value, out, ivs[:rank]))

    if reducer is None:
        return perfect_nest(shape, [f"{stage}.{h}" for h in hints], hints, update)

    def init(block: Block, ivs: list[SSAValue]):
        identity = _identity(reducer, element_type)
        block.add_ops([identity, loop.StoreOp(identity.result, out, ivs)])

    init_nest = perfect_nest(shape, [f"{stage}_init.{h}" for h in hints[:rank]],
                             hints[:rank], init)
    update_nest = perfect_nest(shape + reduce_shape, [f"{stage}.{h}" for h in hints],
                               hints, update)
    return init_nest + update_nest


# --- functions ---------------------------------------------------------------------


def _unique(name: str, taken: set[str]) -> str:
    unique, n = name, 0
    while unique in taken:
        n += 1
        unique = f"{name}_{n}"
    taken.add(unique)
    return unique


def _lower_kernel(kernel: func.FuncOp) -> None:
    """Rewrite a te kernel in place into a destination-passing loop kernel."""
    block = kernel.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    buffers: dict[SSAValue, SSAValue] = {}
    for arg in list(block.args):
        new_arg = Rewriter.replace_value_with_new_type(arg, memref_of(arg.type))
        buffers[new_arg] = new_arg
    outputs = list(ret.operands)
    out_args = [block.insert_arg(memref_of(v.type), len(block.args)) for v in outputs]
    for arg in out_args:
        arg.name_hint = "out"
    new_ops: list[Operation] = []
    stages: set[str] = set()
    for compute in [op for op in block.ops if isinstance(op, te.ComputeOp)]:
        stage = _unique(compute.tag.data if compute.tag is not None else "compute", stages)
        result = compute.results[0]
        if result in outputs:
            buf = out_args[outputs.index(result)]
        else:
            alloc = loop.AllocOp(memref_of(result.type))
            new_ops.append(alloc)
            buf = alloc.results[0]
            if compute.tag is not None:
                buf.name_hint = compute.tag.data
        buffers[result] = buf
        new_ops.extend(lower_compute(compute, buf, buffers, stage))
    for op in list(block.ops):
        op.detach()
        op.erase(safe_erase=False)
    block.add_ops(new_ops)
    block.add_op(func.ReturnOp())
    # Index arithmetic folded into access maps is now dead.
    region_dce(kernel.body)
    kernel.function_type = func.FunctionType.from_lists([a.type for a in block.args], [])


def _copy_nest(src: SSAValue, dst: SSAValue, shape: list[int], stage: str) -> list[Operation]:
    hints = [f"i{d}" for d in range(len(shape))]

    def copy(block: Block, ivs: list[SSAValue]):
        load = loop.LoadOp(src, ivs)
        block.add_ops([load, loop.StoreOp(load.results[0], dst, ivs)])

    return perfect_nest(shape, [f"{stage}.{h}" for h in hints], hints, copy)


def _global_name(value, module: ModuleOp) -> str:
    """A fresh symbol for a constant: its resource handle when it has one."""
    taken = {o.sym_name.data for o in module.ops if isinstance(o, loop.GlobalOp)}
    base = value.resource_handle.data if isinstance(value, DenseResourceAttr) else "const"
    name, n = base, 0
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def _lower_main(main: func.FuncOp, module: ModuleOp) -> None:
    """Bufferize the model's entry point: allocs, globals for constants, kernel calls."""
    block = main.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    for arg in list(block.args):
        Rewriter.replace_value_with_new_type(arg, memref_of(arg.type))
    returned = list(ret.operands)
    out_args = [block.insert_arg(memref_of(v.type), len(block.args)) for v in returned]
    for arg in out_args:
        arg.name_hint = "out"
    # A value returned once and produced by a call is written into its output buffer.
    direct = {v: out_args[i] for i, v in enumerate(returned)
              if returned.count(v) == 1 and isinstance(v.owner, func.CallOp)}
    for op in list(block.ops):
        if op.name == "graph.constant":
            value = op.properties["value"]
            name = _global_name(value, module)
            buf_type = memref_of(op.results[0].type)
            module.body.block.insert_op_before(loop.GlobalOp(name, buf_type, value), main)
            get = loop.GetGlobalOp(name, buf_type)
            Rewriter.replace_op(op, get)
        elif isinstance(op, func.CallOp):
            out_bufs = []
            for result in op.results:
                if result in direct:
                    out_bufs.append(direct[result])
                else:
                    alloc = loop.AllocOp(memref_of(result.type))
                    Rewriter.insert_op(alloc, InsertPoint.before(op))
                    out_bufs.append(alloc.results[0])
            call = func.CallOp(op.callee, [*op.arguments, *out_bufs], [])
            Rewriter.insert_op(call, InsertPoint.before(op))
            for result, buf in zip(op.results, out_bufs):
                result.replace_all_uses_with(buf)
            Rewriter.erase_op(op)
    copies: list[Operation] = []
    for i, (value, out) in enumerate(zip(ret.operands, out_args)):
        if value is not out:
            copies.extend(_copy_nest(value, out, list(out.type.get_shape()), f"copy{i}"))
    for c in copies:
        block.insert_op_before(c, ret)
    Rewriter.replace_op(ret, func.ReturnOp())
    main.function_type = func.FunctionType.from_lists([a.type for a in block.args], [])


@dataclass(frozen=True)
class ConvertTeToLoopPass(ModulePass):
    """Bufferize te kernels and @main, and lower te.compute to naive loop nests."""

    name = "convert-te-to-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if loop.is_kernel(function):
                _lower_kernel(function)
            elif not function.is_declaration:
                _lower_main(function, op)
