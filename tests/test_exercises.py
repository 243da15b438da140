"""The chapters' exercises: their reference solutions are right (CPU), and the kernel-editing ones behave on the
GPU: the broken copy fails the check, the solution passes."""
import pytest

from helpers.compiler import build
from helpers.exercises import KERNEL_EXERCISES
from helpers.hardware import MAX_SM_CLOCK_HZ, SMEM_PER_BLOCK_OPTIN, SMS
from helpers.models import conflict_degree, mma_fragment, register_budget, wgmma_desc_encode
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
    # exercise 1: tile 16 is on lap 2), 4 of 128x256 (48 KiB, ch 08 exercise 2, the chapter 09 tile). Read from
    # the .cu constants.
    # (09_setmaxnreg's registry entry holds its ring at 3 stages; the budget formula in its file gives the 4.)
    consts = [build(rid).consts for rid in ("08_warp_specialized", "09_setmaxnreg")]
    assert [(c["BM"], c["BN"], c["BK"]) for c in consts] == [(128, 128, 64), (128, 256, 64)]
    fits = [(c["SMEM_BUDGET"] - 2 * 1024) // c["STAGE_BYTES"] for c in consts]
    assert fits == [7, 4] and consts[0]["STAGES"] == 7
    assert all(c["SMEM_BYTES"] <= SMEM_PER_BLOCK_OPTIN for c in consts)


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """(old line, new line) of every line that differs, for two texts with the same number of lines."""
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b), "the exercise must change lines, not add or remove them"
    return [(x, y) for x, y in zip(a, b) if x != y]


def _swizzled_b_store(old: str, new: str, solution: str, broken: str) -> None:
    # ch 04: the copy into sB stores unswizzled while ldmatrix still reads swizzled: writer and reader disagree on
    # where a 16-byte chunk lives, so C is wrong nearly everywhere (rows with row & 7 == 0 are the only agreement).
    assert "&sB[swizzle<BN>(r, c)]" in old and "&sB[r * BN + c]" in new
    assert solution.count("sB[swizzle<BN>(") == 2 and broken.count("sB[swizzle<BN>(") == 1  # the read keeps it
    assert "ldmatrix_x4_trans" in next(line for line in broken.splitlines() if "sB[swizzle<BN>(" in line)


def _expect_tx_too_large(old: str, new: str, solution: str, broken: str) -> None:
    # ch 07: expect_tx announces more bytes than the two TMA boxes bring, so the full barrier never completes and
    # the bounded wait traps (the symptom the task describes). Delivered bytes from the tile, independently: the
    # [BM, BK] box of A and the [BN, BK] box of Bt, bf16.
    from helpers.csource import read_consts
    good, bad = read_consts(solution), read_consts(broken)
    delivered = (good["BM"] + good["BN"]) * good["BK"] * 2
    assert good["TX_BYTES"] == delivered, good
    assert bad["TX_BYTES"] == 2 * delivered and "TX_BYTES" in old and "TX_BYTES" in new
    assert {k: v for k, v in bad.items() if k != "TX_BYTES"} == {k: v for k, v in good.items() if k != "TX_BYTES"}


WRONG_IN_THE_WAY = {"04_swizzle_store": _swizzled_b_store, "07_expect_tx": _expect_tx_too_large}


@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_kernel_exercise_sources_compile(name):
    # The solution is the committed rung (its registry config applied), read here from the .cu itself; the broken
    # copy differs from it in exactly one line, in the way the task describes. Both compile (no GPU needed).
    from helpers.csource import apply_config
    from helpers.registry import rung
    ex = KERNEL_EXERCISES[name]
    r = rung(ex.rung)
    solution, broken = ex.solution(), ex.broken()
    assert solution == apply_config(r.path.read_text(), r.config)
    [(old, new)] = _changed_lines(solution, broken)
    assert name in WRONG_IN_THE_WAY, f"say how {name}'s broken copy is wrong in WRONG_IN_THE_WAY"
    WRONG_IN_THE_WAY[name](old, new, solution, broken)
    assert play(ex.rung, broken, n=1024).compiled and play(ex.rung, solution, n=1024).compiled


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_kernel_exercise_broken_fails_and_solution_passes(name):
    ex = KERNEL_EXERCISES[name]
    bad = play(ex.rung, ex.broken(), n=1024, timeout_s=90)
    assert not bad.ok and ("WRONG" in bad.message or "did not finish" in bad.message), bad.message
    good = play(ex.rung, ex.solution(), n=1024)
    assert good.ok, good.message


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_with_a_gpu_the_exercise_check_runs_the_real_kernel(name):
    # the CPU model judges an edit only where the rung cannot run; on a GPU, check() is the playground's real run
    ex = KERNEL_EXERCISES[name]
    said = ex.check(ex.broken())
    assert "CPU model" not in said and ("WRONG" in said or "did not finish" in said), said


# ---- without a GPU, a fix-the-kernel exercise is judged by the CPU model of its bug (issue 40, item 2) -----------

