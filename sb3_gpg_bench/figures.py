"""Figures written as small, reproducible PNGs: committed results must stay light and regenerate byte for byte."""

import io
from pathlib import Path
from typing import Any


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
