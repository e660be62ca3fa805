"""loop-fold-constant-packs: packing constant weights at compile time keeps the meaning."""

from pathlib import Path

import numpy as np
from xdsl.passes import PassPipeline

from xweave.context import make_context, parse_module
from xweave.dialects import loop
from xweave.dialects.interpreters import interpret
from xweave.passes import get_all_passes
from xweave.passes.loop_pack import pack_array

SOURCE = Path(__file__).parent / "filecheck" / "passes" / "loop-fold-constant-packs.mlir"


def run(spec: str):
    module = parse_module(SOURCE.read_text(), str(SOURCE))
    PassPipeline.parse_spec(get_all_passes(), spec).apply(make_context(), module)
    module.verify()
    x = np.array([[0.5, -2.0]], np.float32)
    out, out2 = np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32)
    interpret(module, [x, out, out2])
    return module, out, out2


def test_folded_packs_compute_the_same():
    _, want, want2 = run("loop-simplify")
    module, got, got2 = run("loop-pack{buffer=1 split_dim=0 factor=2},loop-fold-constant-packs")
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got2, want2)
    globals_ = [op for op in module.ops if isinstance(op, loop.GlobalOp)]
    assert [g.type.get_shape() for g in globals_] == [(2, 2, 2), (2, 2, 2)]
    assert not any(isinstance(op, loop.ForOp) and op.name_str.startswith("w_pack")
                   for op in module.walk())


def test_a_chain_of_packs_folds_its_first_link_and_computes_the_same():
    """Two packs of one constant argument (the second copies the first's source: a
    chain): the first folds, the second stays a packing stage on the folded layout."""
    _, want, want2 = run("loop-simplify")
    module, got, got2 = run("loop-pack{buffer=1 split_dim=1 factor=2},"
                            "loop-pack{buffer=1 split_dim=0 factor=2},loop-fold-constant-packs")
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got2, want2)
    assert [g.type.get_shape() for g in module.ops if isinstance(g, loop.GlobalOp)] == [(2, 2, 2)] * 2
    assert any(isinstance(op, loop.ForOp) and op.name_str.startswith("w_pack") for op in module.walk())


def test_pack_array_matches_the_packing_stage_layout():
    a = np.arange(5 * 3 * 2, dtype=np.float32).reshape(5, 3, 2)
    # split dim 0 by 4 and dim 2 by 2, then put the dim-0 lanes first
    packed = pack_array(a, [(0, 4), (2, 2)], [3, 0, 1, 2, 4])
    assert packed.shape == (4, 2, 3, 1, 2)
    for i in range(5):
        for j in range(3):
            for k in range(2):
                assert packed[i % 4, i // 4, j, k // 2, k % 2] == a[i, j, k]
    assert packed[1, 1, 0, 0, 0] == 0  # row 5 of 8 is padding
