"""Damaged and edited module files: every one is refused with one `ModelError` line
(or, for an edit that changes nothing the code depends on, loads and computes the
same), never a traceback or a crash.

The cases are generated from fixed seeds: truncations, bit flips of the file, of
module.o (in a well-formed zip) and of params.npz, edits of every manifest field,
and parameters of the wrong shape, dtype, value or name. The loads run in a child
process, so a crash (LLVM ends the process on a malformed object) fails the test
with the case instead of ending pytest."""

import io
import json
import mmap
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.errors import ModelError
from xweave.runtime import files

BIN = Path(sys.executable).parent
SEED = 20

WORKER = r"""
import json, sys, traceback
import numpy as np
import xweave
from xweave.errors import ModelError
from xweave.errors import ModelError

cases = json.loads(sys.stdin.read())
reference = dict(np.load(cases["reference"]))
for path in cases["paths"]:
    print(json.dumps({"start": path}), flush=True)
    try:
        module = xweave.load_module(path)
        out = module.run(x=reference["x"])
        result = {"loaded": True, "same": bool(np.array_equal(out[0], reference["y"]))}
    except ModelError as e:
        result = {"error": str(e)}
    except BaseException as e:
        result = {"traceback": traceback.format_exc()}
    print(json.dumps({"path": path, **result}), flush=True)
"""


def _model(profile: bool):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return xweave.build(model, profile=profile, fuse=False)


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _params_bytes(params: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **params)
    return buf.getvalue()


BAD_VALUES = [None, True, 0, -1, 1.5, "x", [], {}, [1], [{"name": 1}]]


