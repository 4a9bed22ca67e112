// A spin box of a mesh's ranks that shows them as the run's ranks: a pipeline stage's mesh
// numbers its ranks from 0 (value()), the run from the stage's first rank (SetOffset).
#pragma once

#include <QSpinBox>

namespace shardscope::gui {

class RankSpinBox : public QSpinBox {
 public:
  using QSpinBox::QSpinBox;
  // Added to the value shown and taken off what is typed; repaints the text.
  void SetOffset(int offset);
  int offset() const { return offset_; }

 protected:
  QString textFromValue(int value) const override;
  int valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;

 private:
  int offset_ = 0;
};

}  // namespace shardscope::gui
