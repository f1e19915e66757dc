// The main of the suites that read and write numbers. It takes the C library's locale from the
// environment, as the desktop app does (QApplication calls setlocale(LC_ALL, "")), so the runs
// that ctest makes under de_DE.UTF-8 and fr_FR.UTF-8 meet a C library that writes and reads a
// decimal comma. A locale asked for that this machine lacks fails the run instead of quietly
// testing the C locale again: scripts/setup generates both.
#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    if (std::setlocale(LC_ALL, "") == nullptr) {
        const char* asked = std::getenv("LC_ALL");
        std::fprintf(stderr,
                     "the locale %s is not installed here; scripts/setup generates de_DE.UTF-8 and fr_FR.UTF-8\n",
                     asked ? asked : "of this environment");
        return 1;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
