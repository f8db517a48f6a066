// report_charts.cpp: build_charts and the chart definitions (see report_charts.h).
#include "report/report_charts.h"

#include <set>

namespace gradshare::report {

namespace {

// One series of a chart: a field of the records of one kind.
struct Source {
  const char* kind;
  const char* field;
  const char* name;
  Stroke stroke = Stroke::kSolid;
};

struct Definition {
  const char* id;
  const char* title;
  const char* y_label;
  Axis axis;
  std::vector<Source> sources;
  bool log_y = false;
  bool y_from_zero = false;
};

const char* x_label(Axis axis) { return axis == Axis::kTime ? "time (s)" : "step"; }

std::vector<Definition> training_definitions() {
  const std::vector<Source> loss = {{"step", "loss", "train"},
                                    {"epoch", "test_loss", "test", Stroke::kDashed},
                                    {"epoch", "validation_loss", "validation", Stroke::kDotted}};
  const std::vector<Source> accuracy = {{"step", "train_accuracy", "train"},
                                        {"epoch", "test_accuracy", "test", Stroke::kDashed},
                                        {"epoch", "validation_accuracy", "validation", Stroke::kDotted}};
  return {{"loss-time", "Loss against time", "loss", Axis::kTime, loss},
          {"loss-step", "Loss against step", "loss", Axis::kStep, loss},
          {"accuracy-time", "Accuracy against time", "accuracy", Axis::kTime, accuracy},
          {"accuracy-step", "Accuracy against step", "accuracy", Axis::kStep, accuracy}};
}

std::vector<Definition> communication_definitions() {
  return {{"samples", "Samples per second", "samples/s", Axis::kTime,
           {{"step", "samples_per_second", "samples/s"}}, false, true},
          {"tau", "Threshold τ range", "τ", Axis::kTime,
           {{"step", "tau_max", "τ max"}, {"step", "tau_min", "τ min", Stroke::kDashed}}, true},
          {"sparsity", "Sparsity (entries sent / parameters)", "sparsity", Axis::kTime,
           {{"step", "sparsity", "sparsity"}}, true},
          {"bytes", "Bytes per worker per step", "bytes", Axis::kTime,
           {{"step", "bytes_per_worker_step", "bytes"}}, true},
          {"staleness", "Staleness of applied updates", "steps", Axis::kTime,
           {{"step", "staleness_mean", "mean"}, {"step", "staleness_max", "max", Stroke::kDashed}}, false, true},
          {"backpressure", "Back-pressure (steps per logging window)", "steps", Axis::kTime,
           {{"step", "backpressure", "back-pressure"}, {"step", "capped_messages", "capped", Stroke::kDashed}},
           false, true}};
}

std::vector<Definition> encoding_debug_definitions() {
  const char* k = "encoding_debug";
  return {{"enc-tau", "τ range per worker", "τ", Axis::kStep,
           {{k, "tau_max", "max"}, {k, "tau_min", "min", Stroke::kDashed}}, true},
          {"enc-sparsity", "Sparsity per worker", "sparsity", Axis::kStep, {{k, "sparsity", ""}}, true},
          {"enc-residual", "Residual per worker: L2 norm and max |r|", "residual", Axis::kStep,
           {{k, "residual_l2", "L2"}, {k, "residual_max_abs", "max |r|", Stroke::kDashed}}, true},
          {"enc-bytes", "Bytes per step per worker", "bytes", Axis::kStep, {{k, "bytes_per_step", ""}}, false, true},
          {"enc-clipped", "Clipped mass per worker", "clipped mass", Axis::kStep, {{k, "clipped_mass", ""}}, false,
           true},
          {"enc-shake-ups", "Shake-ups per worker", "shake-ups", Axis::kStep, {{k, "shake_ups", ""}}, false, true},
          {"enc-staleness", "Staleness per worker", "steps", Axis::kStep,
           {{k, "staleness_mean", "mean"}, {k, "staleness_max", "max", Stroke::kDashed}}, false, true},
          {"enc-backpressure", "Back-pressure and capped messages per worker", "steps", Axis::kStep,
           {{k, "backpressure", "back-pressure"}, {k, "capped", "capped", Stroke::kDashed}}, false, true}};
}

std::string joined(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

ChartSpec empty_chart(const Definition& d, const std::string& id) {
  ChartSpec spec;
  spec.id = id;
  spec.title = d.title;
  spec.x_label = x_label(d.axis);
  spec.y_label = d.y_label;
  spec.log_y = d.log_y;
  spec.y_from_zero = d.y_from_zero;
  return spec;
}

void add_events(ChartSpec& spec, const std::vector<RunData>& runs) {
  for (const auto& run : runs)
    for (const auto& event : run.events()) {
      std::string tooltip = event.kind + " at " + std::to_string(static_cast<long long>(event.time)) + " s";
      if (runs.size() > 1) tooltip = run.name() + ": " + tooltip;
      spec.markers.push_back({event.time, event_color(event.kind), event.kind, tooltip + ": " + event.detail});
    }
}

ChartGroup overlay_group(const std::string& heading, const std::vector<Definition>& definitions,
                         const std::vector<RunData>& runs) {
  ChartGroup group{heading, {}, {}};
  for (const auto& d : definitions) {
    ChartSpec spec = empty_chart(d, d.id);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      bool any = false;
      for (const auto& source : d.sources) {
        auto points = runs[r].series(source.kind, source.field, d.axis);
        if (points.empty()) continue;
        any = true;
        spec.series.push_back({runs.size() > 1 ? joined(runs[r].name(), source.name) : source.name,
                               series_color(r), source.stroke, std::move(points)});
      }
      if (!any && runs.size() > 1) spec.notes.push_back(runs[r].name() + ": no data");
    }
    if (!spec.has_data()) {
      group.absent.push_back(d.title);
      continue;
    }
    if (d.axis == Axis::kTime) add_events(spec, runs);
    group.charts.push_back(std::move(spec));
  }
  return group;
}

ChartGroup encoding_debug_group(const RunData& run, std::size_t index) {
  ChartGroup group{"Encoding debug: " + run.name(), {}, {}};
  std::set<int> ranks;
  for (const Record* record : run.of_kind("encoding_debug"))
    if (const auto rank = record->fields.number_at("rank")) ranks.insert(static_cast<int>(*rank));
  if (ranks.empty()) return group;
  for (const auto& d : encoding_debug_definitions()) {
    ChartSpec spec = empty_chart(d, "run" + std::to_string(index + 1) + "-" + d.id);
    std::size_t w = 0;
    for (int rank : ranks) {
      for (const auto& source : d.sources) {
        auto points = run.series(source.kind, source.field, d.axis, rank);
        if (!points.empty())
          spec.series.push_back({joined("rank " + std::to_string(rank), source.name), series_color(w), source.stroke,
                                 std::move(points)});
      }
      ++w;
    }
    if (spec.has_data()) group.charts.push_back(std::move(spec));
    else group.absent.push_back(d.title);
  }
  return group;
}

}  // namespace

const std::string& series_color(std::size_t index) {
  static const std::vector<std::string> palette = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  return palette[index % palette.size()];
}

std::string event_color(const std::string& kind) {
  if (kind == "checkpoint") return "#a0a0a0";
  if (kind == "recovery") return "#b00020";
  if (kind == "resize") return "#e08000";
  if (kind == "resume") return "#6a3d9a";
  if (kind == "restart") return "#d0a000";
  if (kind == "early stop") return "#2ca02c";
  return "#000000";  // stop
}

ReportCharts build_charts(const std::vector<RunData>& runs) {
  ReportCharts charts;
  charts.overlay.push_back(overlay_group("Training", training_definitions(), runs));
  charts.overlay.push_back(overlay_group("Throughput and communication", communication_definitions(), runs));
  for (std::size_t i = 0; i < runs.size(); ++i) charts.per_run.push_back(encoding_debug_group(runs[i], i));
  return charts;
}

}  // namespace gradshare::report
