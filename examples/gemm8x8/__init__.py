"""A second accelerator defined only through xweave's designer API: an 8x8 int8 GEMM
unit with fill-zero and fused GEMM-add intrinsics (the "gemm8x8" of the TVM talk).

* `config.py` — the hardware configuration;
* `isa.py` — its ISA as an xDSL dialect (`gemm8x8.*` ops with verifiers and syntax);
* `simulator.py` — the simulator hook (functional and timed);
* `accelerator.py` — intrinsics declared as `te` computations, the lowering rule, and
  the registration (`register_accelerator`);
* `dense.py` — a dense layer end to end (schedule, `tensorize`, lowering, simulation);
* `model.py` — whole models: the `gemm8x8` target of `xweave.build`, its dense layers
  on the unit and the rest on the CPU.

Importing the package registers the accelerator, the target and the loader of its
layers as "gemm8x8" (`xweave-opt --load-plugin gemm8x8` does, with `examples/` on
PYTHONPATH).
"""

from .accelerator import GEMM8X8
from .dense import dense
from .model import GEMM8X8_TARGET, Gemm8x8DenseLayer

__all__ = ["GEMM8X8", "GEMM8X8_TARGET", "Gemm8x8DenseLayer", "dense"]