def _cases(original: Path, out: Path) -> list[Path]:
    """Every damaged variant of `original`, written under `out`."""
    rng = np.random.default_rng(SEED)
    data = original.read_bytes()
    members = _members(original)
    manifest = json.loads(members["manifest.json"])
    with np.load(io.BytesIO(members["params.npz"])) as npz:
        params = {k: npz[k] for k in npz.files}
    paths: list[Path] = []

    def raw(name: str, content: bytes) -> None:
        paths.append(out / name)
        (out / name).write_bytes(content)

    def zipped(name: str, **changed: bytes | None) -> None:
        new = {k: v for k, v in {**members, **changed}.items() if v is not None}
        paths.append(_write(out / name, new))

    def with_manifest(name: str, m: dict) -> None:
        zipped(name, **{"manifest.json": json.dumps(m).encode()})

    # not a module at all
    raw("empty.xwm", b"")
    raw("text.xwm", b"not a zip file\n")
    raw("random.xwm", rng.bytes(4096))
    (out / "dir.xwm").mkdir()
    paths.append(out / "dir.xwm")
    # the file cut short or bit-flipped anywhere
    for i, n in enumerate(sorted(rng.integers(1, len(data), 24))):
        raw(f"truncated{i}.xwm", data[:n])
    for i in range(40):
        flipped = bytearray(data)
        at = int(rng.integers(0, len(data)))
        flipped[at] ^= int(rng.integers(1, 256))
        raw(f"flip{i}.xwm", bytes(flipped))
    # module.o edited inside a well-formed zip (what LLVM would abort on)
    obj = members["module.o"]
    for i in range(12):
        edited = bytearray(obj)
        at = int(rng.integers(0, len(obj) - 30))
        edited[at:at + 30] = rng.bytes(30)
        zipped(f"object_edit{i}.xwm", **{"module.o": bytes(edited)})
    for i, n in enumerate((0, 16, 64, len(obj) // 2, len(obj) - 1)):
        zipped(f"object_truncated{i}.xwm", **{"module.o": obj[:n]})
    zipped("no_object.xwm", **{"module.o": None})
    # the manifest: not there, not JSON, not an object, every field missing or ill-typed
    zipped("no_manifest.xwm", **{"manifest.json": None})
    zipped("manifest_not_json.xwm", **{"manifest.json": b"{\"format\": "})
    zipped("manifest_list.xwm", **{"manifest.json": b"[1, 2]"})
    for key in manifest:
        with_manifest(f"manifest_{key}_missing.xwm", {k: v for k, v in manifest.items() if k != key})
        for j, value in enumerate(BAD_VALUES):
            with_manifest(f"manifest_{key}_bad{j}.xwm", {**manifest, key: value})
    # the manifest edited plausibly (the reports' cases among them)
    def spec_edit(name: str, key: str, field: str, value) -> None:
        specs = json.loads(json.dumps(manifest[key]))
        specs[0][field] = value
        with_manifest(name, {**manifest, key: specs})

    spec_edit("output_shape_1x2.xwm", "outputs", "shape", [1, 2])
    spec_edit("output_shape_1x1000.xwm", "outputs", "shape", [1, 1000])
    spec_edit("output_dtype.xwm", "outputs", "dtype", "float64")
    spec_edit("input_dtype.xwm", "inputs", "dtype", "float64")
    spec_edit("input_shape.xwm", "inputs", "shape", [1, 3, 32, 32])
    spec_edit("input_name.xwm", "inputs", "name", "data")
    spec_edit("input_negative.xwm", "inputs", "shape", [1, -3, 16, 16])
    with_manifest("outputs_empty.xwm", {**manifest, "outputs": []})
    with_manifest("inputs_two.xwm", {**manifest, "inputs": manifest["inputs"] * 2})
    with_manifest("peak_changed.xwm", {**manifest, "peak_memory_bytes": 64})
    with_manifest("version1.xwm", {**manifest, "version": 1})
    with_manifest("version3.xwm", {**manifest, "version": 3})
    with_manifest("format.xwm", {**manifest, "format": "onnx"})
    with_manifest("target_vta.xwm", {**manifest, "target": "vta"})
    with_manifest("target_unknown.xwm", {**manifest, "target": "tpu"})
    with_manifest("digest_changed.xwm", {**manifest, "module_sha256": "0" * 64})
    if "profile" in manifest:
        slots = json.loads(json.dumps(manifest["profile"]))
        slots[0]["kernel"] = "other"
        with_manifest("profile_renamed.xwm", {**manifest, "profile": slots})
        with_manifest("profile_dropped.xwm", {**manifest, "profile": None})
    else:
        with_manifest("profile_added.xwm", {**manifest, "profile": [{"kernel": "k"}]})
    # the parameters
    name = max(sorted(params), key=lambda k: params[k].ndim)  # reshaping it changes its shape
    zipped("no_params.xwm", **{"params.npz": None})
    zipped("params_garbage.xwm", **{"params.npz": rng.bytes(512)})
    zipped("params_empty.xwm", **{"params.npz": _params_bytes({})})
    zipped("params_extra.xwm", **{"params.npz": _params_bytes({**params, "extra": np.ones(3)})})
    zipped("params_missing.xwm", **{"params.npz": _params_bytes(
        {k: v for k, v in params.items() if k != name})})
    zipped("params_shape.xwm", **{"params.npz": _params_bytes(
        {**params, name: params[name].reshape(-1)})})
    zipped("params_dtype.xwm", **{"params.npz": _params_bytes(
        {**params, name: params[name].astype(np.float64)})})
    zipped("params_halfsize.xwm", **{"params.npz": _params_bytes(
        {**params, name: params[name].astype(np.float16)})})
    changed = params[name].copy()
    changed.reshape(-1)[0] += 1
    zipped("params_value.xwm", **{"params.npz": _params_bytes({**params, name: changed})})
    zipped("params_object.xwm", **{"params.npz": _params_bytes(
        {**params, name: np.array([{"a": 1}], dtype=object)})})
    pz = bytearray(members["params.npz"])
    for i in range(12):
        at = int(rng.integers(0, len(pz)))
        flipped = bytearray(pz)
        flipped[at] ^= int(rng.integers(1, 256))
        zipped(f"params_flip{i}.xwm", **{"params.npz": bytes(flipped)})
    return paths


@pytest.mark.parametrize("profile", [False, True], ids=["plain", "profiling"])
def test_damaged_modules_are_refused_in_one_line(tmp_path, profile):
    module = _model(profile)
    original = tmp_path / "m.xwm"
    module.export(original)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "reference.npz", x=x, y=module.run(x=x)[0])
    cases = tmp_path / "cases"
    cases.mkdir()
    paths = _cases(original, cases)
    paths.append(original)  # the untouched module loads and computes the same
    request = json.dumps({"reference": str(tmp_path / "reference.npz"),
                          "paths": [str(p) for p in paths]})
    proc = subprocess.run([sys.executable, "-c", WORKER], input=request, capture_output=True,
                          text=True, timeout=600)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    results = {r["path"]: r for r in lines if "path" in r}
    started = [r["start"] for r in lines if "start" in r]
    assert proc.returncode == 0, f"crash (rc {proc.returncode}) loading {started[-1]}: {proc.stderr[-2000:]}"
    assert len(results) == len(paths)
    tracebacks = {Path(p).name: r["traceback"] for p, r in results.items() if "traceback" in r}
    assert not tracebacks, "\n".join(f"{k}:\n{v}" for k, v in tracebacks.items())
    for path, r in results.items():
        if "error" in r:
            assert "\n" not in r["error"] and r["error"].startswith(path), r["error"]
        else:
            assert r["same"], f"{path} loaded and computed something else"
    assert results[str(original)].get("same")
    refused = sum("error" in r for r in results.values())
    assert refused >= len(paths) - 12  # only flips of unused bytes (zip padding, ...) may load
    named = {
        "output_shape_1x2.xwm": "'outputs'", "outputs_empty.xwm": "'outputs'",
        "input_dtype.xwm": "'inputs'", "output_shape_1x1000.xwm": "'outputs'",
        "object_edit0.xwm": "module_sha256", "params_shape.xwm": "parameter",
        "params_value.xwm": "SHA-256", "version1.xwm": "version 1", "dir.xwm": "directory",
        "target_unknown.xwm": "unknown accelerator target 'tpu' (known: vta;",
    }
    for name, words in named.items():
        assert words in results[str(cases / name)].get("error", ""), (name, results[str(cases / name)])


@pytest.mark.parametrize("case", ["dir", "truncated", "shape", "missing_field"])
def test_xweave_run_refuses_a_damaged_module_in_one_line(tmp_path, case):
    original = tmp_path / "m.xwm"
    _model(False).export(original)
    path = tmp_path / "bad.xwm"
    if case == "dir":
        path.mkdir()
    elif case == "truncated":
        path.write_bytes(original.read_bytes()[:-200])
    else:
        members = _members(original)
        manifest = json.loads(members["manifest.json"])
        if case == "shape":
            manifest["outputs"][0]["shape"] = [1, 2]
        else:
            del manifest["inputs"]
        _write(path, {**members, "manifest.json": json.dumps(manifest).encode()})
    proc = subprocess.run([str(BIN / "xweave"), "run", str(path), "--fill-mode", "ones"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and proc.returncode > 0
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_code_for_cpu_features_this_host_lacks_is_refused(monkeypatch, tmp_path):
    """The ABI records the target the code was compiled for; loading checks its
    features against the host's before any of the code runs."""
    from xweave import target as tgt
    from xweave.target import TargetError

    module = _model(False)
    module.export(tmp_path / "m.xwm")
    monkeypatch.setattr(tgt, "_host_cpu", lambda: ("x86-64", frozenset(), ""))
    with pytest.raises(TargetError, match=r"compiled for 'llvm -mcpu=znver3'.* lacks sse4.2, avx"):
        xweave.load_module(tmp_path / "m.xwm")


def test_the_manifest_names_the_whole_target_and_version_2_files_still_load(tmp_path):
    module = _model(False)
    module.export(tmp_path / "m.xwm")
    members = _members(tmp_path / "m.xwm")
    manifest = json.loads(members["manifest.json"])
    assert manifest["version"] == 3
    assert (manifest["target"], manifest["triple"], manifest["features"]) == (
        "llvm -mcpu=znver3", "x86_64-unknown-linux-gnu", ["avx", "avx2", "f16c", "fma", "sse4.2"])
    # a file of another target's name than its code's is refused, naming the field
    _write(tmp_path / "other.xwm", {**members, "manifest.json": json.dumps(
        {**manifest, "target": "llvm -mcpu=znver4"}).encode()})
    with pytest.raises(ModelError, match="manifest field 'target' does not match"):
        xweave.load_module(tmp_path / "other.xwm")
    # what the previous format wrote: "target": "llvm", no triple or features
    old = {k: v for k, v in manifest.items() if k not in ("triple", "features")}
    _write(tmp_path / "v2.xwm", {**members, "manifest.json": json.dumps(
        {**old, "version": 2, "target": "llvm"}).encode()})
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(xweave.load_module(tmp_path / "v2.xwm").run(x=x)[0],
                                  module.run(x=x)[0])


def _mapped(array: np.ndarray) -> bool:
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_parameters_are_read_in_place_from_a_stored_member(tmp_path):
    """A module's parameters are views of its file mapped in memory, not copies (a
    compile-cache hit of ResNet-50 read 98 MB twice); a compressed member still loads,
    and both compute what the module computed."""
    module = _model(profile=False)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    expected = module.run(x=x)[0]
    stored = tmp_path / "stored.xwm"
    module.export(stored)
    loaded = xweave.load_module(stored)
    assert loaded.params and all(_mapped(a) and not a.flags.writeable
                                 and a.ctypes.data % files.ALIGNMENT == 0
                                 for a in loaded.params.values())
    np.testing.assert_array_equal(loaded.run(x=x)[0], expected)

    compressed = tmp_path / "compressed.xwm"
    with zipfile.ZipFile(compressed, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in _members(stored).items():
            zf.writestr(name, data)
    loaded = xweave.load_module(compressed)
    assert not any(_mapped(a) for a in loaded.params.values())
    np.testing.assert_array_equal(loaded.run(x=x)[0], expected)


def test_mapped_arrays_keep_shape_order_and_dtype(tmp_path):
    """Empty, Fortran-ordered and one-byte arrays come back as written, aligned."""
    arrays = {"empty": np.zeros((0, 3), np.float32), "fortran": np.asfortranarray(
        np.arange(12.0).reshape(3, 4)), "bytes": np.arange(5, dtype=np.int8),
        "zero_columns": np.zeros((2, 0))}
    path = tmp_path / "arrays.zip"
    files.write_zip_atomically(path, {}, {"p.npz": files.npz_bytes(arrays)})
    with zipfile.ZipFile(path) as zf:
        got = files.read_arrays(path, zf, "p.npz")
    assert set(got) == set(arrays)
    files.write_zip_atomically(path, {}, {"p.npz": files.npz_bytes({})})  # (22 bytes)
    with zipfile.ZipFile(path) as zf:
        assert files.read_arrays(path, zf, "p.npz") == {}
    for name, array in arrays.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape
        np.testing.assert_array_equal(got[name], array)
        assert got[name].ctypes.data % files.ALIGNMENT == 0 or got[name].size == 0