def test_the_expect_tx_exercise_gets_a_replay_verdict_from_the_tx_countdown(monkeypatch):
    # ch 07, exercise 3: the countdown (models.mbarrier_countdown) of what expect_tx announces against the two boxes
    # ([BM, BK] of A, [BN, BK] of Bt, bf16) says why the broken copy hangs; the book's recorded fault of the same kind
    # is shown beside it, told as the notebook reads it (the variant ran in a child process)
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    ex = KERNEL_EXERCISES["07_expect_tx"]
    bad = ex.check(ex.broken())
    assert bad.startswith("compiled: ") and "not run here: GEMM_LADDER_REPLAY is set" in bad, bad
    assert "mbarrier_countdown) judges your edit instead: not yet: expect_tx announces 98,304 bytes" in bad, bad
    assert "49,152 bytes are still pending" in bad and "never completes its phase" in bad, bad
    symptom = bad.splitlines()[-1]
    assert symptom.startswith("What this kind of bug did on a GPU (07_tma with TX_BYTES = ") and "recorded on " in symptom
    assert "did not finish" in symptom and "restart the Python kernel" not in symptom, symptom
    good = ex.check(ex.solution())
    assert "judges your edit instead: fixed: expect_tx announces 49,152 bytes" in good and "on a GPU" not in good, good
    # a fix on the call instead of the constant is read too; too few bytes complete the phase mid-copy (no recording)
    assert ": fixed: " in ex.check(ex.broken().replace("mbarrier_arrive_expect_tx(bar, TX_BYTES)",
                                                       "mbarrier_arrive_expect_tx(bar, STAGE_BYTES)"))
    few = ex.check(ex.broken().replace("(A_TILE + B_TILE) * 4;", "(A_TILE + B_TILE) * 2 - 1024;"))
    assert "not yet: expect_tx announces 48,128 bytes a stage, fewer than" in few and "on a GPU (" not in few, few
    # an edit elsewhere is named as beyond the model
    other = ex.check(ex.solution().replace("constexpr int STAGES = 3;", "constexpr int STAGES = 4;"))
    assert ": fixed: " in other and "differs from the rung's own source in line 22, which the model does not read" \
        in other, other


def test_the_swizzle_store_exercise_gets_a_replay_verdict_from_the_chunk_places(monkeypatch):
    # ch 04, exercise 3: where the copy stores each 16-byte chunk of sB against where ldmatrix reads it (models.offset)
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    ex = KERNEL_EXERCISES["04_swizzle_store"]
    bad = ex.check(ex.broken())
    assert "not yet: the copy stores sB's 16-byte chunks row-major and ldmatrix reads them swizzled: 448 of its 512" \
        in bad, bad  # [32, 128] bf16: 16 chunks a row, and only the rows with row % 8 == 0 agree
    assert ": fixed: " in ex.check(ex.solution())
    read = "&sB[swizzle<BN>(kk + lane % 16, wn * WN + j * 8 + lane / 16 * 8)]"
    both = ex.check(ex.broken().replace(read, "&sB[(kk + lane % 16) * BN + wn * WN + j * 8 + lane / 16 * 8]"))
    assert "not yet: sB is stored and read row-major: C comes out right, but its ldmatrix phases take 8 wavefronts" \
        in both, both
    broken = ex.check(ex.broken().replace("__syncthreads();", "__syncthreads()", 1))
    assert broken.startswith("compile error in ") and "CPU model" not in broken


def test_the_exercise_editors_button_gives_the_replay_verdict(monkeypatch, capsys):
    # the button under the broken copy says what check() says, so it answers without a GPU too
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    ex = KERNEL_EXERCISES["07_expect_tx"]
    parts = ex.edit()
    assert parts["run"].description == "compile, check and time"
    parts["code"].value = ex.solution()
    parts["run"].click()
    out = capsys.readouterr().out + "".join(o.get("text", "") for o in parts["out"].outputs)
    assert "judges your edit instead: fixed: " in out, out


def test_the_chapter_07_check_cell_asks_the_exercise_for_its_verdict():
    import json
    from helpers.registry import ROOT
    cells = json.loads((ROOT / "chapters" / "07_tma.ipynb").read_text())["cells"]
    (cell,) = ["".join(c["source"]) for c in cells if c.get("id") == "c20"]
    assert cell.startswith('print(exercise.check(parts["code"].value))')


# ---- the usual wrong answers, each said why (issue 40, item 6) ------------------------------------------------------

def _ch10_context() -> dict:
    from helpers import results
    data = results.load(results.path_for())
    return {"c": build("10_chip").consts, "clusters": data["grids"]["10_chip"]["clusters"]}


def test_chapter_10s_multicast_bytes_and_parity_mistakes_are_named(capsys):
    from helpers.exercises import grade
    x = _ch10_context()
    assert (x["c"]["BM"], x["c"]["BN"], x["c"]["BK"], x["c"]["CLUSTER"]) == (128, 256, 64, 2)
    for i, mine, said in (
            (1, 49152, "exercise 1: correct"),
            (1, 32768, "exercise 1: not yet: that is what this CTA fetches itself; the partner multicasts the other "
                       "16,384 bytes of B"),  # (128 + 256 / 2) x 64 x 2: the multicast half left out
            (1, 98304, "exercise 1: not yet: that counts 4 bytes an element"),
            (1, 65536, "exercise 1: not yet: that counts the partner's A too"),
            (3, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1], "exercise 3: correct"),
            (3, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0], "exercise 3: not yet: that is the consumers' parity on the full "
                                                "barrier"),
            (3, (0, 1) * 5, "exercise 3: not yet: that flips the parity every tile"),
            (3, [1] * 4, "exercise 3: not yet: 10 values are asked for, and the list has 4"),
            (2, 8, "exercise 2: not yet: that counts the CTAs' 128 x 256 tiles"),
            (2, 2, "exercise 2: not yet: that shares the tiles among 132 CTAs")):
        grade("10", {i: mine}, **x)
        out = capsys.readouterr().out.strip()
        assert out.startswith(said), (i, mine, out)


