#include "table.h"

#include <algorithm>
#include <cctype>

#include "kvscope/calculator/numbers.h"

namespace kvscope::cli {
namespace {

// Display width: count UTF-8 code points, not bytes ("×", "—").
std::size_t width(const std::string& s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool numeric(const std::string& s) {
    return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace

std::string Table::text() const {
    std::vector<std::size_t> w(header_.size(), 0);
    for (std::size_t c = 0; c < header_.size(); ++c) w[c] = width(header_[c]);
    for (const auto& r : rows_)
        for (std::size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(r[c]));
    auto line = [&](const std::vector<std::string>& r, bool header) {
        std::string out;
        for (std::size_t c = 0; c < w.size(); ++c) {
            const std::string cell = c < r.size() ? r[c] : "";
            const std::string pad(w[c] - width(cell), ' ');
            if (c) out += "  ";
            out += (!header && numeric(cell)) ? pad + cell : cell + (c + 1 < w.size() ? pad : "");
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        return out + "\n";
    };
    std::string out = line(header_, true);
    std::string rule;
    for (std::size_t c = 0; c < w.size(); ++c) rule += (c ? "  " : "") + std::string(w[c], '-');
    out += rule + "\n";
    for (const auto& r : rows_) out += line(r, false);
    return out;
}

std::string Table::csv() const {
    auto line = [](const std::vector<std::string>& r) {
        std::string out;
        for (std::size_t c = 0; c < r.size(); ++c) out += (c ? "," : "") + csv_field(r[c]);
        return out + "\n";
    };
    std::string out = line(header_);
    for (const auto& r : rows_) out += line(r);
    return out;
}

std::string key_values(const std::vector<std::pair<std::string, std::string>>& rows) {
    std::size_t w = 0;
    for (const auto& [k, v] : rows) w = std::max(w, width(k));
    std::string out;
    for (const auto& [k, v] : rows) out += k + ":" + std::string(w - width(k) + 2, ' ') + v + "\n";
    return out;
}

std::string fixed(double v, int decimals) { return number_text(v, Notation::fixed, decimals); }

std::string scientific(double v) { return number_text(v, Notation::scientific, 2); }

}  // namespace kvscope::cli
