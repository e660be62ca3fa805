"""Fuzzing xweave's inputs: mutated IR and malformed ONNX models, through the Python API
and the command lines; counts of crashes (an exception that is not a clear error, or a
traceback), hangs (past the time limit) and clear errors.

```sh
.venv/bin/python bench/fuzz.py --ir 1000 --onnx 300 --cli 60 --seed 0
.venv/bin/python bench/fuzz.py --smoke          # 4 + 4 + 2 cases (tests)
```

IR cases are truncations, byte flips and token swaps of the dumps `xweave compile
examples/small_cnn.onnx --dump-ir DIR` writes; each is parsed by `xweave-opt` (in this
process, through `xweave.cli.opt_main`, as the command runs it) and by
`xweave.context.parse_module`, and a sample of the graph-stage ones is compiled by
`xweave.build`. ONNX cases are built with onnx.helper from small valid models by one
(or two) mutations of each kind the importer must refuse cleanly; each is imported
with `xweave.load_onnx`, and the ones that import are compiled and run. `--cli N` also
runs N of the cases (half of each) through the installed `xweave-opt` / `xweave
compile` / `xweave run` executables, whose stderr must not contain "Traceback".

The generators are deterministic for a seed; tests/test_fuzz.py runs a few hundred
cases of each.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
TIME_LIMIT = 10.0
"""Seconds a case may take before it counts as a hang."""


# ----------------------------------------------------------------------------------
# Outcomes
# ----------------------------------------------------------------------------------


class Hang(Exception):
    """A case ran past the time limit."""


class CleanExit(Exception):
    """A command exited non-zero with a clear message (no traceback)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `Hang` in this (main) thread after `seconds`."""

    def expire(signum, frame):
        raise Hang(f"past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """What one case did: "ok", "error" (a clear one), "crash" or "hang"."""

    kind: str
    case: str
    detail: str = ""


def clear_errors() -> tuple[type[BaseException], ...]:
    """The exception types that are clear, user-facing errors."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from xweave.errors import XweaveError

    return (XweaveError, ParseError, DiagnosticException, CleanExit)


def run_case(name: str, fn: Callable[[], object], limit: float = TIME_LIMIT) -> Outcome:
    """Run `fn`: a clear error is fine, any other exception is a crash."""
    start = time.perf_counter()
    try:
        with time_limit(limit):
            fn()
    except Hang:
        return Outcome("hang", name, f"{time.perf_counter() - start:.1f} s")
    except clear_errors() as e:
        return Outcome("error", name, str(e).splitlines()[0][:200] if str(e) else "")
    except BaseException as e:  # noqa: BLE001  (that is what is counted)
        if isinstance(e, KeyboardInterrupt):
            raise
        return Outcome("crash", name, f"{type(e).__name__}: {str(e)[:300]}")
    return Outcome("ok", name)


# ----------------------------------------------------------------------------------
# Mutated IR
# ----------------------------------------------------------------------------------

_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|%[\w.$-]+|@[\w.$-]+|[\w.]+|->|\S')


def dump_ir(directory: Path) -> list[Path]:
    """The .mlir stages of examples/small_cnn.onnx, written into `directory`."""
    import xweave

    xweave.build(ROOT / "examples" / "small_cnn.onnx", dump_ir=directory)
    return sorted(directory.glob("*.mlir"))


