"""Kernel-editing exercises: a rung's source with one deliberate bug, and the fix. Chapters hand the broken
source to the learner (edit it, then `playground.play`); tests check that the broken one fails and the
reference solution passes, on the GPU, and that both compile, everywhere."""
from __future__ import annotations

from dataclasses import dataclass

from .playground import source


@dataclass(frozen=True)
class KernelExercise:
    rung: str
    task: str       # what the learner is told
    bug: tuple      # (text in the rung's source, what the broken copy has instead)

    def broken(self) -> str:
        good, bad = self.bug
        src = source(self.rung)
        if src.count(good) != 1:
            raise RuntimeError(f"exercise for {self.rung} is out of date: {good!r} is not in its source exactly once")
        return src.replace(good, bad)

    def solution(self) -> str:
        return source(self.rung)


KERNEL_EXERCISES = {
    "04_swizzle_store": KernelExercise(
        "04_swizzle", "Symptom: it compiles, runs and never faults, yet the check finds C wrong almost everywhere "
        "(a relative error near 1), at every shape. One line of the copy is to blame: find it and fix it.",
        ("&sB[swizzle<BN>(r, c)]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);",
         "&sB[r * BN + c]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);")),
    "07_expect_tx": KernelExercise(
        "07_tma", "Symptom: the kernel never finishes; after 4 s its bounded mbarrier wait traps, and the check "
        "reports it. Nothing faults before that. One constant is to blame: find it and fix it.",
        ("constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;", "constexpr int TX_BYTES = (A_TILE + B_TILE) * 4;")),
}


# ---- the chapters' numeric exercises: the expected answers live here, not in the notebooks' check cells ----------

def _ch10(x: dict) -> dict:
    from .explore import ring_parities, waves
    c, clusters = x["c"], x["clusters"]
    last = waves(6144, 6144, c["CLUSTER_BM"], c["BN"], clusters)
    return {1: (c["BM"] + c["BN"]) * c["BK"] * 2,
            2: waves(4096, 4096, c["CLUSTER_BM"], c["BN"], clusters)["busiest"],
            3: ring_parities(4, 10)[9]["producer_waits_empty"],
            4: clusters * last["busiest"] - last["tiles"]}


def _expected(chapter: str, x: dict) -> dict:
    """{exercise number: expected answer} for a chapter, from the same explorers and measurements it shows."""
    from .explore import conflict_degree, launch_registers, mma_fragment, register_budget, waves, wgmma_desc_encode
    if chapter == "10":
        return _ch10(x)
    if chapter == "11":
        pairs = [(b, a) for b, a in zip(x["steps"], x["steps"][1:]) if b.dtype == a.dtype]
        return {1: max(pairs, key=lambda p: p[1].tflops / p[0].tflops)[1].rung,
                2: waves(12288, 12288, 256, 256, x["clusters"])["tiles"]}
    table = {
        "00": lambda: {1: x["ffma"] / x["hbm"], 2: 132 * 4 * 32 * 2 * 1.6 / 1e3},
        "01": lambda: {1: 2 * 64 * 256 / (4 * (64 + 256)), 2: 4 / 64},
        "02": lambda: {1: 2 * 128 * 128 / (2 * (128 + 128)), 2: x["l2"] * 8},
        "03": lambda: {1: int(mma_fragment("C")[0][13, 6]), 2: 64 // 16 + 64 // 16},
        "04": lambda: {2: conflict_degree("A", "row-major", (64, 64))},
        "05": lambda: {1: 3 * (128 * 64 + 64 * 128) * 2, 2: 65536 // (168 * 256)},
        "06": lambda: {1: wgmma_desc_encode(0x4000 + 2 * 32), 2: 256 // 2},
        "07": lambda: {1: (128 * 64 + 128 * 64) * 2, 2: (9 // 4) & 1},
        "08": lambda: {1: 2 * 7, 2: (227 * 1024 - 2048) // ((128 * 64 + 256 * 64) * 2)},
        "09": lambda: {1: max(v for v in range(24, 257, 8) if register_budget(24, v, 3)["fits"]),
                       2: launch_registers(384)},
    }
    return table[chapter]()


TOLERANCE = {"00": 0.03, "01": 0.01, "02": 0.02}  # relative, for answers worked out from measured numbers


def verdict(name: str, mine, expected, rel: float = 0.0) -> str:
    if mine is None:
        return f"{name}: fill in your answer above, then run this cell again."
    if rel:
        ok = isinstance(mine, (int, float)) and abs(mine / expected - 1) <= rel
    else:
        ok = mine == expected
    return f"{name}: {'correct' if ok else 'not yet'}"


def check(chapter: str, answers: dict, **context) -> None:
    """Print one verdict per exercise of `chapter`; `context` passes what the answers depend on (measured
    ceilings, the kernel's constants, the number of clusters)."""
    expected = _expected(chapter, context)
    for i, mine in answers.items():
        print(verdict(f"exercise {i}", mine, expected[i], TOLERANCE.get(chapter, 0.0)))


def swizzle_verdict(name: str, fn, shape=(32, 128)) -> str:
    """A swizzle must be a permutation of each row's 16-byte chunks (else it loses data) and conflict-free."""
    from .explore import conflict_degree
    rows, cols = shape
    chunks = cols * 2 // 16
    for row in range(rows):
        seen = sorted(fn(row, chunk) for chunk in range(chunks))
        if seen != list(range(chunks)):
            return (f"{name}: not yet: row {row} maps its {chunks} chunks onto {len(set(seen))} distinct slots "
                    f"(a swizzle must permute the chunks of a row, or data is overwritten)")
    got = conflict_degree("B", fn, shape)
    return f"{name}: " + ("correct" if got == 1 else f"not yet ({got:.0f} wavefronts per phase)")
