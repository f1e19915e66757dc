#include "decode_choice.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace kvscope::probe {

namespace {

bool is_fp8(KvDtype d) { return d == KvDtype::fp8_e4m3 || d == KvDtype::fp8_e5m2; }

}  // namespace

KernelWishRead attention_kernel_wish(const char* value) {
    const std::string_view v = value ? value : "";
    KernelWishRead r;
    if (v == "tensor-cores")
        r.wish = KernelWish::tensor_cores;
    else if (v == "cuda-cores")
        r.wish = KernelWish::cuda_cores;
    else if (!v.empty() && v != "auto")
        r.error = "KVSCOPE_ATTENTION_KERNEL: \"" + std::string(v) +
                  "\" is not a kernel choice (auto, tensor-cores or cuda-cores)";
    return r;
}

KernelWishRead decode_splits_wish(const char* value) {
    const std::string_view v = value ? value : "";
    KernelWishRead r;
    if (v.empty()) return r;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n == 0)
        r.error = "KVSCOPE_DECODE_SPLITS: \"" + std::string(v) +
                  "\" is not a number of splits (a whole number from 1; leave it unset for the probe's own count)";
    else
        r.splits = n;
    return r;
}

KernelWishRead attention_kernel_wish_from_environment() {
    KernelWishRead r = attention_kernel_wish(std::getenv("KVSCOPE_ATTENTION_KERNEL"));  // NOLINT(concurrency-mt-unsafe)
    if (!r.error.empty()) return r;
    const KernelWishRead splits =
        decode_splits_wish(std::getenv("KVSCOPE_DECODE_SPLITS"));  // NOLINT(concurrency-mt-unsafe)
    r.splits = splits.splits;
    r.error = splits.error;
    return r;
}

bool is_mla_latent(const AttentionShape& sh) {
    return sh.kv_heads == 1 && sh.dk == kMlaLatent && sh.dv == kMlaValue && sh.row_k == kMlaLatent &&
           sh.row_v == kMlaLatent && sh.v_stride() == kMlaLatent;
}

std::string tensor_core_refusal(const AttentionShape& sh, KvDtype dtype) {
    const bool fp8 = is_fp8(dtype);
    if (dtype != KvDtype::fp16 && dtype != KvDtype::bf16 && !fp8)
        return "the tensor-core kernel reads fp16, bf16 and fp8 caches, not " + std::string(to_string(dtype));
    if (is_mla_latent(sh)) return {};
    // Another MLA latent (one head, V inside the K row; MiniCPM3's is 256 + 32).
    if (sh.kv_heads == 1 && sh.dv < sh.dk && sh.row_v == sh.row_k && sh.v_stride() == sh.row_k)
        return "the tensor-core kernel takes MLA latents of " + std::to_string(kMlaValue) + " + " +
               std::to_string(kMlaLatent - kMlaValue) + " values, not " + std::to_string(sh.dv) + " + " +
               std::to_string(sh.dk - sh.dv);
    if (sh.dk != sh.dv)
        return "the tensor-core kernel takes K and V heads of one width, not " + std::to_string(sh.dk) + " and " +
               std::to_string(sh.dv);
    if (sh.dk != 64 && sh.dk != 128)
        return "the tensor-core kernel takes heads of 64 or 128 values, not " + std::to_string(sh.dk);
    // Rows of whole 16-byte pieces (8 values of 16 bits, 16 of fp8): with heads of 64 or 128 values, only a
    // V head stride set apart from the row (the decode step's split of a sequence's heads) could break this.
    const std::uint64_t piece = fp8 ? 16 : 8;
    for (const auto& [name, values] : {std::pair{"a K row", sh.row_k}, std::pair{"a V row", sh.row_v},
                                       std::pair{"the V head stride", sh.v_stride()}})
        if (values % piece != 0)
            return "the tensor-core kernel copies whole 16-byte pieces, and " + std::string(name) + " of " +
                   std::to_string(values) + " values is not made of them";
    return {};
}

bool prefers_tensor_cores(const AttentionShape& sh, KvDtype dtype) {
    return is_fp8(dtype) || is_mla_latent(sh) || (sh.kv_heads > 0 && sh.q_heads / sh.kv_heads >= kAutoGroup);
}

bool use_tensor_cores(KernelWish wish, const AttentionShape& sh, KvDtype dtype) {
    if (wish == KernelWish::cuda_cores || !tensor_core_refusal(sh, dtype).empty()) return false;
    return wish == KernelWish::tensor_cores || prefers_tensor_cores(sh, dtype);
}

std::string tensor_core_note(KernelWish wish, const AttentionShape& sh, KvDtype dtype) {
    if (wish != KernelWish::tensor_cores || use_tensor_cores(wish, sh, dtype)) return {};
    return "; tensor cores not used: " + tensor_core_refusal(sh, dtype);
}

}  // namespace kvscope::probe
