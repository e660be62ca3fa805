"""Features of a schedule configuration that need no scheduling: the kernel's shape, the
template's knob values, what they imply for the register file, the FMA pipes and the
caches, and the machine model, as one fixed-length vector.

The itervar features (`features.py`) describe a candidate's scheduled loop IR, which
costs a schedule per candidate; a build choosing among hundreds of candidates per
kernel (`select.py`) ranks them from these instead, in microseconds each. Machine
figures are features too, so one ranking model serves every CPU it was trained on and
generalizes to others by their figures (TenSet's lesson: a model pretrained across
hardware cuts the search).

    x = config_features(task.info, task.schedule_template.name, config)
    names = feature_names()                 # one per entry of x
"""

from __future__ import annotations

import math

import numpy as np

from xweave.schedules.analysis import KernelInfo

TEMPLATE_NAMES = ("blocked-reduction", "injective", "generic", "winograd-transform")
"""Templates with a feature of their own (one-hot); others share the last slot."""

KNOBS = ("tile_rows", "tile_cols", "tile_rows_outer", "parallel", "reduce_split",
         "unroll_reduce", "pack_rows", "k_block", "m_block", "lanes", "vectorize")
"""Knobs read as numbers (a knob a template lacks is -1)."""

_MACHINE = ("lanes", "vector_registers", "fma_per_cycle", "fma_latency", "chains",
            "log_l1", "log_l2", "log_l3")
_KERNEL = ("log_work", "log_outputs", "log_reduce", "stages", "is_reduction",
           "spatial_axes", "reduce_axes", "windowed", "log_first_reduce", "log_rows",
           "log_cols")
_DERIVED = ("vectors", "block", "block_per_chain", "registers_used", "registers_left",
            "fma_per_load", "rows_used", "cols_used", "lanes_used", "k_block_l1",
            "m_block_l2", "panel_l1", "panel_l2", "log_tiles", "reduce_first_rc")


def feature_names() -> list[str]:
    """The name of every entry of `config_features`, in order."""
    return ([f"machine.{n}" for n in _MACHINE] + [f"kernel.{n}" for n in _KERNEL]
            + [f"template.{n}" for n in (*TEMPLATE_NAMES, "other")]
            + [f"knob.{n}" for n in KNOBS] + [f"derived.{n}" for n in _DERIVED])


NUM_FEATURES = len(feature_names())


def _log(x: float) -> float:
    return math.log2(max(x, 0) + 1)


def _number(value) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return -1.0


def config_features(info: KernelInfo, template: str, config: dict) -> np.ndarray:
    """The feature vector of `config` of `template` for the kernel `info` (its machine
    model included)."""
    m = info.machine
    anchor = info.anchor
    lanes = int(config.get("lanes") or m.lanes)
    spatial = [e for _, e in anchor.spatial]
    reduce = [e for _, e in anchor.reduce]
    outputs = math.prod(spatial) if spatial else 1
    machine = [m.lanes, m.vector_registers, m.fma_per_cycle, m.fma_latency,
               m.accumulators_to_hide_latency, _log(m.l1_bytes), _log(m.l2_bytes),
               _log(m.l3_bytes)]
    rows = spatial[-2] if len(spatial) >= 2 else 1
    cols = spatial[-1] if spatial else 1
    kernel = [_log(anchor.work), _log(outputs), _log(math.prod(reduce) if reduce else 1),
              len(info.stages), float(anchor.is_reduction), len(spatial), len(reduce),
              len(anchor.windowed), _log(reduce[0] if reduce else 1), _log(rows), _log(cols)]
    one_hot = [float(template == name) for name in TEMPLATE_NAMES]
    one_hot.append(float(template not in TEMPLATE_NAMES))
    knobs = [_number(config.get(name, -1)) for name in KNOBS]

    derived = [-1.0] * len(_DERIVED)
    if template == "blocked-reduction" and "tile_rows" in config:
        tile_rows, tile_cols = int(config["tile_rows"]), int(config["tile_cols"])
        outer = int(config.get("tile_rows_outer", 1))
        vectors = -(-tile_cols // lanes)
        block = outer * tile_rows * vectors
        loads = outer * tile_rows + vectors
        k_block, m_block = int(config.get("k_block", 0)), int(config.get("m_block", 0))
        first = reduce[0] if reduce else 1
        order = str(config.get("reduce_order", ""))
        tiles = outputs / max(1, outer * tile_rows * tile_cols)
        derived = [
            vectors, block, block / m.accumulators_to_hide_latency,
            (block + vectors + 1) / m.vector_registers, m.vector_registers - block - vectors - 1,
            block / loads, _used(rows, tile_rows), _used(cols, tile_cols),
            tile_cols / (vectors * lanes), k_block * tile_cols * 4 / m.l1_bytes,
            m_block * max(k_block, 1) * 4 / m.l2_bytes,
            first * tile_cols * 4 / m.l1_bytes, first * tile_cols * 4 / m.l2_bytes,
            _log(tiles), float(order.startswith("rc")),
        ]
    return np.array(machine + kernel + one_hot + knobs + derived, dtype=np.float64)


def _used(extent: int, tile: int) -> float:
    """The share of the last tile's work that is useful (1: the tile divides the axis)."""
    if tile <= 0:
        return 1.0
    return extent / (-(-extent // tile) * tile)
