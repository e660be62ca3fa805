"""A model split between the CPU and an accelerator: run, export, load.

A `HeteroModule` executes the steps of an offload plan (`accel/offload.py`; compiled by
`pipeline.compile_model`) in order over a table of named tensors: a CPU step is a
`CompiledModule`, an accelerator step is a layer object of the accelerator's:

* `run(x) -> (output, report)`: `report` is the simulator's or device's account of the
  run (`total_cycles`, `compute_utilization`, and `seconds` if it knows its clock), or
  None;
* `name`, `describe() -> str`: for summaries and reports;
* `to_json() -> dict`, `arrays() -> {name: array}`: what an export keeps of it;
* the class's `from_json(description, arrays)` rebuilds it.

The reports of the last run are kept per layer (`layer_reports`).

An exported hetero module is the usual single zip file (`manifest.json` with
`"target": "<accelerator>"`), holding each CPU segment's object code and parameters and
each accelerator layer's description and arrays; `xweave.load_module` reads it back
without recompiling the CPU code (the layer class registered for the accelerator,
`register_layer_loader`, rebuilds the layers).
"""

from __future__ import annotations

import io
import os
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xweave import plugins
from xweave.errors import ModelError, XweaveError
from xweave.runtime.files import write_zip_atomically
from xweave.runtime.module import (
    FORMAT_VERSION,
    READ_VERSIONS,
    CompiledModule,
    TensorSpec,
    feeds_and_outputs,
    load_compiled,
    read_module_file,
)

_LAYER_LOADERS: plugins.Registry[Any] = plugins.Registry("accelerator target", ModelError)
"""Accelerator name -> the class whose `from_json(description, arrays)` rebuilds one of
its layers from an exported module (`register_layer_loader`)."""


def register_layer_loader(accelerator: str, layer_class: Any) -> None:
    """Let `xweave.load_module` rebuild the layers of modules for `accelerator`."""
    _LAYER_LOADERS.register(accelerator, layer_class, replace=True)


@dataclass
class CpuStep:
    """A CPU segment: a compiled module reading and writing named tensors."""

    module: CompiledModule
    inputs: list[str]
    outputs: list[str]


@dataclass
class AcceleratorStep:
    """An offloaded layer: `layer.run(x) -> (y, report)`."""

    layer: Any
    input: str
    output: str


@dataclass(frozen=True)
class LayerReport:
    """What one offloaded layer did in the last run."""

    name: str
    description: str
    report: Any
    """The accelerator's report (a VTA `SimReport`), or None if it gives none."""

    def line(self) -> str:
        r = self.report
        if r is None:
            return f"{self.name:<16} {self.description}: no simulator report"
        return (f"{self.name:<16} {r.total_cycles:>10} cycles  compute util. "
                f"{r.compute_utilization:6.1%}  ({self.description})")


