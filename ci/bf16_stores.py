"""Why chapter 10's first step (10_bf16_c) is slower than rung 09: five experiments outside the recorded run.

    python ci/bf16_stores.py [1 ... 5] (on the H100; prints, records nothing: results/bf16_stores.log keeps its output)

1. The cluster launch path: 10_bf16_c as built against the same kernel without `__cluster_dims__(1, 1, 1)`.
2. The stores: rung 09's kernel as built (fp32 C, 8 bytes a lane) against the same kernel writing bf16x2 (4 bytes a
   lane, as 10_bf16_c does) into the first half of its C buffer; that C is not checkable, so it is timed only.
3. A fix to try: 10_bf16_c as built against the same kernel whose lanes pair up before storing. Lanes 2u and 2u+1
   swap one bf16x2 (shfl.xor 1), so that each lane holds four neighbouring columns and writes them as one 8-byte
   store: the four lanes of a row then cover 16 neighbouring columns, a whole 32-byte sector, in one instruction,
   where the bf16x2 stores leave half of each sector to the next instruction. Checked at three small shapes, and
   timed beside rung 09 as built, the step's predecessor.
4. Whether the TMA store still pays once the direct stores fill whole sectors: 10_four_stages as built, the same with
   its lanes paired as in 3, and 10_tma_store as built (the step after it on the main path).
5. The climb chapter 10 would show with paired stores: rung 09, each step from 10_bf16_c to 10_four_stages with its
   lanes paired, and 10_tma_store as built, all in the same rounds (does every step still rise?).
6. After the pairing was adopted (run 2026-11-26T11:40Z-h100), the TMA store is the one flat step at N = 8192. Does it
   pay before the fourth stage instead? 10_cluster (three stages, paired stores), the same with the TMA store, and
   10_four_stages and 10_tma_store (four stages, without and with it), all as built today, in the same rounds.
7. In run 2026-11-26T13:27Z-h100 the cluster step (10_persistent -> 10_cluster) is flat at N = 4096, yet clusters of
   one cost the final rung 8% there (ci/tune.py). Does the step rise if it comes after the TMA store? 10_persistent,
   10_cluster, 10_tma_store without its pairs and grouped order (CLUSTER = 1, SCHEDULE = 0), and 10_tma_store, all
   as built today, in the same rounds: the path as it is, and the path with the two steps swapped.
Each pair alternates over three rounds (experiments 6 and 7 over five), each round timed by helpers.bench (GPU time,
interleaved with cuBLAS).
Chapter 10's file has since adopted the pairing of 3; "as built" means the kernel as it was when these ran.
"""
import os

os.environ["GEMM_LADDER_RESULTS"] = "/tmp/bf16_stores_scratch.json"  # nothing here belongs to the book's run

from helpers import bench, check  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.playground import source  # noqa: E402


STORE = "*reinterpret_cast<float2*>(&C[r * N + col]) = make_float2(acc[j][i], acc[j][i + 1]);"
BF16X2 = ("*reinterpret_cast<__nv_bfloat162*>(reinterpret_cast<__nv_bfloat16*>(C) + (size_t)r * N + col) = "
          "__floats2bfloat162_rn(acc[j][i], acc[j][i + 1]);")


ROW_STORES = """                for (int i = 0; i < WGMMA_N / 2; i += 2) {
                    const int r = row + 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = col0 + 8 * (i / 4) + 2 * (lane % 4);
                    *reinterpret_cast<__nv_bfloat162*>(&C[(size_t)r * N + col]) = __floats2bfloat162_rn(acc[i], acc[i + 1]);
                }"""
# Chapter 10's file adopted experiment 3's pairing (common/epilogue.cuh, store_accumulators_paired). "As built" in
# these experiments, and in their log, is the kernel as it was when they ran: bf16x2 stores, rebuilt from today's.
PAIRED_CALL = "                store_accumulators_paired<WGMMA_N>(C + (size_t)(row + 16 * warp) * N + col0, N, acc, lane);"


# Chapter 10's steps as they were configured when these experiments ran (run 2026-11-26T18:01Z-h100 reordered the
# path and gave some ids new configurations): each is chapter 10's file with these switches, launched as 10_stmatrix.
THEN = {"10_cluster_rows": {"CLUSTER": 2, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3},
        "10_cluster": {"CLUSTER": 2, "SCHEDULE": 1, "EPILOGUE": 0, "STAGES": 3},
        "10_four_stages": {"CLUSTER": 2, "SCHEDULE": 1, "EPILOGUE": 0},
        "10_sts_store": {"EPILOGUE": 1, "STAGES": 3},
        "10_tma_store": {"EPILOGUE": 2, "STAGES": 3}}


# Ids that run 2026-11-26T19:47Z-h100 gave to other builds (persistence before bf16 C): the rung that is now the
# build these experiments ran under the old id, with its launch.
RENAMED = {"10_bf16_c": "10_bf16_c_per_tile", "10_persistent": "10_bf16_c"}


