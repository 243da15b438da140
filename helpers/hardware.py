"""The Hopper (GH100, H100 SXM5) facts the napkins, figures, explorers and exercises use, each defined here once with
its source: the datasheet and the Hopper whitepaper, the CUDA C++ Programming Guide and the PTX ISA. The H200 is the
same chip with other memory: the facts that differ between the two boards are in MEMORY, by the name the driver
reports. Constants only: it reads no file and imports nothing from helpers, so any module can import it.
tests/test_hardware.py checks that no other module types these facts, that they agree with each other, and that they
are what every recorded GPU said about itself (helpers.results.environments: SMs, L2, shared memory, highest SM
clock)."""
from __future__ import annotations

KIB = 1024                     # bytes; what the CUDA documentation's "KB" of shared memory means

# ---- the chip -----------------------------------------------------------------------------------------------------

# Datasheet, H100 SXM5: the boost clock at which its FP32 66.9 TFLOP/s is quoted; the recorded env's
# "sm_clock_max_mhz", the highest SM clock nvidia-smi reports, says the same 1,980 MHz (H100 and H200). A napkin's
# clock: measured cycles are converted at the clock Nsight Compute saw the kernel run at (its profile's
# sm_clock_mhz), lower under load; the tensor-core peak is quoted at TENSOR_BOOST_HZ instead.
MAX_SM_CLOCK_HZ = 1980 * 1e6

SMS = 132                      # datasheet, H100 SXM5 and H200 SXM; equal to the recorded envs' "sms"
TENSOR_FLOP_PER_CLK = 4096     # Hopper whitepaper: dense BF16 (and FP16) FLOP per SM per clock, twice the A100 SM's
TENSOR_BOOST_HZ = 1.83e9       # Hopper whitepaper, table 3: the boost clock H100 SXM5's tensor-core peaks are quoted
                               # at: 132 SMs x 4,096 FLOP x 1.83 GHz = the datasheet's dense BF16 989.4 TFLOP/s
DENSE_BF16_FLOPS = 989.4e12    # datasheet, H100 SXM5: dense BF16 tensor-core peak (1,979 TFLOP/s is with sparsity)
FP32_FLOPS = 66.9e12           # datasheet, H100 SXM5: FP32 peak (FFMA on the CUDA cores)
FP32_LANES = 128               # Hopper whitepaper: FP32 cores per SM, 32 in each of its 4 sub-partitions
FLOP_PER_FMA = 2               # a fused multiply-add counts as a multiply and an add
FFMA_FLOP_PER_CLK = FP32_LANES * FLOP_PER_FMA   # 256 FP32 FLOP per SM per clock
SCHEDULERS = 4                 # Hopper whitepaper: 4 SM sub-partitions, each with its own warp scheduler



# What one Hopper board adds to the chip, by the name the driver reports: its L2 (bytes, as the driver reports it) and
# its HBM (bytes, and the datasheet's bandwidth in bytes per second).
MEMORY = {
    # datasheet, H100 SXM5: 80 GB of HBM3 at 3.35 TB/s; 50 MB of L2 (the recorded env's "l2_bytes": 52,428,800)
    "NVIDIA H100 80GB HBM3": {"l2_bytes": 50 * KIB * KIB, "hbm_bytes": 80 * 10**9, "hbm_bytes_per_s": 3.35e12},
    # datasheet, H200 SXM: 141 GB of HBM3e at 4.8 TB/s; the driver reports 60 MiB of L2 (62,914,560)
    "NVIDIA H200": {"l2_bytes": 60 * KIB * KIB, "hbm_bytes": 141 * 10**9, "hbm_bytes_per_s": 4.8e12},
}

# ---- threads and registers (CUDA C++ Programming Guide, compute capability 9.0; PTX ISA) ---------------------------

WARP = 32                      # PTX ISA: WARP_SZ, threads per warp
WARPGROUP = 4 * WARP           # PTX ISA: a warpgroup is 4 contiguous warps (what one wgmma runs on)
MAX_THREADS_PER_SM = 2048      # programming guide: resident threads per SM
MAX_WARPS_PER_SM = MAX_THREADS_PER_SM // WARP   # 64 resident warps per SM
REGISTER_FILE = 65536          # programming guide: 32-bit registers per SM (64 K)
MAX_REGS_PER_THREAD = 255      # programming guide: registers one thread can address (R0-R254; R255 reads as RZ)

# ---- memory -------------------------------------------------------------------------------------------------------

SECTOR_BYTES = 32              # programming guide: L1 and L2 move global memory in 32-byte sectors
CHUNK = 16                     # PTX ISA: one ldmatrix row address, one core-matrix row (8 b16), the largest cp.async
SMEM_PER_SM = 228 * KIB        # programming guide: shared memory per SM
SMEM_PER_BLOCK_OPTIN = 227 * KIB   # programming guide: what one block may opt in to; the recorded env's
                                   # "smem_optin_bytes" says the same
SMEM_DEFAULT_PER_BLOCK = 48 * KIB  # programming guide: dynamic shared memory a kernel gets without opting in
SMEM_RESERVED_PER_BLOCK = 1 * KIB  # programming guide: shared memory the system reserves for each resident block
SMEM_BANKS = 32                # programming guide: shared memory has 32 banks ...
BANK_BYTES = 4                 # ... each serving one 4-byte word per wavefront
WAVEFRONT_BYTES = SMEM_BANKS * BANK_BYTES   # 128 bytes: the most one wavefront serves
SLOTS = WAVEFRONT_BYTES // CHUNK            # 8 slots of 16 bytes (4 banks each): two chunks in one slot conflict
SMEM_BYTES_PER_CLK = WAVEFRONT_BYTES        # napkin assumption: one wavefront per clock per SM, reads and writes alike

# ---- FP8 (chapter 12) ----------------------------------------------------------------------------------------------
FP8_RATE = 2       # datasheet: dense FP8 wgmma does twice BF16's FLOP per clock on the H100 (1,979 vs 989 TFLOP/s)
SWIZZLE_ROW = 128  # PTX ISA / CUDA driver API: a 128B-swizzled TMA box's inner dimension is at most 128 bytes
