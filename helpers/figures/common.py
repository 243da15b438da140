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


# The book's output column at a 1280 px window: ci/test_book.py measures it (_static/column.css widens it to this).
# The inline backend saves a figure's tight box plus 0.1 in each side at the figure's dpi, and the page scales an
# image wider than the column down to it, text and all. JupyterLab's output area is about as wide at that window.
COLUMN_PX = 948
SMALLEST_PT = 8.0


def _canvas(fig):
    """A canvas that can draw `fig` off screen: its own, or an Agg one for a figure made without pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    return fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)


def shown_points(fig) -> tuple[float, float]:
    """(the saved image's width in px, the factor from a text's font size in pt to the size a reader sees, in CSS
    pt, 1 pt = 96/72 px): at dpi d a font of f pt is f * d / 72 image px, shown at min(1, COLUMN_PX / width)."""
    canvas = _canvas(fig)
    canvas.draw()
    return _shown_points(fig, canvas.get_renderer())


def _shown_points(fig, renderer) -> tuple[float, float]:
    """shown_points of a figure `renderer` has just drawn."""
    width = (fig.get_tightbbox(renderer).width + 0.2) * fig.dpi
    return width, fig.dpi / 96 * min(1.0, COLUMN_PX / width)


def small_text(fig, smallest: float = SMALLEST_PT) -> list[tuple[str, float]]:
    """Visible texts a reader of the book sees smaller than `smallest` pt, with the size they are shown at: the CI
    check (tests/test_legible.py on every figure the helpers draw; ci/test.sh on every figure a chapter shows)."""
    _, factor = shown_points(fig)
    return _small_text(fig, factor, smallest)


def _small_text(fig, factor: float, smallest: float = SMALLEST_PT) -> list[tuple[str, float]]:
    """small_text of a drawn figure whose font sizes are shown `factor` times as large."""
    return [(t.get_text(), round(t.get_fontsize() * factor, 2)) for t in _drawn_texts(fig)
            if t.get_fontsize() * factor < smallest - 1e-9]


def _drawn_texts(fig) -> list:
    """The visible, non-empty texts of a drawn figure, less the tick labels matplotlib keeps but does not draw."""
    from matplotlib.text import Text
    unseen = set()  # tick labels outside the view limits, or of a hidden axis
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            shown = ax.axison and axis.get_visible()
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not shown or not low - 1e-9 * abs(high - low) <= tick.get_loc() <= high + 1e-9 * abs(high - low):
                    unseen |= {id(tick.label1), id(tick.label2)}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_figure() is fig
            and id(t) not in unseen]


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
    canvas = _canvas(fig)
    canvas.draw()
    return _text_clashes(fig, canvas.get_renderer())


def _text_clashes(fig, renderer) -> list[tuple[str, str]]:
    """text_clashes of a figure `renderer` has just drawn."""
    import numpy as np
    boxes = [(t.get_text(), _text_box(t, renderer)) for t in _drawn_texts(fig)]
    if len(boxes) < 2:
        return []
    corners = np.array([box for _, box in boxes])  # (texts, 4 corners, x and y)
    low, high = corners.min(axis=1), corners.max(axis=1)
    # Two boxes whose upright bounds lie a pixel or more apart share no area, so only the pairs nearer than that
    # take the exact test (a figure of 800 labels has 320,000 pairs), in the same order as every pair would.
    near = ((low[:, None] < high[None] + 1) & (low[None] < high[:, None] + 1)).all(axis=2)
    return [(boxes[i][0], boxes[j][0]) for i, j in zip(*np.nonzero(np.triu(near, 1)))
            if _overlap(boxes[i][1], boxes[j][1])]


def illegible(fig) -> list[str]:
    """What a reader could not read in `fig`, one line each: text under SMALLEST_PT as shown, text on text, and a
    layout that moves from one draw to the next (then what is checked here is not what the notebook saves).
    The figure is drawn twice, for the layout check, and the other checks read the second draw: drawing it again
    for each (as shown_points, small_text and text_clashes do alone) only repeats a layout found not to move."""
    moved = _layout_moves(fig)
    renderer = _canvas(fig).get_renderer()
    width, factor = _shown_points(fig, renderer)
    return ([f"its texts move from one draw to the next: {moved}"] if moved else []) + \
        [f"{text!r} is shown at {pt} pt (the image is {width:.0f} px wide, the column {COLUMN_PX} px)"
         for text, pt in _small_text(fig, factor)] + [f"{a!r} overlaps {b!r}" for a, b in _text_clashes(fig, renderer)]


def _layout_moves(fig) -> str:
    """The first text whose place changes between two draws, or "": a layout engine fed by its own output (a legend
    placed from where the last layout left the tick labels, say) drifts a little further every time it is drawn."""
    canvas = _canvas(fig)
    places = []
    for _ in range(2):
        canvas.draw()
        renderer = canvas.get_renderer()
        places.append([(t.get_text(), t.get_window_extent(renderer).bounds) for t in _drawn_texts(fig)])
    for (text, a), (_, b) in zip(*places):
        if max(abs(x - y) for x, y in zip(a, b)) > 0.5:
            return repr(text)
    return "" if len(places[0]) == len(places[1]) else "the number of texts changes"


CHECK_ENV = "GEMM_LADDER_CHECK_FIGURES"  # ci/test.sh sets it for nbval: every figure a chapter shows is checked


class IllegibleFigure(AssertionError):
    pass


def check_shown(figs) -> None:
    """Under GEMM_LADDER_CHECK_FIGURES=1, raise IllegibleFigure, naming what a reader could not read, if any of
    `figs` is about to be shown so; otherwise do nothing."""
    import os
    if os.environ.get(CHECK_ENV) != "1":
        return
    for fig in figs:
        if getattr(fig, "_checked_legible", False):  # under a non-inline backend a shown figure stays open
            continue
        fig._checked_legible = True
        if problems := illegible(fig):
            title = fig._suptitle.get_text() if fig._suptitle else "; ".join(a.get_title() for a in fig.axes)
            raise IllegibleFigure(f"a figure ({title or 'untitled'}) would be shown illegibly: " + "; ".join(problems))


class _CheckAtCellEnd:
    """An IPython AST transformer: after a cell's statements, check the open figures the inline backend is about to
    show, keeping the cell's last expression as the value it displays."""

    def visit(self, module):
        import ast
        check = ast.parse("__import__('helpers.figures.common', fromlist=['check_shown']).check_shown("
                          "[__import__('matplotlib.pyplot').pyplot.figure(n) for n in "
                          "__import__('matplotlib.pyplot').pyplot.get_fignums()])").body
        if module.body and isinstance(module.body[-1], ast.Expr):
            last = module.body.pop()
            module.body += [ast.Assign([ast.Name("_shown_last", ast.Store())], last.value), *check,
                            ast.Expr(ast.Name("_shown_last", ast.Load()))]
        else:
            module.body += check
        return ast.fix_missing_locations(module)


def watch_cells() -> None:
    """Under GEMM_LADDER_CHECK_FIGURES=1 in an IPython kernel, check every figure a cell leaves to be shown."""
    import os
    import sys
    if os.environ.get(CHECK_ENV) != "1" or "IPython" not in sys.modules:
        return
    from IPython import get_ipython
    shell = get_ipython()
    if shell is not None and not any(isinstance(t, _CheckAtCellEnd) for t in shell.ast_transformers):
        shell.ast_transformers.append(_CheckAtCellEnd())
