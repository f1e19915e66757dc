#include "step_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "kvscope/calculator/numbers.h"
#include "reference.h"

namespace kvscope::probe::step {

Route route_checked(const std::vector<double>& logits, const Route& chosen, std::uint64_t k, double slack) {
    std::vector<std::uint64_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint64_t a, std::uint64_t b) { return logits[a] > logits[b]; });
    double scale = 0;
    for (const double l : logits) scale = std::max(scale, std::abs(l));
    const double kth = logits[order[k - 1]], below = slack * scale;
    bool kept = chosen.experts.size() == k;
    for (std::size_t j = 0; kept && j < k; ++j) {
        const std::uint64_t e = chosen.experts[j];
        kept = e < logits.size() && logits[e] >= kth - below &&
               std::count(chosen.experts.begin(), chosen.experts.end(), e) == 1;
    }
    Route r;
    r.experts = kept ? chosen.experts
                     : std::vector<std::uint64_t>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    double top = -INFINITY, sum = 0;
    for (const std::uint64_t e : r.experts) top = std::max(top, logits[e]);
    std::vector<double> w;
    for (const std::uint64_t e : r.experts) sum += w.emplace_back(std::exp(logits[e] - top));
    for (const double x : w) r.weights.push_back(static_cast<float>(x / sum));
    return r;
}

FormatStep format_step(KvDtype kv) {
    switch (kv) {
        case KvDtype::fp32:
            return {0x1p-23, 0x1p-149};
        case KvDtype::fp16:
            return {0x1p-10, 0x1p-24};
        case KvDtype::bf16:
            return {0x1p-7, 0x1p-133};
        case KvDtype::fp8_e4m3:
            return {0x1p-3, 0x1p-9};
        case KvDtype::fp8_e5m2:
            return {0x1p-2, 0x1p-16};
        case KvDtype::int8:
            return {0, cpu::kInt8Scale};
        // Blocks: |value − stored| ≤ scale / 2 (q8_0) or one scale (q4_0, a value at the cap of 15) for each of the
        // two rows' scales, and their fp16 rounding; a scale under 2^-14 is an fp16 subnormal, rounded to 2^-24, which
        // moves a value by up to 127 (q8_0) or 8 (q4_0) of those.
        case KvDtype::q8_0:
            return {2.3 / 127, 127 * 0x1p-24};
        case KvDtype::q4_0:
            return {2.1 / 8, 8 * 0x1p-24};
        // Not stored by the probe (cpu::stores refuses them before a step is built): no tolerance is claimed, and a
        // whole-value step fails any check that reached here with a value to compare.
        case KvDtype::int4:
        case KvDtype::mxfp4:
            return {1, 0};
    }
    return {1, 0};  // not reached: every member is a case above
}

std::string new_row_problem(KvDtype kv, const void* got, const double* want, std::size_t n, double slack) {
    std::vector<float> stored(n), ideal(n), as_float(want, want + n);
    cpu::to_float(kv, got, stored.data(), n);
    std::vector<std::byte> encoded(cpu::row_size(kv, n));
    cpu::from_float(kv, as_float.data(), encoded.data(), n);
    cpu::to_float(kv, encoded.data(), ideal.data(), n);
    double largest = 0;
    for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(want[i]));
    const FormatStep step = format_step(kv);
    const double allowed = (slack + step.relative) * largest + step.absolute;
    for (std::size_t i = 0; i < n; ++i) {
        const double off = std::abs(static_cast<double>(stored[i]) - static_cast<double>(ideal[i]));
        if (!(off <= allowed))  // NaN too
            return "element " + std::to_string(i) + " is " + number_text(stored[i], Notation::general, 5) +
                   " where float64 gives " + number_text(want[i], Notation::general, 5) + " (" +
                   number_text(ideal[i], Notation::general, 5) + " in " + std::string(to_string(kv)) + ")";
    }
    return "";
}

