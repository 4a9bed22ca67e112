#include "shardscope/viewer/run_document.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "shardscope/store/figures.h"
#include "shardscope/store/summary.h"

namespace shardscope::viewer {
namespace {

template <typename Record>
const Record* FindById(const std::vector<Record>& records, int64_t id) {
  auto it = std::lower_bound(records.begin(), records.end(), id,
                             [](const Record& r, int64_t key) { return r.id < key; });
  return it != records.end() && it->id == id ? &*it : nullptr;
}

template <typename Record>
void SortById(std::vector<Record>* records) {
  std::stable_sort(records->begin(), records->end(),
                   [](const Record& a, const Record& b) { return a.id < b.id; });
}

#define VIEWER_ASSIGN(target, expr)             \
  do {                                          \
    auto result_ = (expr);                      \
    if (!result_.ok()) return result_.status(); \
    target = std::move(result_).value();        \
  } while (0)

}  // namespace

class RunDetails {
 public:
  explicit RunDetails(std::string path) : path_(std::move(path)) {}

  std::shared_ptr<const store::RedistributionRecord> Redistribution(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kept : kept_) {
      if (kept->id == id) return kept;
    }
    auto reader = store::RunReader::Open(path_);
    if (!reader.ok()) return nullptr;
    auto record = (*reader)->Redistribution(id);
    if (!record.ok()) return nullptr;
    // A few recent ones: the stepper shows one at a time, a person goes back and forth.
    constexpr size_t kKept = 8;
    if (kept_.size() == kKept) kept_.erase(kept_.begin());
    kept_.push_back(std::make_shared<const store::RedistributionRecord>(std::move(*record)));
    return kept_.back();
  }

  // Nothing when the file cannot be read.
  std::optional<std::vector<store::RedistributionRecord>> AllRedistributions() {
    auto reader = store::RunReader::Open(path_);
    if (!reader.ok()) return std::nullopt;
    auto all = (*reader)->Redistributions(true, true);
    if (!all.ok()) return std::nullopt;
    return std::move(all).value();
  }

  store::Result<store::RankSummary> RankSummary(int64_t rank, int64_t timed_step) {
    SHARDSCOPE_ASSIGN_OR_RETURN(auto reader, store::RunReader::Open(path_));
    return store::ReadRankSummary(*reader, rank, timed_step);
  }

  std::mutex planned_mu;
  std::optional<int64_t> planned;

 private:
  std::string path_;
  std::mutex mu_;
  std::vector<std::shared_ptr<const store::RedistributionRecord>> kept_;
};

store::Result<store::RankSummary> RunData::RankSummaryOf(int64_t rank, int64_t timed_step) const {
  return RankSummaryTask(rank, timed_step)();
}

std::function<store::Result<store::RankSummary>()> RunData::RankSummaryTask(
    int64_t rank, int64_t timed_step) const {
  return [details = details, rank, timed_step]() -> store::Result<store::RankSummary> {
    if (details == nullptr)
      return store::Status(store::StatusCode::kNotFound,
                           "rank summary: the run was not read from a file");
    return details->RankSummary(rank, timed_step);
  };
}

const store::MeshRecord* RunData::Mesh(int64_t id) const { return FindById(meshes, id); }
const store::OperatorRecord* RunData::Operator(int64_t id) const { return FindById(operators, id); }
const store::TensorRecord* RunData::Tensor(int64_t id) const { return FindById(tensors, id); }
const store::RedistributionRecord* RunData::Redistribution(int64_t id) const {
  return FindById(redistributions, id);
}
const store::OperatorRecord* RunData::OperatorNamed(const std::string& name) const {
  for (const auto& op : operators) {
    if (op.name == name) return &op;
  }
  return nullptr;
}
const store::TensorRecord* RunData::TensorNamed(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::shared_ptr<const store::RedistributionRecord> RunData::RedistributionInFull(int64_t id) const {
  const store::RedistributionRecord* light = Redistribution(id);
  if (!light) return nullptr;
  if (!details) return {std::shared_ptr<void>(), light};  // complete already; not owned
  return details->Redistribution(id);
}

int64_t RunData::PlannedRecvBytesPerStep() const {
  if (!details) return store::PlannedRecvBytesPerStep(run.devices, redistributions, send_recvs);
  std::lock_guard<std::mutex> lock(details->planned_mu);
  if (!details->planned) {
    auto all = details->AllRedistributions();
    details->planned =
        store::PlannedRecvBytesPerStep(run.devices, all ? *all : redistributions, send_recvs);
  }
  return *details->planned;
}

store::Result<RunData> LoadRunData(const store::RunReader& reader) {
  RunData data;
  data.details = std::make_shared<RunDetails>(reader.path());
  VIEWER_ASSIGN(data.run, reader.Run());
  VIEWER_ASSIGN(data.counts, reader.Counts());
  VIEWER_ASSIGN(data.meshes, reader.Meshes());
  VIEWER_ASSIGN(data.operators, reader.Operators(true));
  VIEWER_ASSIGN(data.tensors, reader.Tensors());
  VIEWER_ASSIGN(data.edges, reader.Edges());
  VIEWER_ASSIGN(data.redistributions, reader.Redistributions(true, /*per_rank=*/false));
  VIEWER_ASSIGN(data.send_recvs, reader.SendRecvs());
  VIEWER_ASSIGN(data.steps, reader.Steps(std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max(), true));
  VIEWER_ASSIGN(data.rank_totals, reader.RankTotals());
  VIEWER_ASSIGN(data.pipeline_spans, reader.PipelineSpans());
  SortById(&data.meshes);
  SortById(&data.operators);
  SortById(&data.tensors);
  SortById(&data.redistributions);
  return data;
}

size_t CountOperatorsInScope(const RunData& run, const std::string& scope) {
  size_t count = 0;
  for (const auto& op : run.operators) {
    if (op.scope == scope || op.scope.rfind(scope + ".", 0) == 0) ++count;
  }
  return count;
}

store::Result<std::unique_ptr<RunDocument>> RunDocument::Open(const std::string& path) {
  std::unique_ptr<RunDocument> doc(new RunDocument());
  doc->path_ = path;
  if (store::Status st = doc->Reload(); !st.ok()) return st;
  return doc;
}

store::Status RunDocument::Reload() {
  auto reader = store::RunReader::Open(path_);  // closed again when this returns
  if (!reader.ok()) return reader.status();
  auto data = LoadRunData(**reader);
  if (!data.ok()) return data.status();
  data_ = std::move(data).value();
  live_ = (*reader)->IsLive();
  return store::Status::Ok();
}

std::string RunDocument::Summary() const {
  auto reader = store::RunReader::Open(path_);
  auto text = reader.ok() ? store::FormatRunSummary(**reader) : reader.status();
  return text.ok() ? *text : "cannot summarise " + path_ + ": " + text.status().message();
}

}  // namespace shardscope::viewer