def test_chapter_07s_parity_and_bytes_mistakes_are_named(capsys):
    # the consumers wait on the full barrier for their lap's parity, (kt / 4) & 1; the usual wrong lists are the
    # producer's parity, a flip every tile, and the laps themselves
    from helpers.exercises import grade
    for i, mine, said in (
            (2, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0], "exercise 2: correct"),
            (2, (0, 0, 0, 0, 1, 1, 1, 1, 0, 0), "exercise 2: correct"),
            (2, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1], "exercise 2: not yet: that is the producer's parity on the empty"),
            (2, [0, 1] * 5, "exercise 2: not yet: that flips the parity every tile"),
            (2, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2], "exercise 2: not yet: those are the laps"),
            (2, [0, 0, 0, 1, 1, 1, 1, 0, 0, 0], "exercise 2: not yet"),
            (1, 32768, "exercise 1: correct"),
            (1, 65536, "exercise 1: not yet: that counts 4 bytes an element; a bf16 value is 2"),
            (1, 16384, "exercise 1: not yet: that is the elements of A and B, or the bytes of one of them"),
            (1, 49152, "exercise 1: not yet: that is rung 07's own 128 x 256 tile")):
        grade("07", {i: mine})
        out = capsys.readouterr().out.strip()
        assert out == said if said.endswith("not yet") else out.startswith(said), (i, mine, out)


def test_playground_reports_compile_errors_with_the_line():
    out = play("01_naive", "extern \"C\" __global__ void sgemm_naive() { undefined_thing; }\n")
    assert not out.compiled and "line 1" in out.message and "undefined_thing" in out.message


def test_solutions_are_folded_in_a_way_jupyterlab_and_the_book_both_honour():
    # A MyST {admonition} fence shows in JupyterLab as a code block with every answer in plain sight; an HTML
    # <details> block is folded in both, and the markdown inside it still renders in the book.
    import json
    from helpers.registry import ROOT
    for path in sorted((ROOT / "chapters").glob("[01]*.ipynb")):
        cells = json.loads(path.read_text())["cells"]  # markdown, and what rendered-prose cells (remove-input) show
        text = "\n".join(["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"] +
                         ["".join(o.get("data", {}).get("text/markdown", "")) for c in cells
                          if "remove-input" in c["metadata"].get("tags", []) for o in c.get("outputs", [])])
        assert "{admonition} Solutions" not in text, path.name
        if "## Exercises" in text:
            assert "<details>\n<summary><b>Solutions</b>" in text and "\n\n</details>" in text, path.name


