"""Conceptual figures of the chapters, one module per chapter, drawn from the models (helpers/models.py), the
hardware facts (helpers/hardware.py) and each kernel's own constants (`build(rung).consts`), so a change to a kernel
redraws its picture instead of falsifying it. Each `fig_*` takes an optional Axes and returns the Axes it drew on;
every one is importable from here (`from helpers.figures import fig_smem_budget`).

    ch00 (the machine)          fig_read_paths, fig_memory_roofs
    ch01 (FP32 SIMT)            fig_simt_warp_sectors, fig_simt_thread_tiles, fig_simt_warp_tiles, fig_simt_lds_banks
    ch02 (WMMA)                 fig_wmma_warp_tiles, fig_wmma_intensity, fig_wmma_opaque
    ch03 (mma.sync)             fig_ldmatrix_lane_map, fig_warp_mma_tiling, fig_ldmatrix_bank_heat
    ch04 (swizzle)              fig_ktile_wavefronts, fig_phase_on_banks, fig_swizzle_permutation, fig_padding_bytes
    ch05 (cp.async)             fig_cp_async_ring_timeline, fig_cp_async_littles_law, fig_cp_async_register_file
    ch06 (wgmma)                fig_smem_budget, fig_swizzle_atom, fig_accumulator, fig_wgmma_timeline
    ch07 (TMA)                  fig_load_instructions, fig_tma_box, fig_mbarrier_phase, fig_ring_parity
    ch08 (warp specialization)  fig_stage_clocks, fig_ring, fig_parities, fig_ring_bytes
    ch09 (setmaxnreg)           fig_tile_intensity, fig_register_pool, fig_pool_ledger, fig_consumer_registers,
                                fig_wide_registers
    ch10 (the chip)             fig_persistent_schedule, fig_cluster_multicast, fig_tma_store_epilogue, fig_tile_waves,
                                fig_launches_back_to_back
    ch12 (FP8)                  fig_fp8_bit_layouts, fig_fp8_number_line, fig_fp8_scaling, fig_fp8_stage_bytes
    every chapter (profile)     fig_profile: the rung beside its predecessor, from their recorded Nsight Compute
                                profiles (takes and returns a pair of Axes); limit_of, what binds, for the prose

common.py holds what they share (axes, clean, bytes per element, the colours of A, B and the warpgroup roles).
"""
from .ch00 import fig_memory_roofs, fig_read_paths
from .ch01 import fig_simt_lds_banks, fig_simt_thread_tiles, fig_simt_warp_sectors, fig_simt_warp_tiles
from .ch02 import fig_wmma_intensity, fig_wmma_opaque, fig_wmma_warp_tiles
from .ch03 import fig_ldmatrix_bank_heat, fig_ldmatrix_lane_map, fig_warp_mma_tiling
from .ch04 import fig_ktile_wavefronts, fig_padding_bytes, fig_phase_on_banks, fig_swizzle_permutation
from .ch05 import fig_cp_async_littles_law, fig_cp_async_register_file, fig_cp_async_ring_timeline
from .ch06 import fig_accumulator, fig_smem_budget, fig_swizzle_atom, fig_wgmma_timeline
from .ch07 import fig_load_instructions, fig_mbarrier_phase, fig_ring_parity, fig_tma_box
from .ch08 import fig_parities, fig_ring, fig_ring_bytes, fig_stage_clocks
from .ch09 import fig_consumer_registers, fig_pool_ledger, fig_register_pool, fig_tile_intensity, fig_wide_registers
from .ch10 import (fig_cluster_multicast, fig_launches_back_to_back, fig_persistent_schedule, fig_tile_waves,
                   fig_tma_store_epilogue)
from .ch12 import fig_fp8_bit_layouts, fig_fp8_number_line, fig_fp8_scaling, fig_fp8_stage_bytes
from .profile import fig_profile, limit_of, limit_sentence, recorded_profile

__all__ = sorted(name for name in dir() if name.startswith("fig_")) + ["limit_of", "limit_sentence", "recorded_profile"]
