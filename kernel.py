"""Custom operators: tensor expressions built into a function called on numpy arrays.

```python
import numpy as np
from xweave import te, build_kernel

A = te.placeholder((64, 32), "float32", name="A")
B = te.placeholder((32, 48), "float32", name="B")
k = te.reduce_axis(32, name="k")
C = te.compute((64, 48), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
matmul = build_kernel("matmul", [A, B], [C],
                      schedule="loop-split{loop=matmul.j factor=8},loop-vectorize{loop=matmul.j.inner}")
c = matmul(np.ones((64, 32), np.float32), np.ones((32, 48), np.float32))
```

The schedule is a pipeline of loop rewrites (the same text `xweave-opt -p` takes),
or `"default"` for the template's default schedule (what `xweave.build` uses).
As in a model, the kernel's top-level temporaries (packed operands, padded inputs)
live in an arena (`plan-memory`) passed to the code as its last argument, taken from a
pool of the `Kernel` (allocated once, not on every call; one more per call in flight).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from xweave import te
from xweave.context import make_context
from xweave.errors import InputError
from xweave.lowering.te_to_loop import ConvertTeToLoopPass
from xweave.pipeline import CompiledKernel, compile_kernel
from xweave.registry import all_passes
from xweave.runtime.jit import data_address
from xweave.runtime.kernel import LoadedKernel
from xweave.target import TargetError, as_target, set_target


def lower_kernel_to_loop(name: str, inputs: list[te.Tensor], outputs: list[te.Tensor]) -> ModuleOp:
    """A module holding one destination-passing loop kernel for the given tensors."""
    module = ModuleOp([te.create_kernel(name, inputs, outputs)])
    ConvertTeToLoopPass().apply(make_context(), module)
    module.verify()
    return module


def apply_schedule(module: ModuleOp, schedule: str) -> None:
    """Apply a pipeline of loop rewrites (xweave-opt's `-p` syntax) to `module`;
    `"default"` applies each kernel's default schedule."""
    if schedule == "default":
        schedule = "schedule-kernels"
    if schedule.strip():
        PassPipeline.parse_spec(all_passes(), schedule).apply(make_context(), module)
        module.verify()


class Kernel:
    """A compiled custom operator: `kernel(*inputs)` returns its outputs as numpy arrays.

    Its temporaries live in an arena per call in flight (`arena`), so one `Kernel` may
    be called from several threads at once."""

    def __init__(self, inputs: list[te.Tensor], outputs: list[te.Tensor], loop_ir: str,
                 compiled: CompiledKernel):
        self.name = compiled.name
        self.input_specs = [(t.shape, np.dtype(t.dtype)) for t in inputs]
        self.output_specs = [(t.shape, np.dtype(t.dtype)) for t in outputs]
        self.loop_ir = loop_ir
        self._compiled = compiled.compiled
        self._loaded = LoadedKernel(compiled.compiled.object_bytes, compiled.name,
                                    len(inputs) + len(outputs), compiled.params,
                                    compiled.arena_bytes)

    @property
    def arena(self) -> np.ndarray | None:
        """The memory of the temporaries of an idle call (None: the kernel has none)."""
        pool = self._loaded.pool
        if not pool.sizes:
            return None
        state = pool.take()
        pool.give(state)
        return state.buffers[0]

    @property
    def llvm_ir(self) -> str:
        return self._compiled.llvm_ir

    @property
    def assembly(self) -> str:
        return self._compiled.assembly

    def __call__(self, *arrays: np.ndarray, out: list[np.ndarray] | None = None):
        if len(arrays) != len(self.input_specs):
            raise InputError(f"{self.name}: expected {len(self.input_specs)} inputs, got {len(arrays)}")
        inputs = []  # (kept alive through the call: a copy if not contiguous)
        for i, (array, (shape, dtype)) in enumerate(zip(arrays, self.input_specs)):
            if array.shape != tuple(shape) or array.dtype != dtype:
                raise InputError(f"{self.name}: input {i}: expected {list(shape)} {dtype}, "
                                 f"got {list(array.shape)} {array.dtype}")
            inputs.append(np.ascontiguousarray(array))
        if out is None:
            outputs = [np.empty(s, d) for s, d in self.output_specs]
        else:
            outputs = list(out)
            if len(outputs) != len(self.output_specs):
                raise InputError(f"{self.name}: expected {len(self.output_specs)} output "
                                 f"arrays in out=, got {len(outputs)}")
            for i, (array, (shape, dtype)) in enumerate(zip(outputs, self.output_specs)):
                if (not isinstance(array, np.ndarray) or array.shape != tuple(shape)
                        or array.dtype != dtype or not array.flags.c_contiguous
                        or not array.flags.writeable):
                    got = (f"{list(array.shape)} {array.dtype}" if isinstance(array, np.ndarray)
                           else type(array).__name__)
                    raise InputError(f"{self.name}: out[{i}]: expected a writable C-contiguous "
                                     f"{list(shape)} {dtype} array, got {got}")
        self._loaded(*[data_address(a) for a in (*inputs, *outputs)])
        return outputs[0] if len(outputs) == 1 else outputs


def build_kernel(name: str, inputs: list[te.Tensor], outputs: list[te.Tensor],
                 schedule: str = "default", target=None) -> Kernel:
    """Compile the computation of `outputs` from `inputs` into a callable `Kernel`, for
    `target` (a CPU target as `xweave.build` takes it; default: `XWEAVE_TARGET`, else
    the host)."""
    resolved = as_target(target)
    if not resolved.is_cpu:
        raise TargetError(f"build_kernel compiles for CPU targets (llvm ...), not '{resolved}'")
    module = lower_kernel_to_loop(name, inputs, outputs)
    set_target(module, resolved)
    apply_schedule(module, schedule)
    loop_ir = str(module)
    kernel_func = next(op for op in module.ops if isinstance(op, func.FuncOp))
    assert kernel_func.sym_name.data == name
    return Kernel(inputs, outputs, loop_ir, compile_kernel(module, name))
