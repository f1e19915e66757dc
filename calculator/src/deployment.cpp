#include "kvscope/calculator/deployment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"
#include "wide.h"

namespace kvscope {
SglangDefault sglang_default_fraction(const Deployment& d, const Parallelism& parallel) {
    // sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings (PR #10975, v0.5.3 on): gpu_mem is the GPU's
    // memory in MiB (nvidia-smi); the chunked-prefill size (unless given: --chunked-prefill-size, KVScope's
    // --max-num-batched-tokens) and CUDA-graph batch follow it, then
    //   reserved = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp x pp / 8 x 1024
    //   (at least 10 GiB on a GPU above 60 GiB; then 6 GiB more for a separate draft model, speculative algorithm
    //   STANDALONE, 2 GiB for an EAGLE head or the MTP layers),
    //   mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3).
    SglangDefault s;
    const double gpu_mib = static_cast<double>(d.gpu.memory_bytes) / static_cast<double>(1ull << 20);
    const std::uint64_t tp = std::max<std::uint64_t>(parallel.tp, 1), pp = std::max<std::uint64_t>(parallel.pp, 1);
    if (gpu_mib < 20 * 1024.0) {
        s.chunked_prefill_size = 2048, s.cuda_graph_max_bs = 8;
    } else if (gpu_mib < 35 * 1024.0) {
        s.chunked_prefill_size = 2048, s.cuda_graph_max_bs = tp < 4 ? 24 : 80;
    } else if (gpu_mib < 60 * 1024.0) {
        s.chunked_prefill_size = 4096, s.cuda_graph_max_bs = tp < 4 ? 32 : 160;
    } else if (gpu_mib < 160 * 1024.0) {
        s.chunked_prefill_size = 8192, s.cuda_graph_max_bs = tp < 4 ? 256 : 512;
    } else {
        s.chunked_prefill_size = 16384, s.cuda_graph_max_bs = 512;
    }
    s.chunked_prefill_given = d.vllm.max_num_batched_tokens > 0;
    if (s.chunked_prefill_given) s.chunked_prefill_size = d.vllm.max_num_batched_tokens;
    double reserved = 512 + 1.5 * static_cast<double>(std::max<std::uint64_t>(s.chunked_prefill_size, 2048)) +
                      2.0 * static_cast<double>(s.cuda_graph_max_bs) + static_cast<double>(tp * pp) / 8 * 1024;
    if (gpu_mib > 60 * 1024.0) reserved = std::max(reserved, 10 * 1024.0);
    if (d.draft && d.draft->method == DraftMethod::draft_model)
        s.draft_mib = 6 * 1024;
    else if (d.mtp || d.draft)
        s.draft_mib = 2 * 1024;
    reserved += static_cast<double>(s.draft_mib);
    s.reserved_mib = static_cast<std::uint64_t>(reserved);
    // Python's round(x, 3) rounds the double's exact value, halves to even (0.8125 -> 0.812): to_chars with three
    // decimals does the same, and reading it back gives that decimal's double. At or below 0 SGLang does not start
    // (validate says so).
    char digits[32];
    const auto written =
        std::to_chars(digits, digits + sizeof digits, (gpu_mib - reserved) / gpu_mib, std::chars_format::fixed, 3);
    std::from_chars(digits, written.ptr, s.fraction);
    return s;
}

std::string sglang_reserved_terms(const SglangDefault& g) {
    // SGLang counts at least 2,048 tokens of chunk: max(chunked_prefill_size, 2048).
    const std::string chunk =
        "chunked prefill " + format_count(g.chunked_prefill_size) + (g.chunked_prefill_given ? " (given)" : "");
    return "512 + 1.5 x " + (g.chunked_prefill_size < 2048 ? "max(" + chunk + ", 2,048)" : chunk) +
           " + 2 x CUDA-graph batch " + format_count(g.cuda_graph_max_bs) +
           " + TP x PP / 8 GiB, at least 10 GiB above 60 GiB" +
           (g.draft_mib > 0 ? ", " + format_count(g.draft_mib) + " MiB more for the draft" : "");
}

Deployment as_drafted(const Deployment& d, const Architecture& model) {
    Deployment out = d;
    if (model.mtp_layers == 0) out.mtp = false;
    return out;
}

double effective_fraction(const Deployment& d, const Parallelism& parallel) {
    return d.engine == Engine::sglang && !d.fraction_given ? sglang_default_fraction(d, parallel).fraction : d.fraction;
}

Errors validate(const Deployment& d, const Parallelism& parallel) {
    Errors e;
    if (d.gpu.memory_bytes == 0) e.push_back({Field::gpu_memory, "the GPU's memory must be more than 0 bytes"});
    // Far beyond any GPU, and low enough that every GPU's budget together stays an exact 64-bit figure.
    if (d.gpu.memory_bytes > kMaxGpuMemoryBytes)
        e.push_back({Field::gpu_memory, "the GPU's memory must be at most 1 PiB (" + format_count(kMaxGpuMemoryBytes) +
                                            " bytes); " + format_count(d.gpu.memory_bytes) + " was given"});
    // A unified-memory computer's GPU takes a share of the machine's memory, never more than all of it.
    if (d.gpu.unified_memory_bytes > 0 && d.gpu.memory_bytes > d.gpu.unified_memory_bytes)
        e.push_back({Field::gpu_memory, "more than the machine's " + format_bytes(d.gpu.unified_memory_bytes) +
                                            " of unified memory (" + d.gpu.name + ")"});
    if (d.gpu.bandwidth_bytes_per_s == 0)
        e.push_back({Field::gpu_bandwidth, "the GPU's memory bandwidth must be more than 0"});
    // Far beyond any memory (an H200 reads 4.8 TB/s), where a step would print as 0.0000 ms.
    constexpr std::uint64_t kMaxBandwidth = 1'000'000'000'000'000;  // 1 PB/s
    if (d.gpu.bandwidth_bytes_per_s > kMaxBandwidth)
        e.push_back({Field::gpu_bandwidth, "the GPU's memory bandwidth must be at most 1 PB/s (" +
                                               format_count(kMaxBandwidth) + " bytes/s); " +
                                               format_count(d.gpu.bandwidth_bytes_per_s) + " was given"});
    if (d.gpu_count == 0)
        e.push_back({Field::gpus, "at least 1 GPU is needed"});
    else if (parallel.tp > 0 && parallel.pp > 0 && d.gpu_count != parallel.tp * parallel.pp)
        e.push_back({Field::gpus, std::to_string(d.gpu_count) + " GPUs, but tensor parallel " +
                                      std::to_string(parallel.tp) + " x pipeline parallel " +
                                      std::to_string(parallel.pp) + " uses " +
                                      std::to_string(parallel.tp * parallel.pp) +
                                      "; set --tp/--pp so their product is the GPU count"});
    if (!(d.fraction > 0.0 && d.fraction <= 1.0))
        e.push_back({Field::utilization, "the memory fraction must be above 0 and at most 1"});
    // SGLang's own fraction where what it keeps back takes the whole GPU: model_runner.py refuses to start ("Not
    // enough memory. Please try to increase --mem-fraction-static").
    if (d.engine == Engine::sglang && !d.fraction_given && d.gpu.memory_bytes > 0) {
        const SglangDefault g = sglang_default_fraction(d, parallel);
        if (!(g.fraction > 0.0)) {
            // What would lower it: a chunk given above SGLang's 2,048 floor, fewer GPUs, no draft; or a fraction.
            std::vector<std::string> ways;
            if (g.chunked_prefill_given && g.chunked_prefill_size > 2048)
                ways.emplace_back("a smaller chunked prefill (--max-num-batched-tokens)");
            if (parallel.tp * parallel.pp > 1) ways.emplace_back("fewer GPUs a replica (TP x PP)");
            if (g.draft_mib > 0) ways.emplace_back("no speculative draft");
            ways.emplace_back("a memory fraction of your own (--utilization)");
            std::string advice;
            for (std::size_t i = 0; i < ways.size(); ++i)
                advice += (i == 0 ? "" : i + 1 == ways.size() ? " or " : ", ") + ways[i];
            e.push_back({g.chunked_prefill_given ? Field::max_num_batched_tokens : Field::utilization,
                         "SGLang keeps back " + format_count(g.reserved_mib) + " MiB (" + sglang_reserved_terms(g) +
                             ") of the GPU's " + format_count(d.gpu.memory_bytes >> 20) +
                             " MiB, which leaves its default mem_fraction_static at " +
                             number_text(g.fraction, Notation::fixed, 3) + ": SGLang does not start; give " + advice});
        }
    }
    if (d.vllm.max_num_batched_tokens > kMaxVllmBatchedTokens)
        e.push_back({Field::max_num_batched_tokens, format_count(d.vllm.max_num_batched_tokens) +
                                                        " tokens a step is more than any deployment takes (at most " +
                                                        format_count(kMaxVllmBatchedTokens) + ")"});
    if (d.vllm.version_minor > 0 &&
        (d.vllm.version_minor < kOldestVllmMinor || d.vllm.version_minor > kLatestVllmMinor))
        e.push_back({Field::vllm_version, "vLLM 0." + std::to_string(d.vllm.version_minor) +
                                              " is outside the versions the calculator has rules for (0." +
                                              std::to_string(kOldestVllmMinor) + " on)"});
    if (d.vllm.version_patch && d.vllm.version_minor == 0)
        e.push_back({Field::vllm_version, "a patch release (0.x." + std::to_string(*d.vllm.version_patch) +
                                              ") is given without its minor version"});
    else if (d.vllm.version_patch > kLatestVllmMinor)
        e.push_back({Field::vllm_version, "vLLM 0." + std::to_string(d.vllm.version_minor) + "." +
                                              std::to_string(*d.vllm.version_patch) + " is not a vLLM release"});
    if (d.vllm.max_num_seqs > kMaxVllmSeqs)
        e.push_back({Field::max_num_seqs, format_count(d.vllm.max_num_seqs) +
                                              " sequences a step is more than any deployment takes (at most " +
                                              format_count(kMaxVllmSeqs) + ")"});
    if (d.tensorrt_llm.max_num_tokens > kMaxVllmBatchedTokens)
        e.push_back({Field::max_num_tokens, format_count(d.tensorrt_llm.max_num_tokens) +
                                                " tokens a step is more than any deployment takes (at most " +
                                                format_count(kMaxVllmBatchedTokens) + ")"});
    if (d.llama_cpp.ubatch > kMaxLlamaCppUbatch)
        e.push_back({Field::ubatch, "a micro-batch of " + format_count(d.llama_cpp.ubatch) +
                                        " tokens is more than any deployment takes (at most " +
                                        format_count(kMaxLlamaCppUbatch) + ")"});
    // A scenario file's quantization, bounded as the formats engines know.
    if (d.weight_quant)
        if (const auto problem = weight_quant_problem(*d.weight_quant))
            e.push_back(
                {Field::weight_dtype, "the weights' quantization (" + d.weight_quant->method + ") " + *problem});
    return e;
}

}  // namespace kvscope
