"""The explorers of the tensor-core chapters: the models of helpers.models drawn (fragments by lane, banks by phase,
a cp.async ring in time) and the controls that redraw them. A control shows its first state as ordinary outputs,
so the built book and a notebook opened without a kernel show it too."""
from __future__ import annotations

import numpy as np

from .models import SHAPES, bank_map, ldmatrix_addresses, mma_fragment, pipeline_schedule, wavefronts

# ---- the models drawn ---------------------------------------------------------------------------------------

def plot_pipeline(stages: int, tiles: int = 8, copy_time: float = 3.0, ax=None, xmax: float | None = None):
    """Gantt chart of pipeline_schedule: one row per ring slot for the copies, one row for the math. The time axis
    runs to xmax, by default the double buffer's finish (the slowest ring rung 05 builds), so two depths drawn side
    by side share one axis and the faster ring's bars end sooner."""
    import matplotlib.pyplot as plt
    bars = pipeline_schedule(stages, tiles, copy_time)
    ax = ax or plt.subplots(figsize=(8, 0.5 * stages + 1.6))[1]
    for kind, t, s, e in bars:
        y = 0 if kind == "math" else 1 + t % stages
        ax.barh(y, e - s, left=s, height=0.6, color="tab:orange" if kind == "math" else "tab:blue",
                edgecolor="white")
        ax.text((s + e) / 2, y, str(t), ha="center", va="center", fontsize=8, color="white")
    end = max(e for *_, e in bars)
    slowest = max(e for *_, e in pipeline_schedule(2, tiles, copy_time))
    ax.set_xlim(0, max(xmax or slowest, end) * 1.02)
    ax.set(yticks=range(stages + 1), yticklabels=["mma.sync"] + [f"cp.async slot {i}" for i in range(stages)],
           xlabel="time (units of one tile's math; a model, not a measurement)",
           title=f"{stages} stages, copy latency {copy_time:g}x one tile's math: {tiles} tiles in {end:.1f}")
    return ax


def lane_colours():
    """One distinct colour per lane of a warp: tab20 and the first 12 of tab20b (tab20 alone repeats after 20)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    return ListedColormap([*colormaps["tab20"].colors, *colormaps["tab20b"].colors[:12]], name="lanes")


def plot_fragment(operand: str, ax=None, lane: int | None = None):
    """Heat map of mma.sync.m16n8k16 operand ownership: colour = lane (32 distinct colours), text = lane.element;
    `lane` outlines the cells that lane holds."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    lanes, elem = mma_fragment(operand)
    ax = ax or plt.subplots(figsize=(0.45 * lanes.shape[1] + 1, 0.4 * lanes.shape[0] + 1))[1]
    ax.imshow(lanes, cmap=lane_colours(), vmin=-0.5, vmax=31.5, aspect="auto")
    for (r, c), ln in np.ndenumerate(lanes):
        ax.text(c, r, f"{ln}.{elem[r, c]}", ha="center", va="center", fontsize=8,
                weight="bold" if ln == lane else "normal")
        if ln == lane:
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", lw=2))
    held = "" if lane is None else f", lane {lane} outlined"
    ax.set(title=f"m16n8k16 {operand}: lane.element{held}", xlabel="column", ylabel="row")
    return ax


def _lane_cells(operand: str, lane: int) -> list[tuple[int, int, int]]:
    """(element, row, column) of every entry of `operand` that `lane` holds, in register order."""
    lanes, elems = mma_fragment(operand)
    return sorted((int(elems[r, c]), int(r), int(c)) for r, c in zip(*(lanes == lane).nonzero()))


def _spans(values) -> str:
    """Sorted distinct integers as runs: 0, 1, 8, 9 -> "0-1, 8-9"; 1, 9 -> "1, 9"."""
    runs: list[list[int]] = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def plot_lane(lane: int):
    """The three m16n8k16 fragments with the cells `lane` holds outlined: A [16x16] across the top, B [16x8] and
    C [16x8] side by side below, and a title saying which rows and columns of each the lane holds (read off
    mma_fragment). Returns the Figure; chapter 03's lane slider redraws it."""
    import matplotlib.pyplot as plt
    if not 0 <= lane < 32:
        raise ValueError(f"a warp has lanes 0-31, not {lane}")
    fig, axs = plt.subplot_mosaic([["A", "A"], ["B", "C"]], figsize=(9, 9), layout="constrained")
    held = []
    for operand, ax in axs.items():
        plot_fragment(operand, ax=ax, lane=lane)
        lanes = mma_fragment(operand)[0]
        veil = np.zeros((*lanes.shape, 4))
        veil[lanes != lane] = (1, 1, 1, 0.6)  # the other lanes' cells fade, so the outlined ones stand out
        ax.imshow(veil, aspect="auto")
        for box in ax.patches:
            box.set(linewidth=3, zorder=4, clip_on=False)  # a cell on the edge keeps its whole outline
        rows, cols = SHAPES[operand]
        ax.set_title(f"{operand} [{rows}x{cols}]: lane.element, lane {lane} outlined")
        cells = _lane_cells(operand, lane)
        in_rows, in_cols = {r for _, r, _ in cells}, {c for _, _, c in cells}
        where = (f"{'k ' * (operand == 'B')}row{'s' * (len(in_rows) > 1)} {_spans(in_rows)}, "
                 f"column{'s' * (len(in_cols) > 1)} {_spans(in_cols)}")
        held.append((operand, len(cells), where))
    counts = ", ".join(f"{n}{' values' * (not i)} of {operand}" for i, (operand, n, _) in enumerate(held))
    fig.suptitle(f"Lane {lane} (group {lane // 4}, thread {lane % 4} of its quad) holds {counts}:\n"
                 + "; ".join(f"{operand}: {where}" for operand, _, where in held), fontsize=11)
    return fig


