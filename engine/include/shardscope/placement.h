// Placement: the training graph cut into one program per worker (seed 001, `place`).
//
// Runs after autodiff on the forward + backward graph (DESIGN.md §4, MPMD):
//   - each forward operator runs on its `place("worker", r)` worker, or, when it is not
//     placed, on worker 0 (or with its producer: UnplacedPolicy); each backward operator runs where
//     its forward operator runs (Node::forward_node), so a parameter, its gradient and its
//     optimizer state live on the worker of the operators that read it, and the loss on the worker
//     computing it;
//   - every edge whose producer and consumer run on different workers (a cut edge) becomes
//     a send on the producer's worker and a receive on the consumer's: activations
//     forward, gradients backward. Inputs, labels and constants are read locally by every
//     worker that needs them (every worker reads the global batch), never sent.
// Order: each worker's program lists its operators in graph order, a receive right before
// the first operator needing it, a send right after the producer. Sends are buffered
// (communicator.h), so a receive only waits for a send that comes earlier in the one
// global graph order, which its worker reaches without waiting on anything later: no
// deadlock, whatever the placement (also chains crossing workers back and forth).
// Deterministic: every worker computes the same PlacedProgram.
//
// Not supported (refused with kNotImplemented naming the operator): a placed operator
// that also has a sharding strategy (a placed block sharded over a sub-mesh of ranks),
// and a parameter read by operators on different workers (tied weights).
#pragma once

#include <string>
#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

// One value crossing from one worker to another. Tag = its index in PlacedProgram::edges.
struct CutEdge {
  ValueId value = kNoValue;
  int src_worker = 0;
  int dst_worker = 0;
  NodeId src_node = kNoNode;  // producer
  NodeId dst_node = kNoNode;  // first consumer on dst_worker
  bool is_backward = false;   // a gradient (the producer is a backward operator)
  int64_t bytes = 0;          // per message (one micro-batch)
};

struct PlacedInstr {
  enum class Kind { kCompute, kSend, kRecv };
  Kind kind = Kind::kCompute;
  NodeId node = kNoNode;  // kCompute
  int edge = -1;          // kSend / kRecv: index into PlacedProgram::edges
};

// One worker's share of one (micro-)batch, in execution order.
struct WorkerProgram {
  std::vector<PlacedInstr> forward;   // forward operators and activation transfers
  std::vector<PlacedInstr> backward;  // backward operators and gradient transfers
  std::vector<ValueId> params;        // parameters it owns (graph order) ...
  std::vector<ValueId> grads;         // ... and their gradients (same order)
  bool reads_input = false;           // needs the batch's input / labels
  bool reads_labels = false;
};

struct PlacedProgram {
  int workers = 1;
  std::vector<int> node_worker;  // per graph node (-1: not needed for the targets)
  std::vector<CutEdge> edges;
  std::vector<WorkerProgram> programs;  // one per worker, 0..workers-1
  // Per worker the position of its first forward operator among the workers computing
  // anything (its pipeline stage; -1 for a worker with no forward operator).
  std::vector<int> stage;
  int num_stages = 0;
  std::vector<int> target_worker;  // per target passed to PlaceGraph, its worker

  // Bytes one worker sends / receives per (micro-)batch.
  int64_t SentBytes(int worker) const;
  int64_t ReceivedBytes(int worker) const;
  // Per worker: its program as text, "send fc1.relu -> worker 1 (1920 B)" etc.
  std::string WorkerText(const Graph& graph, int worker) const;
  // Every worker's program and the cut edges (for --dump-ir).
  std::string ToText(const Graph& graph) const;
};

// Where operators that are not placed run.
enum class UnplacedPolicy {
  kWorkerZero,    // worker 0 (the rule; seed 001's ReLUs then cross back to 0)
  kWithProducer,  // the worker of the operator producing its first input (worker 0 when
                  // none): a placed layer's activation and pooling stay with it, so a
                  // chain of placed layers stays a chain of contiguous stages
};
// "worker0" or "producer".
const char* UnplacedPolicyName(UnplacedPolicy policy);
Result<UnplacedPolicy> ParseUnplacedPolicy(const std::string& name);

// Cuts the nodes needed for `targets` (for training: the loss and the parameter gradients;
// for evaluation: the logits) into `workers` programs. `params` are the trained parameters
// and `grads` their gradients (same order; may be empty for evaluation). Errors name the
// operator: placed on a worker >= `workers` ("use --devices N"), placement combined with a
// strategy, a parameter shared across workers.
Result<PlacedProgram> PlaceGraph(const Graph& graph, const std::vector<ValueId>& targets,
                                 const std::vector<ValueId>& params,
                                 const std::vector<ValueId>& grads, int workers,
                                 UnplacedPolicy unplaced = UnplacedPolicy::kWorkerZero);

// True when some operator of `graph` is placed (its annotations name a worker).
bool HasPlacement(const Graph& graph);

// The highest worker any operator is placed on (-1: none).
int HighestWorker(const Graph& graph);

}  // namespace shardscope
