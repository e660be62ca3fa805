"""A model at any stage, loaded and compiled: the driver's work when the compile cache
holds no module for a build (`driver.build`), and `xweave compile --compile-to`'s."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from xweave.context import parse_module
from xweave.errors import XweaveError
from xweave.frontend.onnx import load_onnx
from xweave.options import CompileOptions
from xweave.pipeline import INPUT, compile_model, lower, stage_names, stage_of, start_in
from xweave.runtime.hetero import HeteroModule
from xweave.runtime.module import CompiledModule
from xweave.schedules.tuned import tuned_schedules
from xweave.timing import scope as timing_scope


def load_model(module_or_path, input_shapes: dict[str, tuple[int, ...]] | None = None
               ) -> ModuleOp:
    """The module of a model: a copy of a `ModuleOp`, a `.mlir` file (of any stage, see
    `load_staged_model`), or an ONNX file or `onnx.ModelProto` (imported)."""
    if isinstance(module_or_path, ModuleOp):
        return module_or_path.clone()
    if isinstance(module_or_path, (str, os.PathLike)):
        path = Path(module_or_path)
        if path.suffix == ".mlir":
            return parse_module(path.read_bytes(), str(path))
    return load_onnx(module_or_path, input_shapes=input_shapes)


def load_staged_model(module_or_path, input_shapes: dict[str, tuple[int, ...]] | None = None
                      ) -> tuple[ModuleOp, str]:
    """The module of a model (`load_model`) and the stage of the pipeline it is at
    (`pipeline.stage_of`; an ONNX model: `pipeline.INPUT`)."""
    module = load_model(module_or_path, input_shapes)
    if isinstance(module_or_path, ModuleOp):
        return module, stage_of(module)
    if isinstance(module_or_path, (str, os.PathLike)) and Path(module_or_path).suffix == ".mlir":
        with open(module_or_path, "rb") as f:
            head = f.read(200).decode("utf-8", "replace")  # the dump header, a hint
        try:
            return module, stage_of(module, head)
        except XweaveError as e:
            raise XweaveError(f"{module_or_path}: {e}") from None
    return module, INPUT


def lower_model(module_or_path, options: CompileOptions, until: str,
                input_shapes: dict[str, tuple[int, ...]] | None = None, *,
                verify_each: bool | None = None) -> ModuleOp:
    """The IR of a model (as `build` takes it, at any stage) after stage `until` of the
    pipeline `options` choose (`xweave compile --compile-to`)."""
    with timing_scope("import"):
        module, stage = load_staged_model(module_or_path, input_shapes)
    start = start_in(options, stage) if stage != INPUT else None
    names = stage_names(options)
    if start is not None and until in names and names.index(until) < names.index(start):
        raise XweaveError(f"the IR is at stage '{stage}', past stage '{until}'")
    return lower(module, options, start=start, until=until, verify_each=verify_each)


def compile_fresh(module_or_path, options: CompileOptions,
                  input_shapes: dict[str, tuple[int, ...]] | None, dump_ir: Path | None,
                  elide_larger_than: int, verify_each: bool | None,
                  choose_schedules: Callable | None = None) -> CompiledModule | HeteroModule:
    """Import (or parse) a model and compile it with `options` (see `driver.build`);
    in a schedule mode other than "default", `choose_schedules` chooses the kernels'
    schedules on the loop stage (a records file, kept in `dump_ir` if given)."""
    if options.tuning_records is not None and options.target is not None \
            and options.target.is_cpu:  # a bad file fails before the work starts
        tuned_schedules(options.tuning_records, options.target, options.any_target_records)
    with timing_scope("import"):
        module, stage = load_staged_model(module_or_path, input_shapes)
    start = start_in(options, stage) if stage != INPUT else None
    if options.schedule == "default" or choose_schedules is None:
        return compile_model(module, options, dump_ir, start=start,
                             elide_larger_than=elide_larger_than, verify_each=verify_each)
    names = stage_names(options)
    if start is not None and names.index(start) >= names.index("loop"):
        raise XweaveError(f"schedule mode '{options.schedule}' chooses schedules on the "
                          f"loop stage; the IR is at stage '{stage}'")
    with tempfile.TemporaryDirectory(prefix="xweave-schedules-") as folder:
        lowered = lower(module, options, start=start, until="loop", verify_each=verify_each)
        records = choose_schedules(lowered, options, options.schedule,
                                   dump_ir if dump_ir is not None else Path(folder))
        chosen = options.replace(tuning_records=str(records) if records else None)
        return compile_model(lowered, chosen, dump_ir, start="loop",
                             elide_larger_than=elide_larger_than, verify_each=verify_each)
