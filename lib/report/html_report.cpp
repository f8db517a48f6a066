// html_report.cpp: render_html (see html_report.h).
#include "report/html_report.h"

#include "report/svg_chart.h"
#include "report/tables.h"

namespace gradshare::report {

namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin-top: 20px; }
.meta, .absent, .empty { color: #666; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure.chart-figure { margin: 0; background: #fff; border: 1px solid #ddd; }
figure.chart-figure figcaption { font-size: 11px; text-align: right; padding: 0 6px 4px 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; }
td:first-child, th:first-child, table.events td:last-child { text-align: left; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px; }
pre.config { background: #fff; border: 1px solid #ddd; padding: 8px; font-size: 12px; overflow: auto; }
)";

std::string figures(const ChartGroup& group, const std::string& stem) {
  std::string html = "<div class=\"charts\">\n";
  for (const auto& spec : group.charts) {
    html += "<figure class=\"chart-figure\" id=\"chart-" + xml_escape(spec.id) + "\">\n";
    html += render_svg(lay_out(spec));
    html += "<figcaption><a href=\"" + xml_escape(png_name(stem, spec.id)) + "\">PNG</a></figcaption>\n</figure>\n";
  }
  html += "</div>\n";
  if (!group.absent.empty()) {
    std::string names;
    for (const auto& title : group.absent) names += (names.empty() ? "" : ", ") + title;
    html += "<p class=\"absent\">No data in " + std::string(group.charts.empty() ? "the metrics" : "these runs") +
            " for: " + xml_escape(names) + ".</p>\n";
  }
  return html;
}

// row_class names each body row; first_cells, when given, replaces the first cell's text.
std::string table_html(const Table& table, const std::string& css_class, const std::string& row_class,
                       const std::vector<std::string>& first_cells = {}) {
  std::string html = "<div class=\"scroll\"><table class=\"" + css_class + "\">\n<thead><tr>";
  for (const auto& column : table.columns) html += "<th>" + xml_escape(column) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    html += "<tr class=\"" + row_class + "\">";
    for (std::size_t c = 0; c < table.rows[r].size(); ++c)
      html += "<td>" + (c == 0 && r < first_cells.size() ? first_cells[r] : xml_escape(table.rows[r][c])) + "</td>";
    html += "</tr>\n";
  }
  return html + "</tbody></table></div>\n";
}

}  // namespace

std::string png_name(const std::string& page_stem, const std::string& chart_id) {
  return page_stem + "-" + chart_id + ".png";
}

std::string render_html(const std::vector<RunData>& runs, const ReportCharts& charts, const std::string& stem) {
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : ", ") + run.name();
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gradshare report: " +
                     xml_escape(names) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>gradshare run report</h1>\n<p class=\"meta\">" + std::to_string(runs.size()) +
          (runs.size() == 1 ? " run" : " runs overlaid, one colour each") + "; written by gradshare " +
          GRADSHARE_VERSION + ". Hover over an event line for what happened.</p>\n";

  html += "<h2>Runs</h2>\n";
  std::vector<std::string> swatches;
  for (std::size_t i = 0; i < runs.size(); ++i)
    swatches.push_back("<span class=\"swatch\" style=\"background:" + series_color(i) + "\"></span>" +
                       xml_escape(runs[i].name()));
  html += table_html(runs_table(runs), "runs", "run", swatches);

  for (const auto& group : charts.overlay) html += "<h2>" + xml_escape(group.heading) + "</h2>\n" + figures(group, stem);

  html += "<h2>Events</h2>\n";
  const Table events = events_table(runs);
  html += events.rows.empty() ? "<p class=\"empty\">No checkpoints, recoveries, resizes, resumes or stops.</p>\n"
                              : table_html(events, "events", "event");

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunData& run = runs[i];
    html += "<section class=\"run\" id=\"run-" + std::to_string(i + 1) + "\">\n<h2><span class=\"swatch\" style=\"background:" +
            series_color(i) + "\"></span>" + xml_escape(run.name()) + "</h2>\n<p class=\"meta\">" +
            xml_escape(run.directory()) + "</p>\n<h3>Workers</h3>\n";
    const Table workers = workers_table(run);
    html += workers.rows.empty() ? "<p class=\"empty\">No worker ranks (no rank logs beside rank 0's).</p>\n"
                                 : table_html(workers, "workers", "worker");
    html += "<h3>Encoding debug</h3>\n";
    const ChartGroup& debug = charts.per_run[i];
    html += debug.charts.empty()
                ? "<p class=\"empty\">No encoding_debug records (gradient sharing with logging.encoding_debug: "
                  "true records τ, sparsity, formats, residual, clipped mass, shake-ups, bytes and staleness "
                  "per worker).</p>\n"
                : figures(debug, stem);
    html += "<h3>Resolved config</h3>\n";
    html += run.config_text().empty() ? "<p class=\"empty\">No config.yaml in the run directory.</p>\n"
                                      : "<pre class=\"config\">" + xml_escape(run.config_text()) + "</pre>\n";
    html += "</section>\n";
  }
  return html + "</body>\n</html>\n";
}

}  // namespace gradshare::report