@dataclass(eq=False, repr=False)
class HeteroModule:
    """A model whose conv2d/dense layers run on an accelerator and the rest on the CPU."""

    steps: list[CpuStep | AcceleratorStep]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    input_keys: list[str]
    """The plan's name of each model input's tensor."""
    output_keys: list[str]
    """The plan's name of each model output's tensor."""
    accelerator: str
    layer_reports: list[LayerReport] = field(default_factory=list, init=False)
    """What each offloaded layer did in the last run."""

    @property
    def cpu_modules(self) -> list[CompiledModule]:
        """The compiled CPU segments (e.g. to set their threads)."""
        return [step.module for step in self.steps if isinstance(step, CpuStep)]

    # --- running -----------------------------------------------------------------------

    def run(self, *args, **inputs: np.ndarray) -> list[np.ndarray]:
        """Run the model, called as `CompiledModule.run` is. The accelerator's reports
        of this run are in `layer_reports` afterwards."""
        feeds, chosen = feeds_and_outputs(args, inputs, self.outputs)
        outputs = self.run_traced(dict(feeds))[0]
        return outputs if chosen is None else [outputs[i] for i in chosen]

    def run_traced(self, inputs: dict[str, np.ndarray]
                   ) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        """`run`, also returning every tensor crossing a step boundary, by plan name."""
        # The same checks and messages as a CPU module (it only reads `self.inputs`).
        arrays = CompiledModule._check_inputs(self, inputs)  # pyright: ignore[reportArgumentType]
        env: dict[str, np.ndarray] = dict(zip(self.input_keys, arrays))
        reports = []
        for step in self.steps:
            if isinstance(step, CpuStep):
                results = step.module.run(**{k: env[k] for k in step.inputs})
                env.update(zip(step.outputs, results))
            else:
                y, report = step.layer.run(env[step.input])
                env[step.output] = np.ascontiguousarray(y)
                reports.append(LayerReport(step.layer.name, step.layer.describe(), report))
        self.layer_reports = reports
        return [np.array(env[k]) for k in self.output_keys], env

    def benchmark(self, inputs: dict[str, np.ndarray], repeat: int = 10,
                  number: int = 1) -> np.ndarray:
        """Host seconds per run (CPU segments plus the accelerator *simulation*; simulated
        accelerator time is in `layer_reports`)."""
        self.run(**inputs)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                self.run(**inputs)
            times.append((time.perf_counter() - start) / number)
        return np.array(times)

    def profile(self) -> str:
        """Simulated cycles and compute utilization of each offloaded layer in the last run."""
        if not self.layer_reports:
            return "no accelerator layer ran"
        lines = [r.line() for r in self.layer_reports]
        known = [r.report for r in self.layer_reports if r.report is not None]
        if known:
            cycles = sum(r.total_cycles for r in known)
            busy = sum(r.compute_utilization * r.total_cycles for r in known)
            timed = all(hasattr(r, "seconds") for r in known)  # a report may count cycles only
            seconds = sum(r.seconds for r in known) if timed else 0.0
            clock = f" at {cycles / seconds / 1e6:g} MHz" if seconds else ""
            lines.append(f"{'total':<16} {cycles:>10} cycles  compute util. "
                         f"{busy / cycles if cycles else 0:6.1%}"
                         + (f"  ({seconds * 1e3:.3f} ms{clock})" if timed else ""))
        return "\n".join(lines)

    # --- export / load -------------------------------------------------------------------

    def export(self, path: str | os.PathLike) -> None:
        """Write one file that `xweave.load_module` reads (atomically, as CompiledModule)."""
        path = Path(path)
        files: dict[str, bytes] = {}
        steps = []
        for i, step in enumerate(self.steps):
            if isinstance(step, CpuStep):
                files[f"cpu{i}.xwm"] = _exported_bytes(step.module)
                steps.append({"kind": "cpu", "module": f"cpu{i}.xwm",
                              "inputs": step.inputs, "outputs": step.outputs})
            else:
                arrays = io.BytesIO()
                np.savez(arrays, **step.layer.arrays())
                files[f"layer{i}.npz"] = arrays.getvalue()
                steps.append({"kind": "accelerator", "layer": step.layer.to_json(),
                              "arrays": f"layer{i}.npz", "input": step.input,
                              "output": step.output})
        manifest = {
            "format": "xweave-module",
            "version": FORMAT_VERSION,
            "target": self.accelerator,
            "inputs": [s.to_json() for s in self.inputs],
            "outputs": [s.to_json() for s in self.outputs],
            "input_keys": self.input_keys,
            "output_keys": self.output_keys,
            "steps": steps,
        }
        write_zip_atomically(path, manifest, files)

    def export_library(self, path: str | os.PathLike, cc: str | None = None) -> None:
        """Not possible: a shared library holds CPU code only (its C runtime does not
        drive an accelerator)."""
        raise XweaveError(f"{path}: a module for target '{self.accelerator}' cannot be "
                          "exported as a shared library (only CPU builds, target llvm, can)")


def _exported_bytes(module: CompiledModule) -> bytes:
    """A CPU segment exported as `CompiledModule.export` writes it (nested in ours)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "segment.xwm"
        module.export(path)
        return path.read_bytes()


def _load_bytes(data: bytes) -> CompiledModule:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "segment.xwm"
        path.write_bytes(data)
        zf, manifest = read_module_file(path)
        with zf:
            return load_compiled(path, zf, manifest)


def _npz(zf: zipfile.ZipFile, name: str) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(zf.read(name))) as npz:
        return {k: npz[k] for k in npz.files}


def load_hetero(path: Path, zf: zipfile.ZipFile, manifest: dict) -> HeteroModule:
    """Rebuild a `HeteroModule` from an opened export (see `runtime.module.load_module`)."""
    accelerator = manifest["target"]
    if not isinstance(accelerator, str):
        raise ModelError(f"{path}: manifest field 'target': expected a string, "
                         f"got {accelerator!r:.60}")
    if manifest.get("format") != "xweave-module" or manifest.get("version") not in READ_VERSIONS:
        raise ModelError(f"{path}: unsupported module format {manifest.get('format')!r} "
                         f"version {manifest.get('version')!r}")
    try:
        layer_class = _LAYER_LOADERS.get(accelerator)
    except ModelError as e:
        raise ModelError(f"{path}: {e}") from None
    try:
        steps: list[CpuStep | AcceleratorStep] = []
        for step in manifest["steps"]:
            if step["kind"] == "cpu":
                compiled = _load_bytes(zf.read(step["module"]))
                steps.append(CpuStep(compiled, step["inputs"], step["outputs"]))
            else:
                layer = layer_class.from_json(step["layer"], _npz(zf, step["arrays"]))
                steps.append(AcceleratorStep(layer, step["input"], step["output"]))
        return HeteroModule(
            steps, [TensorSpec.from_json(d) for d in manifest["inputs"]],
            [TensorSpec.from_json(d) for d in manifest["outputs"]],
            manifest["input_keys"], manifest["output_keys"], accelerator)
    except (KeyError, TypeError, ValueError, zipfile.BadZipFile) as e:
        raise ModelError(f"{path}: malformed {accelerator} module ({e!r})") from None
