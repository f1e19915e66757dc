// The backend registry and plugin loader (gpu_probe/src/plugins.cpp): a plugin is found through
// KVSCOPE_PLUGIN_DIR before the programs' folder, its ABI is checked, and every way it can fail is said
// with the file's path; "auto" falls back to the CPU. The stand-in plugins are built by CMakeLists.txt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"

namespace kvscope::probe {
namespace {

// Points the loader at one folder for the length of a test.
class PluginDir {
public:
    explicit PluginDir(const std::filesystem::path& dir) { setenv("KVSCOPE_PLUGIN_DIR", dir.c_str(), 1); }
    ~PluginDir() { unsetenv("KVSCOPE_PLUGIN_DIR"); }
    PluginDir(const PluginDir&) = delete;
    PluginDir& operator=(const PluginDir&) = delete;
};

const std::filesystem::path kFakes = KVSCOPE_FAKE_PLUGINS;

TEST(Plugins, APluginInKvscopePluginDirIsLoadedAndAsked) {
    const PluginDir dir(kFakes / "answering");
    const BackendChoice c = choose_backend("cuda");
    EXPECT_EQ(c.backend, nullptr);
    EXPECT_EQ(c.status, Status::no_device);
    EXPECT_EQ(c.message, "the stand-in plugin answered: no device");
    // "auto" goes on to the CPU, which always answers.
    const BackendChoice any = choose_backend("auto");
    ASSERT_NE(any.backend, nullptr);
    EXPECT_EQ(any.backend->device().backend, "cpu");
    EXPECT_EQ(any.status, Status::ok);
    // devices lists the plugin's backend with its reason; the views read what a device is from its fields.
    const auto devices = list_devices();
    ASSERT_EQ(devices.size(), 2u);
    EXPECT_EQ(devices[0].backend, "cpu");
    EXPECT_EQ(devices[0].label, "CPU");
    EXPECT_TRUE(devices[0].available);
    EXPECT_TRUE(devices[0].host_memory);
    EXPECT_EQ(devices[0].units_name, "threads");
    EXPECT_EQ(devices[1].backend, "cuda");
    EXPECT_EQ(devices[1].label, "CUDA GPU");
    EXPECT_FALSE(devices[1].available);
    EXPECT_EQ(devices[1].note, "the stand-in plugin answered: no device");
}

TEST(Plugins, APluginOfAnotherVersionIsRefusedByName) {
    const PluginDir dir(kFakes / "other_abi");
    const BackendChoice c = choose_backend("cuda");
    EXPECT_EQ(c.backend, nullptr);
    EXPECT_EQ(c.status, Status::no_device);
    EXPECT_NE(c.message.find((kFakes / "other_abi" / "libkvscope-probe-cuda.so").string()), std::string::npos)
        << c.message;
    EXPECT_NE(c.message.find("is not one this build can use"), std::string::npos) << c.message;
}

TEST(Plugins, AFileThatIsNoLibraryIsNamedWithTheLoadersReason) {
    const auto dir = std::filesystem::temp_directory_path() / ("kvscope plugins ü " + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "libkvscope-probe-cuda.so") << "not a shared object";
    {
        const PluginDir env(dir);
        const BackendChoice c = choose_backend("cuda");
        EXPECT_EQ(c.backend, nullptr);
        EXPECT_EQ(c.status, Status::no_device);
        EXPECT_NE(c.message.find("'s plugin " + (dir / "libkvscope-probe-cuda.so").string() + " cannot be loaded: "),
                  std::string::npos)
            << c.message;
    }
    std::filesystem::remove_all(dir);
}

TEST(Plugins, AnUnknownBackendListsTheKnownOnes) {
    const BackendChoice c = choose_backend("rocm");
    EXPECT_EQ(c.backend, nullptr);
    EXPECT_EQ(c.status, Status::invalid_input);
    EXPECT_EQ(c.message, "'rocm' is not a backend (auto, cuda, cpu)");
}

}  // namespace
}  // namespace kvscope::probe
