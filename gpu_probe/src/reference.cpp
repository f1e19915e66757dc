#include "reference.h"

#include <algorithm>
#include <cmath>

#include "cpu_kernels.h"

namespace kvscope::probe {

std::vector<double> attention_reference(const void* k, const void* v, std::uint64_t tokens, const AttentionShape& sh,
                                        KvDtype dtype, const float* q) {
    const std::uint64_t group = sh.q_heads / sh.kv_heads;
    const std::uint64_t v_stride = sh.row_v / sh.kv_heads;
    const std::uint64_t k_row = cpu::row_size(dtype, sh.row_k), v_row = cpu::row_size(dtype, sh.row_v);
    std::vector<float> krow(sh.row_k), vrow(sh.row_v);
    std::vector<double> scores(sh.q_heads * tokens), out(sh.q_heads * sh.dv, 0.0);
    for (std::uint64_t t = 0; t < tokens; ++t) {
        cpu::to_float(dtype, static_cast<const std::byte*>(k) + t * k_row, krow.data(), sh.row_k);
        for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
            const float* kr = krow.data() + (qh / group) * sh.dk;
            double dot = 0;
            for (std::uint64_t d = 0; d < sh.dk; ++d) dot += static_cast<double>(q[qh * sh.dk + d]) * kr[d];
            scores[qh * tokens + t] = dot / std::sqrt(static_cast<double>(sh.dk));
        }
    }
    for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
        double* sc = scores.data() + qh * tokens;
        const double mx = *std::max_element(sc, sc + tokens);
        double sum = 0;
        for (std::uint64_t t = 0; t < tokens; ++t) sum += (sc[t] = std::exp(sc[t] - mx));
        for (std::uint64_t t = 0; t < tokens; ++t) sc[t] /= sum;
    }
    for (std::uint64_t t = 0; t < tokens; ++t) {
        cpu::to_float(dtype, static_cast<const std::byte*>(v) + t * v_row, vrow.data(), sh.row_v);
        for (std::uint64_t qh = 0; qh < sh.q_heads; ++qh) {
            const float* vr = vrow.data() + (qh / group) * v_stride;
            for (std::uint64_t d = 0; d < sh.dv; ++d) out[qh * sh.dv + d] += scores[qh * tokens + t] * vr[d];
        }
    }
    return out;
}

double max_relative_error(const float* a, const std::vector<double>& reference) {
    double scale = 0, worst = 0;
    for (double x : reference) scale = std::max(scale, std::abs(x));
    for (std::size_t j = 0; j < reference.size(); ++j) worst = std::max(worst, std::abs(a[j] - reference[j]));
    return worst / std::max(scale, 1e-30);
}

}  // namespace kvscope::probe
