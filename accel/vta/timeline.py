"""Gantt chart of a simulated VTA run: one row per module (load, compute, store), one bar
per instruction, coloured by kind. matplotlib is an optional dependency: it is imported
only when a plot is made, and its Agg canvas is used directly (the global backend is left
alone)."""

from __future__ import annotations

import os

from xweave.accel.vta.report import MODULES, SimReport

__all__ = ["KIND_COLORS", "plot_layer_timelines", "plot_timeline"]

KIND_COLORS: dict[str, str] = {
    "load.inp": "#4c72b0",
    "load.wgt": "#55a868",
    "load.uop": "#8172b2",
    "load.acc": "#64b5cd",
    "gemm": "#c44e52",
    "gemm.reset": "#e8a3a5",
    "alu": "#dd8452",
    "store": "#937860",
    "sync": "#bbbbbb",
    "finish": "#222222",
}


def _color(kind: str) -> str:
    if kind.startswith("alu"):
        return KIND_COLORS["alu"]
    return KIND_COLORS.get(kind, "#999999")


def _legend_label(kind: str) -> str:
    return "alu" if kind.startswith("alu") else kind


def plot_timeline(
    report: SimReport,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    width: float = 12.0,
    dpi: int = 100,
) -> str:
    """Write the run's timeline as a PNG to `path` and return the path.

    Rows are load / compute / store (top to bottom), the x axis is accelerator cycles.
    Raises ImportError with an install hint when matplotlib is missing.
    """
    try:  # lazy by design: plots need the optional matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_timeline needs matplotlib (an optional extra): pip install matplotlib"
        ) from e

    fig = Figure(figsize=(width, 3.2), dpi=dpi)
    FigureCanvasAgg(fig)
    _draw(fig.add_subplot(1, 1, 1), report, title, legend=True)
    fig.tight_layout()
    fig.savefig(os.fspath(path), format="png")
    return os.fspath(path)


def plot_layer_timelines(layers: list[tuple[str, SimReport]], path: str | os.PathLike[str],
                         *, width: float = 12.0, dpi: int = 100) -> str:
    """The timelines of a model's offloaded layers, one panel per layer (titled with its
    name), in one image at `path` (its format from the suffix: .png, .svg, .pdf)."""
    try:  # lazy by design: plots need the optional matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_layer_timelines needs matplotlib (an optional extra): pip install matplotlib"
        ) from e

    fig = Figure(figsize=(width, 2.4 * max(1, len(layers)) + 0.8), dpi=dpi)
    FigureCanvasAgg(fig)
    for i, (name, report) in enumerate(layers):
        title = (f"{name}: {report.total_cycles} cycles, compute utilization "
                 f"{report.compute_utilization:.1%}")
        _draw(fig.add_subplot(len(layers), 1, i + 1), report, title,
              legend=i == len(layers) - 1)
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    return os.fspath(path)


def _draw(ax, report: SimReport, title: str | None, legend: bool) -> None:
    """One run's load / compute / store rows on `ax`."""
    rows = {m: len(MODULES) - 1 - i for i, m in enumerate(MODULES)}
    seen: dict[str, str] = {}
    by_row: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for e in report.timeline:
        # Zero-length bars would vanish: give them a minimal visible width.
        by_row.setdefault((e.module, e.kind), []).append((e.start, max(e.duration, 1)))
        seen.setdefault(_legend_label(e.kind), _color(e.kind))
    for (module, kind), spans in by_row.items():
        y = rows[module]
        ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=_color(kind), edgecolor="white", linewidth=0.3)
    ax.set_yticks([rows[m] for m in MODULES], list(MODULES))
    ax.set_ylim(-0.6, len(MODULES) - 0.4)
    ax.set_xlim(0, max(report.total_cycles, 1))
    ax.set_xlabel("cycle")
    ax.set_title(
        title
        or f"{report.total_cycles} cycles, compute utilization {report.compute_utilization:.1%}"
    )
    ax.grid(axis="x", alpha=0.3)
    if legend:
        from matplotlib.patches import Patch  # lazy: see the module's docstring

        ax.legend(
            handles=[Patch(facecolor=c, label=k) for k, c in seen.items()],
            loc="upper center",
            bbox_to_anchor=(0.5, -0.28),
            ncol=min(len(seen), 8),
            fontsize="small",
            frameon=False,
        )
