#pragma once
// Helpers for the UI tests: real widgets, offscreen, an isolated settings folder.

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "options.h"
#include "scenario_options.h"

namespace kvscope::ui::testing {

// The built-in catalog only, so a developer's own models never change a test.
inline const Catalog& catalog() { return Catalog::builtin(); }

// The scenario kvscope-cli builds from `args`: the window's agreement with the CLI is checked against it.
inline Scenario cli_scenario(const std::vector<std::string>& args) {
    auto options = cli::parse_options(args);
    EXPECT_TRUE(options) << options.error_text();
    cli::ScenarioSource source;
    auto s = cli::build_scenario(*options, catalog(), source);
    EXPECT_TRUE(s) << s.error_text();
    return s ? *s : Scenario{};
}

inline QByteArray read_all(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

inline void write_all(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
    f.write(bytes);
}

// `json` as FOLDER/config.json under `dir`, as a model's folder holds it; its path.
inline QString write_config(const QTemporaryDir& dir, const QString& folder, const QByteArray& json) {
    QDir().mkpath(dir.filePath(folder));
    const QString path = dir.filePath(folder + "/config.json");
    write_all(path, json);
    return path;
}

}  // namespace kvscope::ui::testing
