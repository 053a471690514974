"""Figures written as small, reproducible PNGs: committed results must stay light and regenerate byte for byte."""

import io
from pathlib import Path
from typing import Any

import numpy as np


def save_png(figure: Any, path: Path, dpi: int) -> None:
    """
    Save a matplotlib figure as a PNG of at most 256 colours, without the metadata (software version) that would make
    the bytes depend on the installed matplotlib: plots of lines and bands lose nothing visible and shrink several times.

    :param figure: the figure
    :param path: where to write it
    :param dpi: its resolution
    """
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, format="PNG", optimize=True)


def plot_band(
    axis: Any,
    logged: list[tuple[np.ndarray, np.ndarray]],
    label: str,
    style: str = "-",
    alpha: float = 0.15,
    color: str | None = None,
) -> None:
    """
    Plot runs' logged series against steps: their mean, and their range shaded, on 200 points up to the shortest run's
    last step.

    :param axis: the matplotlib axis
    :param logged: each run's steps and values
    :param label: the legend's label of the mean
    :param style: the mean's line style
    :param alpha: the range's opacity
    :param color: the mean's and the range's colour; None: the axis's next
    """
    grid = np.linspace(0, min(steps[-1] for steps, _ in logged), 200)
    curves = np.array([np.interp(grid, steps, values) for steps, values in logged])
    (line,) = axis.plot(grid, curves.mean(axis=0), style, label=label, color=color)
    axis.fill_between(grid, curves.min(axis=0), curves.max(axis=0), color=line.get_color(), alpha=alpha)
