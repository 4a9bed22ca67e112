#include "table_columns.h"

#include <QEvent>
#include <QHeaderView>
#include <QTableView>
#include <algorithm>

namespace shardscope::gui {
namespace {

constexpr int kMinTextWidth = 48;

class ColumnFitter : public QObject {
 public:
  ColumnFitter(QTableView* table, std::vector<int> text_columns)
      : QObject(table), table_(table), text_(std::move(text_columns)) {
    table->viewport()->installEventFilter(this);
    connect(table->model(), &QAbstractItemModel::modelReset, this, &ColumnFitter::Fit);
    connect(table->model(), &QAbstractItemModel::layoutChanged, this, &ColumnFitter::Fit);
  }

  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == table_->viewport() && event->type() == QEvent::Resize) Fit();
    return QObject::eventFilter(watched, event);
  }

  // Text columns share what the number columns leave as fairly as their text allows: one
  // whose widest text (on the first rows, as the header's precision says) fits an equal
  // share gets just that, the others split the rest; room to spare goes to the widest.
  void Fit() {
    QHeaderView* header = table_->horizontalHeader();
    int room = table_->viewport()->width();
    for (int c = 0; c < header->count(); ++c)
      if (std::find(text_.begin(), text_.end(), c) == text_.end()) room -= header->sectionSize(c);
    std::vector<std::pair<int, int>> wanted;  // width, column
    for (int c : text_) {
      const int hint = static_cast<QAbstractItemView*>(table_)->sizeHintForColumn(c);
      wanted.emplace_back(std::max({kMinTextWidth, hint, header->sectionSizeHint(c)}), c);
    }
    if (wanted.empty()) return;
    std::sort(wanted.begin(), wanted.end());
    std::vector<std::pair<int, int>> given;  // width, column
    int left = std::max(room, 0);
    for (size_t i = 0; i < wanted.size(); ++i) {
      const int fair = left / static_cast<int>(wanted.size() - i);
      given.emplace_back(std::max(kMinTextWidth, std::min(wanted[i].first, fair)),
                         wanted[i].second);
      left -= given.back().first;
    }
    given.back().first += std::max(left, 0);
    for (const auto& [width, column] : given) header->resizeSection(column, width);
  }

 private:
  QTableView* table_;
  std::vector<int> text_;
};

}  // namespace

void FitColumnsToWidth(QTableView* table, const std::vector<int>& text_columns) {
  QHeaderView* header = table->horizontalHeader();
  header->setStretchLastSection(false);
  header->setMinimumSectionSize(36);
  for (int c = 0; c < table->model()->columnCount(); ++c) {
    const bool text = std::find(text_columns.begin(), text_columns.end(), c) != text_columns.end();
    header->setSectionResizeMode(c,
                                 text ? QHeaderView::Interactive : QHeaderView::ResizeToContents);
  }
  table->setTextElideMode(Qt::ElideMiddle);
  table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* fitter = new ColumnFitter(table, text_columns);
  fitter->Fit();
}

}  // namespace shardscope::gui
