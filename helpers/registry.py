"""The ladder as data: one entry per rung. Chapters, tests, the CLI and the plots all iterate RUNGS.

Tile sizes and thread counts are not repeated here: they live once, as `constexpr int` lines in the rung's
`.cu` file, and `helpers.compiler` reads them from there. An entry only names which constants play which role.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"


@dataclass(frozen=True)
class Rung:
    id: str                      # "<chapter>_<name>", e.g. "01_warptiled"
    title: str                   # what the rung adds, in a few words
    entry: str                   # the extern "C" __global__ function
    dtype: str = "fp32"          # input dtype: fp32, fp16, bf16 or e4m3 (FP8: uint8 codes, C = scale_a scale_b A @ B)
    arch: str = "sm_90a"         # what NVRTC compiles for
    needs_cc: tuple = (8, 0)     # lowest compute capability that runs it
    tile: tuple = ("BM", "BN")   # constexpr names of the block tile: grid = (ceil(N/BN), ceil(M/BM))
    threads: str = "THREADS"     # constexpr name of the block size
    divides: dict = field(default_factory=dict)   # {"M": "BM"}: M must be a multiple of the constexpr BM
    sass_has: tuple = ()         # opcodes the chapter claims are in the SASS (prefix match)
    sass_lacks: tuple = ()       # opcodes that must not be there
    target: tuple | None = None  # (value, N, of): a fraction of "cublas" or of a ceiling id, or "tflops" absolute
    reuse: tuple | None = ("BM", "BN")  # tile whose operands are loaded once per block; None: no reuse
    file: str | None = None      # the .cu this rung builds (default: its id); variants share a file
    config: dict = field(default_factory=dict)  # constexpr overrides applied to that file, e.g. {"STAGES": 2}
    b_layout: str = "kn"         # "kn": B is [K, N] row-major; "nk": B is stored as Bt [N, K] (K-major, Hopper rungs)
    operands: str = "pointers"   # "pointers" (A, B, C, M, N, K), "tensor_maps" (TMA maps of A and Bt, then C, M, N, K)
                                 # or "tensor_maps_c" (maps of A, Bt and C, then C, M, N, K)
    out_dtype: str = "fp32"      # dtype of C: fp32, or bf16 (rounded from the fp32 accumulators, as cuBLAS does)
    grid: str = "tiles"          # "tiles": one block per tile, a 2-D grid; "tile_list": one block per tile, a 1-D grid
                                 # walked in the kernel's own tile order; "persistent": one block per SM a cluster can use
    tile_choices: tuple = ()     # other tiles a launch may pick per problem shape (helpers.tiles.pick_tile):
                                 # (constexpr overrides, steady rate relative to the rung's own tile at full waves)
    solo_clusters: bool = False  # launch clusters of one CTA where no CTA gets a second tile (helpers.tiles.solo)
    ragged: bool = False         # takes any M >= 1 and N, K whose rows are whole 16-byte units: TMA reads zeros past
                                 # the edges and its stores clip C; `divides` then only ranks the tiles (exact first)

    @property
    def chapter(self) -> str:
        return self.id[:2]

    @property
    def path(self) -> Path:
        return KERNELS / f"{self.file or self.id}.cu"


_SIMT = dict(sass_has=("FFMA",), sass_lacks=("HMMA", "HGMMA", "LDL", "STL"))
_TILED = {"M": "BM", "N": "BN", "K": "BK"}
_TC = dict(sass_has=("HMMA",), sass_lacks=("HGMMA", "LDL", "STL"))
_CP_ASYNC = ("LDGSTS", "LDSM.16.M88.4", "LDSM.16.MT88.4", "HMMA.16816.F32.BF16")


def _hopper(*sass: str, tma: bool = False) -> dict:
    return dict(needs_cc=(9, 0), b_layout="nk", sass_has=sass, operands="tensor_maps" if tma else "pointers",
                sass_lacks=("HMMA", "LDL", "STL") + (("LDGSTS",) if tma else ()))


def _chip(*sass: str) -> dict:
    """Chapter 10: one persistent kernel file, its steps switched on by constexprs; bf16 C (as cuBLAS writes it)
    from 10_bf16_c on."""
    return dict(_hopper("UTMALDG.2D", "SYNCS", "USETMAXREG", "HGMMA.64x256x16.F32.BF16", *sass, tma=True),
                dtype="bf16", out_dtype="bf16", file="10_chip", grid="persistent",
                operands="tensor_maps_c", divides={"M": "CLUSTER_BM", "N": "BN", "K": "BK"})


# EPILOGUE = 0: neighbouring lanes swap a bf16 pair, then each stores 8 bytes (common/epilogue.cuh)
_PAIRED = ("SHFL.BFLY", "STG.E.64")
# Rung 10's narrower tiles at full waves, as fractions of its 128 x 256 tile's TFLOP/s (tools/tune.py records them at
# N = 6144 and 12288, where all three tiles fill their waves alike). Set from the H100's run; the H200's run measured
# both a few points higher (its "variants" section). Measured, not derived: no probe says which path binds them, and
# they move by a few points between machines; any NARROW_RATE from 0.70 to 0.99 picks the same tiles at every size of
# chapter 10's table (tests/test_conclusions_10a.py holds the pick to the recorded run).
MID_RATE = 0.955    # 128 x 192: 25% more L2 and shared-memory bytes per FLOP than 128 x 256
NARROW_RATE = 0.815  # 128 x 128: 50% more

RUNGS: tuple[Rung, ...] = (
    Rung("01_naive", "one thread per element, uncoalesced", "sgemm_naive", reuse=None, **_SIMT),
    Rung("01_coalesced", "lanes along columns: coalesced", "sgemm_coalesced", reuse=None, **_SIMT),
    Rung("01_smem_tiled", "32x32 tiles staged in shared memory", "sgemm_smem_tiled",
         sass_has=("FFMA", "LDS", "BAR.SYNC"), sass_lacks=_SIMT["sass_lacks"]),
    Rung("01_blocktile_2d", "8x8 outputs per thread, 128x128 block tile", "sgemm_blocktile_2d",
         divides=_TILED, **_SIMT),
    Rung("01_vectorized", "16-byte global and shared loads", "sgemm_vectorized", divides=_TILED,
         sass_has=("FFMA", "LDG.E.128", "LDS.128", "STG.E.128"), sass_lacks=_SIMT["sass_lacks"]),
    Rung("01_warptiled", "warp tiles, conflict-free LDS.128, double buffer", "sgemm_warptiled",
         divides=_TILED, sass_has=("FFMA", "LDG.E.128", "LDS.128", "STG.E.128"),
         sass_lacks=_SIMT["sass_lacks"], target=(0.85, 4096, "cublas")),
    Rung("02_wmma_naive", "WMMA, fragments straight from global", "gemm_wmma_naive", dtype="bf16",
         divides={"M": "WM", "N": "WN", "K": "WK"}, reuse=("WM", "WN"), **_TC),
    Rung("02_wmma_smem", "WMMA from shared-memory tiles", "gemm_wmma_smem", dtype="bf16", divides=_TILED,
         sass_has=("HMMA", "LDG.E.128", "STS.128"), sass_lacks=_TC["sass_lacks"]),
    Rung("03_mma_sync", "mma.sync + ldmatrix, unswizzled", "gemm_mma_sync", dtype="bf16", divides=_TILED,
         sass_has=("LDSM.16.M88.4", "LDSM.16.MT88.4", "HMMA.16816.F32.BF16"), sass_lacks=_TC["sass_lacks"]),
    Rung("04_swizzle", "XOR-swizzled shared tiles", "gemm_swizzle", dtype="bf16", divides=_TILED,
         sass_has=("LDSM.16.M88.4", "LDSM.16.MT88.4", "HMMA.16816.F32.BF16"), sass_lacks=_TC["sass_lacks"]),
    # Chapter 05's ablation: 04 -> 05_warp_64x64 -> 05_one_stage -> 05_double_buffer -> 05_cp_async, one idea a step.
    Rung("05_warp_64x64", "rung 04 with 64x64 warp tiles, 4 warps", "gemm_swizzle", dtype="bf16", divides=_TILED,
         file="04_swizzle", config={"WN": 64}, sass_lacks=(*_TC["sass_lacks"], "LDGSTS"),
         sass_has=("LDG.E.128", "STS.128", "LDSM.16.M88.4", "LDSM.16.MT88.4", "HMMA.16816.F32.BF16")),
    Rung("05_one_stage", "cp.async, one stage: no overlap", "gemm_cp_async", dtype="bf16", divides=_TILED,
         file="05_cp_async", config={"STAGES": 1}, sass_has=_CP_ASYNC, sass_lacks=(*_TC["sass_lacks"], "STS")),
    Rung("05_double_buffer", "cp.async, two stages", "gemm_cp_async", dtype="bf16", divides=_TILED,
         file="05_cp_async", config={"STAGES": 2}, sass_has=_CP_ASYNC, sass_lacks=_TC["sass_lacks"]),
    Rung("05_cp_async", "cp.async ring of STAGES tiles", "gemm_cp_async", dtype="bf16", divides=_TILED,
         sass_has=_CP_ASYNC, sass_lacks=_TC["sass_lacks"], target=(0.80, 4096, "hmma_peak")),
    Rung("06_wgmma_m64n64", "wgmma m64n64k16 from swizzled smem", "gemm_wgmma", dtype="bf16", divides=_TILED,
         file="06_wgmma", config={"WGMMA_N": 64, "BN": 128}, **_hopper("HGMMA.64x64x16.F32.BF16"),
         target=(330, 4096, "tflops")),
    Rung("06_wgmma_wide", "wgmma m64n256k16, 128x256 tiles", "gemm_wgmma", dtype="bf16", divides=_TILED,
         file="06_wgmma", config={"WGMMA_N": 256, "BN": 256, "STAGES": 3}, **_hopper("HGMMA.64x256x16.F32.BF16"),
         target=(430, 4096, "tflops")),
    Rung("07_tma", "TMA loads, one mbarrier per slot", "gemm_tma", dtype="bf16", divides=_TILED,
         **_hopper("UTMALDG.2D", "SYNCS", "HGMMA.64x256x16.F32.BF16", tma=True)),
    Rung("07_four_stages", "rung 07 with a 4-stage ring", "gemm_tma", dtype="bf16", divides=_TILED, file="07_tma",
         config={"STAGES": 4}, **_hopper("UTMALDG.2D", "SYNCS", "HGMMA.64x256x16.F32.BF16", tma=True)),
    Rung("08_warp_specialized", "producer/consumer warpgroups, full/empty ring", "gemm_warp_specialized",
         dtype="bf16", divides=_TILED, **_hopper("UTMALDG.2D", "SYNCS", "HGMMA.64x128x16.F32.BF16", tma=True),
         target=(500, 4096, "tflops")),
    # Rung 08's ring with rung 07's tile and ring depth (128 x 256, 3 stages): against 07 it isolates warp
    # specialization, against 09 setmaxnreg (without setmaxnreg ptxas fits this tile under the 168-register cap).
    Rung("08_same_tile", "rung 08's ring, rung 07's 128x256 tile", "gemm_warp_specialized", dtype="bf16",
         divides=_TILED, file="08_warp_specialized", config={"WGMMA_N": 256, "BN": 256, "STAGES": 3},
         **_hopper("UTMALDG.2D", "SYNCS", "HGMMA.64x256x16.F32.BF16", tma=True)),
    Rung("09_setmaxnreg", "setmaxnreg 24/240, 128x256 tiles", "gemm_setmaxnreg", dtype="bf16", divides=_TILED,
         config={"STAGES": 3},
         **_hopper("UTMALDG.2D", "SYNCS", "USETMAXREG", "HGMMA.64x256x16.F32.BF16", tma=True),
         target=(620, 4096, "tflops")),
    # Where setmaxnreg pays (chapter 09): a 128 x 320 tile, two m64n160 wgmmas per consumer, 160 accumulators per
    # thread. Rung 08's file spills them under the 168-register cap; rung 09's file, the same tile with the 24/240
    # split, does not. Both keep rung 07's 3 stages, as 08_same_tile and 09_setmaxnreg do.
    Rung("09_wide_spill", "rung 08's roles on a 128x320 tile: spills under 168", "gemm_warp_specialized",
         dtype="bf16", divides=_TILED, file="08_warp_specialized", config={"WGMMA_N": 160, "BN": 320, "STAGES": 3},
         **{**_hopper("UTMALDG.2D", "SYNCS", "HGMMA.64x160x16.F32.BF16", "STL", "LDL", tma=True),
            "sass_lacks": ("HMMA", "LDGSTS", "USETMAXREG")}),
    Rung("09_wide", "setmaxnreg 24/240 on the 128x320 tile: no spill", "gemm_setmaxnreg", dtype="bf16",
         divides=_TILED, file="09_setmaxnreg", config={"WGMMA_N": 160, "BN": 320, "STAGES": 3},
         **_hopper("UTMALDG.2D", "SYNCS", "USETMAXREG", "HGMMA.64x160x16.F32.BF16", tma=True)),
    # Rung 09's kernel as chapter 10's file builds it with every switch off: the one change is persistence (C stays
    # fp32, as rung 09 writes it); then C written as bf16, as cuBLAS writes it. Persistence comes first because a
    # one-block-per-tile launch leaves the tile order to the hardware, and with bf16 C its DRAM reads at 8192 moved
    # from launch to launch (2.31 to 3.51 GB in the launches profiled, against rung 09's steady 2.31; chapter 10).
    Rung("10_persistent", "+ persistent: one block per SM walks the tiles", "gemm_chip",
         config={"C_BF16": 0, "CLUSTER": 1, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3},
         **{**_chip("STG.E.64"), "out_dtype": "fp32",
            "sass_lacks": (*_chip()["sass_lacks"], "SHFL.BFLY")}),
    Rung("10_bf16_c", "+ C written as bf16, as cuBLAS writes it", "gemm_chip",
         config={"CLUSTER": 1, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3}, **_chip(*_PAIRED)),
    # 10_bf16_c launched as rung 09 is, one block per tile (a 1-D grid in rung 09's row order): bf16 C without
    # persistence, the ablation that says why persistence comes first (experiments/bf16_c_8192).
    Rung("10_bf16_c_per_tile", "10_bf16_c launched one block per tile, as rung 09", "gemm_chip",
         config={"CLUSTER": 1, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3},
         **{**_chip(*_PAIRED), "grid": "tile_list"}),
    # Pairs tie the two CTAs' rings together (a slot is free once all four consumers of the pair release it), and
    # the ring's fourth stage covers that longer round trip: alone, each costs, ties or gains far less than both
    # together (10_cluster_3_stages, 10_four_stages; experiments/ladder_orders measured every combination), so the
    # path takes them as one step.
    Rung("10_cluster", "+ 2x1 clusters, B multicast, the ring one stage deeper", "gemm_chip",
         config={"CLUSTER": 2, "SCHEDULE": 0, "EPILOGUE": 0}, **_chip("UTMALDG.2D.MULTICAST", *_PAIRED)),
    Rung("10_cluster_3_stages", "10_cluster with rung 09's 3-stage ring: the pairs alone", "gemm_chip",
         config={"CLUSTER": 2, "SCHEDULE": 0, "EPILOGUE": 0, "STAGES": 3},
         **_chip("UTMALDG.2D.MULTICAST", *_PAIRED)),
    Rung("10_four_stages", "10_bf16_c with a 4-stage ring: the fourth stage alone", "gemm_chip",
         config={"CLUSTER": 1, "SCHEDULE": 0, "EPILOGUE": 0}, **_chip(*_PAIRED)),
    Rung("10_tma_store", "+ TMA-store epilogue, stmatrix into its buffers", "gemm_chip",
         config={"SCHEDULE": 0, "EPILOGUE": 2}, **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4")),
    # 10_tma_store's buffers written with four-byte st.shared instead of stmatrix: what stmatrix replaces.
    Rung("10_sts_store", "10_tma_store writing its buffers with st.shared", "gemm_chip",
         config={"SCHEDULE": 0, "EPILOGUE": 1}, **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D")),
    # The grouped order alone, right after persistence and bf16 C: it costs there (no pairs share B yet).
    Rung("10_grouped", "10_bf16_c with the grouped tile order", "gemm_chip",
         config={"CLUSTER": 1, "SCHEDULE": 1, "EPILOGUE": 0, "STAGES": 3}, **_chip(*_PAIRED)),
    # 10_chip with its 128 x 256 tile at every shape: where the tile choice acts (N = 1024 to 3072), the step
    # before it; at 4096 and 8192, where the choice keeps that tile, the same kernel.
    Rung("10_grouped_order", "+ grouped tile order for L2, one tile for every shape", "gemm_chip",
         **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4")),
    # The last step picks a 128 x 192 or 128 x 128 tile where the wave napkin says it finishes first: at full
    # waves they are slower than 128 x 256, so they only win where they fill a last wave that 256 leaves empty.
    Rung("10_chip", "+ grouped tile order for L2, a tile per problem shape", "gemm_chip",
         tile_choices=(({"BN": 192, "WGMMA_N": 192}, MID_RATE), ({"BN": 128, "WGMMA_N": 128}, NARROW_RATE)),
         solo_clusters=True, ragged=True, **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4")),
    # Launches that overlap: the next launch's prologue runs under this one's tail (griddepcontrol, launched with
    # programmatic stream serialization: helpers.pdl), and the tensor maps are prefetched. It acts where a launch is
    # short or leaves SMs idle (N = 1024 to 3072); at 4096 and 8192 it is the same kernel a microsecond earlier.
    Rung("10_pdl", "+ launches that overlap: griddepcontrol, maps prefetched", "gemm_chip", config={"PDL": 1},
         tile_choices=(({"BN": 192, "WGMMA_N": 192}, MID_RATE), ({"BN": 128, "WGMMA_N": 128}, NARROW_RATE)),
         solo_clusters=True, ragged=True,
         **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4", "UTMACCTL.PF", "ACQBULK", "PREEXIT")),
    # The epilogue under the next tile: each consumer rounds its tile's last two chunks of C to bf16 pairs, issues
    # the next tile's first k step into the freed accumulators, and stores those chunks while it runs. It acts where
    # CTAs take tiles one after another; where each takes one (N = 1024 and 2048) the tile policy builds it as 10_pdl.
    Rung("10_overlap", "+ the epilogue under the next tile's first k step", "gemm_chip",
         config={"PDL": 1, "OVERLAP": 2},
         tile_choices=(({"BN": 192, "WGMMA_N": 192}, MID_RATE), ({"BN": 128, "WGMMA_N": 128}, NARROW_RATE)),
         solo_clusters=True, ragged=True,
         **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4", "UTMACCTL.PF", "ACQBULK", "PREEXIT"),
         target=(1.03, 4096, "cublas")),
    # The final kernel as it was before its producer's three idle warps exited: they waited at the closing cluster
    # barrier all kernel long (a quarter of every stall sample there). Same tile and pairs as 10_chip at 4096 and 8192.
    Rung("10_idle_wait", "10_chip with the producer's idle warps waiting at the closing barrier", "gemm_chip",
         config={"IDLE_EXIT": 0}, **_chip("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4")),
    # Chapter 12: rung 10's kernel on e4m3 operands (its 128 x 256 tile; the same 48 KiB stage holds k = 128),
    # launched as 10_pdl is, with 10_overlap's epilogue under the next tile where CTAs take a second one.
    Rung("12_fp8", "e4m3 operands, wgmma k32, scales in the epilogue", "gemm_fp8", dtype="e4m3", out_dtype="bf16",
         needs_cc=(9, 0), b_layout="nk", grid="persistent", operands="tensor_maps_c", config={"PDL": 1, "OVERLAP": 2},
         divides={"M": "CLUSTER_BM", "N": "BN", "K": "BK"}, solo_clusters=True, ragged=True,
         sass_has=("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4", "SYNCS", "USETMAXREG",
                   "QGMMA.64x256x32.F32.E4M3.E4M3", "UTMACCTL.PF", "ACQBULK", "PREEXIT"),
         sass_lacks=("HGMMA", "HMMA", "LDL", "STL", "LDGSTS"), target=(1.00, 4096, "cublas")),
    # Chapter 12's promoted accumulation: each k tile's (128 k) partial sums from the tensor core, added into fp32
    # totals in registers, as cuBLASLt's default FP8 mode promotes. Rung 12's 128 x 256 tile, its width summed in four
    # 64-wide slices through two partial buffers in turn (totals 128 registers a thread, partial sums 2 x 32).
    # Launched plainly (PDL = 0, OVERLAP = 0), as it is measured against cuBLASLt's promoted mode.
    Rung("12_fp8_promoted", "12_fp8 adding each 128 k into fp32 totals, in 64-wide slices", "gemm_fp8",
         dtype="e4m3", out_dtype="bf16", file="12_fp8", config={"PROMOTE": 1, "WGMMA_N": 64}, needs_cc=(9, 0),
         b_layout="nk", grid="persistent", operands="tensor_maps_c", divides={"M": "CLUSTER_BM", "N": "BN", "K": "BK"},
         ragged=True, sass_has=("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4", "SYNCS", "USETMAXREG",
                                "QGMMA.64x64x32.F32.E4M3.E4M3", "FADD"),
         sass_lacks=("HGMMA", "HMMA", "LDL", "STL", "LDGSTS", "QGMMA.64x256x32", "QGMMA.64x128x32")),
)


# The main path: the rungs the book climbs, in climb order, one idea a step (issue "ladder"), each step up at N = 4096
# and 8192 in the recorded run but the last BF16 one, 10_pdl, which acts where launches are short (N = 1024 to 3072)
# and must not fall at 4096 and 8192. The others are ablations and variants a chapter compares against: chapter 05's
# one-idea steps; 08_warp_specialized, whose 128 x 128 tile changes the tile along with the roles (08_same_tile keeps
# rung 07's tile, so its step is the roles alone); and in chapter 10:
# - 10_bf16_c_per_tile, bf16 C without persistence: one block per tile leaves the tile order to the hardware, and
#   its DRAM reads moved from launch to launch, so the path makes the blocks persistent first.
# - 10_cluster_3_stages and 10_four_stages, the two halves of 10_cluster (pairs sharing B, and the ring's fourth
#   stage that their longer round trip needs). Alone, each does far less than both, so the path takes them together.
# - 10_sts_store, the TMA store's buffers written without stmatrix, and 10_grouped, the grouped order right after
#   persistence and bf16 C, where it costs (it pays once pairs share B).
# - 10_grouped_order, 10_chip with its 128 x 256 tile at every shape. At 4096 and 8192 the tile choice keeps
#   that tile, so the path's last step is the grouped order alone there; chapter 10 times the choice where it acts.
# They stay in RUNGS, drawn apart, off this path.
MAIN: tuple[str, ...] = (
    "01_naive", "01_coalesced", "01_smem_tiled", "01_blocktile_2d", "01_vectorized", "01_warptiled",
    "02_wmma_naive", "02_wmma_smem", "03_mma_sync", "04_swizzle", "05_cp_async",
    "06_wgmma_m64n64", "06_wgmma_wide", "07_tma", "08_same_tile", "09_setmaxnreg",
    "10_persistent", "10_bf16_c", "10_cluster", "10_tma_store", "10_chip", "10_pdl", "10_overlap", "12_fp8",
)

@dataclass(frozen=True)
class Probe:
    """A chapter-00 microbenchmark kernel: measures one ceiling of the machine."""
    id: str
    title: str
    entry: str
    file: str = "00_probes"
    unit: str = "TB/s"
    arch: str = "sm_90a"
    needs_cc: tuple = (8, 0)
    threads: str = "THREADS"
    sass_has: tuple = ()

    @property
    def path(self) -> Path:
        return KERNELS / f"{self.file}.cu"


PROBES: tuple[Probe, ...] = (
    Probe("hbm_copy", "HBM copy bandwidth (read + write)", "probe_copy", sass_has=("LDG.E.128", "STG.E.128")),
    Probe("l2_read", "L2 read bandwidth", "probe_l2_read", sass_has=("LDG.E.128",)),
    Probe("ffma_peak", "FFMA issue peak", "probe_ffma", unit="TFLOP/s", sass_has=("FFMA",)),
    Probe("hmma_peak", "mma.sync (HMMA) peak, BF16", "probe_hmma", unit="TFLOP/s", sass_has=("HMMA.16816.F32.BF16",)),
    Probe("hgmma_peak", "wgmma (HGMMA) peak, BF16", "probe_hgmma", unit="TFLOP/s", needs_cc=(9, 0),
          sass_has=("HGMMA.64x256x16.F32.BF16",)),
    Probe("qgmma_peak", "wgmma (QGMMA) peak, FP8 e4m3", "probe_qgmma", unit="TFLOP/s", needs_cc=(9, 0),
          sass_has=("QGMMA.64x256x32.F32.E4M3.E4M3",)),
    # The data paths the Hopper rungs use, each with its own probe: shared memory -> wgmma operands at narrower n
    # (the same A bytes for less work), and L2 -> shared memory through TMA.
    Probe("hgmma_n128", "wgmma m64n128k16 from shared memory, BF16", "probe_hgmma_n128", unit="TFLOP/s",
          needs_cc=(9, 0), sass_has=("HGMMA.64x128x16.F32.BF16",)),
    Probe("hgmma_n64", "wgmma m64n64k16 from shared memory, BF16", "probe_hgmma_n64", unit="TFLOP/s",
          needs_cc=(9, 0), sass_has=("HGMMA.64x64x16.F32.BF16",)),
    Probe("tma_l2_read", "L2 -> shared memory through TMA", "probe_tma_l2", needs_cc=(9, 0),
          sass_has=("UTMALDG.2D", "SYNCS")),
    # The same path in 2-CTA clusters, each box half fetched by each CTA and multicast to both (rung 10's B tile).
    Probe("tma_multicast", "L2 -> shared memory through TMA, multicast to a 2-CTA cluster", "probe_tma_multicast",
          needs_cc=(9, 0), sass_has=("UTMALDG.2D.MULTICAST", "SYNCS")),
    # The three load paths over the same working sets, each CTA its own slice (helpers.probes.READ_SETS): LDG into
    # registers, cp.async (rung 05's 16-byte copies) and TMA into shared memory; TMA also in probe_tma_l2's shared walk.
    Probe("read_ldg", "L2 read through LDG (.cg), a slice per CTA", "probe_read_ldg", sass_has=("LDG.E.128",)),
    Probe("read_cp_async", "L2 -> shared memory through cp.async.cg (16 B), a slice per CTA", "probe_read_cp_async",
          sass_has=("LDGSTS.E.BYPASS.128", "LDGDEPBAR", "DEPBAR.LE")),
    Probe("read_tma", "L2 -> shared memory through TMA, a slice per CTA or the shared walk", "probe_read_tma",
          needs_cc=(9, 0), sass_has=("UTMALDG.2D", "SYNCS")),
)


def rung(rung_id: str) -> Rung:
    """Look a rung up by id; an unknown id lists the ones that exist."""
    for r in RUNGS:
        if r.id == rung_id:
            return r
    raise KeyError(f"no rung named {rung_id!r}; the ladder has: {', '.join(r.id for r in RUNGS)}")


def probe(probe_id: str) -> Probe:
    for p in PROBES:
        if p.id == probe_id:
            return p
    raise KeyError(f"no probe named {probe_id!r}; chapter 00 has: {', '.join(p.id for p in PROBES)}")


def chapter_rungs(chapter: str) -> tuple[Rung, ...]:
    return tuple(r for r in RUNGS if r.chapter == chapter)


def lookup(item_id: str) -> Rung | Probe:
    """A rung ("04_swizzle": ids start with their chapter number) or a probe ("hbm_copy") by id."""
    return rung(item_id) if item_id[:2].isdigit() else probe(item_id)
