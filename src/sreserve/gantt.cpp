// SPDX-License-Identifier: GPL-2.0-or-later
// gantt.cpp - one co-allocation over time, for a terminal and as SVG.

#include "sreserve/gantt.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "sreserve/chart.hpp"
#include "sreserve/timefmt.hpp"

namespace sreserve {

const char* const kGanttReservedColour = "#e07b00";

namespace {

const json_t* get(const json_t* o, const char* key) {
  return json_is_object(o) ? json_object_get(o, key) : nullptr;
}
std::int64_t num(const json_t* o, const char* key) {
  const json_t* v = get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : json_is_real(v) ? static_cast<std::int64_t>(json_real_value(v)) : 0;
}
std::string str(const json_t* o, const char* key) {
  const json_t* v = get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

void add_cluster(std::vector<std::string>* v, const std::string& c) {
  if (!c.empty() && std::find(v->begin(), v->end(), c) == v->end()) v->push_back(c);
}

// Moves sorted by time (flexcod gives them oldest first already).
std::vector<const json_t*> moves_of(const json_t* co) {
  std::vector<const json_t*> out;
  std::size_t i;
  json_t* m;
  json_array_foreach(get(co, "move_history"), i, m) if (json_is_object(m)) out.push_back(m);
  std::stable_sort(out.begin(), out.end(),
                   [](const json_t* a, const json_t* b) { return num(a, "time") < num(b, "time"); });
  return out;
}

// An axis label: the time of day with seconds on short axes, the date on
// axes longer than a day.
std::string tick_label(std::int64_t t, std::int64_t span) {
  if (span > 86400) return format_clock(t, true);
  if (span > 4 * 3600) return format_clock(t, false);
  std::string s = format_time(t);  // 2026-11-23T16:00:00
  return s.size() >= 19 ? s.substr(11, 8) : s;
}

const Series* profile_of(const Gantt& g, const std::string& cluster) {
  for (const auto& s : g.profiles)
    if (s.name == cluster) return &s;
  return nullptr;
}

// The lane's y scale: the published nodes, or the most the co-allocation
// held there when the profile is missing.
std::int64_t lane_capacity(const Gantt& g, const std::string& cluster) {
  std::int64_t cap = 0;
  if (const Series* s = profile_of(g, cluster)) cap = s->capacity;
  for (const auto& w : g.windows)
    if (w.cluster == cluster) cap = std::max(cap, w.nodes);
  return std::max<std::int64_t>(cap, 1);
}

}  // namespace

std::vector<std::string> gantt_clusters(const json_t* co) {
  std::vector<std::string> out;
  for (const json_t* m : moves_of(co)) {
    std::size_t i;
    json_t* p;
    json_array_foreach(get(m, "from_parts"), i, p) add_cluster(&out, str(p, "cluster"));
    json_array_foreach(get(m, "to_parts"), i, p) add_cluster(&out, str(p, "cluster"));
  }
  std::size_t i;
  json_t* p;
  json_array_foreach(get(co, "parts"), i, p) add_cluster(&out, str(p, "cluster"));
  return out;
}

Gantt gantt_from_json(const json_t* co, const json_t* profiles, std::int64_t now) {
  Gantt g;
  g.id = num(co, "id");
  g.state = str(co, "state");
  g.nodes = num(co, "nodes");
  g.now = now;
  g.submitted = num(co, "submitted");
  g.clusters = gantt_clusters(co);

  // When the first placement was taken: the co-allocation's move to
  // committing (its reservations are made then), else its submission.
  std::int64_t placed = 0;
  std::size_t i;
  json_t* h;
  json_array_foreach(get(co, "history"), i, h) {
    if (str(h, "what") == "coallocation" && str(h, "to") == "committing") {
      placed = num(h, "time");
      break;
    }
  }
  if (placed == 0) placed = g.submitted;

  // Earlier placements: what each move left.
  std::int64_t since = placed;
  for (const json_t* m : moves_of(co)) {
    GanttMove mv;
    mv.time = num(m, "time");
    mv.kind = str(m, "kind");
    mv.from_start = num(m, "from_start");
    mv.to_start = num(m, "to_start");
    mv.reason = str(m, "reason");
    g.moves.push_back(mv);
    std::size_t k;
    json_t* p;
    json_array_foreach(get(m, "from_parts"), k, p) {
      GanttWindow w;
      w.cluster = str(p, "cluster");
      w.nodes = num(p, "nodes");
      w.start = num(m, "from_start");
      w.end = num(m, "from_end");
      w.held_from = since;
      w.held_until = mv.time;
      g.windows.push_back(w);
    }
    since = mv.time;
  }
  // The current placement, part by part, and what really ran.
  json_t* p;
  json_array_foreach(get(co, "parts"), i, p) {
    GanttWindow w;
    w.cluster = str(p, "cluster");
    w.nodes = num(p, "nodes");
    w.start = num(p, "planned_start");
    w.end = num(p, "planned_end");
    w.held_from = since;
    w.current = true;
    if (w.end > w.start) g.windows.push_back(w);
    std::int64_t a = num(p, "actual_start");
    if (a > 0) g.runs.push_back({w.cluster, w.nodes, a, num(p, "actual_end")});
  }

  std::size_t k;
  json_t* call;
  json_array_foreach(profiles, k, call) {
    std::string name = str(call, "target");
    std::int64_t status = num(call, "status");
    const json_t* a = get(call, "answer");
    if (status < 200 || status >= 300 || !json_is_object(a)) {
      std::string why = status ? "HTTP " + std::to_string(status) : str(call, "error");
      const json_t* e = get(a, "error");
      if (!str(e, "message").empty()) why = str(e, "message");
      g.notes.push_back(name + ": no free-node profile (" + why + ")");
      continue;
    }
    Series s;
    s.name = name;
    s.capacity = num(get(a, "nodes"), "published");
    std::size_t j;
    json_t* st;
    json_array_foreach(get(a, "steps"), j, st)
      s.steps.push_back({num(st, "start"), num(st, "end"), num(st, "free_nodes")});
    g.profiles.push_back(std::move(s));
  }

  // The axis: from the submission (or the earliest window or run) to the
  // latest end (or now), with a margin.
  std::int64_t lo = g.submitted > 0 ? g.submitted : now, hi = now;
  for (const auto& w : g.windows) lo = std::min(lo, w.start), hi = std::max(hi, w.end);
  for (const auto& r : g.runs) {
    lo = std::min(lo, r.start);
    hi = std::max(hi, r.end > 0 ? r.end : now);
  }
  for (const auto& m : g.moves) lo = std::min(lo, m.time), hi = std::max(hi, m.time);
  std::int64_t span = std::max<std::int64_t>(hi - lo, 60);
  g.begin = lo - span / 20;
  g.end = lo + span + span / 20;
  return g;
}

std::int64_t gantt_horizon(const json_t* co, std::int64_t now) {
  Gantt g = gantt_from_json(co, nullptr, now);
  return std::clamp<std::int64_t>(g.end - now, 600, 31622400);
}

std::string render_gantt_chart(const Gantt& g, int width) {
  const int label_w = 14;  // "alpha  events|": 7 + 6 + "|"
  int cols = std::max(10, width - label_w - 1);
  std::int64_t span = std::max<std::int64_t>(g.end - g.begin, 1);
  auto col_t = [&](int c) { return g.begin + span * c / cols; };
  auto col_of = [&](std::int64_t t) {
    return static_cast<int>(std::clamp<std::int64_t>((t - g.begin) * cols / span, 0, cols - 1));
  };
  auto label = [&](const std::string& cluster, const std::string& what) {
    std::string l = cluster.substr(0, 7);
    l.resize(7, ' ');
    l += what;
    l.resize(static_cast<std::size_t>(label_w - 1), ' ');
    return l + "|";
  };
  auto trim = [](std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = "co-" + std::to_string(g.id) + " (" + g.state + "), " + std::to_string(g.nodes) +
                    " nodes, " + std::to_string(g.moves.size()) + " move" +
                    (g.moves.size() == 1 ? "" : "s") + "\n";
  for (const auto& cluster : g.clusters) {
    std::string free_row(static_cast<std::size_t>(cols), ' ');
    if (const Series* s = profile_of(g, cluster)) {
      for (int c = 0; c < cols; ++c) {
        std::int64_t a = col_t(c), b = col_t(c + 1);
        if (b <= g.now) continue;  // the profile starts now
        std::int64_t v = min_free(*s, std::max(a, g.now), b);
        free_row[static_cast<std::size_t>(c)] = v > 9 ? '+' : static_cast<char>('0' + v);
      }
    }
    std::string resv(static_cast<std::size_t>(cols), ' ');
    for (const auto& w : g.windows) {
      if (w.cluster != cluster || w.end <= w.start) continue;
      for (int c = col_of(w.start); c <= col_of(w.end - 1); ++c) {
        char& ch = resv[static_cast<std::size_t>(c)];
        ch = w.current ? '#' : (ch == '#' ? '#' : '-');
      }
    }
    std::string run(static_cast<std::size_t>(cols), ' ');
    for (const auto& r : g.runs) {
      if (r.cluster != cluster) continue;
      std::int64_t e = r.end > 0 ? r.end : g.now;
      for (int c = col_of(r.start); c <= col_of(std::max(e - 1, r.start)); ++c)
        run[static_cast<std::size_t>(c)] = 'R';
    }
    out += trim(label(cluster, "free") + free_row);
    out += trim(label("", "resv") + resv);
    out += trim(label("", "run") + run);
  }
  std::string marks(static_cast<std::size_t>(cols), ' ');
  for (const auto& m : g.moves) marks[static_cast<std::size_t>(col_of(m.time))] = m.kind == "remap" ? 'M' : 'S';
  if (g.now > g.begin && g.now < g.end) {
    char& ch = marks[static_cast<std::size_t>(col_of(g.now))];
    if (ch == ' ') ch = 'v';
  }
  out += trim(label("", "events") + marks);
  std::string axis(static_cast<std::size_t>(label_w - 1), ' ');
  axis += "+";
  std::string labels(static_cast<std::size_t>(label_w), ' ');
  const int spacing = span > 86400 ? 15 : 12;
  for (int c = 0; c < cols; ++c) {
    bool tick = c % spacing == 0;
    axis += tick ? '+' : '-';
    if (tick) {
      std::string l = tick_label(col_t(c), span);
      if (c + static_cast<int>(l.size()) <= cols && static_cast<int>(labels.size()) <= label_w + c) {
        labels.resize(static_cast<std::size_t>(label_w + c), ' ');
        labels += l;
      }
    }
  }
  out += axis + "\n" + trim(labels);
  out += "one column = " + format_duration((span + cols - 1) / cols) +
         "; free: nodes free during the whole column (from now on, 9+ as '+');\n"
         "resv: '#' reserved window, '-' a window it was moved away from; run: 'R' part job running;\n"
         "events: 'S' shift, 'M' remap, 'v' now\n";
  for (const auto& m : g.moves)
    out += "  " + format_time(m.time) + " " + m.kind + ": start " + format_time(m.from_start) +
           " -> " + format_time(m.to_start) + (m.reason.empty() ? "" : " (" + m.reason + ")") + "\n";
  for (const auto& n : g.notes) out += "  " + n + "\n";
  return out;
}

std::string render_gantt_svg(const Gantt& g) {
  const double W = 960, left = 90, right = 40, lane = 120, gap = 26, top = 56;
  const double plot_w = W - left - right;
  const double lanes_h = static_cast<double>(g.clusters.size()) * (lane + gap);
  const double H = top + lanes_h + 90 + 18 * static_cast<double>(g.moves.size() + g.notes.size());
  std::int64_t span = std::max<std::int64_t>(g.end - g.begin, 1);
  auto X = [&](std::int64_t t) {
    t = std::clamp(t, g.begin, g.end);
    return left + plot_w * static_cast<double>(t - g.begin) / static_cast<double>(span);
  };
  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_num(W) + "\" height=\"" + svg_num(H) +
       "\" viewBox=\"0 0 " + svg_num(W) + " " + svg_num(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<title>co-" + std::to_string(g.id) + " over time</title>\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + svg_num(left) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">co-" +
       std::to_string(g.id) + " (" + svg_escape(g.state) + "), " + std::to_string(g.nodes) +
       " nodes, " + std::to_string(g.moves.size()) + " move" + (g.moves.size() == 1 ? "" : "s") +
       "</text>\n";
  o += "<text x=\"" + svg_num(left) + "\" y=\"40\">" + svg_escape(format_time(g.begin)) + " to " +
       svg_escape(format_time(g.end)) + "</text>\n";
  double y = top;
  for (const auto& cluster : g.clusters) {
    double base = y + lane;
    std::int64_t cap = lane_capacity(g, cluster);
    auto Y = [&](std::int64_t v) { return base - lane * static_cast<double>(v) / static_cast<double>(cap); };
    o += "<g class=\"lane\" id=\"" + svg_escape(cluster) + "\">\n";
    o += "<text x=\"" + svg_num(left - 8) + "\" y=\"" + svg_num(y + lane / 2) +
         "\" text-anchor=\"end\" font-weight=\"bold\">" + svg_escape(cluster) + "</text>\n";
    o += "<rect x=\"" + svg_num(left) + "\" y=\"" + svg_num(y) + "\" width=\"" + svg_num(plot_w) + "\" height=\"" +
         svg_num(lane) + "\" fill=\"#f7f7f7\"/>\n";
    if (const Series* s = profile_of(g, cluster)) {
      for (const auto& st : s->steps) {
        if (st.free <= 0 || st.end <= g.begin || st.start >= g.end) continue;
        double x1 = X(st.start), x2 = X(st.end);
        o += "<rect class=\"free\" x=\"" + svg_num(x1) + "\" y=\"" + svg_num(Y(st.free)) + "\" width=\"" +
             svg_num(x2 - x1) + "\" height=\"" + svg_num(base - Y(st.free)) + "\" fill=\"#bcd6f0\"><title>" +
             svg_escape(format_time(st.start)) + " to " + svg_escape(format_time(st.end)) + ": " +
             std::to_string(st.free) + " free</title></rect>\n";
      }
    }
    for (const auto& w : g.windows) {
      if (w.cluster != cluster || w.end <= w.start) continue;
      double x1 = X(w.start), x2 = X(w.end);
      std::string tip = std::to_string(w.nodes) + " nodes reserved " + format_time(w.start) + " to " +
                        format_time(w.end) + ", held from " + format_time(w.held_from) +
                        (w.current ? "" : " until " + format_time(w.held_until) + " (moved)");
      if (w.current)
        o += "<rect class=\"reserved\" x=\"" + svg_num(x1) + "\" y=\"" + svg_num(Y(w.nodes)) + "\" width=\"" +
             svg_num(std::max(x2 - x1, 1.0)) + "\" height=\"" + svg_num(base - Y(w.nodes)) + "\" fill=\"" +
             kGanttReservedColour + "\"><title>" + svg_escape(tip) + "</title></rect>\n";
      else
        o += "<rect class=\"moved-from\" x=\"" + svg_num(x1) + "\" y=\"" + svg_num(Y(w.nodes)) + "\" width=\"" +
             svg_num(std::max(x2 - x1, 1.0)) + "\" height=\"" + svg_num(base - Y(w.nodes)) +
             "\" fill=\"none\" stroke=\"#666666\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"><title>" +
             svg_escape(tip) + "</title></rect>\n";
    }
    for (const auto& r : g.runs) {
      if (r.cluster != cluster) continue;
      std::int64_t e = r.end > 0 ? r.end : g.now;
      double x1 = X(r.start), x2 = X(std::max(e, r.start));
      double h = std::max(6.0, (base - Y(r.nodes)) * 0.4);
      double yy = base - (base - Y(r.nodes)) / 2 - h / 2;
      o += "<rect class=\"ran\" x=\"" + svg_num(x1) + "\" y=\"" + svg_num(yy) + "\" width=\"" +
           svg_num(std::max(x2 - x1, 2.0)) + "\" height=\"" + svg_num(h) + "\" fill=\"#2e7d32\"><title>part job ran " +
           svg_escape(format_time(r.start)) + " to " +
           (r.end > 0 ? svg_escape(format_time(r.end)) : std::string("now (running)")) +
           "</title></rect>\n";
    }
    o += "<line x1=\"" + svg_num(left) + "\" y1=\"" + svg_num(base) + "\" x2=\"" + svg_num(left + plot_w) + "\" y2=\"" +
         svg_num(base) + "\" stroke=\"black\"/>\n";
    o += "<text x=\"" + svg_num(left - 8) + "\" y=\"" + svg_num(y + 10) + "\" text-anchor=\"end\">" +
         std::to_string(cap) + "</text><text x=\"" + svg_num(left - 8) + "\" y=\"" + svg_num(base) +
         "\" text-anchor=\"end\">0</text>\n";
    o += "</g>\n";
    y = base + gap;
  }
  // Moves and now, across every lane.
  double lanes_bottom = top + lanes_h - gap;
  for (const auto& m : g.moves) {
    double x = X(m.time);
    o += "<line class=\"move\" x1=\"" + svg_num(x) + "\" y1=\"" + svg_num(top - 4) + "\" x2=\"" + svg_num(x) +
         "\" y2=\"" + svg_num(lanes_bottom) + "\" stroke=\"#c62828\" stroke-dasharray=\"3,3\"/>";
    o += "<text x=\"" + svg_num(x + 3) + "\" y=\"" + svg_num(top - 6) + "\" fill=\"#c62828\">" + svg_escape(m.kind) +
         "</text>\n";
    // old start -> new start, at the top of the first lane
    double a = X(m.from_start), b = X(m.to_start);
    o += "<line x1=\"" + svg_num(a) + "\" y1=\"" + svg_num(top + 6) + "\" x2=\"" + svg_num(b) + "\" y2=\"" + svg_num(top + 6) +
         "\" stroke=\"#c62828\" stroke-width=\"1.5\"/><path d=\"M" + svg_num(b) + "," + svg_num(top + 6) + " l" +
         (b < a ? "6,-4 l0,8" : "-6,-4 l0,8") + " z\" fill=\"#c62828\"/>\n";
  }
  if (g.now > g.begin && g.now < g.end) {
    double x = X(g.now);
    o += "<line class=\"now\" x1=\"" + svg_num(x) + "\" y1=\"" + svg_num(top - 4) + "\" x2=\"" + svg_num(x) + "\" y2=\"" +
         svg_num(lanes_bottom) + "\" stroke=\"black\" stroke-dasharray=\"1,3\"/><text x=\"" + svg_num(x) +
         "\" y=\"" + svg_num(lanes_bottom + 12) + "\" text-anchor=\"middle\">now</text>\n";
  }
  // Time axis under the lanes.
  double ay = lanes_bottom + 28;
  for (int i = 0; i <= 6; ++i) {
    std::int64_t t = g.begin + span * i / 6;
    double x = X(t);
    o += "<line x1=\"" + svg_num(x) + "\" y1=\"" + svg_num(ay - 8) + "\" x2=\"" + svg_num(x) + "\" y2=\"" + svg_num(ay - 3) +
         "\" stroke=\"black\"/><text x=\"" + svg_num(x) + "\" y=\"" + svg_num(ay + 8) +
         "\" text-anchor=\"middle\">" + svg_escape(tick_label(t, span)) + "</text>\n";
  }
  // Legend.
  double ly = ay + 30;
  auto key = [&](double x, const std::string& swatch, const std::string& text) {
    o += swatch + "<text x=\"" + svg_num(x + 22) + "\" y=\"" + svg_num(ly + 10) + "\">" + svg_escape(text) + "</text>\n";
  };
  key(left, "<rect x=\"" + svg_num(left) + "\" y=\"" + svg_num(ly) + "\" width=\"16\" height=\"12\" fill=\"#bcd6f0\"/>",
      "free nodes (from now on)");
  key(left + 200, "<rect x=\"" + svg_num(left + 200) + "\" y=\"" + svg_num(ly) + "\" width=\"16\" height=\"12\" fill=\"" +
                      kGanttReservedColour + "\"/>",
      "reserved window");
  key(left + 360, "<rect x=\"" + svg_num(left + 360) + "\" y=\"" + svg_num(ly) +
                      "\" width=\"16\" height=\"12\" fill=\"none\" stroke=\"#666666\" stroke-dasharray=\"4,2\"/>",
      "window moved away from");
  key(left + 560, "<rect x=\"" + svg_num(left + 560) + "\" y=\"" + svg_num(ly + 3) +
                      "\" width=\"16\" height=\"6\" fill=\"#2e7d32\"/>",
      "part job ran");
  ly += 22;
  for (const auto& m : g.moves) {
    o += "<text x=\"" + svg_num(left) + "\" y=\"" + svg_num(ly + 10) + "\" fill=\"#c62828\">" +
         svg_escape(format_time(m.time) + " " + m.kind + ": start " + format_time(m.from_start) + " -> " +
                    format_time(m.to_start) + (m.reason.empty() ? "" : " (" + m.reason + ")")) +
         "</text>\n";
    ly += 18;
  }
  for (const auto& n : g.notes) {
    o += "<text x=\"" + svg_num(left) + "\" y=\"" + svg_num(ly + 10) + "\">" + svg_escape(n) + "</text>\n";
    ly += 18;
  }
  o += "</svg>\n";
  return o;
}

}  // namespace sreserve
