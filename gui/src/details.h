// The details panel's text (HTML) for a selected operator or tensor, from the run's records.
// Absent data (no candidates, no placement) is said in words ("none recorded").
#pragma once

#include <QString>

#include "shardscope/viewer/run_document.h"

namespace shardscope::gui {

// Strategy, mesh, provenance, search round, cost, worker, layouts in and out, redistributions
// and runners-up of operator `id`; "operator N is not in the run" when absent.
QString OperatorDetailsHtml(const viewer::RunData& run, int64_t id);
// Shape, kind, producer and its layout, each consumer and the layout it needs,
// redistributions of tensor `id`.
QString TensorDetailsHtml(const viewer::RunData& run, int64_t id);
// Redistribution `id` first (why it was inserted, each step's collective on its rank groups,
// bytes against the lower bound), then its tensor's details.
QString RedistributionDetailsHtml(const viewer::RunData& run, int64_t id);

}  // namespace shardscope::gui
