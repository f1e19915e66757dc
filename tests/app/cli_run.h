#pragma once
// Runs kvscope-cli as a user would (a shell, its own data folder) and reads what it printed: shared by the
// CLI's test files.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "kvscope/calculator/json.h"

struct CliRun {
    std::string out, err;
    int status = -1;
};

// A data folder of this test's own, empty until a probe --step keeps its result there: the user's own
// catalog and measurements stay out of the tests, and the tests' out of the user's folder.
struct DataFolder {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-data-" + std::to_string(::getpid()));
    ~DataFolder() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};
inline const DataFolder g_data;

// Runs `program` with `args` through the shell; `env`: more NAME='value' assignments for the run.
inline CliRun run_program(const std::string& program, const std::string& args, const std::string& env = "") {
    const auto err_path = std::filesystem::temp_directory_path() / ("kvscope-cli-err-" + std::to_string(::getpid()));
    const std::string cmd = "KVSCOPE_DATA_DIR='" + g_data.path.string() + "' " + env + " '" + program + "' " + args +
                            " 2>'" + err_path.string() + "'";
    CliRun r;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
    const int raw = ::pclose(pipe);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::ifstream e(err_path);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    std::filesystem::remove(err_path);
    return r;
}

inline CliRun cli(const std::string& args, const std::string& env = "") {
    return run_program(KVSCOPE_CLI_PATH, args, env);
}

inline kvscope::json::Value json_of(const CliRun& r) {
    auto parsed = kvscope::json::parse(r.out);
    EXPECT_TRUE(parsed) << parsed.error.message << "\n" << r.out << r.err;
    return parsed ? *parsed.value : kvscope::json::Value();
}

inline std::uint64_t u64(const kvscope::json::Value& v, const char* key) {
    const auto* x = v.find(key);
    EXPECT_NE(x, nullptr) << key;
    return x && x->as_u64() ? *x->as_u64() : 0;
}
