"""float32 exp and erf are inline polynomials (lowering/llvm_scalar.py): accuracy over the
whole float range and the special values, against float64 references."""

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import xweave


def _unary(op: str, n: int):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op, [x], [y])
    return xweave.build(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def _run(module, x):
    out = module.run(x=x)
    return out["y"] if isinstance(out, dict) else out[0]


SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-30, -1e-30, 1e-8]


@pytest.mark.parametrize("op, reference, lo, hi, rtol", [
    ("Exp", np.exp, -110.0, 90.0, 2e-7),
    ("Erf", np.vectorize(math.erf, otypes=[np.float64]), -8.0, 8.0, 4e-7),
])
def test_float32_polynomials_match_float64(op, reference, lo, hi, rtol):
    rng = np.random.default_rng(0)
    body = np.concatenate([np.linspace(lo, hi, 20000), rng.normal(0, 2, 3000),
                           rng.normal(0, 1e-3, 1000), SPECIAL])
    x = body.astype(np.float32)
    module = _unary(op, x.size)
    got = _run(module, x).astype(np.float64)
    with np.errstate(over="ignore"):
        want = reference(x.astype(np.float64))
        want32 = want.astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    got, want = got[~nan], want[~nan]
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    assert np.all(np.isinf(got) == np.isinf(want32[~nan]))
    finite = normal & np.isfinite(want32[~nan])
    rel = np.abs(got[finite] - want[finite]) / np.abs(want[finite])
    assert rel.max() < rtol, (op, x[~nan][finite][np.argmax(rel)], rel.max())
    # below the normal range: absolute error of a float32 subnormal step at most
    assert np.all(np.abs(got[~normal] - want[~normal]) <= 2 * 2.0 ** -149)
    if op == "Erf":  # odd, to the last bit (signed zeros included)
        assert np.array_equal(_run(module, -x), -_run(module, x), equal_nan=True)
