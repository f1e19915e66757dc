#!/usr/bin/env python3
"""Writes the seed corpora of the GGUF and safetensors fuzzers (tests/fuzz/corpus/gguf, .../safetensors):
small, valid files in the layouts of ggml's docs/gguf.md and huggingface/safetensors, run once by hand."""
import json
import pathlib
import struct

root = pathlib.Path(__file__).parent / "corpus"


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, payload):
    return s(key) + struct.pack("<I", typ) + payload


def u32(key, v):
    return kv(key, 4, struct.pack("<I", v))


def gguf(meta, tensors=(), version=3):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta)) + b"".join(meta)
    offset = 0
    for name, dims, typ in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", typ, offset)
        offset += 32
    return out


def model(arch, extra=(), tensors=(), version=3):
    meta = [kv("general.architecture", 8, s(arch)), kv("general.name", 8, s("seed " + arch)),
            u32(arch + ".block_count", 4), u32(arch + ".context_length", 4096),
            u32(arch + ".embedding_length", 512), u32(arch + ".feed_forward_length", 1024),
            u32(arch + ".attention.head_count", 8)] + list(extra)
    return gguf(meta, tensors, version)


def u32s(key, values):
    return kv(key, 9, struct.pack("<IQ", 4, len(values)) + b"".join(struct.pack("<I", v) for v in values))


def bools(key, values):
    return kv(key, 9, struct.pack("<IQ", 7, len(values)) + bytes(1 if v else 0 for v in values))


def strings(key, values):
    return kv(key, 9, struct.pack("<IQ", 8, len(values)) + b"".join(s(v) for v in values))


seeds = {
    "llama.gguf": model("llama", [u32("llama.attention.head_count_kv", 2), strings("tokenizer.ggml.tokens", ["a", "b"])],
                        [("token_embd.weight", [512, 2], 12), ("blk.0.ffn_gate.weight", [512, 1024], 14),
                         ("output_norm.weight", [512], 0)]),
    "llama-v2.gguf": model("llama", [u32("llama.attention.head_count_kv", 8)], version=2),
    "gemma3.gguf": model("gemma3", [u32("gemma3.attention.sliding_window", 512),
                                    bools("gemma3.attention.sliding_window_pattern", [True, False, True, False])]),
    "gpt-oss.gguf": model("gpt-oss", [u32("gpt-oss.attention.sliding_window", 128), u32("gpt-oss.expert_count", 4),
                                      u32("gpt-oss.expert_used_count", 2),
                                      u32("gpt-oss.expert_feed_forward_length", 256)],
                          [("blk.0.ffn_up_exps.weight", [512, 256, 4], 39)]),
    "deepseek2.gguf": model("deepseek2", [u32("deepseek2.attention.head_count_kv", 1),
                                          u32("deepseek2.attention.key_length", 96),
                                          u32("deepseek2.attention.kv_lora_rank", 64),
                                          u32("deepseek2.attention.key_length_mla", 48),
                                          u32("deepseek2.attention.value_length_mla", 32),
                                          u32("deepseek2.rope.dimension_count", 16)]),
    "jamba.gguf": model("jamba", [u32s("jamba.attention.head_count_kv", [0, 2, 0, 2]), u32("jamba.ssm.conv_kernel", 4),
                                  u32("jamba.ssm.inner_size", 1024), u32("jamba.ssm.state_size", 16),
                                  u32("jamba.ssm.time_step_rank", 32)]),
    "qwen3next.gguf": model("qwen3next", [u32("qwen3next.attention.head_count_kv", 2), u32("qwen3next.ssm.conv_kernel", 4),
                                          u32("qwen3next.ssm.state_size", 64), u32("qwen3next.ssm.group_count", 4),
                                          u32("qwen3next.ssm.time_step_rank", 8), u32("qwen3next.ssm.inner_size", 512)]),
    "llama4.gguf": model("llama4", [u32("llama4.attention.head_count_kv", 2)]),
}
(root / "gguf").mkdir(parents=True, exist_ok=True)
for name, data in seeds.items():
    (root / "gguf" / name).write_bytes(data)


def safetensors(tensors):
    header, offset, data = {}, 0, b""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "F8_E4M3": 1, "I64": 8}
    for name, dtype, shape in tensors:
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(offset)


(root / "safetensors").mkdir(parents=True, exist_ok=True)
(root / "safetensors" / "bf16.safetensors").write_bytes(
    safetensors([("model.embed_tokens.weight", "BF16", [16, 8]), ("model.norm.weight", "F32", [8])]))
(root / "safetensors" / "fp8.safetensors").write_bytes(
    safetensors([("w", "F8_E4M3", [8, 8]), ("w_scale", "F32", [1]), ("q", "U8", [4, 2]), ("i", "I64", [1])]))
(root / "safetensors" / "empty.safetensors").write_bytes(safetensors([]))
