#include "cpu_attention.h"

#include <algorithm>
#include <cmath>

namespace kvscope::probe::cpu {

// One decode step's attention for one slot, every query head, grouped-query aware (each token's
// K and V rows are read once, converted in registers, for every query of its group), in
// flash-decoding order: tile by tile, the tile's scores, then an online softmax (a running
// maximum and sum per query head; the output so far is rescaled when the maximum grows), then the
// tile's V. Scores never leave the tile, so nothing is read twice and no pass runs over the whole
// context's scores. `q_bf16` (queries rounded to bf16) is used when the bf16 dot path applies.
// The result is left in sc.out.
void attend(const Slot& s, const Shape& sh, KvDtype dtype, const float* q, const std::uint16_t* q_bf16, Scratch& sc) {
    const std::uint64_t group = sh.q_heads / sh.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(sh.dk));
    const std::uint64_t dv_stride = sh.v_stride();
    const auto* k = static_cast<const std::byte*>(s.k);
    const auto* v = static_cast<const std::byte*>(s.v);
    // fp8, int8 and the block formats are converted a tile at a time into the scratch's rows (each stored byte read
    // once), and the tile is then read as fp32; the others are read in place.
    const bool converts = !direct(dtype);
    const KvDtype td = converts ? KvDtype::fp32 : dtype;  // the format the tile is read in
    const std::size_t eb = element_bytes(td);
    const std::uint64_t k_row_bytes = row_size(dtype, sh.row_k), v_row_bytes = row_size(dtype, sh.row_v);
    const bool bf16_dot = q_bf16 && uses_bf16_dot(dtype, sh);
    float* scores = sc.scores.data();
    float* out = sc.out.data();
    std::vector<float>&run_max = sc.run_max, &run_sum = sc.run_sum, &tile_max = sc.tile_max;
    std::fill(run_max.begin(), run_max.end(), -1e30f);
    std::fill(run_sum.begin(), run_sum.end(), 0.0f);
    std::fill(out, out + sh.q_heads * sh.dv, 0.0f);
    for (std::uint64_t t0 = 0; t0 < s.tokens; t0 += kTile) {
        const std::uint64_t n = std::min(kTile, s.tokens - t0);
        const std::byte* kt = k + t0 * k_row_bytes;  // the tile's rows, as the kernels read them
        const std::byte* vt = v + t0 * v_row_bytes;
        if (converts) {
            sc.k_tile.resize(kTile * sh.row_k);
            sc.v_tile.resize(kTile * sh.row_v);
            to_float(dtype, kt, sc.k_tile.data(), n * sh.row_k);
            to_float(dtype, vt, sc.v_tile.data(), n * sh.row_v);
            kt = reinterpret_cast<const std::byte*>(sc.k_tile.data());
            vt = reinterpret_cast<const std::byte*>(sc.v_tile.data());
        }
        const auto* k16 = reinterpret_cast<const std::uint16_t*>(kt);
        // Scores, stored token-major ([t][query head]); tokens go in pairs so each query load is used twice.
        std::uint64_t i = 0;
        for (; i + 2 <= n; i += 2) {
            // Ask for every line of the pair's two rows at once: the misses then overlap instead of
            // arriving one head at a time.
            if (!converts) {
                prefetch(kt + i * sh.row_k * eb, 2 * sh.row_k * eb, CacheLevel::l1);
                prefetch(vt + i * sh.row_v * eb, 2 * sh.row_v * eb, CacheLevel::l2);  // for the V pass below
            }
            for (std::uint64_t h = 0; h < sh.kv_heads; ++h) {
                float* out0 = scores + i * sh.q_heads + h * group;
                float* out1 = out0 + sh.q_heads;
                if (bf16_dot)
                    dot_group_bf16x2(q_bf16 + h * group * sh.dk, group, k16 + i * sh.row_k + h * sh.dk,
                                     k16 + (i + 1) * sh.row_k + h * sh.dk, sh.dk, out0, out1);
                else
                    dot_group_raw2(td, q + h * group * sh.dk, group, kt + (i * sh.row_k + h * sh.dk) * eb,
                                   kt + ((i + 1) * sh.row_k + h * sh.dk) * eb, sh.dk, out0, out1);
            }
        }
        for (; i < n; ++i)
            for (std::uint64_t h = 0; h < sh.kv_heads; ++h)
                dot_group_raw(td, q + h * group * sh.dk, group, kt + (i * sh.row_k + h * sh.dk) * eb, sh.dk,
                              scores + i * sh.q_heads + h * group);
        // Online softmax: scale, the tile's maximum, rescale what came before if the maximum grew.
        std::fill(tile_max.begin(), tile_max.end(), -1e30f);
        for (std::uint64_t t = 0; t < n; ++t)
            for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
                float& x = scores[t * sh.q_heads + qh];
                x *= scale;
                tile_max[qh] = std::max(tile_max[qh], x);
            }
        for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
            if (tile_max[qh] <= run_max[qh]) continue;
            const float c = std::exp(run_max[qh] - tile_max[qh]);
            run_max[qh] = tile_max[qh];
            run_sum[qh] *= c;
            if (t0 > 0)
                for (std::uint64_t d = 0; d < sh.dv; ++d) out[qh * sh.dv + d] *= c;
        }
        for (std::uint64_t t = 0; t < n; ++t)
            exp_sub_accumulate(scores + t * sh.q_heads, run_max.data(), run_sum.data(), sh.q_heads);
        // The tile's V rows (asked for during the scores), weighted by the unnormalised
        // probabilities, while the next tile's K rows are asked for.
        const std::uint64_t next = std::min(s.tokens, t0 + kTile), next_end = std::min(s.tokens, t0 + 2 * kTile);
        Ahead ahead{k + next * k_row_bytes, k + next_end * k_row_bytes};
        for (std::uint64_t h = 0; h < sh.kv_heads; ++h)
            axpy_tokens_raw(td, scores + h * group, sh.q_heads, group, vt + h * dv_stride * eb, sh.row_v, n,
                            out + h * group * sh.dv, sh.dv, &ahead);
    }
    for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
        const float inv = 1.0f / run_sum[qh];
        for (std::uint64_t d = 0; d < sh.dv; ++d) out[qh * sh.dv + d] *= inv;
    }
}

}  // namespace kvscope::probe::cpu
