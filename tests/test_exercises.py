"""The chapters' exercises: their reference solutions are right (CPU), and the kernel-editing ones behave on the
GPU: the broken copy fails the check, the solution passes."""
import pytest

from helpers.exercises import KERNEL_EXERCISES
from helpers.explore import conflict_degree, mma_fragment, register_budget, wgmma_desc_encode
from helpers.playground import play


def test_cpu_solutions_match_the_explorers():
    assert conflict_degree("B", lambda row, chunk: chunk ^ (row & 7), (32, 128)) == 1      # ch 04, exercise 1
    assert conflict_degree("B", lambda row, chunk: chunk ^ (row & 3), (32, 128)) == 2      # ... and the bug
    assert conflict_degree("A", "row-major", (64, 64)) == 8                                 # ch 04, exercise 2
    lane, elem = mma_fragment("C")
    assert (lane[13, 6], elem[13, 6]) == (23, 2)                                            # ch 03, exercise 1
    assert max(v for v in range(24, 257, 8) if register_budget(24, v, 3)["fits"]) == 160  # ch 09, exercise 1
    assert register_budget(24, 240)["start_cap"] == 168                                    # ch 09, exercise 2
    assert not register_budget(40, 240)["fits"] and register_budget(40, 232)["fits"]
    assert wgmma_desc_encode(0x4000 + 64) - wgmma_desc_encode(0x4000) == 64 >> 4            # ch 06, exercise 1
    assert (227 * 1024 - 2048) // ((128 * 64 + 256 * 64) * 2) == 4                          # ch 08, exercise 2


@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_kernel_exercise_sources_compile(name):
    ex = KERNEL_EXERCISES[name]
    assert ex.broken() != ex.solution()
    assert play(ex.rung, ex.broken(), n=1024).compiled and play(ex.rung, ex.solution(), n=1024).compiled


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_kernel_exercise_broken_fails_and_solution_passes(name):
    ex = KERNEL_EXERCISES[name]
    bad = play(ex.rung, ex.broken(), n=1024, timeout_s=90)
    assert not bad.ok and ("WRONG" in bad.message or "did not finish" in bad.message), bad.message
    good = play(ex.rung, ex.solution(), n=1024)
    assert good.ok, good.message


def test_playground_reports_compile_errors_with_the_line():
    out = play("01_naive", "extern \"C\" __global__ void sgemm_naive() { undefined_thing; }\n")
    assert not out.compiled and "line 1" in out.message and "undefined_thing" in out.message
