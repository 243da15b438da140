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