ReferenceResult reference_step(const ReferenceStep& s) {
    const Dims& d = s.dims;
    const KvDtype wd = s.weight_dtype;
    const std::size_t eb = cpu::element_bytes(wd);
    const std::uint64_t H = d.hidden, B = s.tokens.size();
    auto row = [&](const void* w, std::uint64_t r, std::uint64_t cols) {
        std::vector<float> f(cols);
        cpu::to_float(wd, static_cast<const std::byte*>(w) + r * cols * eb, f.data(), cols);
        return std::vector<double>(f.begin(), f.end());
    };
    auto matvec = [&](const void* w, std::uint64_t rows, std::uint64_t cols, const std::vector<double>& x) {
        std::vector<double> y(rows);
        for (std::uint64_t r = 0; r < rows; ++r) {
            const std::vector<double> wr = row(w, r, cols);
            y[r] = std::inner_product(wr.begin(), wr.end(), x.begin(), 0.0);
        }
        return y;
    };
    auto norm = [](std::vector<double> x) {
        double ss = 0;
        for (const double v : x) ss += v * v;
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + 1e-6);
        for (double& v : x) v *= inv;
        return x;
    };
    auto rope_d = [](double* v, std::uint64_t heads, std::uint64_t dim, std::uint64_t pos) {
        for (std::uint64_t i = 0; i < dim / 2; ++i) {
            const double a =
                static_cast<double>(pos) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
            for (std::uint64_t h = 0; h < heads; ++h) {
                double &p = v[h * dim + i], &q = v[h * dim + i + dim / 2];
                const double x = p, y = q;
                p = x * std::cos(a) - y * std::sin(a);
                q = x * std::sin(a) + y * std::cos(a);
            }
        }
    };
    auto silu_d = [](double x) { return x / (1.0 + std::exp(-x)); };
    auto mlp_d = [&](const void* up_w, const void* down_w, std::uint64_t inter, const std::vector<double>& x) {
        const std::vector<double> h = matvec(up_w, d.up_rows(inter), H, x);
        const double s_in = 1.0 / std::sqrt(static_cast<double>(H));
        std::vector<double> act(inter);
        for (std::uint64_t i = 0; i < inter; ++i)
            act[i] = d.gated ? silu_d(h[i] * s_in) * (h[inter + i] * s_in) : silu_d(h[i] * s_in);
        std::vector<double> y = matvec(down_w, H, inter, act);
        for (double& v : y) v /= std::sqrt(static_cast<double>(inter));
        return y;
    };
    const AttentionShape sh{d.q_heads, d.kv_heads, d.dk, d.dv, d.kv_heads * d.dk, d.kv_heads * d.dv};
    ReferenceResult result;
    std::vector<double>& logits = result.logits;
    for (std::uint64_t b = 0; b < B; ++b) {
        std::vector<double> x = row(s.embedding, s.tokens[b], H);
        // Once the step chose experts the router's float64 logits do not (route_checked), its later layers start
        // from another residual: their K and V are no longer float64's to check, and the logits show the choice.
        bool routed_apart = false;
        for (std::uint64_t l = 0; l < s.layers.size(); ++l) {
            const ReferenceLayer& w = s.layers[l];
            std::vector<double> qkv = matvec(w.qkv, d.qkv_rows(), H, norm(x));
            for (double& v : qkv) v /= std::sqrt(static_cast<double>(H));
            const ReferenceSlot& slot = s.slots[l * B + b];
            rope_d(qkv.data(), d.q_heads, d.dk, slot.tokens - 1);
            rope_d(qkv.data() + d.q_heads * d.dk, d.kv_heads, d.dk, slot.tokens - 1);
            // The new K and V are in the cache already, in its format (the step wrote them, in the last row): their
            // values are float64's, else the step projected, rotated or placed them wrong.
            for (const bool key : {true, false}) {
                if (routed_apart) break;
                const std::uint64_t n = key ? sh.row_k : sh.row_v, bytes = cpu::row_size(s.kv_dtype, n);
                const std::byte* last =
                    static_cast<const std::byte*>(key ? slot.k : slot.v) + (slot.tokens - 1) * bytes;
                const double* want = qkv.data() + d.q_heads * d.dk + (key ? 0 : sh.row_k);
                if (std::string why = new_row_problem(s.kv_dtype, last, want, n, s.slack); !why.empty()) {
                    result.wrong_row = "the new token's " + std::string(key ? "K" : "V") + " row of layer " +
                                       std::to_string(l) + ", sequence " + std::to_string(b) +
                                       " is not float64's: " + why +
                                       "; the step's projection, rotation or cache write is wrong";
                    return result;  // the rest would be redone for nothing
                }
            }
            const std::vector<float> q(qkv.begin(), qkv.begin() + static_cast<std::ptrdiff_t>(d.q_heads * d.dk));
            const std::vector<double> attn = attention_reference(slot.k, slot.v, slot.tokens, sh, s.kv_dtype, q.data());
            const std::vector<double> o = matvec(w.o, H, d.q_heads * d.dv, attn);
            for (std::uint64_t i = 0; i < H; ++i) x[i] += o[i] / std::sqrt(static_cast<double>(d.q_heads * d.dv));
            const std::vector<double> xn = norm(x);
            std::vector<double> y(H, 0.0);
            if (w.moe) {
                const Route r =
                    w.router ? route_checked(matvec(w.router, d.experts, H, xn), s.routes[l][b], d.top_k, s.slack)
                             : s.routes[l][b];
                routed_apart = routed_apart || r.experts != s.routes[l][b].experts;
                for (std::size_t k = 0; k < r.experts.size(); ++k) {
                    const std::vector<double> e =
                        mlp_d(w.expert_up[r.experts[k]], w.expert_down[r.experts[k]], d.expert_intermediate, xn);
                    for (std::uint64_t i = 0; i < H; ++i) y[i] += r.weights[k] * e[i];
                }
                if (d.shared > 0) {
                    const std::vector<double> e =
                        mlp_d(w.shared_up, w.shared_down, d.shared * d.expert_intermediate, xn);
                    for (std::uint64_t i = 0; i < H; ++i) y[i] += e[i];
                }
            } else {
                y = mlp_d(w.up, w.down, d.intermediate, xn);
            }
            for (std::uint64_t i = 0; i < H; ++i) x[i] += y[i];
        }
        std::vector<double> out = matvec(s.head, d.vocab, H, norm(x));
        for (double& v : out) logits.push_back(v / std::sqrt(static_cast<double>(H)));
    }
    return result;
}

}  // namespace kvscope::probe::step
