// llama.cpp's split of a model between the GPU and the host, after src/llama-model.cpp (load_tensors: which device
// each layer's tensors go to), src/llama-kv-cache.cpp (the cache follows its layer unless offload_kqv is off),
// common/arg.cpp (--n-cpu-moe), src/llama-context.cpp and ggml-backend.cpp (the compute buffers: the GPU runs the
// reserved micro-batch whatever the split, the host stages its inputs).
#include "kvscope/calculator/offload.h"

#include <algorithm>
#include <array>
#include <limits>

#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/gguf_mix.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weights.h"
#include "wide.h"

namespace kvscope {
namespace {

// Peak bandwidths: channels x 8 bytes x million transfers a second.
constexpr std::uint64_t channels(std::uint64_t n, std::uint64_t mt_per_s) { return n * 8 * mt_per_s * 1'000'000; }
constexpr std::array kHostPlatforms = {
    HostPlatform{"ddr4-3200-2ch", "DDR4-3200, two channels (desktop, laptop)", channels(2, 3200)},
    HostPlatform{"ddr5-4800-2ch", "DDR5-4800, two channels (desktop, laptop)", channels(2, 4800)},
    HostPlatform{"ddr5-5600-2ch", "DDR5-5600, two channels (desktop)", channels(2, 5600)},
    HostPlatform{"ddr5-6400-2ch", "DDR5-6400, two channels (desktop)", channels(2, 6400)},
    HostPlatform{"lpddr5x-8533-128bit", "LPDDR5X-8533, 128-bit bus (laptop)", channels(2, 8533)},
    HostPlatform{"ddr5-4800-4ch", "DDR5-4800, four channels (workstation: Threadripper, Xeon W)", channels(4, 4800)},
    HostPlatform{"ddr5-4800-8ch", "DDR5-4800, eight channels (server: Xeon Sapphire Rapids)", channels(8, 4800)},
    HostPlatform{"ddr5-4800-12ch", "DDR5-4800, twelve channels (server: EPYC Genoa)", channels(12, 4800)},
    HostPlatform{"ddr5-6400-12ch", "DDR5-6400, twelve channels (server: EPYC Turin)", channels(12, 6400)},
};

// What one layer holds and reads: its weights (of which the routed experts'), the weights a token reads, and its
// cache of every sequence (KV and state).
struct LayerParts {
    std::uint64_t weights = 0, experts = 0;
    std::uint64_t read = 0, experts_read = 0;
    std::uint64_t cache = 0;
};

// The share `part / whole` of `bytes`, rounded down.
std::uint64_t share(std::uint64_t bytes, const Checked& part, const Checked& whole) {
    if (whole.overflow() || part.overflow() || whole.value() == 0) return 0;
    return static_cast<std::uint64_t>(static_cast<i128>(bytes) * part.value() / whole.value());
}

// The model's weights by layer: a GGUF's exact bytes where the deployment carries them and they add up to its exact
// total; else the stored weights in the shares of the parameters the shape gives each layer (an estimate). The
// output layer's includes the token embedding's copy when the head is tied (llama.cpp loads token_embd again for the
// output layer, TENSOR_DUPLICATED, on the output layer's device).
struct ModelLayers {
    std::vector<LayerParts> blocks;
    std::uint64_t input = 0, output = 0, output_read = 0;
    bool exact = false;
    bool by_rule = false;  // a GGUF mix's tensors from the shape (gguf_mix.h)
};

Result<ModelLayers> model_layers(const Architecture& model, const Deployment& d) {
    ModelLayers m;
    m.blocks.resize(model.layers);
    const auto stored = stored_weights_bytes(model, d);
    if (!stored) return stored.errors();
    const auto read = read_weights_bytes(model, d);
    if (!read) return read.errors();
    const ParameterCount p = estimate_parameters(model);
    const bool moe = model.moe && model.moe->experts > 0;
    if (const auto& l = d.weights_layers; l && d.weights_bytes_exact > 0 && l->blocks.size() == model.layers) {
        Checked sum = Checked(l->input_bytes) + l->output_bytes;
        for (const BlockWeights& b : l->blocks) sum += Checked(b.bytes);
        if (!sum.overflow() && sum.value() == d.weights_bytes_exact) {
            m.exact = true;
            m.input = l->input_bytes;
            m.output = l->output_bytes;
            for (std::uint64_t i = 0; i < model.layers; ++i) {
                const BlockWeights& b = l->blocks[i];
                m.blocks[i].weights = b.bytes;
                m.blocks[i].experts = std::min(b.expert_bytes, b.bytes);
            }
        }
    }
    if (!m.exact && d.weights_bytes_exact == 0 && d.gguf_mix) {  // llama-quantize's types, layer by layer
        auto mix = gguf_mix_weights(model, *d.gguf_mix);
        if (!mix) return mix.errors();
        m.by_rule = true;
        m.input = mix->input_bytes;
        m.output = mix->output_bytes;
        for (std::uint64_t i = 0; i < model.layers && i < mix->blocks.size(); ++i)
            m.blocks[i] = {.weights = mix->blocks[i].bytes, .experts = mix->blocks[i].expert_bytes};
    } else if (!m.exact) {
        const Checked whole(p.total);
        for (std::uint64_t i = 0; i < model.layers; ++i) {
            const LayerParameters lp = layer_parameters(model, i);
            m.blocks[i].weights = share(*stored, lp.total, whole);
            m.blocks[i].experts = std::min(share(*stored, lp.experts, whole), m.blocks[i].weights);
        }
        m.input = share(*stored, Checked(p.embedding), whole);
        Checked placed = Checked(m.input);
        for (const LayerParts& b : m.blocks) placed += Checked(b.weights);
        m.output = placed.overflow() || placed.value() > *stored ? 0 : *stored - placed.value();
    }
    // What a token reads: each block's weights with only its chosen experts, and the head; in the same total as the
    // decode floor's (read_weights_bytes), so that a model whole on the GPU decodes as fast as the floor says.
    const std::uint64_t tied_copy =
        model.tied_embeddings ? share(m.input, Checked(model.vocab_size) * model.hidden_size, Checked(p.embedding)) : 0;
    m.output += tied_copy;
    Checked raw = Checked(m.output);
    std::vector<std::uint64_t> raw_reads(model.layers);
    for (std::uint64_t i = 0; i < model.layers; ++i) {
        LayerParts& b = m.blocks[i];
        const bool routed = moe && model.moe->has_experts(i) && model.moe->experts > 0;
        b.experts_read =
            routed ? share(b.experts, Checked(model.moe->experts_per_token), Checked(model.moe->experts)) : b.experts;
        raw_reads[i] = b.weights - b.experts + b.experts_read;
        raw += Checked(raw_reads[i]);
    }
    for (std::uint64_t i = 0; i < model.layers; ++i) {
        m.blocks[i].read = share(*read, Checked(raw_reads[i]), raw);
        m.blocks[i].experts_read = share(m.blocks[i].read, Checked(m.blocks[i].experts_read), Checked(raw_reads[i]));
    }
    Checked block_reads;
    for (const LayerParts& b : m.blocks) block_reads += Checked(b.read);
    m.output_read = block_reads.overflow() || block_reads.value() > *read ? 0 : *read - block_reads.value();
    return m;
}

// One split: the layers from `first_gpu_block` on and the output layer on the GPU when `gpu_layers` > 0.
struct Split {
    std::uint64_t weights_gpu = 0, weights_host = 0, kv_gpu = 0, kv_host = 0, compute_gpu = 0, compute_host = 0;
    std::uint64_t state_gpu = 0, state_host = 0;  // of kv_gpu, kv_host
    std::uint64_t overhead = 0, read_gpu = 0, read_host = 0;
    [[nodiscard]] i128 gpu() const { return i128(weights_gpu) + kv_gpu + compute_gpu + overhead; }
    [[nodiscard]] i128 host() const { return i128(weights_host) + kv_host + compute_host; }
};

// Each layer's cache of every sequence: KV and state, and the state alone.
struct LayerCache {
    std::vector<std::uint64_t> all, state;
};

Split place(const ModelLayers& m, const LayerCache& cache, const Architecture& arch, const LlamaCppGraph& g,
            const Deployment& d, std::uint64_t gpu_layers) {
    // src/llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0); the layers from it on are
    // the GPU's, the output layer (index n_layer) among them whenever any is; the input layer always the CPU's.
    const std::uint64_t n = arch.layers;
    const bool kv_offload = !d.llama_cpp.no_kv_offload;
    Split s;
    i128 wg = 0, wh = m.input, kg = 0, kh = 0, rg = 0, rh = 0, sg = 0, sh = 0;
    for (std::uint64_t l = 0; l < n; ++l) {
        const LayerParts& b = m.blocks[l];
        const bool on_gpu = llama_cpp_block_on_gpu(l, n, gpu_layers);
        // common/arg.cpp --n-cpu-moe N: the tensors blk.0 … blk.N-1 *_exps go to the CPU buffer type.
        const bool experts_host = l < d.llama_cpp.cpu_moe_layers;
        if (on_gpu) {
            wg += b.weights - (experts_host ? b.experts : 0);
            wh += experts_host ? b.experts : 0;
            rg += b.read - (experts_host ? b.experts_read : 0);
            rh += experts_host ? b.experts_read : 0;
        } else {
            wh += b.weights;
            rh += b.read;
        }
        // src/llama-kv-cache.cpp: dev = offload ? model.dev_layer(il) : cpu.
        const bool cache_gpu = on_gpu && kv_offload;
        (cache_gpu ? kg : kh) += cache.all[l];
        (cache_gpu ? rg : rh) += cache.all[l];
        (cache_gpu ? sg : sh) += cache.state[l];
    }
    const bool output_gpu = gpu_layers > 0;
    (output_gpu ? wg : wh) += m.output;
    (output_gpu ? rg : rh) += m.output_read;
    // The compute buffers do not follow the layers. A GPU build runs the micro-batch it reserves for on the GPU even
    // where a layer's weights are in host memory: ggml-backend.cpp (ggml_backend_sched_backend_id_from_cur) gives an
    // op whose weights are in host memory to the GPU when the GPU takes it (ggml-cuda.cu offload_op: 32 tokens or
    // more, GGML_OP_OFFLOAD_MIN_BATCH), copying the weights into its compute buffer (llama.cpp PR #6083), and the ops
    // beside it follow (the scheduler's expansion). So the GPU reserves the whole graph's stages, and holds its
    // runtime, at any -ngl, 0 included; the host's buffer stages the inputs, and the attention when --no-kv-offload
    // pins it to the CPU (src/llama-graph.cpp: "all nodes between the KV store and the attention output are run on
    // the CPU"). Build 10357's logs (docs/vllm-logs.md) reserve the same GPU buffer at -ngl 0 as split, and the same
    // host buffer at every split.
    s.compute_gpu = std::max({g.output, g.mlp, kv_offload ? g.attention : 0});
    if (d.fixed_reserve) s.compute_gpu = d.activation_reserve_bytes;  // --reserve: as given
    s.compute_host = kv_offload ? g.inputs : std::max(g.inputs, g.attention);
    s.overhead = d.runtime_overhead_bytes;
    s.weights_gpu = clamp_u64(wg);
    s.weights_host = clamp_u64(wh);
    s.kv_gpu = clamp_u64(kg);
    s.kv_host = clamp_u64(kh);
    s.state_gpu = clamp_u64(sg);
    s.state_host = clamp_u64(sh);
    s.read_gpu = clamp_u64(rg);
    s.read_host = clamp_u64(rh);
    return s;
}

}  // namespace

std::span<const HostPlatform> host_platforms() { return kHostPlatforms; }

const HostPlatform* find_host_platform(std::string_view id) {
    for (const HostPlatform& p : kHostPlatforms)
        if (p.id == id) return &p;
    return nullptr;
}

std::string host_platform_ids() {
    std::string out;
    for (const HostPlatform& p : kHostPlatforms) out += (out.empty() ? "" : ", ") + std::string(p.id);
    return out;
}

namespace {

// The split at the deployment's layers; with `search`, the most layers that fit too.
Result<Offload> evaluate(const Architecture& model, const Architecture& cache_arch, KvDtype kv_dtype,
                         const Workload& workload, const Deployment& d, bool search) {
    Offload o;
    o.total_layers = llama_cpp_total_layers(model);
    o.gpu_layers_given = d.llama_cpp.gpu_layers.has_value();
    o.gpu_layers_auto = d.llama_cpp.gpu_layers_auto && !o.gpu_layers_given;
    // llama.cpp takes at most every layer (act_gpu_layers = min(n_gpu_layers, n_layer + 1)): -ngl 99 is all.
    const std::uint64_t asked = d.llama_cpp.gpu_layers.value_or(o.total_layers);
    o.gpu_layers = std::min(asked, o.total_layers);
    if (asked > o.total_layers)
        o.notes.push_back("--gpu-layers " + format_count(asked) + " takes every layer: " + model.name + " has " +
                          format_count(o.total_layers) + " (llama.cpp takes at most n_layer + 1)");
    o.cpu_moe_layers = d.llama_cpp.cpu_moe_layers;
    o.kv_offload = !d.llama_cpp.no_kv_offload;
    Errors errors;
    if (!d.host.id.empty() && find_host_platform(d.host.id) == nullptr)
        errors.push_back({Field::host_bandwidth,
                          "host '" + d.host.id + "' is not a host memory of the table: " + host_platform_ids()});
    if (o.cpu_moe_layers > 0 && !model.moe)
        errors.push_back(
            {Field::cpu_moe_layers, "--n-cpu-moe keeps experts in host memory, but " + model.name + " has no experts"});
    else if (o.cpu_moe_layers > model.layers)
        errors.push_back({Field::cpu_moe_layers, "--n-cpu-moe is " + format_count(o.cpu_moe_layers) + ", but " +
                                                     model.name + " has " + format_count(model.layers) + " blocks"});
    if (cache_arch.layers != model.layers)
        errors.push_back({Field::gpu_layers, "the split of a model with a draft's or MTP layers is not modelled"});
    if (!errors.empty()) return errors;

    auto layers = model_layers(model, d);
    if (!layers) return layers.errors();
    o.weights_exact = layers->exact;
    auto report = kv_cache_report(cache_arch, kv_dtype, workload);
    if (!report) return report.errors();
    LayerCache cache{std::vector<std::uint64_t>(model.layers, 0), std::vector<std::uint64_t>(model.layers, 0)};
    for (const LayerKv& l : report->layers)
        if (l.layer < model.layers) {
            cache.all[l.layer] = l.bytes + l.state_bytes;
            cache.state[l.layer] = l.state_bytes;
        }
    const LlamaCppGraph g =
        llama_cpp_graph(cache_arch, workload.context_tokens, llama_cpp_ubatch(d), !d.llama_cpp.flash_attn_off);

    const i128 usable = scale(d.gpu.memory_bytes, effective_fraction(d, {}));
    o.gpu_usable_bytes = clamp_u64(usable);
    o.host_memory_bytes = d.host.memory_bytes;
    if (o.host_memory_bytes == 0 && d.gpu.unified_memory_bytes > d.gpu.memory_bytes)
        o.host_memory_bytes = d.gpu.unified_memory_bytes - d.gpu.memory_bytes;  // the rest of the machine's
    const auto fits_gpu = [&](const Split& s) { return s.gpu() <= usable; };
    const auto fits_host = [&](const Split& s) { return o.host_memory_bytes == 0 || s.host() <= o.host_memory_bytes; };

    // --fit: the most layers that leave its target free (its context and expert moves are not modelled).
    if (o.gpu_layers_auto) {
        const i128 fit_usable = usable - static_cast<i128>(kLlamaCppFitTargetBytes);
        o.gpu_layers = 0;
        for (std::uint64_t n = o.total_layers; n > 0; --n)
            if (place(*layers, cache, model, g, d, n).gpu() <= fit_usable) {
                o.gpu_layers = n;
                break;
            }
    }
    const Split s = place(*layers, cache, model, g, d, o.gpu_layers);
    o.weights_gpu_bytes = s.weights_gpu;
    o.weights_host_bytes = s.weights_host;
    o.kv_on_gpu_bytes = s.kv_gpu;
    o.state_on_gpu_bytes = s.state_gpu;
    o.state_on_host_bytes = s.state_host;
    o.input_bytes = layers->input;
    o.kv_on_host_bytes = s.kv_host;
    o.compute_buffer_gpu_bytes = s.compute_gpu;
    o.compute_buffer_host_bytes = s.compute_host;
    o.overhead_gpu_bytes = s.overhead;
    o.gpu_bytes = clamp_u64(s.gpu());
    o.host_bytes = clamp_u64(s.host());
    o.fits_gpu = fits_gpu(s);
    o.fits_host = fits_host(s);
    // The GPU's bytes grow with every layer it takes: the most that fit is the last before they pass its memory.
    for (std::uint64_t n = o.total_layers; search && n > 0; --n) {
        const Split t = place(*layers, cache, model, g, d, n);
        if (fits_gpu(t)) {
            o.most_gpu_layers = n;
            o.most_fit_host = fits_host(t);
            break;
        }
    }
    if (search && o.most_gpu_layers == 0) o.most_fit_host = fits_host(place(*layers, cache, model, g, d, 0));

    // The host's bandwidth: given, a unified machine's own memory, else a platform's.
    o.host_bandwidth_bytes_per_s = d.host.bandwidth_bytes_per_s;
    if (o.host_bandwidth_bytes_per_s == 0 && d.gpu.unified_memory_bytes > 0)
        o.host_bandwidth_bytes_per_s = d.gpu.bandwidth_bytes_per_s;
    if (o.host_bandwidth_bytes_per_s == 0) {
        const HostPlatform* p = find_host_platform(d.host.id);
        if (p == nullptr) p = find_host_platform(kDefaultHostPlatform);
        o.host_bandwidth_bytes_per_s = p->bandwidth_bytes_per_s;
        if (d.host.id.empty() && s.read_host > 0)
            o.notes.push_back("the host's memory is taken as " + std::string(p->name) + ", " +
                              format_bandwidth(p->bandwidth_bytes_per_s) +
                              " at its peak; --host or --host-bandwidth sets yours");
    }
    o.read_gpu_bytes = s.read_gpu;
    o.read_host_bytes = s.read_host;
    const auto seconds = [](std::uint64_t bytes, std::uint64_t per_s) {
        return per_s > 0 ? static_cast<double>(bytes) / static_cast<double>(per_s) : 0.0;
    };
    o.step_time_s =
        seconds(s.read_gpu, d.gpu.bandwidth_bytes_per_s) + seconds(s.read_host, o.host_bandwidth_bytes_per_s);
    o.decode_tokens_per_s = o.step_time_s > 0 ? 1.0 / o.step_time_s : 0;

    if (o.splits() && !o.weights_exact)
        o.notes.emplace_back(
            layers->by_rule
                ? "the weights are placed by layer as llama-quantize types them (" + gguf_mix_name(*d.gguf_mix) +
                      "); a file quantized before 2026-03 may give the more-bits layers in its own order: the same "
                      "total, a layer's bytes off by one tensor's"
                : "not exact: the weights are placed by layer in the shares of the parameters each layer has (a "
                  "GGUF's tensors give them exactly)");
    if (o.partial() || o.cpu_moe_layers > 0)
        o.notes.emplace_back(
            "not exact: with layers or experts in host memory the GPU still runs the micro-batch llama.cpp reserves "
            "for, and its compute buffer also holds copies of the host's weights (ggml-backend.cpp op offload), "
            "which are not counted: build 10357 reserved 47 MiB more split than whole for Qwen2.5 7B (183.44 against "
            "136.01 MiB), within the logits counted for it; a model whose host matrices outweigh its logits needs "
            "more than counted");
    if (o.host_memory_bytes == 0 && (o.partial() || o.cpu_moe_layers > 0 || !o.kv_offload))
        o.notes.emplace_back("the host's RAM is not known (--host-memory): its part is not checked");
    return o;
}

}  // namespace

Result<Offload> llama_cpp_offload(const Architecture& model, const Architecture& cache_arch, KvDtype kv_dtype,
                                  const Workload& workload, const Deployment& d) {
    return evaluate(model, cache_arch, kv_dtype, workload, d, true);
}

SplitCapacity split_capacity(const Architecture& model, const Architecture& cache_arch, KvDtype kv_dtype,
                             const Workload& workload, const Deployment& d, std::uint64_t context_cap,
                             std::uint64_t batch_cap) {
    // Both memories' needs grow with the context and the batch: the largest of each that fits, by bisection.
    const auto fits = [&](const Workload& w) {
        const auto o = evaluate(model, cache_arch, kv_dtype, w, d, false);
        return o && o->fits();
    };
    const auto largest = [&](std::uint64_t cap, auto at) {
        std::uint64_t lo = 0, hi = cap;  // fits at lo (or lo is 0), not known above
        if (fits(at(hi))) return hi;
        while (hi - lo > 1) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            (fits(at(mid)) ? lo : hi) = mid;
        }
        return lo;
    };
    SplitCapacity c;
    c.max_context = largest(context_cap, [&](std::uint64_t t) {
        Workload w = workload;
        w.context_tokens = std::max<std::uint64_t>(t, 1);
        return w;
    });
    c.max_batch = largest(batch_cap, [&](std::uint64_t b) {
        Workload w = workload;
        w.batch = std::max<std::uint64_t>(b, 1);
        return w;
    });
    return c;
}

