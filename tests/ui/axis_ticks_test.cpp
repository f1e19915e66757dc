// The chart's axis labels: readable units at round values.
#include <QStringList>

#include <gtest/gtest.h>

#include <cmath>

#include "kvscope/ui/axis_ticks.h"

namespace kvscope::ui {
namespace {

QStringList labels(const std::vector<Tick>& ticks) {
    QStringList out;
    for (const auto& t : ticks) out << t.label;
    return out;
}

TEST(AxisTicks, LogTokensReadAsOneKTwoKAndSoOn) {
    const auto ticks = token_ticks(std::log2(1024.0), std::log2(1048576.0), true);
    EXPECT_EQ(labels(ticks), QStringList({"1k", "4k", "16k", "64k", "256k", "1M"}));
    EXPECT_DOUBLE_EQ(ticks.front().value, 10.0);
}

TEST(AxisTicks, LinearTokensStepByPowersOfTwo) {
    EXPECT_EQ(labels(token_ticks(0, 131072, false)),
              QStringList({"0", "16k", "32k", "48k", "64k", "80k", "96k", "112k", "128k"}));
}

TEST(AxisTicks, BytesUseBinaryOrDecimalUnits) {
    EXPECT_EQ(labels(byte_ticks(0, 64.0 * (1ull << 30), false, UnitSystem::binary)),
              QStringList({"0 GiB", "8 GiB", "16 GiB", "24 GiB", "32 GiB", "40 GiB", "48 GiB", "56 GiB", "64 GiB"}));
    EXPECT_EQ(labels(byte_ticks(0, 80e9, false, UnitSystem::decimal)),
              QStringList({"0 GB", "10 GB", "20 GB", "30 GB", "40 GB", "50 GB", "60 GB", "70 GB", "80 GB"}));
    EXPECT_EQ(labels(byte_ticks(20, 40, true, UnitSystem::binary)),
              QStringList({"1 MiB", "32 MiB", "1 GiB", "32 GiB", "1 TiB"}));
}

TEST(AxisTicks, ALinearBytesAxisSpeaksOneUnit) {
    // Up to 1.3 TiB: every tick in TiB, not 512 GiB among them.
    EXPECT_EQ(labels(byte_ticks(0, 1.3 * (1ull << 40), false, UnitSystem::binary)),
              QStringList({"0 TiB", "0.25 TiB", "0.5 TiB", "0.75 TiB", "1 TiB", "1.25 TiB"}));
}

TEST(AxisTicks, CompactBytesDropTrailingZeros) {
    EXPECT_EQ(compact_bytes(1.5 * (1ull << 30), UnitSystem::binary), "1.5 GiB");
    EXPECT_EQ(compact_bytes(512.0 * (1 << 20), UnitSystem::binary), "512 MiB");
    EXPECT_EQ(compact_bytes(85.9e9, UnitSystem::decimal), "85.9 GB");
}

}  // namespace
}  // namespace kvscope::ui
