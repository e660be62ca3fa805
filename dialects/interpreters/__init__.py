"""Reference semantics of every stage, through xDSL's interpreter framework.

Values are numpy arrays (tensors and buffers) and Python/numpy scalars. Any stage of
the pipeline (graph, te, loop) can be run with `interpret` and compared with the
stage before.
"""

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter

from xweave.dialects.interpreters.graph import GraphFunctions


def make_interpreter(module: ModuleOp) -> Interpreter:
    """An interpreter knowing arith, func, scf and every xweave dialect."""
    # Imported when an interpreter is made, not with this package: importing any of xDSL's
    # interpreters imports all of them (riscv, linalg, pdl, ...: 0.45 s of every compile,
    # whose constant folding needs `graph_interpreter` alone); the te and loop ones use them.
    from xdsl.interpreters import arith, builtin, func, scf

    from xweave.dialects.interpreters.loop import LoopFunctions, LoopVectorMathFunctions
    from xweave.dialects.interpreters.te import TeFunctions

    interpreter = Interpreter(module)
    for impls in (
        arith.ArithFunctions(),
        builtin.BuiltinFunctions(),
        func.FuncFunctions(),
        scf.ScfFunctions(),
    ):
        interpreter.register_implementations(impls)
    # xweave's own function sets may override upstream ones to work on numpy values.
    for impls in (GraphFunctions(), TeFunctions(), LoopFunctions(), LoopVectorMathFunctions()):
        interpreter.register_implementations(impls, override=True)
    return interpreter


def graph_interpreter(module: ModuleOp) -> Interpreter:
    """An interpreter of graph ops alone (`run_op` on one op without regions, as folding
    constants does)."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(GraphFunctions())
    return interpreter


def interpret(
    module: ModuleOp, inputs: Sequence[np.ndarray], entry: str = "main"
) -> tuple:
    """Run function `entry` of `module` on `inputs` and return its results.

    For destination-passing functions (loop stage), pass the output buffers as
    trailing inputs; they are written in place.
    """
    return tuple(make_interpreter(module).call_op(entry, tuple(inputs)))
