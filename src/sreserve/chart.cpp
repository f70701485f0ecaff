// SPDX-License-Identifier: GPL-2.0-or-later
// chart.cpp - terminal and SVG charts of free nodes over time.

#include "sreserve/chart.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "sreserve/timefmt.hpp"

namespace sreserve {

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

namespace {

// Column i covers [col_start(i), col_start(i + 1)).
std::int64_t col_start(const ChartOptions& o, int i) {
  return o.begin + (o.end - o.begin) * i / o.width;
}


struct Ticks {
  bool with_date = false;
  int spacing = 10;  // columns between labels (terminal)
};

Ticks ticks_for(const ChartOptions& o) {
  Ticks t;
  t.with_date = o.end - o.begin > 86400;
  t.spacing = t.with_date ? 15 : 10;
  return t;
}

}  // namespace

std::int64_t min_free(const Series& s, std::int64_t a, std::int64_t b) {
  if (b <= a) b = a + 1;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t covered_to = a;
  for (const auto& st : s.steps) {
    if (st.end <= a || st.start >= b) continue;
    if (st.start > covered_to) return 0;  // a hole: nothing published there
    lo = std::min(lo, st.free);
    covered_to = std::max(covered_to, st.end);
  }
  if (covered_to < b) return 0;
  return lo == std::numeric_limits<std::int64_t>::max() ? 0 : std::max<std::int64_t>(lo, 0);
}

std::string render_chart(const std::vector<Series>& series, const ChartOptions& in) {
  ChartOptions o = in;
  o.width = std::max(o.width, 10);
  o.max_rows = std::max(o.max_rows, 1);
  if (o.end <= o.begin) o.end = o.begin + 1;
  Ticks tk = ticks_for(o);
  std::string out;
  for (const auto& s : series) {
    out += s.name;
    if (!s.label.empty()) out += "  (" + s.label + ")";
    out += "\n";
    std::int64_t cap = std::max<std::int64_t>(s.capacity, 0);
    int lw = static_cast<int>(std::to_string(cap).size());
    if (cap == 0) {
      out += "  publishes no nodes\n";
      continue;
    }
    std::vector<std::int64_t> col(static_cast<std::size_t>(o.width));
    for (int i = 0; i < o.width; ++i)
      col[static_cast<std::size_t>(i)] = min_free(s, col_start(o, i), col_start(o, i + 1));
    int rows = static_cast<int>(std::min<std::int64_t>(cap, o.max_rows));
    for (int r = rows; r >= 1; --r) {
      // the row's threshold: at least this many nodes free
      std::int64_t th = cap <= o.max_rows ? r : (r * cap + rows - 1) / rows;
      std::string label = std::to_string(th);
      std::string line(static_cast<std::size_t>(lw) - label.size(), ' ');
      line += label + " |";
      for (auto v : col) line += v >= th ? '#' : ' ';
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    std::string axis(static_cast<std::size_t>(lw), ' ');
    axis[static_cast<std::size_t>(lw) - 1] = '0';
    axis += " +";
    std::string labels(static_cast<std::size_t>(lw) + 2, ' ');
    for (int i = 0; i < o.width; ++i) {
      bool tick = i % tk.spacing == 0;
      axis += tick ? '+' : '-';
      if (tick) {
        std::string l = format_clock(col_start(o, i), tk.with_date);
        if (i + static_cast<int>(l.size()) <= o.width) {
          labels.resize(static_cast<std::size_t>(lw + 2 + i), ' ');
          labels += l;
        }
      }
    }
    out += axis + "\n" + labels + "\n";
  }
  out += "time " + format_time(o.begin) + " to " + format_time(o.end) + ", one column = " +
         format_duration((o.end - o.begin + o.width - 1) / o.width) +
         "; '#': that many nodes free during the whole column\n";
  return out;
}

std::string render_svg(const std::vector<Series>& series, const ChartOptions& in) {
  ChartOptions o = in;
  if (o.end <= o.begin) o.end = o.begin + 1;
  const double W = 900, left = 60, right = 20, panel = 110, title = 34, bottom = 30;
  const double plot_w = W - left - right;
  std::size_t panels = series.size() > 1 ? series.size() + 1 : series.size();  // + the overlay
  double H = 40 + static_cast<double>(panels) * (panel + title + bottom);
  auto X = [&](std::int64_t t) {
    t = std::clamp(t, o.begin, o.end);
    return left + plot_w * static_cast<double>(t - o.begin) / static_cast<double>(o.end - o.begin);
  };
  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_num(W) + "\" height=\"" + svg_num(H) +
         "\" viewBox=\"0 0 " + svg_num(W) + " " + svg_num(H) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<title>free nodes over time</title>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + svg_num(left) + "\" y=\"20\" font-size=\"14\">free nodes, " +
         svg_escape(format_time(o.begin)) + " to " + svg_escape(format_time(o.end)) + "</text>\n";
  bool with_date = o.end - o.begin > 86400;
  double y0 = 40;
  if (series.size() > 1) {
    // Every cluster on one panel first, one step line each, so the gaps
    // they share are seen at a glance; the per-cluster panels follow.
    static const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
    double top = y0 + title, base = top + panel;
    std::int64_t cap = 1;
    for (const auto& s : series) cap = std::max(cap, s.capacity);
    auto Y = [&](std::int64_t v) { return base - panel * static_cast<double>(v) / static_cast<double>(cap); };
    out += "<g class=\"overlay\" id=\"all-clusters\">\n";
    out += "<text x=\"" + svg_num(left) + "\" y=\"" + svg_num(y0 + 22) + "\" font-weight=\"bold\">all clusters</text>\n";
    double lx = left + 110;
    for (std::size_t k = 0; k < series.size(); ++k) {
      const auto& s = series[k];
      const char* colour = kColours[k % (sizeof kColours / sizeof kColours[0])];
      // The step function as one path: 0 where no step covers the time.
      std::string d;
      std::int64_t t = o.begin;
      auto to = [&](std::int64_t x, std::int64_t v) {
        d += (d.empty() ? "M" : " L") + svg_num(X(x)) + "," + svg_num(Y(v));
      };
      std::int64_t prev = -1;
      for (const auto& st : s.steps) {
        if (st.end <= o.begin || st.start >= o.end) continue;
        std::int64_t a = std::max(st.start, o.begin), b = std::min(st.end, o.end);
        std::int64_t v = std::max<std::int64_t>(st.free, 0);
        if (a > t) {  // a hole: nothing published
          if (prev != 0) to(t, 0);
          to(a, 0);
        }
        to(a, v);
        to(b, v);
        prev = v;
        t = b;
      }
      if (t < o.end) {
        to(t, 0);
        to(o.end, 0);
      }
      out += "<path class=\"free-line\" d=\"" + d + "\" fill=\"none\" stroke=\"" + colour +
             "\" stroke-width=\"2\"><title>" + svg_escape(s.name) +
             "</title></path>\n";
      out += "<rect x=\"" + svg_num(lx) + "\" y=\"" + svg_num(y0 + 12) + "\" width=\"14\" height=\"4\" fill=\"" +
             colour + "\"/><text x=\"" + svg_num(lx + 18) + "\" y=\"" + svg_num(y0 + 22) + "\">" +
             svg_escape(s.name) + "</text>\n";
      lx += 30 + 7.0 * static_cast<double>(s.name.size());
    }
    out += "<line x1=\"" + svg_num(left) + "\" y1=\"" + svg_num(base) + "\" x2=\"" + svg_num(left + plot_w) + "\" y2=\"" +
           svg_num(base) + "\" stroke=\"black\"/>\n";
    out += "<line x1=\"" + svg_num(left) + "\" y1=\"" + svg_num(top) + "\" x2=\"" + svg_num(left) + "\" y2=\"" +
           svg_num(base) + "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + svg_num(left - 6) + "\" y=\"" + svg_num(top + 4) + "\" text-anchor=\"end\">" +
           std::to_string(cap) + "</text>\n";
    out += "<text x=\"" + svg_num(left - 6) + "\" y=\"" + svg_num(base + 4) + "\" text-anchor=\"end\">0</text>\n";
    out += "</g>\n";
    y0 = base + bottom;
  }
  for (const auto& s : series) {
    double top = y0 + title, base = top + panel;
    std::int64_t cap = std::max<std::int64_t>(s.capacity, 1);
    auto Y = [&](std::int64_t v) { return base - panel * static_cast<double>(v) / static_cast<double>(cap); };
    out += "<g class=\"cluster\" id=\"" + svg_escape(s.name) + "\">\n";
    out += "<text x=\"" + svg_num(left) + "\" y=\"" + svg_num(y0 + 22) + "\" font-weight=\"bold\">" +
           svg_escape(s.name) + "</text>";
    if (!s.label.empty())
      out += "<text x=\"" + svg_num(left + 80) + "\" y=\"" + svg_num(y0 + 22) + "\">" + svg_escape(s.label) +
             "</text>";
    out += "\n";
    for (const auto& st : s.steps) {
      if (st.free <= 0 || st.end <= o.begin || st.start >= o.end) continue;
      double x1 = X(st.start), x2 = X(st.end);
      out += "<rect x=\"" + svg_num(x1) + "\" y=\"" + svg_num(Y(st.free)) + "\" width=\"" + svg_num(x2 - x1) +
             "\" height=\"" + svg_num(base - Y(st.free)) + "\" fill=\"#4a90d9\"><title>" +
             svg_escape(format_time(st.start)) + " to " + svg_escape(format_time(st.end)) + ": " +
             std::to_string(st.free) + " free</title></rect>\n";
    }
    out += "<line x1=\"" + svg_num(left) + "\" y1=\"" + svg_num(base) + "\" x2=\"" + svg_num(left + plot_w) +
           "\" y2=\"" + svg_num(base) + "\" stroke=\"black\"/>\n";
    out += "<line x1=\"" + svg_num(left) + "\" y1=\"" + svg_num(top) + "\" x2=\"" + svg_num(left) + "\" y2=\"" +
           svg_num(base) + "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + svg_num(left - 6) + "\" y=\"" + svg_num(top + 4) + "\" text-anchor=\"end\">" +
           std::to_string(s.capacity) + "</text>\n";
    out += "<text x=\"" + svg_num(left - 6) + "\" y=\"" + svg_num(base + 4) + "\" text-anchor=\"end\">0</text>\n";
    for (int i = 0; i <= 6; ++i) {
      std::int64_t t = o.begin + (o.end - o.begin) * i / 6;
      double x = X(t);
      out += "<line x1=\"" + svg_num(x) + "\" y1=\"" + svg_num(base) + "\" x2=\"" + svg_num(x) + "\" y2=\"" +
             svg_num(base + 5) + "\" stroke=\"black\"/><text x=\"" + svg_num(x) + "\" y=\"" + svg_num(base + 18) +
             "\" text-anchor=\"middle\">" + svg_escape(format_clock(t, with_date)) + "</text>\n";
    }
    out += "</g>\n";
    y0 = base + bottom;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace sreserve
