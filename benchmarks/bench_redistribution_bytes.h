// The bytes table of the redistribution benchmark: every pair of the suite planned once and
// its bytes compared with references and the lower bound.
// Bytes. Every pair is planned once more (outside the timing) and its total bytes received
// (summed over ranks) compared with three references, all per rank then summed:
//   ours   RedistPlan::total_planned_bytes;
//   ours a=0  the same planned with CostModel::latency_s = 0 (only for pairs where ours is
//          above the bound: there the planner trades bytes for fewer messages, and a=0 shows
//          what it reaches on bytes alone);
//   naive  all-reduce the partial sums, all-gather to a fully replicated tensor, slice locally;
//   rules  a per-dimension split / concat rule loop modelled on MindSpore's
//          RedistributionOperatorInfer, without its all-to-all rule (RulesLoopRecv below);
//   bound  RedistPlan::total_lower_bound_bytes (RedistributionLowerBound).
// Collective traffic is counted like the communicator counts it (communicator.h): an
// all-gather of s elements per rank over k ranks receives (k-1)s, an all-reduce of s elements
// over p ranks receives AllReduceTraffic(s, p, index) (the ring formula 2(p-1)/p s up to
// balanced-block rounding). Ratios are sum(bytes) / sum(bound) over the pairs of a class.
#pragma once

namespace shardscope::bench_redist {

// Prints the suite's summary and the bytes table (one row per class, per size, and all).
void PrintBytesTable();

}  // namespace shardscope::bench_redist
