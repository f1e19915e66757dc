#include "kvscope/ui/gpu_memory_bar.h"

#include <algorithm>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/ui/text.h"

// The bar of a fit: the parts of one GPU's memory as kvscope-cli fit counts them, each no larger than what is
// left of the budget; what does not fit is the overflow beyond the bar.

namespace kvscope::ui {

void GpuMemoryBar::setFit(const FitReport& f, UnitSystem units) {
    const std::uint64_t budget =
        f.kv_budget_bytes_per_gpu > 0 ? static_cast<std::uint64_t>(f.kv_budget_bytes_per_gpu) : 0;
    const std::uint64_t kv_shown = std::min(f.kv_bytes_per_gpu, budget);
    // The recurrent state (hybrid and state-space models) shares the budget with the KV cache.
    const std::uint64_t state_shown = std::min(f.state_bytes_per_gpu, budget - kv_shown);
    // vLLM's hybrid layout takes more than the plain sum (states padded to its pages, padding layers, a sliding
    // group's block more): drawn too.
    const std::uint64_t padding = f.memory_bytes_per_gpu_needed > f.plain_memory_bytes_per_gpu
                                      ? f.memory_bytes_per_gpu_needed - f.plain_memory_bytes_per_gpu
                                      : 0;
    const std::uint64_t padding_shown = std::min(padding, budget - kv_shown - state_shown);
    // The fit's headroom is budget − need: what is left when it fits, what does not fit otherwise.
    const std::uint64_t spare = f.headroom_bytes_per_gpu > 0 ? static_cast<std::uint64_t>(f.headroom_bytes_per_gpu) : 0;
    const std::uint64_t overflow =
        f.headroom_bytes_per_gpu < 0 ? static_cast<std::uint64_t>(-f.headroom_bytes_per_gpu) : 0;
    // The KV cache keeps its own colour; what does not fit is the hatched red beyond the bar.
    const QString kv_legend = kv_shown == f.kv_bytes_per_gpu ? QString()
                                                             : tr("KV budget %1 of the %2 needed")
                                                                   .arg(q(format_bytes(kv_shown, units)),
                                                                        q(format_bytes(f.kv_bytes_per_gpu, units)));
    const QString state_legend =
        state_shown == f.state_bytes_per_gpu
            ? QString()
            : tr("recurrent state %1 of the %2 needed")
                  .arg(q(format_bytes(state_shown, units)), q(format_bytes(f.state_bytes_per_gpu, units)));
    QList<GpuMemoryBar::Segment> segments{
        {tr("weights"), f.weights_bytes_per_gpu, QColor(0x2e, 0x86, 0xde)},
        {tr("KV cache"), kv_shown, QColor(0x2a, 0x9d, 0x8f), kv_legend},
        {tr("free KV budget"), spare, QColor(0xa8, 0xe6, 0xcf), {}, false},
        {tr("reserve"), f.reserve_bytes_per_gpu, QColor(0x95, 0xa5, 0xa6)},
        {tr("left unused"), f.free_bytes_per_gpu, QColor(0xdf, 0xe6, 0xe9), {}, false},
    };
    if (padding > 0)
        segments.insert(2, {tr("vLLM extra pages"), padding_shown, QColor(0xc3, 0xb1, 0xe1),
                            padding_shown == padding
                                ? QString()
                                : tr("vLLM extra pages %1 of the %2 needed")
                                      .arg(q(format_bytes(padding_shown, units)), q(format_bytes(padding, units)))});
    // Where only vLLM's start check does not pass, what it asks beyond a decoding sequence's cache fills the budget
    // and the rest is the overflow beyond the bar.
    if (f.headroom_from_startup && f.startup_bytes_per_gpu > f.memory_bytes_per_gpu_needed) {
        const std::uint64_t extra = f.startup_bytes_per_gpu - f.memory_bytes_per_gpu_needed;
        const std::uint64_t extra_shown = std::min(extra, budget - kv_shown - state_shown - padding_shown);
        segments.insert(
            padding > 0 ? 3 : 2,
            {f.engine_pages && f.engine_pages->chunked ? tr("vLLM start check: a prefill chunk in each chunked group")
                                                       : tr("vLLM start check: a prefill chunk in each sliding group"),
             extra_shown, QColor(0xf3, 0xa6, 0x83),
             tr("vLLM start check %1 of the %2 it asks beyond the cache")
                 .arg(q(format_bytes(extra_shown, units)), q(format_bytes(extra, units)))});
    }
    if (f.state_bytes_per_gpu > 0)
        segments.insert(2, {tr("recurrent state"), state_shown, QColor(0x8e, 0x6c, 0xc9), state_legend});
    // The bar is the GPU's memory: what lies past its end (weights larger than the GPU, say) is drawn as far as the
    // end, and its legend gives the whole figure with the part in the bar; a leftover past the end is not there.
    std::uint64_t room = f.memory_bytes_per_gpu;
    QList<GpuMemoryBar::Segment> in_bar;
    for (GpuMemoryBar::Segment s : segments) {
        const std::uint64_t shown = std::min(s.bytes, room);
        room -= shown;
        if (shown < s.bytes) {
            if (!s.need) continue;
            s.legend = shown == 0 ? tr("%1 %2 (none of it in the bar)").arg(s.label, q(format_bytes(s.bytes, units)))
                                  : tr("%1 %2 (%3 of it in the bar)")
                                        .arg(s.label, q(format_bytes(s.bytes, units)), q(format_bytes(shown, units)));
            s.bytes = shown;
        }
        in_bar << s;
    }
    setData(in_bar, f.memory_bytes_per_gpu, overflow, static_cast<int>(f.gpus), units);
}

void GpuMemoryBar::setHost(const Offload& o, UnitSystem units) {
    // The RAM when it is known, else just what the host holds; what does not fit is the overflow beyond the bar.
    const std::uint64_t memory = o.host_memory_bytes > 0 ? o.host_memory_bytes : o.host_bytes;
    const std::uint64_t free = memory > o.host_bytes ? memory - o.host_bytes : 0;
    const std::uint64_t overflow = o.host_bytes > memory ? o.host_bytes - memory : 0;
    QList<GpuMemoryBar::Segment> segments{
        {tr("weights in RAM"), o.weights_host_bytes, QColor(0x2e, 0x86, 0xde)},
        {tr("cache in RAM"), o.kv_on_host_bytes, QColor(0x2a, 0x9d, 0x8f)},
        {tr("compute buffer in RAM"), o.compute_buffer_host_bytes, QColor(0x95, 0xa5, 0xa6)},
    };
    if (o.host_memory_bytes > 0) segments.append({tr("RAM free"), free, QColor(0xdf, 0xe6, 0xe9), {}, false});
    // Past the RAM's end the parts are drawn as far as it goes; the overflow beyond says by how much.
    std::uint64_t room = memory;
    for (Segment& s : segments) {
        const std::uint64_t shown = std::min(s.bytes, room);
        if (shown < s.bytes && s.need)
            s.legend = tr("%1 %2 (%3 of it in the bar)")
                           .arg(s.label, q(format_bytes(s.bytes, units)), q(format_bytes(shown, units)));
        s.bytes = shown;
        room -= shown;
    }
    setBarLabel(tr("RAM"));
    setData(segments, memory, overflow, 1, units);
}

}  // namespace kvscope::ui