std::string offload_host_text(const Offload& o) {
    std::string out = format_bytes(o.weights_host_bytes) + " weights";
    if (o.kv_on_host_bytes > 0) out += " + " + format_bytes(o.kv_on_host_bytes) + " cache";
    out += " + " + format_bytes(o.compute_buffer_host_bytes) + " compute buffer in RAM";
    out += o.host_memory_bytes > 0 ? " of " + format_bytes(o.host_memory_bytes) + (o.fits_host ? "" : ": too much")
                                   : " (RAM not given)";
    out += "; read at " + format_bandwidth(o.host_bandwidth_bytes_per_s);
    if (o.partial() || o.gpu_layers_given || o.gpu_layers_auto)
        out += "; the most layers that fit the GPU: " + format_count(o.most_gpu_layers) + " of " +
               format_count(o.total_layers);
    return out;
}

std::string offload_text(const Offload& o) {
    std::string out = (o.gpu_layers_auto ? std::string("as --fit chooses, ") : std::string()) +
                      format_count(o.gpu_layers) + " of " + format_count(o.total_layers) +
                      " layers on the GPU: " + format_bytes(o.gpu_bytes) + " of VRAM, " + format_bytes(o.host_bytes) +
                      " of RAM";
    if (o.cpu_moe_layers > 0)
        out += ", the experts of the first " + format_count_of(o.cpu_moe_layers, "block", "blocks") + " in RAM";
    if (!o.kv_offload) out += ", the cache in RAM";
    return out;
}

}  // namespace kvscope
