// The recurrent state a config.json's recurrent layers keep, in vLLM's shapes and formats (config_layouts.h
// read_state). Each rule names its source.
#include "config_layouts.h"
#include "config_reader.h"
#include "names.h"

namespace kvscope::importer {
namespace {

// The state's formats: the model's dtype (vLLM mamba_cache_dtype / mamba_ssm_cache_dtype "auto"), except where vLLM
// sets the SSM state's format for the model (vllm/model_executor/models/config.py) or keeps a kind in fp32.
void read_state_formats(Reader& r, ImportedModel& out, RecurrentState& st) {
    const std::string& t = out.model_type;
    st.conv_dtype = st.ssm_dtype = out.kv_dtype;
    const Value* ssm_dtype = r.get("mamba_ssm_cache_dtype");
    if (!ssm_dtype) ssm_dtype = r.get("mamba_ssm_dtype");
    if (ssm_dtype && ssm_dtype->is_string()) {
        // NemotronHForCausalLMConfig reads mamba_ssm_cache_dtype; Qwen3_5ForConditionalGenerationConfig
        // mamba_ssm_dtype.
        if (const auto d = dtype_from_torch(ssm_dtype->as_string())) {
            st.ssm_dtype = *d;
            out.notes.push_back("the SSM state is kept in " + std::string(to_string(*d)) + " (" +
                                ssm_dtype->as_string() + " in the config, as vLLM reads it)");
        }
    } else if (t == "nemotron_h") {
        st.ssm_dtype = KvDtype::fp32;  // NemotronHForCausalLMConfig: DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"
        out.notes.emplace_back("the SSM state is kept in fp32, as vLLM does for Nemotron-H by default");
    }
    if (st.kind == StateKind::kimi_delta) {
        st.ssm_dtype = KvDtype::fp32;  // vllm mamba_utils.py MambaStateDtypeCalculator.kda_state_dtype
        out.notes.emplace_back("the Kimi Delta Attention state is kept in fp32, as vLLM always keeps it");
    } else if (st.kind == StateKind::rg_lru) {
        st.ssm_dtype =
            KvDtype::fp32;  // modeling_recurrent_gemma.py: "recurrent_states always computed in full precision"
        out.notes.emplace_back("the RG-LRU state is kept in fp32, as transformers keeps it");
    }
}

}  // namespace

// The recurrent state of a model type's recurrent layers, from its config fields, with the shapes of vLLM's
// MambaStateShapeCalculator (vllm/model_executor/layers/mamba/mamba_utils.py) and the arguments each vLLM
// model file passes to it. Formats follow the model's dtype (vLLM mamba_cache_dtype "auto"), with the
// engine's own overrides where vLLM has them. nullopt, with a not-exact reason, for a type not known.
std::optional<RecurrentState> read_state(Reader& r, ImportedModel& out) {
    const std::string& t = out.model_type;
    const std::uint64_t hidden = out.arch.hidden_size;
    RecurrentState st;
    const auto need = [&](std::initializer_list<const char*> keys, std::uint64_t fallback = 0) -> std::uint64_t {
        if (const auto f = r.number(keys)) {
            r.layout_keys.emplace_back(f->key);
            return f->value;
        }
        if (fallback > 0) {
            out.assumed.push_back(std::string(*keys.begin()) + " = " + std::to_string(fallback) + " (" + t +
                                  " default; not in the file)");
            return fallback;
        }
        r.error(*keys.begin(), r.cfg_.line(),
                std::string(*keys.begin()) + " is missing; the " + t + " recurrent state cannot be sized without it");
        return 0;
    };
    if (one_of(t, {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"})) {
        // Gated DeltaNet (vllm/model_executor/models/qwen3_next.py, qwen3_5.py -> gated_delta_net_state_shape):
        // conv (k - 1) x (2·k_heads·d_k + v_heads·d_v), SSM v_heads x d_k x d_v. Defaults: transformers
        // configuration_qwen3_next.py (16 key heads, 32 value heads, 128 and 128, kernel 4).
        const std::uint64_t hk = need({"linear_num_key_heads"}, 16), hv = need({"linear_num_value_heads"}, 32);
        const std::uint64_t dk = need({"linear_key_head_dim"}, 128), dv = need({"linear_value_head_dim"}, 128);
        st.kind = StateKind::gated_delta_net;
        st.conv_kernel = need({"linear_conv_kernel_dim"}, 4);
        st.conv_channels = 2 * hk * dk + hv * dv;
        st.heads = hv, st.head_dim = dk, st.state_size = dv;
    } else if (one_of(t, {"jamba", "mamba", "falcon_mamba", "phi4flash"})) {
        // Mamba-1 (vllm jamba.py: d_inner = mamba_expand·hidden; mamba.py: intermediate_size; phi4flash.py
        // _get_mamba_cache_shape: mamba_expand, mamba_d_conv, mamba_d_state, 2, 4 and 16 in its config class):
        // conv (k - 1) x d_inner, SSM d_inner x d_state.
        st.kind = StateKind::mamba;
        const bool prefixed = t == "jamba" || t == "phi4flash";
        const std::uint64_t inner =
            prefixed ? need({"mamba_expand"}, 2) * hidden : need({"intermediate_size"}, 2 * hidden);
        st.conv_kernel = prefixed ? need({"mamba_d_conv"}, 4) : need({"conv_kernel"}, 4);
        st.conv_channels = st.heads = inner;
        st.head_dim = 1;
        st.state_size = prefixed ? need({"mamba_d_state"}, 16) : need({"state_size"}, 16);
    } else if (t == "mamba2") {
        // vllm mamba2.py: d_inner = expand·hidden, groups n_groups, heads num_heads x head_dim, d_state state_size.
        st.kind = StateKind::mamba2;
        st.conv_channels = need({"expand"}, 2) * hidden;
        st.groups = need({"n_groups"}, 8);
        st.heads = need({"num_heads"}, 128), st.head_dim = need({"head_dim"}, 64);
        st.state_size = need({"state_size"}, 128);
        st.conv_kernel = need({"conv_kernel"}, 4);
    } else if (t == "nemotron_h") {
        // vllm nemotron_h.py: d_inner = mamba_num_heads·mamba_head_dim, groups n_groups, d_state ssm_state_size.
        st.kind = StateKind::mamba2;
        st.heads = need({"mamba_num_heads"}, 128), st.head_dim = need({"mamba_head_dim"}, 64);
        st.conv_channels = st.heads * st.head_dim;
        st.groups = need({"n_groups"}, 8);
        st.state_size = need({"ssm_state_size"}, 128);
        st.conv_kernel = need({"conv_kernel"}, 4);
    } else if (t == "plamo2") {
        // vllm plamo2.py Plamo2MambaMixer.get_state_shape: d_inner = mamba_num_heads·hidden_size_per_head, no B/C
        // groups in the conv state (n_groups 0), heads x hidden_size_per_head x mamba_d_state.
        st.kind = StateKind::mamba2;
        st.heads = need({"mamba_num_heads"}), st.head_dim = need({"hidden_size_per_head"});
        st.conv_channels = st.heads * st.head_dim;
        st.groups = 0;
        st.state_size = need({"mamba_d_state"});
        st.conv_kernel = need({"mamba_d_conv"});
    } else if (t == "zamba2") {
        // vllm zamba2.py get_mamba_state_shape_from_config: d_inner = mamba_expand·hidden, groups mamba_ngroups, heads
        // n_mamba_heads x mamba_headdim, d_state mamba_d_state, kernel mamba_d_conv.
        st.kind = StateKind::mamba2;
        st.conv_channels = need({"mamba_expand"}) * hidden;
        st.groups = need({"mamba_ngroups"});
        st.heads = need({"n_mamba_heads"}), st.head_dim = need({"mamba_headdim"});
        st.state_size = need({"mamba_d_state"});
        st.conv_kernel = need({"mamba_d_conv"});
    } else if (one_of(t, {"bamba", "granitemoehybrid", "falcon_h1"})) {
        // vllm bamba.py, granitemoehybrid.py: d_inner = mamba_expand·hidden; falcon_h1.py: mamba_d_ssm when given.
        st.kind = StateKind::mamba2;
        const auto ssm = t == "falcon_h1" ? r.number({"mamba_d_ssm"}) : std::nullopt;
        if (ssm) r.layout_keys.emplace_back("mamba_d_ssm");
        st.conv_channels = ssm ? ssm->value : need({"mamba_expand"}, 2) * hidden;
        st.groups = need({"mamba_n_groups"}, 1);
        st.heads = need({"mamba_n_heads"}, 128), st.head_dim = need({"mamba_d_head"}, 64);
        st.state_size = need({"mamba_d_state"}, 256);
        st.conv_kernel = need({"mamba_d_conv"}, 4);
    } else if (one_of(t, {"lfm2", "lfm2_moe"})) {
        // vllm lfm2.py -> short_conv_state_shape: conv (conv_L_cache - 1) x hidden; no SSM state.
        st.kind = StateKind::short_conv;
        st.conv_kernel = need({"conv_L_cache"}, 3);
        st.conv_channels = hidden;
    } else if (t == "kimi_linear") {
        // vllm kimi_linear.py -> MambaStateShapeCalculator.kda_state_shape(num_heads, head_dim,
        // short_conv_kernel_size): q, k and v conv states of (k - 1) x heads·head_dim each, and a
        // heads x head_dim x head_dim recurrent state. All three sizes sit in linear_attn_config.
        const Value* lin = r.get("linear_attn_config");
        const auto sub = [&](const char* key) -> std::uint64_t {
            const Value* v = lin && lin->is_object() ? lin->find(key) : nullptr;
            const auto n = v ? v->as_u64() : std::nullopt;
            if (!n || *n == 0) {
                r.error("linear_attn_config", lin ? lin->line() : r.cfg_.line(),
                        std::string("linear_attn_config.") + key +
                            " must be a whole number above 0; the Kimi Delta Attention state cannot be sized "
                            "without it");
                return 0;
            }
            return *n;
        };
        const std::uint64_t heads = sub("num_heads"), dim = sub("head_dim");
        st.kind = StateKind::kimi_delta;
        st.conv_kernel = sub("short_conv_kernel_size");
        st.conv_channels = 3 * heads * dim;
        st.heads = heads, st.head_dim = st.state_size = dim;
    } else if (t == "recurrent_gemma") {
        // transformers modeling_recurrent_gemma.py, RecurrentGemmaRecurrentBlock._setup_cache: a conv state of
        // hidden_size x (conv1d_width - 1) in the model's dtype and an RG-LRU state of lru_width values
        // (configuration_recurrent_gemma.py: lru_width defaults to hidden_size). vLLM does not serve the model.
        st.kind = StateKind::rg_lru;
        st.conv_kernel = need({"conv1d_width"}, 4);
        st.conv_channels = hidden;
        st.heads = need({"lru_width"}, hidden);
        st.head_dim = st.state_size = 1;
    } else if (one_of(t, {"minimax", "minimax_text_01", "minimax_m1", "bailing_moe_linear"})) {
        // vllm minimax_text_01.py, bailing_moe_linear.py get_mamba_state_shape_from_config ->
        // linear_attention_state_shape: heads x head_dim x head_dim, no conv.
        st.kind = StateKind::linear_attention;
        st.heads = out.arch.query_heads;
        st.head_dim = st.state_size = out.arch.head_dim_k;
    } else {
        return std::nullopt;
    }
    read_state_formats(r, out, st);
    return st;
}

}  // namespace kvscope::importer
