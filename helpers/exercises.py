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
        "04_swizzle", "The B tile is written without the swizzle but still read with it. Make the store match.",
        ("&sB[swizzle<BN>(r, c)]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);",
         "&sB[r * BN + c]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);")),
    "07_expect_tx": KernelExercise(
        "07_tma", "TX_BYTES, the count every expect_tx announces, is wrong. Give the bytes one stage really receives.",
        ("constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;", "constexpr int TX_BYTES = (A_TILE + B_TILE) * 4;")),
}
