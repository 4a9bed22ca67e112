#include "cli/train_report.h"

#include <cstdio>
#include <memory>
#include <mutex>

#include "cli/usage.h"

namespace shardscope::cli {
namespace {

struct Report {
  std::mutex mu;  // in-process devices are threads; only rank 0's writes, but be safe
  bool wanted = false;
  std::unique_ptr<StdoutToStderr> console;  // while wanted
  nlohmann::ordered_json json;
};

Report& The() {
  static Report report;
  return report;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void BeginTrainReport(bool wanted) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  r.wanted = wanted;
  r.json = nlohmann::ordered_json::object();
  if (wanted) r.console = std::make_unique<StdoutToStderr>();
}

void ReportRunInfo(const store::RunInfo& info) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted) return;
  r.json["model"] = info.name;
  r.json["model_path"] = info.model_path;
  r.json["backend"] = info.backend;
  r.json["devices"] = info.devices;
  r.json["search"] = info.search;
  r.json["config"] = nlohmann::ordered_json::parse(info.config_json, nullptr, false);
  r.json["epoch_mean_loss"] = nlohmann::ordered_json::array();
}

void ReportEpoch(int64_t epoch, double mean_loss) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted) return;
  r.json["epoch_mean_loss"].push_back({{"epoch", epoch}, {"loss", mean_loss}});
}

void ReportResult(int64_t steps, double seconds, double step_seconds, double accuracy,
                  int64_t test_examples) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted) return;
  r.json["steps"] = steps;
  r.json["seconds"] = seconds;
  r.json["step_seconds"] = step_seconds;
  r.json["test_accuracy"] = accuracy;
  r.json["test_examples"] = test_examples;
}

void ReportRanks(const std::string& word, const std::vector<std::string>& names,
                 const std::vector<float>& all, double per) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted || names.empty()) return;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (size_t k = 0; k * names.size() < all.size(); ++k) {
    nlohmann::ordered_json row = {{word, k}};
    for (size_t i = 0; i < names.size(); ++i) {
      const double v = all[k * names.size() + i];
      row[names[i]] = EndsWith(names[i], "_per_step") && per > 0 ? v / per : v;
    }
    ranks.push_back(row);
  }
  r.json[word + "s"] = ranks;
}

void ReportEnding(const std::string& status, const std::string& message,
                  const std::string& run_file) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted) return;
  r.json["status"] = status;
  if (!message.empty()) r.json["message"] = message;
  r.json["run_file"] =
      run_file.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(run_file);
}

int EndTrainReport(int code) {
  Report& r = The();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.wanted) return code;
  r.wanted = false;
  r.console.reset();
  // Only rank 0 reports, and only a run that started (bad input: the error on stderr says it).
  if (!r.json.contains("model")) return code;
  if (!r.json.contains("status")) r.json["status"] = code == 0 ? "completed" : "failed";
  r.json["exit_code"] = code;
  std::printf("%s\n", r.json.dump(2).c_str());
  std::fflush(stdout);
  return code;
}

}  // namespace shardscope::cli
