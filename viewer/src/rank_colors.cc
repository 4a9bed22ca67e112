#include "shardscope/viewer/rank_colors.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace shardscope::viewer {

QColor MeshColor(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape) {
  // Two coordinates: hue over the leading axes, lightness over the last one.
  int64_t hues = 1, hue = 0, shades = 1, shade = 0;
  const size_t n = std::min(coords.size(), shape.size());
  int64_t size = 1;
  for (size_t a = 0; a < n; ++a) size *= std::max<int64_t>(1, shape[a]);
  const int64_t last = n >= 1 ? std::max<int64_t>(1, shape[n - 1]) : 1;
  if (n >= 2 && size / last <= 48 && last <= 32) {
    for (size_t a = 0; a + 1 < n; ++a) {
      hues *= std::max<int64_t>(1, shape[a]);
      hue = hue * std::max<int64_t>(1, shape[a]) + coords[a];
    }
    shades = last;
    shade = coords[n - 1];
  } else if (n >= 1) {
    // Too many positions for one axis per channel: the row-major index folds into
    // (index / k, index % k), k ~ sqrt(size), so hues and shades both stay apart.
    int64_t index = 0;
    for (size_t a = 0; a < n; ++a) index = index * std::max<int64_t>(1, shape[a]) + coords[a];
    shades = size <= 12 ? 1 : static_cast<int64_t>(std::ceil(std::sqrt(double(size))));
    hues = (size + shades - 1) / shades;
    hue = index / shades;
    shade = index % shades;
  }
  // Hues around the circle (never back to the start); lightness from dark to light.
  const double h = hues <= 1 ? 0.58 : std::fmod(0.58 + double(hue) / double(hues), 1.0);
  const double l = shades <= 1 ? 0.62 : 0.32 + 0.5 * double(shade) / double(shades - 1);
  const double s = 0.55 + 0.3 * (1.0 - std::abs(l - 0.57) * 2);
  return QColor::fromHslF(static_cast<float>(h), static_cast<float>(std::clamp(s, 0.4, 0.85)),
                          static_cast<float>(l));
}

QColor DataColor(const std::vector<int64_t>& index, const std::vector<int64_t>& blocks) {
  // The block's centre as fractions of the tensor: hue from the leading dimensions,
  // lightness from the last, so the same elements get the same colour in any layout.
  const size_t n = std::min(index.size(), blocks.size());
  if (n == 0) return QColor::fromHslF(0.58f, 0.6f, 0.6f);
  // Centre fraction over dimensions [from, to), the first most significant.
  auto centre = [&](size_t from, size_t to) {
    double f = 0.5;
    for (size_t d = to; d-- > from;)
      f = (static_cast<double>(index[d]) + f) /
          static_cast<double>(std::max<int64_t>(1, blocks[d]));
    return f;
  };
  const double lead = n >= 2 ? centre(0, n - 1) : 0.5;
  const double across = centre(n - 1, n);
  const double h =
      n >= 2 ? std::fmod(0.58 + 0.85 * lead, 1.0) : std::fmod(0.58 + 0.85 * across, 1.0);
  const double l = n >= 2 ? 0.36 + 0.44 * across : 0.6;
  return QColor::fromHslF(static_cast<float>(h), 0.62f, static_cast<float>(l));
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
