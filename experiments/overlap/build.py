"""Part steps' builds: rung 10's file with OVERLAP = L and the next tile's first TWO k steps issued early instead of
one, a text patch of kernels/10_chip.cu kept here (not a switch of the main file) until it wins. Each early step
writes the same accumulators, so it needs no registers; it needs its ring slot, which the k loop releases with the
slots of the steps before it once their wgmmas are done."""
from __future__ import annotations

from helpers.csource import apply_config
from helpers.registry import rung

BASE = "10_chip"  # built as this rung (no config of its own), with PDL and OVERLAP set in the text
PATCH = (  # (the file's line, the two-step line): each must occur exactly once
    ("        if (OVERLAP && first_tile < tiles) issue(0), ++it;",
     "        const int early = k_tiles > 1 ? 2 : 1;  // k steps of each tile issued before its k loop\n"
     "        if (OVERLAP && first_tile < tiles) {\n"
     "            issue(0), ++it;\n"
     "            if (early > 1) issue(1), ++it;\n"
     "        }"),
    ("            for (int kt = OVERLAP > 0; kt < k_tiles; ++kt, ++it) {",
     "            for (int kt = OVERLAP > 0 ? early : 0; kt < k_tiles; ++kt, ++it) {"),
    ("                if (kt > 0) release((it - 1) % STAGES);",
     "                if (OVERLAP && kt == early && early > 1) release((it - 2) % STAGES);  // both early slots\n"
     "                if (kt > 0) release((it - 1) % STAGES);"),
    ("            wgmma_wait_group<0>();\n            release((it - 1) % STAGES);",
     "            wgmma_wait_group<0>();\n"
     "            if (OVERLAP && k_tiles == early && early > 1) release((it - 2) % STAGES);  // no k loop ran\n"
     "            release((it - 1) % STAGES);"),
    ("                        if (tile + tile_step < tiles) issue(0), ++it;",
     "                        if (tile + tile_step < tiles) {\n"
     "                            issue(0), ++it;\n"
     "                            if (early > 1) issue(1), ++it;\n"
     "                        }"),
)


def source(config: dict, steps: int = 1) -> str:
    """Rung 10's file with the constexpr overrides `config` applied and, for steps = 2, the two-step patch."""
    text = apply_config(rung(BASE).path.read_text(), config)
    if steps == 2:
        for old, new in PATCH:
            if text.count(old) != 1:
                raise ValueError(f"kernels/10_chip.cu changed: the two-step patch no longer finds {old.strip()!r}")
            text = text.replace(old, new)
    return text
