// The UI tests' main: offscreen unless the caller chose a platform, the locale of the environment
// (ctest runs the suite in C, de_DE and fr_FR), settings in a throwaway folder, and one QApplication for every test
// (hotspot's testutils.h does the same).
#include <QApplication>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    // QApplication takes the locale from the environment and says nothing when it is missing;
    // ctest's de_DE and fr_FR runs must not quietly test the C locale again (tests/CMakeLists.txt).
    if (std::setlocale(LC_ALL, "") == nullptr) {
        std::fprintf(stderr, "the locale %s is not installed here; scripts/setup generates it\n",
                     std::getenv("LC_ALL") ? std::getenv("LC_ALL") : "of this environment");
        return 1;
    }
    if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    QTemporaryDir config;  // QSettings and the user catalog folder land here, never in $HOME
    setenv("XDG_CONFIG_HOME", qPrintable(config.path()), 1);
    setenv("XDG_DATA_HOME", qPrintable(config.path() + "/data"), 1);  // the recovery copy
    setenv("KVSCOPE_DATA_DIR", qPrintable(config.path() + "/kvscope-data"), 1);
    QApplication app(argc, argv);
    QApplication::setOrganizationName("KVScopeTests");
    QApplication::setApplicationName("kvscope-tests");
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
