#pragma once
// Plain-text tables for the terminal, and CSV with the same rows.

#include <string>
#include <vector>

namespace kvscope::cli {

class Table {
public:
    explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    // Text columns left-aligned, numbers (first char a digit or '-') right-aligned.
    [[nodiscard]] std::string text() const;
    [[nodiscard]] std::string csv() const;

private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

// 3.14159, 2 -> "3.14"; 0.0000123 -> "1.23e-05" (figures in tables and key-value lines).
std::string fixed(double v, int decimals);
std::string scientific(double v);

// "key:  value" lines with the keys aligned.
std::string key_values(const std::vector<std::pair<std::string, std::string>>& rows);

}  // namespace kvscope::cli
