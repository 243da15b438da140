"""Why chapter 10's first step (10_bf16_c) is slower than rung 09: two experiments outside the recorded run.

    python ci/bf16_stores.py        (on the H100; prints, records nothing: results/bf16_stores.log keeps its output)

1. The cluster launch path: 10_bf16_c as built against the same kernel without `__cluster_dims__(1, 1, 1)`.
2. The stores: rung 09's kernel as built (fp32 C, 8 bytes a lane) against the same kernel writing bf16x2 (4 bytes a
   lane, as 10_bf16_c does) into the first half of its C buffer; that C is not checkable, so it is timed only.
Each pair alternates over three rounds, each round timed by helpers.bench (GPU time, interleaved with cuBLAS).
"""
import os

os.environ["GEMM_LADDER_RESULTS"] = "/tmp/bf16_stores_scratch.json"  # nothing here belongs to the book's run

from helpers import bench, check  # noqa: E402
from helpers.playground import source  # noqa: E402

STORE = "*reinterpret_cast<float2*>(&C[r * N + col]) = make_float2(acc[j][i], acc[j][i + 1]);"
BF16X2 = ("*reinterpret_cast<__nv_bfloat162*>(reinterpret_cast<__nv_bfloat16*>(C) + (size_t)r * N + col) = "
          "__floats2bfloat162_rn(acc[j][i], acc[j][i + 1]);")


def pairs():
    ten = source("10_bf16_c")
    no_cluster = ten.replace("__cluster_dims__(CLUSTER, 1, 1) ", "")
    nine = source("09_setmaxnreg")
    assert no_cluster != ten and STORE in nine
    yield "10_bf16_c", (("with __cluster_dims__", ten), ("without", no_cluster))
    yield "09_setmaxnreg", (("09 as built (fp32 C)", nine),
                            ("09 writing bf16x2", "#include <cuda_bf16.h>\n" + nine.replace(STORE, BF16X2)))


if __name__ == "__main__":
    for rung_id, variants in pairs():
        if rung_id == "10_bf16_c":
            for name, src in variants:
                print(name, check(rung_id, 512, 512, 512, source=src))
        for n in (4096, 8192):
            for rnd in range(3):
                for name, src in variants:
                    b = bench(rung_id, n, source=src)
                    print(f"N={n} round {rnd} {name:<22} {b.kernel.tflops:7.1f} TFLOP/s  cuBLAS {b.cublas.tflops:7.1f}",
                          flush=True)