def test_the_expected_answers_are_not_in_the_check_cells():
    import json
    from helpers.registry import ROOT
    for path in sorted((ROOT / "chapters").glob("[01]*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        checks = [c for c in cells if "grade(" in c]
        assert len(checks) == 1 and "def mark" not in "".join(cells), path.name


def test_a_swizzle_that_is_not_a_permutation_is_rejected():
    from helpers.exercises import swizzle_mark
    assert "correct" in swizzle_mark("e", lambda row, chunk: chunk ^ (row & 7))
    assert "not yet: row 0" in swizzle_mark("e", lambda row, chunk: row & 7)  # conflict-free, but loses data
    assert "wavefronts" in swizzle_mark("e", lambda row, chunk: chunk)


def test_the_expected_answers_match_the_worked_solutions():
    from helpers.exercises import _expected
    nine = _expected("09", {})
    assert (nine[1], nine[2]) == (160, 168) and nine[3](192) == (True, "")  # exercise 3 is judged by ptxas's report
    # tile 16 waits for empty[2]'s phase 1 (2 releases x 2 consumers); 256 arrivals a phase stop the 7-stage ring at
    # tile 7; an early release lets tile 3 land on tile 0 in 08_same_tile's 3-stage ring
    assert _expected("08", {}) == {1: 4, 2: 4, 3: 7, 4: 3}
    assert _expected("07", {}) == {1: 32768, 2: [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]}  # a list: no answer guessed by a coin
    assert _expected("05", {})[2] == 1  # 168 registers x 256 threads: one block per SM


# ---- predict, then measure: the napkin's number comes from the constexprs, the measurement from the run --------

# chapter: (exercise, context)
PREDICT = {"02": (3, {"l2": 7.36}), "03": (3, {}), "04": (4, {}), "05": (3, {"cp_async": 9.04, "l2": 8.33}),
           "06": (3, {}), "07": (5, {})}


def test_the_predictions_are_the_chapters_napkins():
    from helpers.exercises import _predicted
    assert _predicted("02", {"l2": 1.0}) == {3: 32.0}                     # 64 x 64 tile: 32 FLOP/byte x L2 TB/s
    assert round(_predicted("03", {})[3]) == 126                          # 2,176 wavefronts per k tile
    assert _predicted("04", {}) == {4: 2048 - 384}                        # 64 x 4 x 3 + 32 x 4 x 7 wavefronts saved
    assert _predicted("05", {"cp_async": 1.0}) == {3: 64.0}              # 128 x 128 tile: 64 FLOP/byte x cp.async TB/s
    assert _predicted("06", {})[3] == pytest.approx(4 / 3)                # 128 x 256: 85.3 FLOP/B against 64
    assert _predicted("07", {})[5] == pytest.approx((1024 + 2 * 12 * 10) / 1024)


@pytest.mark.parametrize("chapter", sorted(PREDICT))
def test_a_right_prediction_is_compared_and_a_wrong_one_rejected(chapter, capsys, monkeypatch):
    from helpers.exercises import _predicted, grade as check
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    i, ctx = PREDICT[chapter]
    right = _predicted(chapter, ctx)[i]
    check(chapter, {i: right * 1.01}, **ctx)       # a napkin worked with rounded numbers still counts
    out = capsys.readouterr().out
    assert f"exercise {i}: correct" in out and "measured: " in out and "% of it, off by " in out, out
    for wrong in (right * 1.1, right / 2, "about 100"):
        check(chapter, {i: wrong}, **ctx)
        out = capsys.readouterr().out
        assert f"exercise {i}: not yet" in out and "measured: " in out and "% of it" not in out, out
    check(chapter, {i: None}, **ctx)
    assert capsys.readouterr().out.strip() == f"exercise {i}: fill in your answer above, then run this cell again."


def _variant(rung_id: str, **config) -> dict:
    from helpers.csource import apply_config, read_consts
    from helpers.registry import rung
    r = rung(rung_id)
    return read_consts(apply_config(apply_config(r.path.read_text(), r.config), config))


@pytest.mark.parametrize("chapter, rung_id, config, expected", [
    ("02", "02_wmma_smem", {"BN": 128}, 2 * 64 * 128 / (2 * (64 + 128)) * 7.36),
    # 4 warps of 64 x 64: 4 x 2 x (4 x 16 + 4 x 32) wavefronts of loads + 128 of stores = 1,664 per k tile
    ("03", "03_mma_sync", {"WN": 64}, 2 * 128 * 128 * 32 / 1664 * SMS * MAX_SM_CLOCK_HZ / 1e12),
    # 4 warps of 64 x 64: 4 x 2 k steps x (4 A loads x 4 phases x 3 saved + 4 B loads x 4 phases x 7 saved)
    ("04", "04_swizzle", {"WN": 64}, 4 * 2 * (4 * 4 * 3 + 4 * 4 * 7)),
    # a 128 x 64 block tile in rung 05: 2 x 128 x 64 x 32 FLOP on (128 + 64) x 32 x 2 bytes, 42.7 FLOP per byte
    ("05", "05_cp_async", {"BN": 64}, 128 * 64 / (128 + 64) * 9.04),
    # a 128 x 128 block tile loads 64 FLOP per byte, as the narrow rung does: no gain left on the load-path roof
    ("06", "06_wgmma_wide", {"BN": 128, "WGMMA_N": 128}, 1.0),
    # a 128 x 128 tile in rung 06: 4 + 4 copies per thread, 2 warps per scheduler, 10 instructions per copy
    ("07", "06_wgmma_wide", {"BN": 128, "WGMMA_N": 128}, (1024 + 2 * 8 * 10) / 1024),
])
def test_the_prediction_follows_the_kernels_constexprs(chapter, rung_id, config, expected, monkeypatch):
    from helpers import exercises
    i, ctx = PREDICT[chapter]
    before = exercises._predicted(chapter, ctx)[i]
    real = exercises._consts
    monkeypatch.setattr(exercises, "_consts", lambda rid: _variant(rid, **config) if rid == rung_id else real(rid))
    after = exercises._predicted(chapter, ctx)[i]
    assert after == pytest.approx(expected) and after != pytest.approx(before)


def test_replay_reports_the_recorded_measurement_with_its_gpu_and_date(capsys, monkeypatch):
    from helpers import results
    from helpers.exercises import _predicted, grade as check
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    fast, slow = (results.recorded_gemm(r, 4096, 4096, 4096) for r in ("07_tma", "06_wgmma_wide"))
    check("07", {5: _predicted("07", {})[5]})
    out = capsys.readouterr().out
    assert f"{fast['tflops'] / slow['tflops']:.3f}x" in out, out
    assert all(f"recorded on {x['gpu']}, {x['date']}" in out for x in (fast, slow)) and "measured now" not in out, out
    e = results.recorded_gemm("03_mma_sync", 4096, 4096, 4096)
    check("03", {3: _predicted("03", {})[3]})
    out = capsys.readouterr().out
    assert f"{e['tflops']:.1f} TFLOP/s (recorded on {e['gpu']}, {e['date']})" in out, out


def test_the_band_says_close_or_names_what_the_model_leaves_out():
    from dataclasses import replace

    from helpers.exercises import Prediction, comparison
    from helpers.ladder import replay
    row = replace(replay("03_mma_sync", 4096), source="live")
    p = Prediction(lambda x: 0.0, lambda: (100.0, [row]), "a rate", "{:.1f} TFLOP/s", 0.1, "the moon")
    near, far = "\n".join(comparison(p, 105.0)), "\n".join(comparison(p, 150.0))
    assert f"measured now on {row.gpu}, {row.date}" in near
    assert "close: within 10%" in near and "the moon" not in near
    assert "67% of it, off by 33%" in far and "off by more than 10%: here is what the model leaves out: the moon" in far


def test_the_worked_predictions_say_what_the_recorded_run_measured():
    import json

    from helpers import results
    from helpers.exercises import _predicted
    from helpers.registry import ROOT
    data = results.load(results.path_for())
    t = lambda r: data["gemm"][results.gemm_key(r, 4096, 4096, 4096)]["tflops"]  # noqa: E731
    def solutions(name: str) -> str:
        cells = json.loads((ROOT / "chapters" / f"{name}.ipynb").read_text())["cells"]
        shown = lambda c: (["".join(o.get("data", {}).get("text/markdown", "")) for o in c.get("outputs", [])]  # noqa
                           if "remove-input" in c["metadata"].get("tags", []) else c["source"])  # what the book shows
        (text,) = [t for t in ("".join(shown(c)) for c in cells) if "<summary><b>Solutions" in t]
        return " ".join(text.split())
    said = {name: solutions(name) for name in ("02_wmma", "03_mma_sync", "05_cp_async", "06_wgmma", "07_tma")}
    assert "reaches roughly half of it" in said["02_wmma"]
    assert 0.4 <= t("02_wmma_smem") / _predicted("02", {"l2": data["ceilings"]["l2_read"]["value"]})[3] <= 0.6
    assert "The measured rate stays under it" in said["03_mma_sync"]  # at the kernel's own clock (counters, item C)
    assert t("03_mma_sync") < 0.8 * _predicted("03", {})[3]
    assert "The measured rate is well below it" in said["05_cp_async"]  # the cp.async roof bounds the copies alone
    assert t("05_cp_async") < 0.9 * _predicted("05", {"cp_async": data["ceilings"]["read_cp_async@21.6MB"]["value"]})[3]
    assert "The measured factor is well below it" in said["06_wgmma"]
    assert t("06_wgmma_wide") / t("06_wgmma_m64n64") < 0.9 * _predicted("06", {})[3]
    assert "is smaller, and inside the napkin's range" in said["07_tma"]
    low = (1024 + 2 * 12 * 5) / 1024  # five instructions per copy
    assert low <= t("07_tma") / t("06_wgmma_wide") < _predicted("07", {})[5]


def test_a_wrong_answer_gets_a_hint_for_the_usual_mistakes():
    from helpers.exercises import mark
    assert mark("e", 64.0, 32.0) == "e: not yet: twice the answer: a factor of 2 counted once too often (an FMA is " \
                                    "2 FLOP, a bf16 value 2 bytes, a tile has two operands)"
    assert "half the answer" in mark("e", 16.0, 32.0)
    assert "the inverse of the answer" in mark("e", 1 / 8.0, 8.0)
    assert "check the unit asked for (TB/s, not GB/s" in mark("e", 7480.0, 7.48, 0.02)
    assert "KiB against bytes" in mark("e", 49152 * 1024, 49152)
    assert mark("e", 40.0, 32.0, 0.02) == "e: not yet (answers within 2% count)"
    assert mark("e", 33.0, 32.0) == "e: not yet"  # an exact answer (a register count) states no tolerance
    assert mark("e", 32.5, 32.0, 0.02) == "e: correct"
    # the bound is inclusive, as a reader reads "within 5%": chapter 12's 1.9 against a napkin of 2.0 counts
    assert mark("e", 1.9, 2.0, 0.05) == mark("e", 2.1, 2.0, 0.05) == "e: correct"
    assert mark("e", 1.89, 2.0, 0.05) == "e: not yet (answers within 5% count)"


def test_the_swizzle_prediction_names_the_usual_miscounts(capsys, monkeypatch):
    # ch 04, exercise 4: the saving is 2,048 - 384 wavefronts of ldmatrix reads; each usual miscount gets its own hint
    from helpers.exercises import grade
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    for wrong, why in ((2048, "subtract them"), (2048 + 128 - 384, "they cancel"), (1664 / 4, "one wavefront per "
                       "ldmatrix.x4"), (2048 / 384, "a ratio"), ((2048 + 128) / (384 + 128), "a ratio")):
        grade("04", {4: wrong})
        out = capsys.readouterr().out
        assert out.startswith("exercise 4: not yet: ") and why in out.splitlines()[0], (wrong, out)
    grade("04", {4: 1664})
    out = capsys.readouterr().out
    assert "exercise 4: correct" in out and "cycles" in out and "03_mma_sync less 04_swizzle" in out, out


def test_the_measured_saving_is_chapter_04s_cycles_per_k_tile(monkeypatch):
    # the prediction's measurement is the difference the chapter's "What the measurement says" renders: each rung's
    # k tile (2 x 128 x 128 x 32 FLOP) at its measured rate and the clock Nsight Compute saw it run at
    from helpers import results
    from helpers.exercises import PREDICTIONS
    from helpers.figures import recorded_profile
    data = results.load(results.path_for())
    def cycles(r):
        tflops = data["gemm"][results.gemm_key(r, 4096, 4096, 4096)]["tflops"]
        return 2 * 128 * 128 * 32 / (tflops * 1e12 / (SMS * recorded_profile(r, 4096)["sm_clock_mhz"] * 1e6))
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    value, rows = PREDICTIONS["04", 4].measured()
    assert value == pytest.approx(cycles("03_mma_sync") - cycles("04_swizzle"))
    assert [r.rung for r in rows] == ["03_mma_sync", "04_swizzle"]


# ---- edit a kernel, read the compiler's answer (ch 06, exercises 4 and 5): NVRTC, no GPU -------------------------

def test_asking_for_blocks_changes_one_line_of_the_kernel():
    from helpers.csource import read_consts, source
    from helpers.ptxas_exercises import bounded
    [(old, new)] = _changed_lines(source("06_wgmma_m64n64"), bounded("06_wgmma_m64n64", 3))
    assert old.strip().endswith("__launch_bounds__(THREADS)") and new.strip().endswith("__launch_bounds__(THREADS, 3)")
    assert read_consts(bounded("06_wgmma_m64n64", 3)) == read_consts(source("06_wgmma_m64n64"))


def test_the_compiler_answers_the_launch_bounds_exercise():
    # 3 blocks of 256 threads: 65,536 / 768 = 85.3 registers, 80 in ptxas's steps of 8; the narrow rung's 64
    # accumulators and addresses spill under it and ptxas serializes the wgmmas (C7512); 2 blocks (128) fit. The wide
    # rung's 128 accumulators cannot compile under 128 at all (C7602). Shared memory holds one block either way.
    from helpers.csource import source
    from helpers.ptxas_exercises import bounded, compiler_says, most_blocks
    from helpers.models import launch_registers
    assert launch_registers(256 * 3) == 80 and launch_registers(256 * 2) == 128
    as_built = compiler_says("06_wgmma_m64n64", source("06_wgmma_m64n64"))
    assert "nothing spilled" in as_built and "1 by shared memory (129 KiB a block)" in as_built, as_built
    three = compiler_says("06_wgmma_m64n64", bounded("06_wgmma_m64n64", 3))
    assert "bytes of spill stores" in three and "(C7512)" in three and "serialized" in three, three
    assert int(three.split(": ", 1)[1].split(" registers")[0]) <= 80, three
    assert most_blocks("06_wgmma_m64n64") == 2
    wide = compiler_says("06_wgmma_wide", bounded("06_wgmma_wide", 2))
    assert wide.startswith("ptxas refused it: (C7602) Insufficient registers (128)"), wide
    broken = compiler_says("06_wgmma_m64n64", source("06_wgmma_m64n64").replace("acc[j],", "acc[j,", 1))
    assert broken.startswith("it does not compile: kernels/06_wgmma.cu line "), broken


def test_the_launch_bounds_answers_are_graded_with_the_usual_mistakes(capsys):
    from helpers.exercises import grade
    for answers, said in (({4: 80, 5: 2}, ["exercise 4: correct", "exercise 5: correct"]),
                          ({4: 85}, ["exercise 4: not yet: 65,536 / (3 x 256) = 85.3, but a warp gets its registers"]),
                          ({4: 255}, ["exercise 4: not yet: 255 is what a thread may address"]),
                          ({4: 128}, ["exercise 4: not yet: that is the cap for 2 block(s) per SM"]),
                          ({5: 1}, ["exercise 5: not yet: 2 blocks still compile with no spill"]),
                          ({5: 3}, ["exercise 5: not yet: at 3 ptxas compiles under 80 registers and spills"])):
        grade("06", answers)
        out = capsys.readouterr().out.splitlines()
        assert all(any(line.startswith(s) for line in out) for s in said), (answers, out)


def test_a_prediction_within_five_percent_of_the_napkin_counts(capsys, monkeypatch):
    from helpers.exercises import _predicted, grade
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    napkin = _predicted("07", {})[5]
    grade("07", {5: napkin * 0.955})
    assert "exercise 5: correct" in capsys.readouterr().out
    grade("07", {5: napkin * 0.9})
    assert "exercise 5: not yet (answers within 5% count)" in capsys.readouterr().out


@pytest.mark.parametrize("stages", [2, 3, 4, 7])
@pytest.mark.parametrize("skew", [0, 1, 3])
def test_the_ring_model_runs_the_kernels_protocol_to_the_end(stages, skew):
    from helpers.models import ring_run
    got = ring_run(stages, 3 * stages + 1, skew=skew)
    assert got["outcome"] == "correct", got


@pytest.mark.parametrize("stages", [3, 4, 7])
def test_the_ring_model_shows_the_three_shipped_ring_bugs(stages):
    from helpers.models import ring_run
    # one arrival per consumer thread: the phase never completes, the producer stops at the first lap-1 wait
    hang = ring_run(stages, 24, empty_count=256)
    assert (hang["outcome"], hang["tile"]) == ("hang", stages) and "never completes" in hang["why"]
    # the arrival moved to right after commit_group: the refill lands while the group still reads the slot
    race = ring_run(stages, 24, release="at_commit")
    assert (race["outcome"], race["tile"], race["by"]) == ("race", 0, stages)
    # one arrival per phase for two consumers: phases run ahead of laps; when the second consumer lags, a refill
    # overwrites a tile it still reads, and in lockstep the producer misses the parity it needs and waits forever
    assert ring_run(stages, 24, empty_count=1, skew=5)["outcome"] == "race"
    assert ring_run(stages, 24, empty_count=1)["outcome"] == "hang"


def test_a_slower_copy_than_the_math_still_finishes_correctly():
    from helpers.models import ring_run
    assert ring_run(4, 20, wgmma_clocks=2, copy_clocks=9, skew=1)["outcome"] == "correct"


def test_the_epilogue_model_accepts_the_kernels_order_and_names_each_wrong_one():
    from helpers.models import epilogue_order
    assert epilogue_order(["write", "fence", "bar", "store"])[0]
    assert epilogue_order(["bar", "write", "fence", "bar", "store"])[0]  # the kernel's, buffer-reuse barrier first
    for order, why in ((["write", "bar", "store"], "no fence"), (["fence", "write", "bar", "store"], "no fence"),
                       (["write", "bar", "fence", "store"], "no barrier"), (["write", "fence", "store"], "no barrier"),
                       (["store", "write", "fence", "bar"], "before the values are written"),
                       (["write", "fence", "bar"], "exactly once")):
        ok, said = epilogue_order(order)
        assert not ok and why in said, (order, said)


def test_a_model_checked_answer_is_graded_by_the_model(capsys):
    from helpers.exercises import mark
    from helpers.models import epilogue_order
    assert mark("exercise 6", ["write", "fence", "bar", "store"], epilogue_order) == "exercise 6: correct"
    assert mark("exercise 6", ["write", "bar", "store"], epilogue_order).startswith("exercise 6: not yet: no fence")


def test_the_playground_editor_keeps_edits_per_rung_numbers_its_lines_and_resets():
    from helpers.playground import editor, source
    _, p = editor("04_swizzle")
    mine = p["code"].value.replace("__syncthreads();", "__syncthread();", 1)
    p["code"].value = mine
    assert p["numbers"].value.splitlines() == [str(i) for i in range(1, mine.count("\n") + 2)]
    assert p["code"].rows == p["numbers"].rows == mine.count("\n") + 2  # no inner scroll: the numbers stay level
    p["pick"].value = "05_cp_async"
    assert p["code"].value == source("05_cp_async")
    p["pick"].value = "04_swizzle"
    assert p["code"].value == mine  # switching rungs lost nothing
    p["reset"].click()
    assert p["code"].value == source("04_swizzle")
    assert "check and time" in p["run"].description and p["run"].layout.width == "auto"  # the label is not cut


def test_a_kernel_exercise_opens_its_broken_copy_in_the_editor_and_reset_never_shows_the_answer(capsys):
    from helpers.exercises import KERNEL_EXERCISES
    for exercise in KERNEL_EXERCISES.values():
        parts = exercise.edit()
        broken = exercise.broken()
        assert parts["code"].value == broken != exercise.solution()
        assert list(parts["pick"].options) == [exercise.rung]  # one rung: no menu to wander off into
        assert parts["numbers"].value.splitlines()[-1] == str(broken.count("\n") + 1)
        parts["code"].value = exercise.solution()
        parts["reset"].click()
        assert parts["code"].value == broken  # reset brings the bug back, not the rung's own (fixed) source
        assert f"kernels/{exercise.rung}.cu, {len(broken.splitlines())} numbered lines" in capsys.readouterr().out


def test_the_playground_banner_says_it_replays_and_records_nothing(monkeypatch):
    from helpers.status import banner_text
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    text = banner_text("playground")
    assert text.startswith("PLAYGROUND: nothing here is replayed or recorded.") and "recorded on" not in text


def test_each_chapter_states_how_close_an_answer_must_be():
    # The issue "learner": predictions are accepted within a stated tolerance. The sentence is built from TOLERANCE,
    # so the prose cannot drift from what grade() accepts.
    import json
    from pathlib import Path
    from helpers.exercises import PREDICTIONS, TOLERANCE, tolerance_note
    root = Path(__file__).resolve().parent.parent
    chapters = {c for c in TOLERANCE if isinstance(c, str)} | {c for c, _ in PREDICTIONS}
    for ch in sorted(chapters):
        path = next((root / "chapters").glob(f"{ch}_*.ipynb"))
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]
        exercises = next(c for c in cells if "## Exercises\n" in c)
        assert tolerance_note(ch) and f"## Exercises\n\n{tolerance_note(ch)}\n" in exercises, ch


@pytest.mark.sweep  # three lanes' figures, each drawn and checked for legibility: seconds on a CPU
def test_the_chapter_03_lane_slider_draws_a_lanes_cells_outlined_on_a_b_and_c():
    # issue "learner": the lane explorer changed only text; plot_lane(lane) is what its slider now redraws
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from helpers.explore import plot_lane
    from helpers.figures.common import illegible
    for lane in (0, 5, 31):
        fig = plot_lane(lane)
        panels = {ax.get_title().split(" ")[0]: ax for ax in fig.axes}
        assert sorted(panels) == ["A", "B", "C"]
        for operand, ax in panels.items():
            owner = mma_fragment(operand)[0]
            held = {(int(r), int(c)) for r, c in zip(*(owner == lane).nonzero())}
            assert len(held) == {"A": 8, "B": 4, "C": 4}[operand]
            boxes = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
            outlined = [(round(b.get_y() + 0.5), round(b.get_x() + 0.5)) for b in boxes]
            assert all(b.get_width() == b.get_height() == 1 for b in boxes)
            assert sorted(outlined) == sorted(held), (lane, operand)  # one box per held cell, on that cell
            assert all(b.get_xy() == (c - 0.5, r - 0.5) for b, (r, c) in zip(boxes, outlined))
        assert f"Lane {lane} " in fig._suptitle.get_text()
        assert illegible(fig) == []
        plt.close(fig)


def test_every_prediction_is_asked_before_anything_is_measured():
    # The issue "learner": no answer printed before its question. Each prediction exercise is asked, and its
    # variable set, before the chapter's first measurement; the exercises at the end only grade it.
    import json
    import re
    from pathlib import Path
    from helpers.exercises import PREDICTIONS
    root = Path(__file__).resolve().parent.parent
    for ch, i in PREDICTIONS:
        cells = json.loads(next((root / "chapters").glob(f"{ch}_*.ipynb")).read_text())["cells"]
        src = ["".join(c["source"]) for c in cells]
        asked = next(k for k, s in enumerate(src) if s.startswith(f"**Predict first (exercise {i}).**"))
        var = re.search(r"Put\s+your\s+number\s+in\s+`(my_\w+)`", src[asked]).group(1)
        sets = [k for k, s in enumerate(src) if cells[k]["cell_type"] == "code" and re.search(rf"^{var} = ", s, re.M)]
        measured = next(k for k, s in enumerate(src) if cells[k]["cell_type"] == "code" and "measure(" in s)
        assert sets == [asked + 1] and asked + 1 < measured, (ch, i, sets, measured)


def test_chapter_06_still_imports_the_compiler_exercise_from_exercises():
    # the compiler exercise moved to helpers/ptxas_exercises.py; chapter 06's cells import its verbs from
    # helpers.exercises, which re-exports the very same functions
    import json
    import re
    from helpers import exercises, ptxas_exercises
    from helpers.registry import ROOT
    cells = json.loads((ROOT / "chapters" / "06_wgmma.ipynb").read_text())["cells"]
    names = {n.strip() for c in cells if c["cell_type"] == "code"
             for line in re.findall(r"^from helpers\.exercises import ([^#\n]+)", "".join(c["source"]), re.M)
             for n in line.split(",")}
    assert {"bounded", "compiler_says", "most_blocks"} <= names
    assert all(getattr(exercises, n) is getattr(ptxas_exercises, n) for n in names - {"grade"})


def test_the_predicted_cp_async_cap_names_the_usual_mistakes(capsys, monkeypatch):
    # ch 05, exercise 3: 64 FLOP per byte x the cp.async roof measured alike; each usual wrong cap gets its own hint
    from helpers.exercises import grade
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    ctx = {"cp_async": 9.04, "l2": 8.33}
    for wrong, why in ((64 * 8.33, "`l2_read`"), (9.04, "the roof itself"), (989.4, "datasheet peak"),
                       (2048 * 9.04, "whole product"), (128 * 9.04, "twice the answer")):
        grade("05", {3: wrong}, **ctx)
        out = capsys.readouterr().out
        assert out.startswith("exercise 3: not yet: ") and why in out.splitlines()[0], (wrong, out)
    grade("05", {3: 64 * 9.04}, **ctx)
    out = capsys.readouterr().out
    assert "exercise 3: correct" in out and "05_cp_async at N=4096" in out and "TFLOP/s" in out, out


# ---- chapter 09, exercise 3: lower the consumers' setmaxnreg allowance until the 128 x 320 tile spills (NVRTC) ----

def test_the_consumers_floor_is_read_from_ptxas():
    # 09_wide's consumers hold 160 accumulators (64 x 320 / 128); the napkin's 160 + 24 = 184 spills (C7512), 192 is
    # the least allowance with nothing spilled, and every step from it up to the kernel's 240 compiles clean
    from helpers.csource import read_consts, source
    from helpers.ptxas_exercises import compiler_says, fewest_consumer_regs, spills_at, with_consumer_regs
    [(old, new)] = _changed_lines(source("09_wide"), with_consumer_regs(192))
    assert old.strip().startswith("constexpr int CONSUMER_REGS = 240;") and "CONSUMER_REGS = 192;" in new
    assert {k: v for k, v in read_consts(with_consumer_regs(192)).items() if k != "CONSUMER_REGS"} == \
        {k: v for k, v in read_consts(source("09_wide")).items() if k != "CONSUMER_REGS"}
    assert fewest_consumer_regs() == 192
    assert all(spills_at(v) == 0 for v in range(192, 241, 8)) and spills_at(184) > 0
    assert spills_at(248) is None  # past the block's pool: the kernel's static_assert refuses it
    said = compiler_says("09_wide", with_consumer_regs(184))
    assert "bytes of spill stores" in said and "(C7512)" in said, said
    assert "nothing spilled" in compiler_says("09_wide", with_consumer_regs(192))


def test_the_consumers_floor_is_graded_with_the_usual_mistakes(capsys):
    from helpers.exercises import grade
    for mine, said in ((192, "exercise 3: correct"), (192.0, "exercise 3: correct"),
                       (184, "exercise 3: not yet: 184 is the napkin's 160 + 24; at 184 ptxas spills"),
                       (168, "exercise 3: not yet: 168 is the launch cap"),
                       (160, "exercise 3: not yet: 160 holds the accumulators alone"),
                       (240, "exercise 3: not yet: 240 is the kernel's own allowance"),
                       (208, "exercise 3: not yet: 208 still compiles with no spill: try less"),
                       (248, "exercise 3: not yet: with the producer at 24, 248 is past the block's pool"),
                       (190, "exercise 3: not yet: setmaxnreg takes a multiple of 8"),
                       ("192", "exercise 3: not yet: an allowance is a whole number")):
        grade("09", {3: mine})
        out = capsys.readouterr().out.strip()
        assert out.startswith(said), (mine, out)


def test_chapter_09s_edit_cell_edits_the_line_the_exercise_names():
    # the cell hands the reader 09_wide's source with CONSUMER_REGS on one line to edit; as shipped it edits nothing
    import json
    from helpers.csource import source
    from helpers.ptxas_exercises import CONSUMER_REGS
    from helpers.registry import ROOT
    cells = json.loads((ROOT / "chapters" / "09_setmaxnreg.ipynb").read_text())["cells"]
    (cell,) = ["".join(c["source"]) for c in cells if c.get("id") == "w09-ptxas"]
    line = CONSUMER_REGS.format(240)
    assert cell.count(line) == 2 and source("09_wide").count(line) == 1
