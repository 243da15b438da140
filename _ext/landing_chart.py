"""The landing page's climb chart (images/climb.png), drawn from the book's recorded run whenever the book is
built: the image is never committed, so a plain `jupyter-book build .` draws it, and it can never be older than the
results file. It is what `python -m helpers ladder --replay --n 4096 8192 --plot images/climb.png` draws."""
import sys
from pathlib import Path


def _draw(app):
    root = Path(app.srcdir)
    if not (root / "helpers").is_dir():  # a page or two copied without the course's code has no chart to draw
        return
    sys.path.insert(0, str(root))
    from helpers import replay
    from helpers.ceilings import recorded_ceilings
    from helpers.plot import save_climb
    from helpers.registry import MAIN
    rows = [row for n in (4096, 8192) for r in MAIN if (row := replay(r, n, missing_ok=True)).has_number]
    save_climb(rows, recorded_ceilings(), root / "images" / "climb.png")


def setup(app):
    app.connect("builder-inited", _draw)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
