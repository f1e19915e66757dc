// kvscope-cli: wiring only; the commands live in commands.cpp.
#include <clocale>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
    // The desktop's locale, as any program takes it (character classes of paths and messages).
    // It changes no number: every one read or written goes through numbers.h, which ignores it.
    std::setlocale(LC_ALL, "");
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        const auto result = kvscope::cli::run(args);
        std::fputs(result.out.c_str(), stdout);
        std::fputs(result.err.c_str(), stderr);
        return result.status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvscope-cli: internal error: %s\n", e.what());
        return 1;
    }
}
