#pragma once
// scripts/screenshots: every screen of the app rendered offscreen into a folder,
// on the scenario the README walks through (Llama 3 70B, 128k, fp8, 8 requests, 2×H100).

#include <QString>

namespace kvscope {
class Catalog;
}

namespace kvscope::gui {

bool render_screenshots(const Catalog& catalog, const QString& folder);

}  // namespace kvscope::gui
