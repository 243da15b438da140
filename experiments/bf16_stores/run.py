"""Why chapter 10's first step (10_bf16_c) is slower than rung 09: five experiments outside the recorded run.

    python3 -m experiments.bf16_stores.run [1 ... 7]
        (on the H100; prints, records nothing: experiments/bf16_stores/record.json keeps what it printed)

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
   one cost the final rung 8% there (tools/tune.py). Does the step rise if it comes after the TMA store? 10_persistent,
   10_cluster, 10_tma_store without its pairs and grouped order (CLUSTER = 1, SCHEDULE = 0), and 10_tma_store, all
   as built today, in the same rounds: the path as it is, and the path with the two steps swapped.
Each pair alternates over three rounds (experiments 6 and 7 over five), each round timed by helpers.bench (GPU time,
interleaved with cuBLAS).
Chapter 10's file has since adopted the pairing of 3; "as built" means the kernel as it was when these ran
(experiments/bf16_stores/build.py makes every build: bf16_stores.cu, rung 09's variants, chapter 10's configs then).
"""
import os

os.environ["GEMM_LADDER_RESULTS"] = "/tmp/bf16_stores_scratch.json"  # nothing here belongs to the book's run

from experiments.bf16_stores.build import pairs  # noqa: E402
from helpers import bench, check  # noqa: E402


if __name__ == "__main__":
    import sys
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
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
