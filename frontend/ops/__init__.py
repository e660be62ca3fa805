"""The converters of ONNX operators, by family; importing this package declares them
all in `xweave.frontend.registry.OPS`."""

from xweave.frontend.ops import dense, elementwise, import_time, nn, quantize, reduce, shape

__all__ = ["dense", "elementwise", "import_time", "nn", "quantize", "reduce", "shape"]
