"""The chapters' exercises: their reference solutions are right (CPU), and the kernel-editing ones behave on the
GPU: the broken copy fails the check, the solution passes."""
import pytest

from helpers.build import build
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
    # ch 06, exercise 1, from the PTX descriptor layout: start 0x4040 >> 4 in bits 0-13, LBO 16 >> 4 in 16-29,
    # SBO 1024 >> 4 in 32-45, swizzle mode 1 (128 B) in bits 62-63.
    assert wgmma_desc_encode(0x4000 + 2 * 32) == 0x4000_0040_0001_0404


def test_ring_depths_the_chapter_08_exercises_use_are_the_kernels_own():
    # A stage holds (BM + BN) * BK bf16 of A and B; 227 KiB less 2 KiB: 7 stages of 128x128 (32 KiB, ch 08
    # exercise 1), 4 of 128x256 (48 KiB, ch 08 exercise 2, the chapter 09 tile). Read from the .cu constants.
    consts = [build(rid).consts for rid in ("08_warp_specialized", "09_setmaxnreg")]
    assert [(c["BM"], c["BN"], c["BK"], c["STAGES"]) for c in consts] == [(128, 128, 64, 7), (128, 256, 64, 4)]
    assert all(c["SMEM_BYTES"] <= 227 * 1024 for c in consts)


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


def test_solutions_are_folded_in_a_way_jupyterlab_and_the_book_both_honour():
    # A MyST {admonition} fence shows in JupyterLab as a code block with every answer in plain sight; an HTML
    # <details> block is folded in both, and the markdown inside it still renders in the book.
    import json
    from helpers.registry import ROOT
    for path in sorted((ROOT / "chapters").glob("[01]*.ipynb")):
        text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "markdown")
        assert "{admonition} Solutions" not in text, path.name
        if "## Exercises" in text:
            assert "<details>\n<summary><b>Solutions</b>" in text and "\n\n</details>" in text, path.name


def test_the_expected_answers_are_not_in_the_check_cells():
    import json
    from helpers.registry import ROOT
    for path in sorted((ROOT / "chapters").glob("[01]*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        checks = [c for c in cells if "check_exercises(" in c]
        assert len(checks) == 1 and "def verdict" not in "".join(cells), path.name


def test_a_swizzle_that_is_not_a_permutation_is_rejected():
    from helpers.exercises import swizzle_verdict
    assert "correct" in swizzle_verdict("e", lambda row, chunk: chunk ^ (row & 7))
    assert "not yet: row 0" in swizzle_verdict("e", lambda row, chunk: row & 7)  # conflict-free, but loses data
    assert "wavefronts" in swizzle_verdict("e", lambda row, chunk: chunk)


def test_the_expected_answers_match_the_worked_solutions():
    from helpers.exercises import _expected
    assert _expected("09", {}) == {1: 160, 2: 168}
    assert _expected("07", {}) == {1: 32768, 2: 0}
    assert _expected("05", {})[2] == 1  # 168 registers x 256 threads: one block per SM