def then(step: str) -> str:
    """A chapter-10 step's source as it was built when these experiments ran."""
    return apply_config(source("10_stmatrix"), THEN[step]) if step in THEN else source(RENAMED.get(step, step))


def host(step: str) -> str:
    """The rung whose launch (grid, operands) runs that source."""
    return "10_stmatrix" if step in THEN else RENAMED.get(step, step)


def first_built(rung_id: str) -> str:
    """The rung's source with the bf16x2 stores it had before the pairing was adopted."""
    paired = then(rung_id)
    assert PAIRED_CALL in paired
    return paired.replace(PAIRED_CALL, ROW_STORES)


def tma_store_four_stages() -> str:
    """The TMA store with st.shared and four stages: chapter 10's 10_tma_store when experiments 4 to 6 ran (the path
    has since taken the TMA store before the fourth stage, with stmatrix)."""
    return apply_config(source("10_stmatrix"), {"EPILOGUE": 1})


def pairs():
    ten = first_built("10_bf16_c")
    no_cluster = ten.replace("__cluster_dims__(CLUSTER, 1, 1) ", "")
    nine = source("09_setmaxnreg")
    assert no_cluster != ten and STORE in nine
    yield "10_bf16_c", (("with __cluster_dims__", ten), ("without", no_cluster))
    yield "09_setmaxnreg", (("09 as built (fp32 C)", nine),
                            ("09 writing bf16x2", "#include <cuda_bf16.h>\n" + nine.replace(STORE, BF16X2)))
    yield "10_bf16_c", (("10_bf16_c as built", ten), ("lanes paired, 8 B", source("10_bf16_c")),
                        ("09 as built (fp32 C)", nine, "09_setmaxnreg"))  # the step's predecessor, the same rounds
    yield "10_four_stages", (("10_four_stages as built", first_built("10_four_stages"), host("10_four_stages")),
                             ("four stages, lanes paired", then("10_four_stages"), host("10_four_stages")),
                             ("10_tma_store as built", tma_store_four_stages(), "10_stmatrix"))
    chain = [("09 as built (fp32 C)", nine, "09_setmaxnreg")]
    for step in ("10_bf16_c", "10_persistent", "10_cluster_rows", "10_cluster", "10_four_stages"):
        chain.append((f"{step} paired", then(step), host(step)))
    chain.append(("10_tma_store as built", tma_store_four_stages(), "10_stmatrix"))
    yield "09_setmaxnreg", tuple(chain)
    yield "10_stmatrix", (("10_cluster (3 stages)", then("10_cluster")),
                          ("TMA store, 3 stages", then("10_sts_store"), host("10_sts_store")),
                          ("10_four_stages", then("10_four_stages"), host("10_four_stages")),
                          ("10_tma_store, 4 stages", tma_store_four_stages(), "10_stmatrix"))
    yield "10_persistent", (("10_persistent", source("10_persistent")),
                            ("TMA store, no clusters", apply_config(then("10_tma_store"), {"CLUSTER": 1, "SCHEDULE": 0}),
                             host("10_tma_store")),
                            ("10_cluster", then("10_cluster"), host("10_cluster")),
                            ("10_tma_store", then("10_tma_store"), host("10_tma_store")))


if __name__ == "__main__":
    import sys
    chosen = [int(a) for a in sys.argv[1:]]  # which experiments (1 to 7); all by default
    for number, (rung_id, variants) in enumerate(pairs(), 1):
        if chosen and number not in chosen:
            continue
        print(f"# {number}. {variants[0][0]} against {variants[1][0]}", flush=True)
        if number == 1:
            for name, src, *_ in variants:
                print(name, check(rung_id, 512, 512, 512, source=src))
        if number in (5, 6, 7):  # each step that is not a rung as built, checked where every one of them runs
            for name, src, step in (variants[1:-1] if number == 5 else variants[1:2]):
                for shape in ((512, 512, 512), (768, 1024, 1024)):
                    print(name, check(step, *shape, source=src))
        if number in (3, 4):  # the clustered kernels of 4 take M only in multiples of 256
            shapes = ((512, 512, 512), (384, 256, 512), (768, 1024, 1024)) if number == 3 else \
                ((512, 512, 512), (768, 1024, 1024), (1024, 512, 768))
            for name, src, *_ in variants[:2]:
                for shape in shapes:
                    print(name, check(rung_id, *shape, source=src))
        for n in (4096, 8192):
            for rnd in range(5 if number >= 6 else 3):  # 6 and 7 look for steps of a few tenths: more rounds
                for name, src, *other in variants:
                    b = bench(other[0] if other else rung_id, n, source=src)
                    print(f"N={n} round {rnd} {name:<22} {b.kernel.tflops:7.1f} TFLOP/s  cuBLAS {b.cublas.tflops:7.1f}",
                          flush=True)
