// tables.cpp: runs_table, workers_table, events_table (see tables.h).
#include "report/tables.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

namespace gradshare::report {

namespace {

const std::string kNone = "-";

std::string fmt(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string count(std::size_t n) { return std::to_string(n); }

// The ranks in a recovery record's "[1,3]".
std::vector<int> rank_list(const std::string& text) {
  std::vector<int> ranks;
  int value = -1;
  for (char c : text + ",") {
    if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
    } else if (value >= 0) {
      ranks.push_back(value);
      value = -1;
    }
  }
  return ranks;
}

std::string bytes_per_worker_step(const RunData& run) {
  for (const char* kind : {"sharing_summary", "averaging_summary", "downpour_summary"}) {
    const auto summaries = run.of_kind(kind);
    if (summaries.empty()) continue;
    if (const auto bytes = summaries.back()->fields.number_at("bytes_per_worker_step")) return fmt("%.0f", *bytes);
  }
  const auto points = run.series("step", "bytes_per_worker_step", Axis::kStep);
  if (points.empty()) return kNone;
  double sum = 0;
  for (const auto& p : points) sum += p.y;
  return fmt("%.0f", sum / static_cast<double>(points.size()));
}

std::string final_accuracy(const RunData& run) {
  const auto finals = run.of_kind("final");
  if (!finals.empty())
    if (const auto a = finals.back()->fields.number_at("test_accuracy")) return fmt("%.2f %%", 100 * *a);
  const auto epochs = run.of_kind("epoch");
  if (!epochs.empty())
    if (const auto a = epochs.back()->fields.number_at("test_accuracy"))
      return fmt("%.2f %% (last epoch)", 100 * *a);
  return kNone;
}

// Totals of one worker's encoding_debug records.
struct DebugTotals {
  int reports = 0;
  double steps = 0, messages = 0, sparse = 0, bitmap = 0, compressed = 0, bytes = 0;
  double weighted_sparsity = 0, clipped = 0, shake_ups = 0, backpressure = 0, capped = 0;
  double tau_min = std::numeric_limits<double>::infinity(), tau_max = 0;
  double residual_l2 = 0, residual_max = 0;
};

DebugTotals debug_totals(const RunData& run, int rank) {
  DebugTotals t;
  for (const Record* r : run.of_kind("encoding_debug")) {
    const auto& f = r->fields;
    if (f.number_at("rank") != static_cast<double>(rank)) continue;
    const auto get = [&](const char* key) { return f.number_at(key).value_or(0); };
    ++t.reports;
    t.steps += get("steps");
    t.messages += get("messages");
    t.sparse += get("sparse");
    t.bitmap += get("bitmap");
    t.compressed += get("compressed");
    t.bytes += get("bytes");
    t.weighted_sparsity += get("sparsity") * get("messages");
    t.clipped += get("clipped_mass");
    t.shake_ups += get("shake_ups");
    t.backpressure += get("backpressure");
    t.capped += get("capped");
    if (get("messages") > 0) {
      t.tau_min = std::min(t.tau_min, get("tau_min"));
      t.tau_max = std::max(t.tau_max, get("tau_max"));
    }
    t.residual_l2 = get("residual_l2");
    t.residual_max = get("residual_max_abs");
  }
  return t;
}

}  // namespace

Table runs_table(const std::vector<RunData>& runs) {
  Table table{{"run", "strategy", "workers", "epochs", "steps", "time (s)", "final test accuracy",
               "bytes/worker/step", "checkpoints", "recoveries", "sessions"},
              {}};
  for (const auto& run : runs) {
    double steps = 0, time = 0;
    for (const auto& r : run.records()) {
      steps = std::max(steps, r.fields.number_at("step").value_or(0));
      time = std::max(time, r.time.value_or(0));
    }
    const std::string strategy = run.config_value("training.strategy");
    const std::string epochs = run.config_value("training.epochs");
    table.rows.push_back({run.name(), strategy.empty() ? "?" : strategy, count(run.worker_ranks().size()),
                          count(run.of_kind("epoch").size()) + (epochs.empty() ? "" : " / " + epochs),
                          fmt("%.0f", steps), fmt("%.1f", time), final_accuracy(run),
                          bytes_per_worker_step(run), count(run.of_kind("checkpoint").size()),
                          count(run.of_kind("recovery").size()),
                          count(run.records().empty() ? 0 : static_cast<std::size_t>(run.records().back().session + 1))});
  }
  return table;
}

Table workers_table(const RunData& run) {
  const bool debug = !run.of_kind("encoding_debug").empty();
  std::map<int, const Record*> staleness;
  for (const Record* r : run.of_kind("worker_staleness"))
    if (const auto rank = r->fields.number_at("rank")) staleness[static_cast<int>(*rank)] = r;
  const auto recoveries = run.of_kind("recovery");

  Table table;
  table.columns = {"rank", "log lines", "warnings", "errors"};
  if (debug)
    table.columns.insert(table.columns.end(),
                         {"reports", "steps", "messages", "sparse / bitmap / compressed", "τ range",
                          "mean sparsity", "bytes/step", "residual L2 (last)", "max |r| (last)", "clipped mass",
                          "shake-ups", "back-pressure", "capped"});
  if (!staleness.empty())
    table.columns.insert(table.columns.end(), {"staleness mean", "staleness max", "held by bound (s)"});
  if (!recoveries.empty()) table.columns.push_back("recoveries");

  for (int rank : run.worker_ranks()) {
    std::vector<std::string> row = {std::to_string(rank)};
    const auto log = run.rank_logs().find(rank);
    if (log == run.rank_logs().end()) {
      row.insert(row.end(), {"no log", kNone, kNone});
    } else {
      row.insert(row.end(), {std::to_string(log->second.lines), std::to_string(log->second.warnings),
                             std::to_string(log->second.errors)});
    }
    if (debug) {
      const DebugTotals t = debug_totals(run, rank);
      if (t.reports == 0) {
        row.insert(row.end(), 13, kNone);
      } else {
        row.insert(row.end(),
                   {std::to_string(t.reports), fmt("%.0f", t.steps), fmt("%.0f", t.messages),
                    fmt("%.0f", t.sparse) + " / " + fmt("%.0f", t.bitmap) + " / " + fmt("%.0f", t.compressed),
                    t.tau_max > 0 ? fmt("%.2e", t.tau_min) + " .. " + fmt("%.2e", t.tau_max) : kNone,
                    t.messages > 0 ? fmt("%.2e", t.weighted_sparsity / t.messages) : kNone,
                    t.steps > 0 ? fmt("%.0f", t.bytes / t.steps) : kNone, fmt("%.3g", t.residual_l2),
                    fmt("%.3g", t.residual_max), fmt("%.3g", t.clipped), fmt("%.0f", t.shake_ups),
                    fmt("%.0f", t.backpressure), fmt("%.0f", t.capped)});
      }
    }
    if (!staleness.empty()) {
      const auto found = staleness.find(rank);
      if (found == staleness.end()) {
        row.insert(row.end(), 3, kNone);
      } else {
        const auto& f = found->second->fields;
        row.insert(row.end(), {fmt("%.2f", f.number_at("staleness_mean").value_or(0)),
                               fmt("%.0f", f.number_at("staleness_max").value_or(0)),
                               fmt("%.2f", f.number_at("wait_seconds").value_or(0))});
      }
    }
    if (!recoveries.empty()) {
      std::string text;
      for (const Record* r : recoveries) {
        const std::string when = r->time ? fmt(" at %.1f s", *r->time) : "";
        const auto lost = rank_list(r->fields.string_at("lost").value_or(""));
        const auto replaced = rank_list(r->fields.string_at("replaced").value_or(""));
        const auto has = [rank](const std::vector<int>& ranks) {
          return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
        };
        if (has(lost)) text += (text.empty() ? "" : "; ") + std::string("lost") + when + (has(replaced) ? ", replaced" : "");
        else if (has(replaced)) text += (text.empty() ? "" : "; ") + std::string("replacement") + when;
      }
      row.push_back(text.empty() ? kNone : text);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table events_table(const std::vector<RunData>& runs) {
  Table table;
  if (runs.size() > 1) table.columns.push_back("run");
  table.columns.insert(table.columns.end(), {"time (s)", "step", "event", "what"});
  struct Row {
    double time;
    std::vector<std::string> cells;
  };
  std::vector<Row> rows;
  for (const auto& run : runs)
    for (const auto& e : run.events()) {
      Row row{e.time, {}};
      if (runs.size() > 1) row.cells.push_back(run.name());
      row.cells.insert(row.cells.end(),
                       {fmt("%.1f", e.time), e.step ? fmt("%.0f", *e.step) : kNone, e.kind, e.detail});
      rows.push_back(std::move(row));
    }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.time < b.time; });
  for (auto& row : rows) table.rows.push_back(std::move(row.cells));
  return table;
}

}  // namespace gradshare::report
