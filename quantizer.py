"""`xweave quantize`: a float ONNX model -> an int8 one in ONNX's QDQ form, by
onnxruntime's static quantizer (the optional `quantize` extra).

The model is first pre-processed as onnxruntime recommends (`quant_pre_process`:
shape inference and its graph optimizations, which fold batch norms into the convs),
then `quantize_static` measures the activations' ranges on the calibration inputs and
writes QuantizeLinear/DequantizeLinear pairs: per-channel int8 weights, int8
activations, int32 biases. `xweave compile` then folds the pairs into integer kernels
(`graph-fold-qdq`).

Calibration inputs are an .npz file with one array per model input, of the input's
shape or with a leading axis of samples (as VTA's `--calibration`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import onnx

from xweave.errors import InputError, ModelError, XweaveError

EXTRA = "quantize"
"""The optional dependency group that brings onnxruntime's quantizer."""


class MissingExtraError(XweaveError):
    """An optional dependency is not installed."""


def _onnxruntime_quantization():
    # Lazy by design: onnxruntime is an optional dependency (the `quantize` extra).
    try:
        from onnxruntime import quantization
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError:
        raise MissingExtraError(
            f"quantizing needs onnxruntime, which is not installed: pip install 'xweave[{EXTRA}]'"
        ) from None
    return quantization, quant_pre_process


def _input_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    initializers = {t.name for t in model.graph.initializer}
    shapes = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            raise ModelError(f"input '{value.name}' has a symbolic shape; quantizing needs "
                             "static input shapes")
        shapes[value.name] = tuple(d.dim_value for d in dims)
    return shapes


def calibration_samples(source, inputs: Mapping[str, tuple[tuple[int, ...], object]]
                        ) -> list[dict[str, np.ndarray]]:
    """Calibration samples from an .npz path, a {name: array} dict or a list of dicts,
    for model inputs {name: (shape, dtype)}: per input, one array of its shape or
    several stacked along a leading axis, converted to its dtype. (VTA's calibration
    reads them the same way: `passes.quantize.load_samples`.)"""
    if isinstance(source, (str, Path)):
        try:
            with np.load(source) as npz:
                source = {k: npz[k] for k in npz.files}
        except FileNotFoundError:
            raise
        except (ValueError, OSError) as e:
            raise InputError(f"{source}: cannot read calibration inputs as .npz ({e})") from None
    samples = [source] if isinstance(source, Mapping) else list(source)
    out: list[dict[str, np.ndarray]] = []
    for sample in samples:
        missing = [name for name in inputs if name not in sample]
        if missing:
            raise InputError("calibration inputs: missing input(s) " + ", ".join(
                f"'{name}' (expected shape {list(inputs[name][0])})" for name in missing))
        count = None
        arrays = {}
        for name, (shape, dtype) in inputs.items():
            a = np.asarray(sample[name])
            if tuple(a.shape) == shape:
                a = a[None]
            elif tuple(a.shape[1:]) != shape:
                raise InputError(
                    f"calibration input '{name}': expected shape {list(shape)} "
                    f"(or [S, {', '.join(map(str, shape))}] for S samples), got {list(a.shape)}")
            if count is not None and a.shape[0] != count:
                raise InputError("calibration inputs hold different numbers of samples")
            count = a.shape[0]
            arrays[name] = a.astype(dtype, copy=False)
        out.extend({k: v[i] for k, v in arrays.items()} for i in range(count or 0))
    if not out:
        raise InputError("calibration inputs: no samples")
    return out


def quantize_model(model: str | Path, calibration, output: str | Path, *,
                   per_channel: bool = True, preprocess: bool = True) -> Path:
    """Write the QDQ int8 form of ONNX `model` to `output` (see the module docstring);
    `calibration`: an .npz path or {input name: array}. Returns `output`."""
    quantization, quant_pre_process = _onnxruntime_quantization()
    try:
        loaded = onnx.load(str(model))
    except FileNotFoundError:
        raise
    except Exception as e:  # a protobuf decode error names nothing useful
        raise ModelError(f"{model}: cannot read an ONNX model ({type(e).__name__})") from None
    samples = calibration_samples(
        calibration, {name: (shape, np.float32) for name, shape in _input_shapes(loaded).items()})

    class _Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self._samples: Iterator[dict[str, np.ndarray]] = iter(samples)

        def get_next(self):
            return next(self._samples, None)

    output = Path(output)
    with tempfile.TemporaryDirectory(prefix="xweave-quantize-") as tmp:
        source = Path(model)
        if preprocess:
            source = Path(tmp) / "preprocessed.onnx"
            quant_pre_process(str(model), str(source), skip_symbolic_shape=True)
        partial = output.with_name(output.name + ".partial")
        quantization.quantize_static(str(source), str(partial), _Reader(),
                                     quant_format=quantization.QuantFormat.QDQ,
                                     per_channel=per_channel)
        partial.replace(output)  # nothing half-written is left under the output's name
    return output


__all__ = ["EXTRA", "MissingExtraError", "calibration_samples", "quantize_model"]
