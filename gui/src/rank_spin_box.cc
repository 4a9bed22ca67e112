#include "rank_spin_box.h"

#include <QLineEdit>

namespace shardscope::gui {

void RankSpinBox::SetOffset(int offset) {
  if (offset == offset_) return;
  offset_ = offset;
  lineEdit()->setText(textFromValue(value()));
}

QString RankSpinBox::textFromValue(int value) const { return QString::number(value + offset_); }

int RankSpinBox::valueFromText(const QString& text) const { return text.toInt() - offset_; }

QValidator::State RankSpinBox::validate(QString& text, int&) const {
  if (text.isEmpty()) return QValidator::Intermediate;
  bool ok = false;
  const int value = text.toInt(&ok) - offset_;
  if (!ok) return QValidator::Invalid;
  return value >= minimum() && value <= maximum() ? QValidator::Acceptable
                                                  : QValidator::Intermediate;
}

}  // namespace shardscope::gui
