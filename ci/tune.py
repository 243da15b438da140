"""Try variants of a rung's constexpr configuration at N=4096 against cuBLAS (same run). Not a test.

    python ci/tune.py [N] [RUNG ...]   -> one line per variant: TFLOP/s, % of cuBLAS, registers, correctness
"""
import sys

from helpers import bench, build, check, rung
from helpers.build import apply_config

VARIANTS = {
    "08_warp_specialized": [{}, {"WGMMA_N": 64}, {"BN": 256, "WGMMA_N": 256}],
    "09_setmaxnreg": [{}, {"PRODUCER_REGS": 40, "CONSUMER_REGS": 232}],
    "10_beyond_cublas": [{}, {"GROUP_M": 4}, {"GROUP_M": 16}, {"SCHEDULE": 0}, {"CLUSTER": 1}],
}



def main(n: int = 4096, *only: str) -> None:
    for rid, variants in VARIANTS.items():
        if only and rid not in only:
            continue
        r = rung(rid)
        for changes in variants:
            src = apply_config(r.path.read_text(), changes)
            ok = check(r, 1024, source=src)
            res = bench(r, n, source=src)
            regs = build(r, source=src).resources[r.entry].registers
            print(f"{rid} {changes or 'as committed'}: {res.kernel.tflops:.2f} TFLOP/s, cuBLAS {res.cublas.tflops:.2f}, "
                  f"{res.ratio:.1%}, {regs} regs, {'correct' if ok.ok else 'WRONG'} ({ok.rel_err:.1e})", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096, *sys.argv[2:])
