"""A second accelerator defined only through xweave's designer API: an 8x8 int8 GEMM
unit with fill-zero and fused GEMM-add intrinsics (the "gemm8x8" of the TVM talk).

* `config.py` — the hardware configuration;
* `isa.py` — its ISA as an xDSL dialect (`gemm8x8.*` ops with verifiers and syntax);
* `simulator.py` — the simulator hook (functional and timed);
* `accelerator.py` — intrinsics declared as `te` computations, the lowering rule, and
  the registration (`register_accelerator`);
* `dense.py` — a dense layer end to end (schedule, `tensorize`, lowering, simulation).

Importing the package registers the accelerator as "gemm8x8" (`xweave-opt
--load-plugin gemm8x8` does, with `examples/` on PYTHONPATH).
"""

from .accelerator import GEMM8X8
from .dense import dense

__all__ = ["GEMM8X8", "dense"]
