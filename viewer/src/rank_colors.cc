#include "shardscope/viewer/rank_colors.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace shardscope::viewer {

QColor MeshColor(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape) {
  // Two coordinates: hue over the leading axes, lightness over the last one.
  int64_t hues = 1, hue = 0, shades = 1, shade = 0;
  const size_t n = std::min(coords.size(), shape.size());
  if (n == 1) {
    // A long 1-D mesh folds into (rank / k, rank % k), k ~ sqrt(size), so hues stay apart.
    const int64_t size = std::max<int64_t>(1, shape[0]);
    shades = size <= 12 ? 1 : static_cast<int64_t>(std::ceil(std::sqrt(double(size))));
    hues = (size + shades - 1) / shades;
    hue = coords[0] / shades;
    shade = coords[0] % shades;
  } else if (n >= 2) {
    for (size_t a = 0; a + 1 < n; ++a) {
      hues *= std::max<int64_t>(1, shape[a]);
      hue = hue * std::max<int64_t>(1, shape[a]) + coords[a];
    }
    shades = std::max<int64_t>(1, shape[n - 1]);
    shade = coords[n - 1];
  }
  // Hues around the circle (never back to the start); lightness from dark to light.
  const double h = hues <= 1 ? 0.58 : std::fmod(0.58 + double(hue) / double(hues), 1.0);
  const double l = shades <= 1 ? 0.62 : 0.32 + 0.5 * double(shade) / double(shades - 1);
  const double s = 0.55 + 0.3 * (1.0 - std::abs(l - 0.57) * 2);
  return QColor::fromHslF(static_cast<float>(h), static_cast<float>(std::clamp(s, 0.4, 0.85)),
                          static_cast<float>(l));
}

namespace {
const QRegularExpression& FactorName() {
  static const QRegularExpression re("\\b([A-Za-z][A-Za-z0-9]*?)_([0-9]+)\\b");
  return re;
}
QString Subscript(const QString& digits) {
  QString out;
  for (QChar c : digits) out += QChar(0x2080 + c.digitValue());
  return out;
}
}  // namespace

QString DisplayAxisName(const QString& name) { return DisplayLayoutText(name); }
QString DisplayAxisName(const std::string& name) {
  return DisplayAxisName(QString::fromStdString(name));
}

QString DisplayLayoutText(const QString& text) {
  QString out;
  qsizetype last = 0;
  auto it = FactorName().globalMatch(text);
  while (it.hasNext()) {
    const auto m = it.next();
    out += text.mid(last, m.capturedStart() - last);
    out += m.captured(1) + Subscript(m.captured(2));
    last = m.capturedEnd();
  }
  return out + text.mid(last);
}

}  // namespace shardscope::viewer
