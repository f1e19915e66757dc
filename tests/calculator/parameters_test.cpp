// The weights' parameter estimate for the expert layouts of today's models, against hand arithmetic on small
// configs: latent experts (Nemotron 3 Super), shared experts of their own width, and dense layers listed per layer.
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/config_import.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::import;

const std::string kLatentMoe = R"("model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 2,
    "hybrid_override_pattern": "*E", "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "vocab_size": 100, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "mlp_hidden_act": "relu2", "tie_word_embeddings": false, "intermediate_size": 32, "torch_dtype": "bfloat16",
    "max_position_embeddings": 4096)";

TEST(Parameters, LatentExpertsAndASharedExpertOfItsOwnWidthAreCounted) {
    // vLLM nemotron_h.py NemotronHMoE: the routed experts (relu2: an up and a down matrix) work in moe_latent_size,
    // reached by fc1_latent_proj and left by fc2_latent_proj; the shared expert is moe_shared_expert_intermediate_size
    // wide in the hidden size.
    auto m = import(kLatentMoe + R"(, "moe_shared_expert_intermediate_size": 48, "moe_latent_size": 16)");
    ASSERT_TRUE(m) << m.error_text();
    ASSERT_TRUE(m->arch.moe.has_value());
    EXPECT_EQ(m->arch.moe->latent_size, 16u);
    EXPECT_EQ(m->arch.moe->shared_intermediate_size, 48u);
    EXPECT_EQ(m->arch.moe->shared_experts, 1u);
    // Layer 0 ('*'): attention 64 x (4 x 16 + 2 x 32) + 4 x 16 x 64 = 12,288 and two norms, 128. Layer 1 ('E'):
    // experts 4 x 2 x 16 x 32 = 4,096, the shared expert 2 x 64 x 48 = 6,144, the latent projections 2 x 64 x 16 =
    // 2,048, the router 64 x 4 = 256, and two norms, 128. Embedding and head 2 x 100 x 64 = 12,800, final norm 64.
    EXPECT_EQ(estimate_parameters(m->arch).total, 12'288u + 128 + 4'096 + 6'144 + 2'048 + 256 + 128 + 12'800 + 64);
    // Without the latent the experts work in the hidden size: 4 x 2 x 64 x 32 = 16,384, no projections; the shared
    // expert at the routed experts' width, 2 x 64 x 32 = 4,096, where the file gives one expert and no width.
    auto plain = import(kLatentMoe + R"(, "n_shared_experts": 1)");
    ASSERT_TRUE(plain) << plain.error_text();
    EXPECT_EQ(estimate_parameters(plain->arch).total, 12'288u + 128 + 16'384 + 4'096 + 256 + 128 + 12'800 + 64);
}

TEST(Parameters, DenseLayersListedPerLayerLead) {
    // GLM-5's mlp_layer_types (transformers configuration_glm_moe_dsa.py) and MiMo-V2's moe_layer_freq: the leading
    // dense layers; a list that mixes them later is said.
    const std::string base = R"("model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16, "vocab_size": 100,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "intermediate_size": 128,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096, )";
    auto glm = import(base + R"("mlp_layer_types": ["dense", "dense", "sparse", "sparse"])");
    ASSERT_TRUE(glm) << glm.error_text();
    EXPECT_EQ(glm->arch.moe->dense_layers, 2u);
    EXPECT_TRUE(glm->arch.not_exact.empty()) << testing::join(glm->arch.not_exact);
    auto mixed = import(base + R"("moe_layer_freq": [0, 1, 0, 1])");
    ASSERT_TRUE(mixed) << mixed.error_text();
    EXPECT_EQ(mixed->arch.moe->dense_layers, 1u);
    EXPECT_NE(testing::join(mixed->assumed).find("moe_layer_freq mixes dense and expert layers after layer 1"),
              std::string::npos)
        << testing::join(mixed->assumed);
}

}  // namespace
}  // namespace kvscope
