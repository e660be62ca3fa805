"""Weights are bytes held by the attributes that name them: verifying costs nothing per
byte, printing and parsing round-trip them, and a dropped module frees its weights."""

import gc
import weakref

import numpy as np
import pytest
from helpers import onnx_model
from onnx import helper
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp, TensorType, f32
from xdsl.utils.exceptions import VerifyException

import xweave
from xweave.context import parse_module, print_module
from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.resources import Blob, attach, blob_of, resource_store

RNG = np.random.default_rng(0)


class _Untouchable(Blob):
    """A blob that claims `nbytes` and fails the test if anything reads its data."""

    __slots__ = ()

    @property
    def data(self):  # pyright: ignore[reportIncompatibleVariableOverride]
        raise AssertionError("the weights were read")


def _untouchable(nbytes: int) -> Blob:
    blob = object.__new__(_Untouchable)
    for slot, value in (("alignment", 4), ("nbytes", nbytes), ("elided", False)):
        getattr(Blob, slot).__set__(blob, value)
    return blob


@pytest.mark.parametrize("claimed", [100 * 2**20, 100 * 2**20 - 4])
def test_verifying_a_constant_reads_none_of_its_bytes(claimed):
    typ = TensorType(f32, [25 * 2**20])  # 100 MB of f32
    attr = attach(DenseResourceAttr.from_params("big_weights", typ), _untouchable(claimed))
    op = graph.ConstantOp(attr)
    if claimed == 100 * 2**20:
        op.verify()
    else:
        with pytest.raises(VerifyException, match="holds 104857596 bytes but"):
            op.verify()


def _conv_model(seed: int, channels: int = 64):
    w = np.random.default_rng(seed).standard_normal((channels, 16, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    return onnx_model(nodes, [("x", [1, 16, 8, 8])], ["y"], {"w": w}), w


def _blob_refs(module: ModuleOp) -> list[weakref.ref]:
    return [weakref.ref(blob_of(op.value)) for op in module.walk()
            if isinstance(op, graph.ConstantOp) and isinstance(op.value, DenseResourceAttr)]


def test_a_dropped_module_frees_its_weights():
    model, w = _conv_model(1)
    module = xweave.load_onnx(model)
    refs = _blob_refs(module)
    assert len(refs) == 1
    (const,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    np.testing.assert_array_equal(constant_value(const), w)
    copy = module.clone()  # a clone shares the weights
    del module, const
    gc.collect()
    assert refs[0]() is not None
    del copy
    gc.collect()
    assert refs[0]() is None


def test_building_many_models_keeps_only_the_weights_of_live_modules():
    store = resource_store()
    gc.collect()
    before = set(store._blobs)
    kept = []
    for seed in range(6):
        model, w = _conv_model(100 + seed)
        built = xweave.build(model, target="llvm -mcpu=znver3", cache=False)
        x = RNG.standard_normal((1, 16, 8, 8)).astype(np.float32)
        if built.runnable:
            (y,) = built.run(x=x)
            assert y.shape == (1, 64, 8, 8)
        if seed % 3 == 0:
            kept.append(built)  # modules alive keep their parameters, not IR weights
        del built
    gc.collect()
    assert set(store._blobs) - before == set()
    for built in kept:
        assert sum(p.nbytes for p in built.params.values()) >= 64 * 16 * 9 * 4


def test_printed_weights_parse_back_and_outlive_the_copy():
    model, w = _conv_model(7)
    module = xweave.load_onnx(model)
    text = print_module(module)
    parsed = parse_module(text)
    (const,) = [op for op in parsed.walk() if isinstance(op, graph.ConstantOp)]
    np.testing.assert_array_equal(constant_value(const), w)
    # The parsed copy shares the bytes it holds in common with the original ...
    assert blob_of(const.value) is _blob_refs(module)[0]()
    del parsed, const
    gc.collect()
    # ... and the original prints them after the copy is gone.
    assert print_module(module) == text


def test_equal_handles_with_other_bytes_keep_each_modules_weights():
    typ = TensorType(f32, [32])
    a = np.arange(32, dtype=np.float32)
    first = ModuleOp([graph.ConstantOp(attach(DenseResourceAttr.from_params("same", typ),
                                              Blob.of_array(a)))])
    resource_store().register("same", blob_of(first.ops.first.value))
    text = print_module(first)
    other = parse_module(text.replace(Blob.of_array(a).hex(), Blob.of_array(a + 1).hex()))
    (const,) = list(other.ops)
    np.testing.assert_array_equal(constant_value(const), a + 1)
    np.testing.assert_array_equal(constant_value(first.ops.first), a)
    del other, const
    gc.collect()
    assert print_module(first) == text
