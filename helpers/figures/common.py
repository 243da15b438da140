"""What every chapter's figures share: an Axes to draw on, tidy spines, bytes per element and the colours that mean
the same thing in every chapter. Hardware facts live in helpers.hardware, not here."""
from __future__ import annotations

from ..formats import ITEMSIZE

BF16, FP32 = ITEMSIZE["bf16"], ITEMSIZE["fp32"]   # bytes per element
A_COLOUR, B_COLOUR = "tab:cyan", "tab:orange"     # operand A and operand B
PRODUCER, CONSUMER = "tab:blue", "tab:red"        # the warpgroup roles of chapters 08 and 09


def axes(ax, size):
    """`ax`, or the Axes of a new figure of `size` inches."""
    import matplotlib.pyplot as plt
    return ax if ax is not None else plt.subplots(figsize=size)[1]


def clean(ax, sides=("top", "right")):
    """Hide the spines named in `sides`."""
    for side in sides:
        ax.spines[side].set_visible(False)


def _text_box(text, renderer):
    """The rectangle a drawn Text covers in display pixels, as 4 corners: its own rotated box, not the axis-aligned
    box around it (two rotated tick labels side by side have overlapping axis-aligned boxes but no shared ink)."""
    import numpy as np
    from matplotlib.text import Text
    box = Text.get_window_extent(text, renderer)  # an Annotation's own extent takes in its arrow; the text's does not
    angle = np.radians(text.get_rotation() % 180)
    c, s = abs(np.cos(angle)), abs(np.sin(angle))
    centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    if s < 1e-3 or c < 1e-3:  # upright or vertical: the axis-aligned box is the text's own
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    lines = text.get_text().count("\n") + 1
    height = min(lines * text.get_fontsize() * renderer.points_to_pixels(1.0) * 1.2, box.width / s, box.height / c)
    length = max((box.width - height * s) / c, 0.0)   # the box of a length x height rectangle turned by the angle
    along = np.array([np.cos(angle), np.sin(angle)])
    across = np.array([-along[1], along[0]])
    return np.array([centre + sign_l * length / 2 * along + sign_h * height / 2 * across
                     for sign_l, sign_h in ((-1, -1), (1, -1), (1, 1), (-1, 1))])


def _overlap(p, q) -> bool:
    """Do two convex polygons share area (separating axis test; touching edges do not count)?"""
    import numpy as np
    for poly in (p, q):
        for i in range(len(poly)):
            edge = poly[(i + 1) % len(poly)] - poly[i]
            axis = np.array([-edge[1], edge[0]])
            a, b = p @ axis, q @ axis
            if a.max() <= b.min() + 1e-6 or b.max() <= a.min() + 1e-6:
                return False
    return True


def text_clashes(fig) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of a figure whose drawn boxes overlap once the figure is drawn: the CI check
    that no label sits on another (tests/test_legible.py runs it on every figure the helpers draw)."""
    from itertools import combinations
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    unseen = set()  # tick labels matplotlib keeps but does not draw: outside the view limits, or of a hidden axis
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            shown = ax.axison and axis.get_visible()
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not shown or not low - 1e-9 * abs(high - low) <= tick.get_loc() <= high + 1e-9 * abs(high - low):
                    unseen |= {id(tick.label1), id(tick.label2)}
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_figure() is fig
             and id(t) not in unseen]
    boxes = [(t.get_text(), _text_box(t, renderer)) for t in texts]
    return [(a, b) for (a, pa), (b, pb) in combinations(boxes, 2) if _overlap(pa, pb)]
