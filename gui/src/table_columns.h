// Table columns that fit the table's width, so no column sits behind a horizontal scrollbar:
// number columns as wide as their contents, the text columns sharing the rest fairly (none
// wider than its text while another is cut), long text elided in the middle (both ends of a name
// say most; the model's tooltip has it whole). Kept up as the table is resized or its model
// refilled.
#pragma once

#include <vector>

class QTableView;

namespace shardscope::gui {

void FitColumnsToWidth(QTableView* table, const std::vector<int>& text_columns);

}  // namespace shardscope::gui