def mutate_ir(text: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of IR text: (what was done, the result)."""
    kind = rng.choice(["truncate", "truncate-in-string", "flip", "flip-utf8", "swap",
                       "drop-line", "repeat-token", "digits"])
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return f"truncate@{cut}", text[:cut]
    if kind == "truncate-in-string":  # inside a literal: the lexer's worst case
        quotes = [m.start() for m in re.finditer(rb'"', text)]
        cut = (rng.choice(quotes) + rng.randrange(1, 64)) if quotes else rng.randrange(len(text))
        return f"truncate-in-string@{cut}", text[:cut]
    if kind in ("flip", "flip-utf8"):
        data = bytearray(text)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(128, 256) if kind == "flip-utf8" else rng.randrange(32, 127)
        return f"{kind}", bytes(data)
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if kind == "swap":
        (a0, a1), (b0, b1) = sorted(rng.sample(tokens, 2))
        return f"swap@{a0},{b0}", (text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1]
                                   + text[b1:])
    if kind == "drop-line":
        lines = text.split(b"\n")
        i = rng.randrange(len(lines))
        return f"drop-line@{i + 1}", b"\n".join(lines[:i] + lines[i + 1:])
    if kind == "repeat-token":
        s, e = rng.choice(tokens)
        return f"repeat-token@{s}", text[:e] + b" " + text[s:e] + text[e:]
    # digits: a number replaced by an extreme one
    numbers = [m for m in re.finditer(rb"(?<![\w.%#])-?\d+(?![\w.])", text)]
    if not numbers:
        return "digits-none", text
    m = rng.choice(numbers)
    value = rng.choice([b"0", b"-1", b"9223372036854775807", b"9223372036854775808",
                        b"-9223372036854775809", b"18446744073709551616", b"2147483648"])
    return f"digits@{m.start()}", text[: m.start()] + value + text[m.end():]


def ir_cases(sources: list[Path], count: int, seed: int) -> Iterator[tuple[str, Path, bytes]]:
    """(case name, source dump, mutated text), `count` of them, round-robin over sources."""
    rng = random.Random(seed)
    texts = [(p, p.read_bytes()) for p in sources]
    for i in range(count):
        path, text = texts[i % len(texts)]
        how, mutated = mutate_ir(text, rng)
        yield f"{path.name}:{how}", path, mutated


def opt_in_process(path: Path) -> tuple[int, str]:
    """`xweave-opt PATH` in this process: (exit code, stderr)."""
    from xweave.cli import opt_main

    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            opt_main([str(path)])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, err.getvalue()


def check_opt(path: Path) -> None:
    """xweave-opt on one file: a clear error (one message, no traceback) or output."""
    code, err = opt_in_process(path)
    if code != 0 and (not err.strip() or "Traceback" in err):
        raise AssertionError(f"exit {code} with stderr {err[:300]!r}")
    if code != 0:
        raise CleanExit(err.strip().splitlines()[0])


def fuzz_ir(sources: list[Path], count: int, seed: int, workdir: Path,
            compile_every: int = 10) -> list[Outcome]:
    """Mutated IR through xweave-opt and parse_module; every `compile_every`-th
    graph-stage case through `xweave.build` too."""
    import xweave
    from xweave.context import parse_module

    outcomes = []
    for i, (name, source, text) in enumerate(ir_cases(sources, count, seed)):
        path = workdir / f"case{i}.mlir"
        path.write_bytes(text)
        outcomes.append(run_case(f"xweave-opt {name}", lambda: check_opt(path)))
        outcomes.append(run_case(f"parse_module {name}",
                                 lambda: parse_module(text, str(path))))
        if source.name.startswith("00-graph") and i % compile_every == 0:
            outcomes.append(run_case(f"build {name}", lambda: xweave.build(path),
                                     limit=4 * TIME_LIMIT))
    return outcomes


# ----------------------------------------------------------------------------------
# Malformed ONNX
# ----------------------------------------------------------------------------------

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    g = helper.make_graph(nodes, "fuzz", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _weights(name, *shape):
    return numpy_helper.from_array(np.ones(shape, np.float32) * 0.1, name)


def base_models() -> dict[str, onnx.ModelProto]:
    """Small valid models, one per kind of operator the mutations target."""
    x = vi("x", T.FLOAT, [1, 3, 8, 8])
    y = vi("y", T.FLOAT, None)
    return {
        "conv": _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv",
                                         kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                         strides=[1, 1], dilations=[1, 1], group=1)],
                       [x], [y], [_weights("w", 4, 3, 3, 3), _weights("b", 4)]),
        "maxpool": _model([helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                                            kernel_shape=[2, 2], strides=[2, 2],
                                            pads=[0, 0, 0, 0])], [x], [y]),
        "avgpool": _model([helper.make_node("AveragePool", ["x"], ["y"], name="pool",
                                            kernel_shape=[3, 3], strides=[1, 1],
                                            auto_pad="SAME_UPPER")], [x], [y]),
        "convtranspose": _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"],
                                                  name="deconv", kernel_shape=[2, 2],
                                                  strides=[2, 2])],
                                [x], [y], [_weights("w", 3, 2, 2, 2)]),
        "gemm": _model([helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm",
                                         transB=1, alpha=1.0, beta=1.0)],
                       [vi("a", T.FLOAT, [2, 8])], [y], [_weights("w", 4, 8), _weights("c", 4)]),
        "matmul_chain": _model([helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
                                helper.make_node("Relu", ["t"], ["u"], name="relu"),
                                helper.make_node("Add", ["u", "c"], ["y"], name="add")],
                               [vi("a", T.FLOAT, [2, 8])], [y],
                               [_weights("w", 8, 4), _weights("c", 4)]),
        "reshape_concat": _model([
            helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
            helper.make_node("Concat", ["r", "r"], ["c"], name="concat", axis=1),
            helper.make_node("Softmax", ["c"], ["y"], name="softmax", axis=-1)],
            [x], [y], [numpy_helper.from_array(np.array([1, -1], np.int64), "s")]),
        "pad_slice": _model([
            helper.make_node("Pad", ["x", "p"], ["t"], name="pad", mode="constant"),
            helper.make_node("Slice", ["t", "st", "en"], ["y"], name="slice")],
            [x], [y], [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p"),
                       numpy_helper.from_array(np.array([0, 0], np.int64), "st"),
                       numpy_helper.from_array(np.array([4, 4], np.int64), "en")]),
    }


_INT_VALUES = [0, -1, -3, 1, 2, 7, 2**31, 10**6, -(2**63), 2**63 - 1]


def _set_attribute(node: onnx.NodeProto, name: str, value) -> None:
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    node.attribute.append(helper.make_attribute(name, value))


def mutate_onnx(model: onnx.ModelProto, rng: random.Random) -> str:
    """Mutate `model` in place by one malformation; returns what was done."""
    g = model.graph
    node = rng.choice(list(g.node))
    kind = rng.choice([
        "opset", "ir_version", "no-opset", "attr-int", "attr-ints", "attr-length",
        "attr-type", "auto_pad", "attr-unknown", "drop-input", "dangling", "shuffle",
        "cycle", "duplicate-output", "elem-type", "input-dims", "input-rank", "raw-data",
        "init-dims", "drop-output", "empty-name", "extra-input",
    ])
    if kind == "opset":
        model.opset_import[0].version = rng.choice([0, -3, 1, 6, 99, 10**6])
        return f"opset={model.opset_import[0].version}"
    if kind == "ir_version":
        model.ir_version = rng.choice([0, 1, 2, 999, -1])
        return f"ir_version={model.ir_version}"
    if kind == "no-opset":
        del model.opset_import[:]
        return "no opset_import"
    ints = [a for a in node.attribute if a.type in (onnx.AttributeProto.INT,
                                                     onnx.AttributeProto.INTS)]
    if kind in ("attr-int", "attr-ints", "attr-length") and ints:
        a = rng.choice(ints)
        if a.type == onnx.AttributeProto.INT:
            value = rng.choice(_INT_VALUES)
            _set_attribute(node, a.name, value)
        else:
            values = list(a.ints)
            if kind == "attr-length":
                values = values + [1] if rng.random() < 0.5 or len(values) < 2 else values[:-1]
            else:
                values[rng.randrange(len(values))] = rng.choice(_INT_VALUES)
            _set_attribute(node, a.name, values)
        return f"{node.name}.{a.name}={onnx.helper.get_attribute_value(node.attribute[-1])}"
    if kind == "attr-type" and node.attribute:
        a = rng.choice(list(node.attribute))
        _set_attribute(node, a.name, rng.choice([1.5, "text", [0.5, 2.5]]))
        return f"{node.name}.{a.name} of another type"
    if kind == "auto_pad":
        _set_attribute(node, "auto_pad", rng.choice(["BOGUS", "", "same_upper", "VALID"]))
        return f"{node.name}.auto_pad"
    if kind == "attr-unknown":
        _set_attribute(node, "bogus", 1)
        return f"{node.name}.bogus"
    if kind == "drop-input" and node.input:
        del node.input[rng.randrange(len(node.input))]
        return f"{node.name} lost an input"
    if kind == "dangling" and node.input:
        node.input[rng.randrange(len(node.input))] = "nowhere"
        return f"{node.name} reads an undefined tensor"
    if kind == "shuffle" and len(g.node) > 1:
        nodes = list(g.node)
        rng.shuffle(nodes)
        del g.node[:]
        g.node.extend(nodes)
        return "nodes shuffled"
    if kind == "cycle" and len(g.node) > 1:
        g.node[0].input[0] = g.node[-1].output[0]
        return "cycle"
    if kind == "duplicate-output" and len(g.node) > 1:
        g.node[0].output[0] = g.node[1].output[0]
        return "a tensor produced twice"
    if kind == "elem-type":
        v = rng.choice(list(g.input) + list(g.output))
        v.type.tensor_type.elem_type = rng.choice([T.UNDEFINED, T.INT8, T.DOUBLE, T.STRING, 99])
        return f"{v.name} element type {v.type.tensor_type.elem_type}"
    if kind == "input-dims" and g.input:
        dims = g.input[0].type.tensor_type.shape.dim
        # (valid but large inputs are slow to run, not malformed: at most 3000)
        dims[rng.randrange(len(dims))].dim_value = rng.choice([0, -4, 1, 2**31, 2**40, 3000])
        return f"input dims {[d.dim_value for d in dims]}"
    if kind == "input-rank" and g.input:
        dims = g.input[0].type.tensor_type.shape.dim
        if rng.random() < 0.5 and len(dims) > 1:
            dims.pop()
        else:
            dims.add().dim_value = 2
        return f"input rank {len(dims)}"
    if kind == "raw-data" and g.initializer:
        t = rng.choice(list(g.initializer))
        data = numpy_helper.to_array(t).tobytes()
        t.ClearField("float_data")
        t.ClearField("int64_data")
        t.raw_data = data[: rng.randrange(len(data) + 1)] if data else b"\x01"
        return f"{t.name} raw_data cut"
    if kind == "init-dims" and g.initializer:
        t = rng.choice(list(g.initializer))
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, -1, 2**31, 3])
        return f"{t.name} dims {list(t.dims)}"
    if kind == "drop-output":
        g.output[0].name = "not_computed"
        return "graph output not computed"
    if kind == "empty-name":
        node.output[0] = ""
        return f"{node.name} output unnamed"
    if kind == "extra-input":
        node.input.append(rng.choice(["x", "", "nowhere"]))
        return f"{node.name} extra input"
    return "unchanged"


def onnx_cases(count: int, seed: int) -> Iterator[tuple[str, onnx.ModelProto]]:
    """(case name, malformed model): one or two mutations of a base model each."""
    rng = random.Random(seed)
    bases = base_models()
    names = sorted(bases)
    for i in range(count):
        base = names[i % len(names)]
        model = onnx.ModelProto()
        model.CopyFrom(bases[base])
        done = [mutate_onnx(model, rng) for _ in range(1 if rng.random() < 0.7 else 2)]
        yield f"{base}: {'; '.join(done)}", model


def check_onnx(model: onnx.ModelProto, run: bool) -> None:
    """Import (a ModelError must be one line); compile and run what imports."""
    import xweave

    try:
        xweave.load_onnx(model)
    except xweave.XweaveError as e:
        if "\n" in str(e) or not str(e):
            raise AssertionError(f"not a one-line error: {str(e)[:300]!r}") from None
        raise
    if run:
        module = xweave.build(model)
        rng = np.random.default_rng(0)
        module.run(**{s.name: rng.standard_normal(s.shape).astype(s.dtype)
                      for s in module.inputs})


def fuzz_onnx(count: int, seed: int, run_every: int = 1) -> list[Outcome]:
    outcomes = []
    for i, (name, model) in enumerate(onnx_cases(count, seed)):
        outcomes.append(run_case(f"load_onnx {name}",
                                 lambda: check_onnx(model, run=i % run_every == 0),
                                 limit=4 * TIME_LIMIT))
    return outcomes


# ----------------------------------------------------------------------------------
# The command lines, as installed
# ----------------------------------------------------------------------------------


def cli_outcome(name: str, args: list[str], limit: float) -> Outcome:
    """Run an installed command: a traceback, or an exit by a signal, is a crash."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return Outcome("hang", name, f"past {limit} s")
    if "Traceback" in r.stderr or r.returncode < 0:
        return Outcome("crash", name, f"exit {r.returncode}: {r.stderr[-300:]}")
    if r.returncode != 0:
        return Outcome("error", name, r.stderr.strip().splitlines()[0][:200]
                       if r.stderr.strip() else "")
    return Outcome("ok", name)


def fuzz_cli(sources: list[Path], count: int, seed: int, workdir: Path) -> list[Outcome]:
    """`count` cases through the installed executables: half IR through xweave-opt,
    half ONNX through `xweave compile` and `xweave run` (alternately)."""
    bindir = Path(sys.executable).parent
    outcomes = []
    for i, (name, _, text) in enumerate(ir_cases(sources, count // 2, seed + 1)):
        path = workdir / f"cli{i}.mlir"
        path.write_bytes(text)
        outcomes.append(cli_outcome(f"xweave-opt {name}", [str(bindir / "xweave-opt"),
                                                            str(path)], 3 * TIME_LIMIT))
    for i, (name, model) in enumerate(onnx_cases(count - count // 2, seed + 1)):
        path = workdir / f"cli{i}.onnx"
        path.write_bytes(model.SerializeToString())
        command = ["compile", str(path), "-o", str(workdir / f"cli{i}.xwm")] if i % 2 else \
            ["run", str(path)]
        outcomes.append(cli_outcome(f"xweave {command[0]} {name}",
                                    [str(bindir / "xweave"), *command], 6 * TIME_LIMIT))
    return outcomes


def summary(outcomes: list[Outcome]) -> dict:
    counts = Counter(o.kind for o in outcomes)
    return {"cases": len(outcomes), **{k: counts.get(k, 0) for k in ("ok", "error", "crash",
                                                                      "hang")}}


SMOKE = {"ir": 4, "onnx": 4, "cli": 2}
"""The case counts of a `--smoke` run (each taken unless given)."""
DEFAULTS = {"ir": 1000, "onnx": 300, "cli": 60}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ir", type=int, help="mutated IR cases (default 1000)")
    parser.add_argument("--onnx", type=int, help="malformed ONNX cases (default 300)")
    parser.add_argument("--cli", type=int, help="cases through the executables (default 60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="SMOKE's case counts: checks that the script works (tests), "
                        "finds little")
    args = parser.parse_args(argv)
    for key, value in {**DEFAULTS, **(SMOKE if args.smoke else {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    import warnings

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "dump").mkdir()
        sources = dump_ir(work / "dump")
        results = {}
        for label, run in (("ir", lambda: fuzz_ir(sources, args.ir, args.seed, work)),
                           ("onnx", lambda: fuzz_onnx(args.onnx, args.seed)),
                           ("cli", lambda: fuzz_cli(sources, args.cli, args.seed, work))):
            start = time.perf_counter()
            outcomes = run()
            results[label] = {**summary(outcomes), "seconds": round(time.perf_counter() - start, 1)}
            for o in outcomes:
                if o.kind in ("crash", "hang"):
                    print(f"{label}: {o.kind}: {o.case}: {o.detail}", file=sys.stderr)
            print(f"{label}: {results[label]}", file=sys.stderr)
    print(json.dumps({"seed": args.seed, **results}))


if __name__ == "__main__":
    main()
