"""The bf16-stores experiment's builds. bf16_stores.cu is chapter 10's kernel with the direct-store epilogue as its
first steps were built when these experiments ran (bf16x2 stores row by row; PAIRED = 1 pairs the lanes, as chapter
10's file has since), rung 09's variants are experiments/bf16_c_8192/bf16_c_8192.cu (C_STORE = 1: rung 09 writing
bf16x2), and chapter 10's later steps are configs of chapter 10's file, as they were configured then. `pairs()` lists
each experiment's builds, in the runner's order."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config, source as rung_source
from helpers.registry import rung

KERNEL = Path(__file__).with_name("bf16_stores.cu")
NINE = Path(__file__).parent.parent / "bf16_c_8192" / "bf16_c_8192.cu"   # rung 09's kernel with its C switches

# Chapter 10's steps as they were configured when these experiments ran (run 2026-11-26T18:01Z-h100 reordered the
# path and gave some ids new configurations): each is chapter 10's file with these switches, launched as 10_grouped_order.
THEN = {"10_cluster_rows": {"CLUSTER": 2, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3},
        "10_cluster": {"CLUSTER": 2, "SCHEDULE": 1, "EPILOGUE": 0, "STAGES": 3},
        "10_four_stages": {"CLUSTER": 2, "SCHEDULE": 1, "EPILOGUE": 0},
        "10_sts_store": {"EPILOGUE": 1, "STAGES": 3},
        "10_tma_store": {"EPILOGUE": 2, "STAGES": 3}}

# Ids that run 2026-11-26T19:47Z-h100 gave to other builds (persistence before bf16 C): the rung that is now the
# build these experiments ran under the old id, with its launch.
RENAMED = {"10_bf16_c": "10_bf16_c_per_tile", "10_persistent": "10_bf16_c"}


def configured(kernel: Path, config: dict | None = None) -> str:
    """`kernel` with the constexpr overrides `config` applied. CLUSTER_LAUNCH is the one switch that is a macro (a
    kernel has __cluster_dims__ or not): when given, it is defined ahead of the file, whose #ifndef keeps it."""
    config = dict(config or {})
    launch = config.pop("CLUSTER_LAUNCH", None)
    text = apply_config(kernel.read_text(), config)
    return text if launch is None else f"#define CLUSTER_LAUNCH {launch}\n{text}"


def source(config: dict | None = None) -> str:
    """bf16_stores.cu with the overrides `config` applied (CLUSTER_LAUNCH among them)."""
    return configured(KERNEL, config)


def nine(config: dict | None = None) -> str:
    """Rung 09's kernel (bf16_c_8192.cu, configured as the registry configures rung 09) with `config`, one of its
    switches: C_STORE = 1 writes bf16x2 into the fp32 C buffer."""
    return configured(NINE, {**rung("09_setmaxnreg").config, **(config or {})})


def step_config(step: str) -> dict:
    """The switches of chapter 10's file that made a step when these experiments ran."""
    return THEN[step] if step in THEN else rung(RENAMED.get(step, step)).config


def then(step: str) -> str:
    """A chapter-10 step's source as it was built when these experiments ran."""
    if step in THEN:
        return apply_config(rung_source("10_grouped_order"), THEN[step])
    return rung_source(RENAMED.get(step, step))


def host(step: str) -> str:
    """The rung whose launch (grid, operands) runs that source."""
    return "10_grouped_order" if step in THEN else RENAMED.get(step, step)


def first_built(step: str, config: dict | None = None) -> str:
    """The step with the bf16x2 stores it had before the pairing was adopted (bf16_stores.cu with PAIRED = 0), and
    `config` on top ({"CLUSTER_LAUNCH": 0}: without its __cluster_dims__)."""
    return source({**step_config(step), "PAIRED": 0, **(config or {})})


def tma_store_four_stages() -> str:
    """The TMA store with st.shared and four stages: chapter 10's 10_tma_store when experiments 4 to 6 ran (the path
    has since taken the TMA store before the fourth stage, with stmatrix)."""
    return apply_config(rung_source("10_grouped_order"), {"EPILOGUE": 1})


def pairs():
    """Per experiment (1 to 7): (the rung whose launch runs its builds, ((label, source[, host]), ...))."""
    ten, nine_fp32 = first_built("10_bf16_c"), rung_source("09_setmaxnreg")
    yield "10_bf16_c", (("with __cluster_dims__", ten), ("without", first_built("10_bf16_c", {"CLUSTER_LAUNCH": 0})))
    yield "09_setmaxnreg", (("09 as built (fp32 C)", nine_fp32), ("09 writing bf16x2", nine({"C_STORE": 1})))
    yield "10_bf16_c", (("10_bf16_c as built", ten), ("lanes paired, 8 B", rung_source("10_bf16_c")),
                        ("09 as built (fp32 C)", nine_fp32, "09_setmaxnreg"))  # the step's predecessor, same rounds
    yield "10_four_stages", (("10_four_stages as built", first_built("10_four_stages"), host("10_four_stages")),
                             ("four stages, lanes paired", then("10_four_stages"), host("10_four_stages")),
                             ("10_tma_store as built", tma_store_four_stages(), "10_grouped_order"))
    chain = [("09 as built (fp32 C)", nine_fp32, "09_setmaxnreg")]
    for step in ("10_bf16_c", "10_persistent", "10_cluster_rows", "10_cluster", "10_four_stages"):
        chain.append((f"{step} paired", then(step), host(step)))
    chain.append(("10_tma_store as built", tma_store_four_stages(), "10_grouped_order"))
    yield "09_setmaxnreg", tuple(chain)
    yield "10_grouped_order", (("10_cluster (3 stages)", then("10_cluster")),
                          ("TMA store, 3 stages", then("10_sts_store"), host("10_sts_store")),
                          ("10_four_stages", then("10_four_stages"), host("10_four_stages")),
                          ("10_tma_store, 4 stages", tma_store_four_stages(), "10_grouped_order"))
    no_clusters = apply_config(then("10_tma_store"), {"CLUSTER": 1, "SCHEDULE": 0})
    yield "10_persistent", (("10_persistent", rung_source("10_persistent")),
                            ("TMA store, no clusters", no_clusters, host("10_tma_store")),
                            ("10_cluster", then("10_cluster"), host("10_cluster")),
                            ("10_tma_store", then("10_tma_store"), host("10_tma_store")))
