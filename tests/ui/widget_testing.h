#pragma once
// Helpers for the UI tests: real widgets, offscreen, an isolated settings folder.

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"

namespace kvscope::ui::testing {

// The built-in catalog only, so a developer's own models never change a test.
inline const Catalog& catalog() { return Catalog::builtin(); }

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
