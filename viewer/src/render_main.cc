// shardscope-render: draws one view of a run file into an SVG or PNG, without a display.
// `shardscope render ...` runs this binary (it must sit next to bin/shardscope).
#include <CLI/CLI.hpp>
#include <QFileInfo>
#include <QGuiApplication>
#include <cstdio>
#include <cstdlib>

#include "shardscope/store/display_text.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/render.h"
#include "shardscope/viewer/run_document.h"

namespace {

constexpr int kBadInput = 2;  // exit codes: 0 ok, 1 run failure, 2 bad input

int Fail(int code, const std::string& message) {
  const std::string shown = shardscope::store::EscapeControls(message);
  std::fprintf(stderr, "shardscope render: %s\n", shown.c_str());
  return code;
}
int Fail(const shardscope::store::Status& status) {
  return Fail(shardscope::store::IsBadInput(status.code()) ? kBadInput : 1, status.message());
}

// "--step: must be at least 0, got -1" (integers only here).
CLI::Validator AtLeast(int64_t minimum) {
  return CLI::Validator(
      [minimum](std::string& input) -> std::string {
        int64_t value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "expects an integer, got " + input;
        return value >= minimum ? std::string()
                                : "must be at least " + std::to_string(minimum) + ", got " + input;
      },
      ">= " + std::to_string(minimum));
}

}  // namespace

int main(int argc, char** argv) {
  namespace viewer = shardscope::viewer;
  CLI::App app{"Draw one view of a run file into an SVG or PNG picture (no display needed).",
               "shardscope render"};
  app.footer(R"(Views:
  graph                   the operator graph (dot layout), redistributions in orange;
                          repeated layers fold (--expand layer5 draws one in full)
  mesh [ID|NAME]          a device matrix (default: the largest mesh); --axis highlights groups
  tensor NAME             a tensor's blocks and the ranks holding them; --rank: one rank's view
  redistribution ID       one step of a redistribution plan: maps before/after, who exchanges
                          what, bytes against the lower bound (--step K, from 0)
  timeline                the pipeline timeline of a placed run (place(), --micro-batches):
                          one lane per worker, forward/backward boxes per micro-batch, the
                          measured bubble next to (p-1)/(m+p-1) (--step K; default: the last step);
                          with --rank R, an SPMD run's rank R: compute and communication per
                          instruction of a step timed by train --timing-every (default: the last)
  loss                    the loss per training step
  steptime                the step time per step (the slowest rank's wall time) with its
                          compute and communication (max over ranks), in ms
  memory                  memory per rank: parameters, gradients, optimizer states and
                          activations stacked (the largest over the steps), in KiB/MiB/GiB

Examples:
  shardscope render runs/ffn.db --view graph --out graph.svg
  shardscope render runs/ffn.db --view graph --color-by memory --forward-only --out g.png
  shardscope render runs/ffn.db --view graph --partitioned --out workers.svg
  shardscope render runs/gpt136.db --view graph --expand layer70 --scale 0.5 --out g.png
  shardscope render runs/ffn.db --view mesh --axis mp --out mesh.png
  shardscope render runs/ffn.db --view tensor dense1.weight --rank 3 --out w.svg
  shardscope render runs/ffn.db --view redistribution 0 --step 1 --out r0.png
  shardscope render runs/lenet5_place.db --view timeline --step 3 --out pipeline.svg
  shardscope render runs/ffn.db --view timeline --rank 3 --out rank3.png
  shardscope render runs/ffn.db --view steptime --out steptime.png
Tensor and operator names and redistribution ids: `shardscope inspect RUN`.
Exit codes: 0 ok; 2 bad input (unknown view, name or format; a run file that is missing,
damaged or not a run file); 1 other failures (the picture could not be written).)");
  std::string run_path, out;
  std::vector<std::string> view;
  viewer::RenderRequest request;
  std::string color_by = "strategy";
  std::vector<std::string> expand;
  bool forward_only = false;
  double png_scale = 2;
  app.add_option("run", run_path, "Run file (runs/*.db)")->required();
  app.add_option("--view", view,
                 "graph | mesh [ID] | tensor NAME | redistribution ID | timeline | loss | "
                 "steptime | memory")
      ->required()
      ->expected(1, 2);
  app.add_option("--out", out, "Output picture: *.svg or *.png")->required();
  app.add_option("--scale", png_scale, "PNG pixels per point (default 2; 0.5 for a thumbnail)")
      ->check(CLI::Range(0.05, 8.0));
  app.add_option("--step", request.step,
                 "redistribution: the step to show (0, 1, ...); timeline: the training step")
      ->check(AtLeast(0));
  app.add_option("--rank", request.rank,
                 "tensor: show what this rank holds; mesh: outline it; timeline: this rank's\n"
                 "program (SPMD runs)")
      ->check(AtLeast(0));
  app.add_option("--axis", request.axis,
                 "mesh: highlight the rank groups along these axes (dp,mp)");
  app.add_option("--color-by", color_by, "graph: strategy | worker | memory")
      ->check(CLI::IsMember({"strategy", "worker", "memory"}));
  app.add_flag("--forward-only", forward_only, "graph: leave the backward operators out");
  app.add_flag("--partitioned", request.graph.partitioned,
               "graph: one cluster per place() worker with its send/receive edges");
  app.add_option("--collapse-above", request.graph.collapse_above,
                 "graph: collapse name scopes with more operators than this (default 40)")
      ->check(AtLeast(1));
  app.add_option("--expand", expand, "graph: name scopes to show in full even when large");
  app.add_option("--filter", request.graph.filter,
                 "graph: only operators whose name contains this");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kBadInput;  // --help is not an error
  }
  const std::string format =
      QFileInfo(QString::fromStdString(out)).suffix().toLower().toStdString();
  if (format != "svg" && format != "png") {
    return Fail(kBadInput, out + ": unknown picture format '" + format + "': use .svg or .png");
  }

  // Headless whatever the environment: the offscreen platform needs no display.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication qt(argc, argv);

  request.view = view[0];
  if (request.view == "timeline" && app.count("--step") == 0) request.step = -1;  // the last
  if (view.size() > 1) request.target = view[1];
  if ((request.view == "tensor" || request.view == "redistribution") && request.target.empty()) {
    return Fail(kBadInput, "--view " + request.view + " needs a " +
                               (request.view == "tensor" ? "tensor name (e.g. --view tensor "
                                                           "dense1.weight)"
                                                         : "redistribution id (e.g. --view "
                                                           "redistribution 0)"));
  }
  request.graph.color_by = color_by == "worker"   ? viewer::ColorBy::kWorker
                           : color_by == "memory" ? viewer::ColorBy::kMemory
                                                  : viewer::ColorBy::kStrategy;
  request.graph.show_backward = !forward_only;
  request.graph.expanded.insert(expand.begin(), expand.end());

  auto doc = viewer::RunDocument::Open(run_path);
  if (!doc.ok()) return Fail(doc.status());
  auto scene = viewer::RenderView((*doc)->data(), request);
  if (!scene.ok()) {
    return Fail(shardscope::store::Status(scene.status().code(),
                                          run_path + ": " + scene.status().message()));
  }
  const auto saved = viewer::SaveScene(*scene, out, png_scale);
  if (!saved.ok()) return Fail(saved);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
