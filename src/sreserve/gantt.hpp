// SPDX-License-Identifier: GPL-2.0-or-later
// gantt.hpp - one co-allocation over time (sreserve show --chart / --svg):
// per cluster the free nodes (GET /v1/profile of its plugin), every window
// the co-allocation held there (the current one and those it was moved
// away from), when its part really ran, and the moves.
//
// The data comes from flexcod's GET /v1/coallocations/ID (parts, history,
// move_history) and the clusters' profiles, as JSON, so it is built and
// drawn without a service (golden and unit tests).

#ifndef FLEXCO_SRESERVE_GANTT_HPP
#define FLEXCO_SRESERVE_GANTT_HPP

#include <jansson.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sreserve/chart.hpp"

namespace sreserve {

// A window held on one cluster: `nodes` nodes reserved for [start, end),
// held from `held_from` until `held_until` (0: still held).
struct GanttWindow {
  std::string cluster;
  std::int64_t nodes = 0;
  std::int64_t start = 0, end = 0;
  std::int64_t held_from = 0, held_until = 0;
  bool current = false;  // the co-allocation's current placement
};

// When a part's job really ran (Slurm's times); end 0 = still running.
struct GanttRun {
  std::string cluster;
  std::int64_t nodes = 0;
  std::int64_t start = 0, end = 0;
};

struct GanttMove {
  std::int64_t time = 0;
  std::string kind;  // shift, remap
  std::int64_t from_start = 0, to_start = 0;
  std::string reason;
};

struct Gantt {
  std::int64_t id = 0;
  std::string state;
  std::int64_t nodes = 0;
  std::int64_t now = 0;
  std::int64_t submitted = 0;
  std::vector<std::string> clusters;  // lanes, in order of first appearance
  std::vector<Series> profiles;       // free nodes, one per cluster answered
  std::vector<std::string> notes;     // e.g. a cluster whose profile failed
  std::vector<GanttWindow> windows;   // oldest first; the current ones last
  std::vector<GanttRun> runs;
  std::vector<GanttMove> moves;
  std::int64_t begin = 0, end = 0;    // the time axis
};

// The Gantt of co-allocation `co` (a GET /v1/coallocations/ID answer) at
// `now`; `profiles` are the CALLs of the exchange (views.hpp) to the
// clusters' /v1/profile, any of which may have failed (noted, drawn
// without free nodes).
Gantt gantt_from_json(const json_t* co, const json_t* profiles, std::int64_t now);

// The clusters whose profile the Gantt of `co` needs: every cluster of its
// parts and moves, in order of first appearance.
std::vector<std::string> gantt_clusters(const json_t* co);

// The horizon to ask the profiles for: from now to the end of the axis.
std::int64_t gantt_horizon(const json_t* co, std::int64_t now);

// For a terminal `width` columns wide (plot columns: width - 15).
std::string render_gantt_chart(const Gantt& g, int width);

// A standalone SVG document.
std::string render_gantt_svg(const Gantt& g);

// The fill of the current reserved windows in the SVG (tests look for it).
extern const char* const kGanttReservedColour;

}  // namespace sreserve

#endif