def plot_bank_map(operand: str, layout: str, tile=(128, 32), phase: int = 0, ax=None):
    """Which of the 32 banks each of the phase's 8 row addresses hits (a colour per lane); banks no lane hits stay
    white."""
    import matplotlib.pyplot as plt
    from matplotlib import colormaps
    m = bank_map(operand, layout, tile, phase)
    ax = ax or plt.subplots(figsize=(8, 2.6))[1]
    hit = np.ma.masked_equal(m * (np.arange(8)[:, None] + 1), 0)  # 0: this lane does not touch the bank
    ax.imshow(hit, cmap=colormaps["tab10"].with_extremes(bad="white"), vmin=0, vmax=9, aspect="auto")
    deg = wavefronts(ldmatrix_addresses(operand, layout, tile)[8 * phase: 8 * phase + 8])
    ax.set(xlabel="bank", ylabel="lane (row address)", yticks=range(8),
           title=f"{operand} tile {tile[0]}x{tile[1]} bf16, {layout}: phase {phase} needs {deg} wavefront(s)")
    return ax


# ---- explorers: controls that show their first state without a click ------------------------------------

def _outputs(draw, values: dict, catch: bool = False) -> list[dict]:
    """Run draw(**values) and return what it showed as notebook outputs: what it printed (or returned as a string)
    as text, a returned matplotlib Figure or Axes as a PNG. With `catch`, a draw that raises shows its error in one
    line instead (a control's callback has nowhere else to report it)."""
    import base64
    import contextlib
    import io
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            got = draw(**values)
    except Exception as e:
        if not catch:
            raise
        return [{"output_type": "stream", "name": "stderr", "text": f"{type(e).__name__}: {e}\n"}]
    text = printed.getvalue() + (got + "\n" if isinstance(got, str) else "")
    outs = [{"output_type": "stream", "name": "stdout", "text": text}] if text else []
    fig = got if hasattr(got, "savefig") else getattr(got, "figure", None)  # a Figure, or an Axes' figure
    if hasattr(fig, "savefig"):
        import matplotlib.pyplot as plt
        from .figures.common import check_shown
        check_shown([fig])  # under ci/test.sh: a first state a reader could not read fails the chapter
        png = io.BytesIO()
        fig.savefig(png, format="png", bbox_inches="tight")
        plt.close(fig)  # drawn once, here: the inline backend must not show it a second time at the cell's end
        title = "; ".join(t for ax in fig.axes if (t := ax.get_title().replace("\n", " ")))
        outs.append({"output_type": "display_data", "metadata": {},
                     "data": {"image/png": base64.b64encode(png.getvalue()).decode(),
                              "text/plain": f"<figure: {title or 'the first state'}>"}})
    return outs


def _bundle(output: dict) -> dict:
    """A notebook output as a display bundle (text becomes text/plain, which every front end shows as printed)."""
    return output["data"] if "data" in output else {"text/plain": output["text"].rstrip("\n")}


def widget_bundle(widget, caption: str) -> dict:
    """A widget's display bundle with `caption` as its text/plain and text/html, for any front end that cannot draw
    the widget (the built book, a notebook opened without a kernel) instead of ipywidgets' `VBox(children=(...`.
    Show it with IPython.display.display(widget_bundle(box, "..."), raw=True)."""
    import html
    return {**widget._repr_mimebundle_(), "text/plain": caption, "text/html": f"<p><i>{html.escape(caption)}</i></p>"}


def _shown(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


class Explorer:
    """Controls above a drawing. Displayed, it shows the controls, then the drawing for their first values as
    ordinary outputs: a PNG or text that the built book and a notebook opened without a kernel show as they are.
    Moving a control redraws inside the widget, under the controls, and blanks that first state, so one picture
    is on screen at a time and it stays where it was."""

    def __init__(self, draw, controls: dict):
        import ipywidgets as w
        self.draw, self.controls = draw, dict(controls)
        self.out = w.Output()
        self.box = w.VBox([w.HBox(list(self.controls.values())), self.out])
        self.first = _outputs(draw, self.values())
        self._handles: list = []
        for control in self.controls.values():
            control.observe(self.redraw, "value")

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def caption(self) -> str:
        chosen = ", ".join(f"{getattr(c, 'description', '') or name} = {_shown(c.value)}"
                           for name, c in self.controls.items())
        return f"Controls: {chosen} (run this cell in Jupyter to move them); what they draw is below."

    def controls_bundle(self) -> dict:
        return widget_bundle(self.box, self.caption())

    def first_state(self) -> list[dict]:
        """The display bundles of the drawing for the controls' first values."""
        return [_bundle(o) for o in self.first]

    def redraw(self, _change=None) -> None:
        for handle in self._handles:
            handle.update({"text/html": ""}, raw=True)
        self._handles = []
        self.out.outputs = tuple(_outputs(self.draw, self.values(), catch=True))

    def _ipython_display_(self) -> None:
        from IPython.display import display
        display(self.controls_bundle(), raw=True)
        self._handles = [display(b, raw=True, display_id=True) for b in self.first_state()]


def explorer(draw, **controls) -> Explorer:
    """`explorer(draw, name=widget, ...)`: draw(**{name: widget.value}) returns a matplotlib Figure or Axes, or
    text (returned or printed). Its first state is drawn at once, with no click, and redrawn when a control moves.

        explorer(lambda layout: plot_bank_map("A", layout), layout=w.Dropdown(options=LAYOUTS))
    """
    return Explorer(draw, controls)
