// SPDX-License-Identifier: GPL-2.0-or-later
// chart.hpp - free nodes over time, drawn for a terminal and as SVG, one
// panel per cluster on a common time axis, so gaps line up across clusters.

#ifndef FLEXCO_SRESERVE_CHART_HPP
#define FLEXCO_SRESERVE_CHART_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace sreserve {

struct Step {
  std::int64_t start = 0;  // [start, end), UTC epoch seconds
  std::int64_t end = 0;
  std::int64_t free = 0;   // free nodes over the step
};

struct Series {
  std::string name;          // cluster
  std::string label;         // e.g. "partition batch, 4 nodes published"
  std::int64_t capacity = 0; // published nodes: the top of the y axis
  std::vector<Step> steps;   // in time order; time outside them counts as 0
};

struct ChartOptions {
  std::int64_t begin = 0;  // left edge of the time axis
  std::int64_t end = 0;    // right edge (> begin)
  int width = 60;          // plot columns (terminal), >= 10
  int max_rows = 10;       // at most this many rows per panel (terminal)
};

// Lowest free value over [a, b) (0 where no step covers it).
std::int64_t min_free(const Series& s, std::int64_t a, std::int64_t b);

// The terminal chart: per cluster a title line, rows from the capacity
// down to 1 where column c shows '#' if at least that many nodes are free
// during the whole of its time slice (the minimum over the slice, so a gap
// is never hidden), a time axis with local clock labels, and a closing
// line saying what a column is.
std::string render_chart(const std::vector<Series>& series, const ChartOptions& opt);

// The same data as a standalone SVG document (exact step functions, not
// sampled); with several clusters a first panel overlays them all, one
// coloured line each (<g class="overlay">), above the per-cluster panels
// (<g class="cluster" id="NAME">).
std::string render_svg(const std::vector<Series>& series, const ChartOptions& opt);

// For SVG writers (this chart and gantt.cpp's): text escaped for XML
// attributes and content, and a coordinate with one decimal.
std::string svg_escape(const std::string& s);
std::string svg_num(double v);

}  // namespace sreserve

#endif
