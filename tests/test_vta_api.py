"""The designer API: registration, intrinsic lookup, and a tiny second accelerator whose
lowering rule and simulator hook are written only against `xweave.accel.api`."""

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Dialect, Region
from xdsl.ir.affine import AffineExpr, AffineMap

from xweave.accel.api import (
    Accelerator,
    AcceleratorError,
    LoweredProgram,
    TensorIntrinsic,
    find_intrinsic,
    get_accelerator,
    register_accelerator,
    unrolled_calls,
)
from xweave.accel.intrinsics import copy_decl, gemm_decl
from xweave.dialects import loop
from xweave.passes.tensorize import TensorizeError, tensorize_loop


def test_vta_is_registered_through_the_api():
    acc = get_accelerator("vta")
    assert acc.stages == ("load", "compute", "store")
    _, gemm = find_intrinsic("vta.gemm")
    assert gemm.stage == "compute" and gemm.accumulate
    assert gemm.operand_names == ("acc", "inp", "wgt")
    assert gemm.output.shape == (1, 16) and gemm.output.stage.reducer == "sum"


def test_lookup_errors():
    with pytest.raises(AcceleratorError, match="unknown accelerator 'nope'"):
        get_accelerator("nope")
    with pytest.raises(AcceleratorError, match="must be qualified"):
        find_intrinsic("gemm")
    with pytest.raises(AcceleratorError, match="has no intrinsic 'vta.conv'"):
        find_intrinsic("vta.conv")


def _toy() -> Accelerator:
    """A 4x4 'matvec' unit: one intrinsic, a trace-recording lowering, a numpy simulator."""
    out, (a, b) = gemm_decl(1, 4, 4, names=("y", "x", "m"))

    def lower(call, emitter):
        emitter.append(("mv", call.offsets[0][0], call.offsets[1][0], call.offsets[2][0]))

    intr = TensorIntrinsic("toy.mv", out, (a, b), {"y": "toy.acc", "x": "toy.buf", "m": "toy.buf"},
                           "core", lower, accumulate=True)
    cp, (src,) = copy_decl((1, 4), "int8")

    def lower_rule(f, acc, config=None):
        trace: list = []
        for ev in unrolled_calls(f.body.block.ops, acc):
            ev.intrinsic.lower(ev, trace)
        return LoweredProgram(program=None, info={"trace": trace})  # type: ignore[arg-type]

    return Accelerator(
        name="toy", config={"block": 4}, dialect=Dialect("toy", [], []),
        intrinsics={"toy.mv": intr}, scopes={"toy.acc": "accumulators", "toy.buf": "operands"},
        stages=("core",), lower=lower_rule, simulate=lambda prog, dram: (None, None),
    )


def _mv_kernel():
    i8, i32 = IntegerType(8), IntegerType(32)
    acc_t = MemRefType(i32, [8, 1, 4], memory_space=loop.ScopeAttr("toy.acc"))
    buf_t = MemRefType(i8, [8, 4, 4], memory_space=loop.ScopeAttr("toy.buf"))
    x_t = MemRefType(i8, [8, 1, 4], memory_space=loop.ScopeAttr("toy.buf"))
    block = Block(arg_types=[acc_t, x_t, buf_t])
    y, x, m = block.args
    tile = loop.ForOp(0, 2, name="t")
    block.add_op(tile)
    nest = [loop.ForOp(0, 1, name="mv.b"), loop.ForOp(0, 4, name="mv.o"), loop.ForOp(0, 4, name="mv.k")]
    tile.add_ops([nest[0]])
    nest[0].add_ops([nest[1]])
    nest[1].add_ops([nest[2]])
    t, b, o, k = tile.induction_var, *(lp.induction_var for lp in nest)
    d = AffineExpr.dimension
    ld_y = loop.LoadOp(y, [t, b, o], AffineMap(3, 0, (d(0) * 2, d(1), d(2))))
    ld_x = loop.LoadOp(x, [t, b, k], AffineMap(3, 0, (d(0), d(1), d(2))))
    ld_m = loop.LoadOp(m, [t, o, k], AffineMap(3, 0, (d(0) + 1, d(1), d(2))))
    from xdsl.dialects import arith

    xe, me = arith.ExtSIOp(ld_x, i32), arith.ExtSIOp(ld_m, i32)
    prod = arith.MuliOp(xe, me)
    add = arith.AddiOp(ld_y, prod)
    st = loop.StoreOp(add, y, [t, b, o], AffineMap(3, 0, (d(0) * 2, d(1), d(2))))
    nest[2].add_ops([ld_y, ld_x, ld_m, xe, me, prod, add, st])
    block.add_op(func.ReturnOp())
    f = func.FuncOp("mv", ([acc_t, x_t, buf_t], []), Region(block))
    return ModuleOp([f]), f, nest[0]


def test_a_second_accelerator_through_the_api():
    acc = register_accelerator(_toy(), replace=True)
    assert find_intrinsic("toy.mv")[0] is acc
    module, f, top = _mv_kernel()
    module.verify()
    call = tensorize_loop(top, acc.intrinsic("mv"))
    module.verify()
    assert call.callee_name == "toy.mv"
    lowered = acc.lower(f, acc)
    # y starts at t*2, x at t, m at t+1: one call per tile
    assert lowered.info["trace"] == [("mv", 0, 0, 1), ("mv", 2, 1, 2)]


def test_a_lowering_rule_folds_loops_it_can_emit_as_hardware_loops():
    """`fold` is asked at every loop.for first; a loop it takes is not unrolled."""
    acc = register_accelerator(_toy(), replace=True)
    _, f, top = _mv_kernel()
    tensorize_loop(top, acc.intrinsic("mv"))  # leaves the tile loop around one call
    asked = []

    def fold(for_op, env):
        asked.append(for_op.name_str)
        return taken

    taken = False
    assert len(list(unrolled_calls(f.body.block.ops, acc, fold=fold))) == 2
    taken = True
    assert list(unrolled_calls(f.body.block.ops, acc, fold=fold)) == []
    assert asked == ["t", "t"]


def test_unexpected_ops_in_a_kernel_are_an_error():
    acc = register_accelerator(_toy(), replace=True)
    _, f, _ = _mv_kernel()  # not tensorized: loads and arith remain
    with pytest.raises(AcceleratorError, match="toy lowering: unexpected op loop.load"):
        list(unrolled_calls(f.body.block.ops, acc))


def test_tensorize_rejects_a_different_computation():
    acc = register_accelerator(_toy(), replace=True)
    _, _, top = _mv_kernel()
    # Shrink the reduction loop: no longer the declared 4-wide dot product.
    inner = top.body.block.first_op.body.block.first_op
    inner.properties["ub"] = loop.i64_attr(3)
    with pytest.raises(TensorizeError, match="axis 'k' needs 0 to 4"):
        tensorize_loop(top, acc.intrinsic("mv"))


def test_accelerator_validation():
    out, (a, b) = gemm_decl(1, 4, 4)
    intr = TensorIntrinsic("x.mv", out, (a, b), {"acc": "x.a", "inp": "x.a", "wgt": "x.a"}, "core", lambda c, e: None)
    with pytest.raises(AcceleratorError, match="must be named 'y.<name>'"):
        Accelerator("y", None, Dialect("y", [], []), {"x.mv": intr}, {"x.a": ""}, ("core",), None, None)  # type: ignore[arg-type]
    with pytest.raises(AcceleratorError, match="no memory scope"):
        TensorIntrinsic("x.mv", out, (a, b), {"acc": "x.a"}, "core", lambda c, e: None)
