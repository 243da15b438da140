// XOR swizzle of a row-major bf16 tile in shared memory. Introduced in chapter 04, shared from there on.
// Shared memory serves 128 bytes (32 banks x 4 B) per wavefront. ldmatrix reads 8 rows x 16 bytes per phase;
// if those 8 chunks sit at the same offset inside a 128-byte line they hit the same 4 banks, 8 times over.
// XOR-ing the 16-byte chunk index with bits of the row spreads the 8 rows over the 8 chunk slots of a line,
// so every phase is conflict-free, and no byte is wasted on padding.
// For a [rows, 64] bf16 tile (one 128-byte line per row) this is exactly the layout of the hardware's 128-byte
// swizzle (TMA's CU_TENSOR_MAP_SWIZZLE_128B, the wgmma descriptor's swizzle mode 1): 16-byte chunk c of row r at
// byte r * 128 + ((c ^ (r % 8)) * 16), provided the tile starts on a 1024-byte boundary, because the hardware XORs
// address bits 4-6 with bits 7-9. So rung 06's cp.async copies use this function too.
#pragma once

// Element offset of (row, col) in a [rows, COLS] bf16 tile stored with the swizzle. col must be the first
// element of a 16-byte chunk (a multiple of 8) or lie inside the chunk it names.
template <int COLS>
__device__ __forceinline__ int swizzle(int row, int col) {
    constexpr int CHUNKS = COLS / 8;                           // 16-byte chunks per row
    constexpr int ROWS_PER_LINE = CHUNKS >= 8 ? 1 : 8 / CHUNKS;  // rows sharing one 128-byte line
    constexpr int MASK = (CHUNKS >= 8 ? 8 : CHUNKS) - 1;       // chunk slots to permute among
    static_assert(COLS % 8 == 0 && (CHUNKS & (CHUNKS - 1)) == 0, "rows of a power-of-two number of 16-byte chunks");
    return row * COLS + (((col / 8) ^ ((row / ROWS_PER_LINE) & MASK)) * 8) + col % 8;
}
