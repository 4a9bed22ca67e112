// Redistribution steps priced once for both pricings: PriceProgram (the program's steps) and the
// searches (a parameter gradient the planner reduces in several steps), so one objective holds.
#include <algorithm>
#include <mutex>

#include "search/search_graph.h"
#include "shardscope/program_price.h"
#include "shardscope/strategy.h"

namespace shardscope::search_internal {
namespace {

// The least the step costs in-process (InProcessOverhead::GroupSyncSeconds): a structured
// collective runs on its groups' own communicators, so its device threads wait for their group
// only; an irregular exchange is one AllToAllV over every device (redistribution_executor.cc).
double StepSync(const CostModel& cm, const RedistPlan& plan, const RedistStep& step,
                int64_t devices) {
  if (step.irregular()) return cm.in_process.group_sync_s;
  return cm.in_process.GroupSyncSeconds(plan.mesh.GroupSize(step.axes), devices);
}

}  // namespace

bool SearchGraph::StepLink(const RedistStep& step, double* bandwidth, HopLatency* latency) const {
  const CostModel& cm = options_.cost;
  *latency = step.axis_names.empty() ? cm.latency_s : 0.0;
  for (const std::string& axis : step.axis_names)
    latency->outer = std::max(latency->outer, cm.AxisLatency(axis));
  const bool ring = !step.irregular() && (step.kind == RedistStep::Kind::kAllReduce ||
                                          step.kind == RedistStep::Kind::kReduceScatter ||
                                          step.kind == RedistStep::Kind::kAllGather);
  return GroupsLink(step.groups, ring, bandwidth, latency);
}

double SearchGraph::StepSeconds(const RedistPlan& plan, const RedistStep& step,
                                double compute_before) const {
  if (step.seconds <= 0) return 0.0;
  const CostModel& cm = options_.cost;
  const double messages = static_cast<double>(step.messages);
  double transfer = step.seconds - messages * cm.latency_s;  // the bandwidth term
  double bandwidth = cm.Bandwidth(plan.mesh, step.axes);
  HopLatency hops;
  const bool linked = StepLink(step, &bandwidth, &hops);
  if (linked) transfer *= cm.Bandwidth(plan.mesh, step.axes) / bandwidth;
  double latency = messages * hops.outer;
  // An all-reduce whose hops inside a node are cheaper: priced as the searches price it
  // (SearchCollectiveTerms, which may take the other algorithm), from its bytes per rank.
  if (linked && hops.Blended() && !step.irregular() && step.kind == RedistStep::Kind::kAllReduce) {
    const CollectiveKind kind = CollectiveKind::kAllReduce;
    const int64_t p = plan.mesh.GroupSize(step.axes);
    const bool tree = messages != CostModel::LatencyMessages(kind, p);
    const double bytes = transfer * bandwidth / (tree ? 2.0 : 2.0 * static_cast<double>(p - 1) / p);
    const CostModel::CollectiveTerms terms =
        cm.SearchCollectiveTerms(kind, bytes, p, bandwidth, hops);
    transfer = terms.transfer;
    latency = terms.latency;
  }
  return transfer +
         std::max(latency + cm.collective_overhead_s, StepSync(cm, plan, step, options_.devices)) +
         cm.in_process.HandoffSeconds(compute_before);
}

double SearchGraph::BucketedGradientSeconds(const RedistPlan& plan, const RedistStep& step,
                                            double bytes, double share) const {
  const CostModel& cm = options_.cost;
  double bandwidth = cm.Bandwidth(plan.mesh, step.axes);
  HopLatency latency;
  StepLink(step, &bandwidth, &latency);
  return share * cm.SearchCollectiveSeconds(CollectiveKind::kAllReduce, bytes / share,
                                            plan.mesh.GroupSize(step.axes), bandwidth, latency);
}

bool SearchGraph::Bucketed(const RedistPlan& plan, double share) {
  return share < 1 && plan.steps.size() == 1 &&
         plan.steps[0].kind == RedistStep::Kind::kAllReduce && !plan.steps[0].irregular();
}

double SearchGraph::PlannedGradientSeconds(int op, const Parts& parts, int input,
                                           double compute_before, double* collectives) const {
  const SearchOp& o = ops_[op];
  const SearchOperand& in = o.inputs[input];
  const Value& value = graph_->value(graph_->node(o.node).inputs[input]);
  // The layouts depend on the parameter's shape and, per split letter in mesh order, its part
  // count and the parameter dimension it splits (or none: a letter it is a partial sum over).
  std::vector<int64_t> key(value.shape.begin(), value.shape.end());
  key.push_back(-1);
  for (size_t l = 0; l < parts.size(); ++l) {
    if (parts[l] == 1) continue;
    const auto dim = std::find(in.letter.begin(), in.letter.end(), static_cast<int>(l));
    key.push_back(parts[l]);
    key.push_back(dim == in.letter.end() ? -1 : dim - in.letter.begin());
  }
  key.push_back(static_cast<int64_t>(compute_before * 1e15));
  key.push_back(static_cast<int64_t>(options_.cost.gradient_bucket_bytes));  // its bucket share
  {
    std::lock_guard<std::mutex> lock(gradient_plans_->mu);
    const auto it = gradient_plans_->priced.find(key);
    if (it != gradient_plans_->priced.end()) {
      if (collectives != nullptr) *collectives += it->second.collectives;
      return it->second.seconds;
    }
  }
  // The strategy the partitioner resolves from Notation(op, parts): one mesh axis per split
  // letter in SearchOp::letters' order, then the replica axis.
  OpStrategy s;
  Shape shape;
  std::vector<std::string> names;
  std::string partial;
  for (size_t l = 0; l < o.letters.size(); ++l) {
    if (parts[l] == 1) continue;
    s.letters[o.letters[l]] = {static_cast<int>(shape.size())};
    shape.push_back(parts[l]);
    names.emplace_back(1, o.letters[l]);
    if (std::find(in.missing.begin(), in.missing.end(), static_cast<int>(l)) != in.missing.end())
      partial += o.letters[l];
  }
  if (Product(parts) < options_.devices) {
    shape.push_back(options_.devices / Product(parts));
    names.emplace_back("rep");
  }
  Priced price;
  auto mesh = DeviceMesh::Create(shape, names);
  if (mesh.ok()) {
    s.mesh = *mesh;
    auto from = s.LayoutOf(o.sig.inputs[input], value.shape, partial);
    auto to = s.LayoutOf(o.sig.inputs[input], value.shape);
    RedistOptions r;
    r.element_bytes = static_cast<int64_t>(PrecisionBytes(options_.dtype));
    auto plan = from.ok() && to.ok() ? plans_->Get(*from, *to, options_.cost, r)
                                     : Result<std::shared_ptr<const RedistPlan>>(from.status());
    if (plan.ok()) {
      const double bytes = in.bytes / in.Parts(parts);
      const double share = options_.cost.GradientBucketShare(bytes);
      for (const RedistStep& step : (*plan)->steps) {
        if (!CommunicatesData(step)) continue;
        price.seconds += Bucketed(**plan, share)
                             ? BucketedGradientSeconds(**plan, step, bytes, share)
                             : StepSeconds(**plan, step, compute_before);
        price.collectives += 1;
        compute_before = 0;  // the next step follows this one
      }
    }
  }
  std::lock_guard<std::mutex> lock(gradient_plans_->mu);
  gradient_plans_->priced.emplace(std::move(key), price);
  if (collectives != nullptr) *collectives += price.collectives;
  return price.seconds;
}

double SearchGraph::GradientBytes() const {
  double bytes = 0;
  for (const SearchOp& o : ops_) {
    for (const SearchOperand& in : o.inputs)
      if (in.kind == ValueKind::kParameter) bytes += in.bytes;
  }
  return bytes;
}

}  // namespace shardscope::search_internal
