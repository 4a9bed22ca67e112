#include "cli/instruction_timing.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>
#include <utility>

namespace shardscope::cli {

bool TimedStep(int64_t step, int64_t every) {
  if (every <= 0 || step < 1) return false;
  if (step <= 2) return true;
  if (step % every != 0) return false;
  // Its place among the timed steps: 1, 2, then the multiples of `every` above 2.
  return 2 + step / every - 2 / every <= kMaxTimedSteps;
}

Status GatherInstructionSpans(Communicator& comm, const DistProgram& program, int64_t step,
                              const std::vector<InstrSpan>& mine, Recorder* recorder,
                              Status* recorded) {
  constexpr int kTag = 7302;
  static_assert(std::is_trivially_copyable_v<InstrSpan>);
  const int64_t per_rank = std::max<int64_t>(1, static_cast<int64_t>(mine.size()));
  const int ranks = static_cast<int>(
      std::clamp<int64_t>(kMaxTimedRows / per_rank, 1, static_cast<int64_t>(comm.size())));
  if (comm.rank() != 0) {
    if (comm.rank() >= ranks) return Status::Ok();
    std::vector<std::byte> bytes(mine.size() * sizeof(InstrSpan));
    if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
    return comm.SendBytes(bytes, 0, kTag);
  }
  std::vector<store::InstructionSpanRecord> records;
  const auto add = [&](int rank, const std::vector<InstrSpan>& spans) -> Status {
    // Spans an instruction has besides its own (ZeRO's collectives, a recomputation's replay)
    // take parts past its redistribution steps, one each: (ordinal, part) stays a key.
    std::map<int, int64_t> extra;
    std::set<std::pair<int, int64_t>> taken;
    const auto fresh = [&](int instr) {
      const auto& plan = program.instrs[instr].plan;
      return (plan != nullptr ? static_cast<int64_t>(plan->steps.size()) : 0) + extra[instr]++;
    };
    for (const InstrSpan& s : spans) {
      if (s.instr < 0 || static_cast<size_t>(s.instr) >= program.instrs.size())
        return Status::Internal("instruction timing of rank " + std::to_string(rank) +
                                " names instruction " + std::to_string(s.instr));
      store::InstructionSpanRecord r;
      r.step = step;
      r.rank = rank;
      r.ordinal = s.instr;
      const bool bucket = s.part == kBucketSpanPart || s.part == kBucketWaitSpanPart;
      const bool scatter = s.part == kScatterSpanPart || s.part == kScatterWaitSpanPart;
      const bool zero = scatter || s.part == kGatherSpanPart;
      r.part = s.part == kBucketWaitSpanPart ? 0 : s.part < 0 ? store::kNone : s.part;
      if (zero || !taken.insert({s.instr, r.part}).second) r.part = fresh(s.instr);
      const bool compute = program.instrs[s.instr].kind == DistInstr::Kind::kCompute;
      r.kind = scatter                     ? "grad_scatter"
               : s.part == kGatherSpanPart ? "param_gather"
               : compute                   ? "compute"
               : bucket                    ? "bucket"
               : s.part < 0                ? "redistribution"
                                           : "collective";
      r.start_seconds = s.start;
      r.end_seconds = s.end;
      records.push_back(std::move(r));
    }
    return Status::Ok();
  };
  SHARDSCOPE_RETURN_IF_ERROR(add(0, mine));
  for (int r = 1; r < ranks; ++r) {
    SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, comm.RecvBytes(r, kTag));
    if (bytes.size() % sizeof(InstrSpan) != 0)
      return Status::Internal("bad instruction timing from rank " + std::to_string(r));
    std::vector<InstrSpan> spans(bytes.size() / sizeof(InstrSpan));
    if (!spans.empty()) std::memcpy(spans.data(), bytes.data(), bytes.size());
    SHARDSCOPE_RETURN_IF_ERROR(add(r, spans));
  }
  if (recorder != nullptr) *recorded = recorder->RecordInstructionSpans(std::move(records));
  return Status::Ok();
}

}  // namespace shardscope::cli
