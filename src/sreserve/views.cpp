// SPDX-License-Identifier: GPL-2.0-or-later
// views.cpp - tables, charts and JSON of sreserve's answers.

#include "sreserve/views.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <memory>

#include "sreserve/chart.hpp"
#include "sreserve/timefmt.hpp"

namespace sreserve {

const char* const kOffersFormat = "%10C %19S %19E %.5D %.5F %.5P %19V %R";
const char* const kStepsFormat = "%10C %19S %19E %.10L %.6D %.9U";
const char* const kListFormat = "%.8i %.10j %.9u %.10T %.6D %.19S %.10L %.5m %M";
const char* const kPartsFormat = "%.4x %10C %.5D %10T %12R %.7I %10J %19S %19a %N";

namespace {

struct JDel {
  void operator()(json_t* j) const { json_decref(j); }
};
using J = std::unique_ptr<json_t, JDel>;

const json_t* get(const json_t* o, const char* key) {
  return json_is_object(o) ? json_object_get(o, key) : nullptr;
}
std::int64_t num(const json_t* o, const char* key, std::int64_t dflt = 0) {
  const json_t* v = get(o, key);
  if (json_is_integer(v)) return json_integer_value(v);
  if (json_is_real(v)) return static_cast<std::int64_t>(json_real_value(v));
  return dflt;
}
bool has_num(const json_t* o, const char* key) { return json_is_number(get(o, key)); }
double real(const json_t* o, const char* key, double dflt = 0) {
  const json_t* v = get(o, key);
  return json_is_number(v) ? json_number_value(v) : dflt;
}
std::string str(const json_t* o, const char* key, const std::string& dflt = "") {
  const json_t* v = get(o, key);
  return json_is_string(v) ? json_string_value(v) : dflt;
}
std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
std::string time_or_na(const json_t* o, const char* key) {
  return has_num(o, key) ? format_time(num(o, key)) : "N/A";
}
std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string or_none(const std::string& s) { return s.empty() ? "None" : s; }

// "alpha:2,beta:2" from an array of {cluster, nodes}.
std::string parts_summary(const json_t* parts) {
  std::string out;
  std::size_t i;
  json_t* p;
  json_array_foreach(parts, i, p) {
    if (!out.empty()) out += ",";
    out += str(p, "cluster") + ":" + std::to_string(num(p, "nodes"));
  }
  return out;
}

std::string dump(const json_t* j) {
  char* s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  std::string out = s ? s : "null";
  std::free(s);
  return out + "\n";
}

bool answered(const json_t* call) { return has_num(call, "status") && get(call, "answer"); }
bool http_ok(const json_t* call) {
  std::int64_t st = num(call, "status");
  return answered(call) && st >= 200 && st < 300;
}

std::string answer_message(const json_t* call) {
  const json_t* e = get(get(call, "answer"), "error");
  std::string msg = str(e, "message");
  if (msg.empty()) msg = "HTTP " + std::to_string(num(call, "status"));
  return msg;
}

bool table(const Options& o, const std::vector<FieldDef>& fields, const char* dflt,
           const std::vector<Row>& rows, Output* out) {
  FormatSpec spec;
  std::string err;
  if (!parse_format(o.format.empty() ? dflt : o.format, fields, &spec, &err)) {
    out->err += "sreserve: error: " + err + "\n";
    out->exit_code = kExitUsage;
    return false;
  }
  out->out += render_table(spec, fields, rows, o.noheader);
  return true;
}

// The worse of two exit codes (a usage or config error is reported first).
void worsen(Output* out, int code) {
  if (out->exit_code == kExitOk || (code != kExitOk && code > out->exit_code))
    out->exit_code = code;
}

void report(Output* out, const json_t* call) {
  int code = kExitOk;
  if (str(call, "code") == "sign_failed") {
    if (out->munge_reported) return;
    out->munge_reported = true;
  }
  out->err += "sreserve: error: " + call_error(call, &code) + "\n";
  worsen(out, code);
}

// ---------------------------------------------------------------------------
// offers

Row offer_row(const std::string& cluster, const json_t* doc, const json_t* offer, std::int64_t now) {
  Row r;
  std::int64_t start = num(offer, "start"), end = num(offer, "end");
  r['C'] = cluster;
  r['Q'] = str(doc, "partition");
  r['S'] = format_time(start);
  r['E'] = format_time(end);
  r['L'] = format_duration(end - start);
  r['D'] = std::to_string(num(offer, "nodes"));
  r['F'] = fixed2(real(offer, "fit"));
  r['P'] = fixed2(real(offer, "p_res"));
  r['V'] = format_time(num(offer, "valid_until"));
  r['R'] = str(offer, "verdict");
  r['W'] = format_duration(std::max<std::int64_t>(0, start - now));
  return r;
}

void render_choice_text(const json_t* call, Output* out) {
  out->out += "\n";
  if (!call) {
    out->out += "CHOICE: not asked (no flexcod address: --url, FLEXCO_URL or flexcod.conf)\n";
    return;
  }
  if (str(call, "code") == "sign_failed") {
    out->out += "CHOICE: unknown, the dry run could not be signed (munged)\n";
    return;
  }
  if (!answered(call)) {
    out->out += "CHOICE: unknown, flexcod is not reachable at " + str(call, "url") +
                "; the offers above come straight from the clusters\n";
    return;
  }
  if (!http_ok(call)) {
    out->out += "CHOICE: unknown, flexcod refused the dry run: " + answer_message(call) + "\n";
    return;
  }
  const json_t* a = get(call, "answer");
  const json_t* plan = get(a, "plan");
  if (!json_is_object(plan)) {
    out->out += "CHOICE: none, flexcod finds no placement: " + or_none(str(a, "reason")) + "\n";
    return;
  }
  std::string policy = str(plan, "policy");
  out->out += "CHOICE (flexcod dry run" + (policy.empty() ? "" : ", policy " + policy) +
              "): start " + format_time(num(plan, "start")) + ", end " +
              format_time(num(plan, "end")) + ", run time " +
              format_duration(num(plan, "run_time")) +
              (json_is_true(get(plan, "split")) ? ", split" : ", one cluster") + "\n";
  std::size_t i;
  json_t* p;
  json_array_foreach(get(plan, "parts"), i, p) {
    std::string c = str(p, "cluster");
    c.resize(std::max<std::size_t>(c.size(), 10), ' ');
    out->out += "  " + c + " " + std::to_string(num(p, "nodes")) + " nodes\n";
  }
}

J choice_json(const json_t* call) {
  J c(json_object());
  json_object_set_new(c.get(), "available", json_boolean(http_ok(call)));
  int code = 0;
  json_object_set_new(c.get(), "error",
                      call && !http_ok(call) ? json_string(call_error(call, &code).c_str())
                                             : call ? json_null()
                                                    : json_string("no flexcod address"));
  const json_t* a = http_ok(call) ? get(call, "answer") : nullptr;
  const json_t* plan = get(a, "plan");
  json_object_set_new(c.get(), "plan", plan ? json_deep_copy(plan) : json_null());
  const json_t* reason = get(a, "reason");
  json_object_set_new(c.get(), "reason", reason ? json_deep_copy(reason) : json_null());
  return c;
}

J cluster_json_base(const json_t* call) {
  J c(json_object());
  json_object_set_new(c.get(), "cluster", json_string(str(call, "target").c_str()));
  json_object_set_new(c.get(), "reachable", json_boolean(answered(call)));
  int code = 0;
  json_object_set_new(c.get(), "error",
                      http_ok(call) ? json_null() : json_string(call_error(call, &code).c_str()));
  return c;
}

void render_offers(const Options& o, const json_t* ex, Output* out) {
  std::int64_t now = num(ex, "now");
  const json_t* clusters = get(ex, "clusters");
  const json_t* daemon = json_array_get(get(ex, "daemon"), 0);
  std::vector<Row> rows;
  J doc(json_object());
  J jcl(json_array());
  std::size_t i;
  json_t* call;
  json_array_foreach(clusters, i, call) {
    std::string name = str(call, "target");
    J c = cluster_json_base(call);
    if (!http_ok(call)) {
      report(out, call);
      json_array_append_new(jcl.get(), c.release());
      continue;
    }
    const json_t* a = get(call, "answer");
    json_object_set_new(c.get(), "partition", json_string(str(a, "partition").c_str()));
    json_object_set_new(c.get(), "snapshot_time", json_integer(num(a, "snapshot_time")));
    J offers(json_array());
    std::size_t k;
    json_t* off;
    json_array_foreach(get(a, "offers"), k, off) {
      rows.push_back(offer_row(name, a, off, now));
      J jo(json_object());
      for (const char* key : {"start", "end", "nodes", "valid_until"})
        json_object_set_new(jo.get(), key, json_integer(num(off, key)));
      json_object_set_new(jo.get(), "fit", json_real(real(off, "fit")));
      json_object_set_new(jo.get(), "p_res", json_real(real(off, "p_res")));
      json_object_set_new(jo.get(), "verdict", json_string(str(off, "verdict").c_str()));
      json_array_append_new(offers.get(), jo.release());
    }
    json_object_set_new(c.get(), "offers", offers.release());
    json_array_append_new(jcl.get(), c.release());
  }
  if (daemon && str(daemon, "code") == "sign_failed") {
    report(out, daemon);
  } else if (daemon && !answered(daemon)) {
    int code = 0;
    out->err += "sreserve: warning: " + call_error(daemon, &code) + "; showing the clusters' offers only\n";
  } else if (daemon && !http_ok(daemon)) {
    int code = 0;
    out->err += "sreserve: warning: " + call_error(daemon, &code) + "\n";
  }
  // Rows by start time, then cluster, so the earliest offers come first.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.at('S') != b.at('S') ? a.at('S') < b.at('S') : a.at('C') < b.at('C');
  });
  if (o.json) {
    J req(json_object());
    J counts(json_array());
    for (auto n : probe_counts(o, json_array_size(clusters))) json_array_append_new(counts.get(), json_integer(n));
    json_object_set_new(req.get(), "nodes", counts.release());
    json_object_set_new(req.get(), "duration", json_integer(o.duration));
    json_object_set_new(req.get(), "begin", o.begin ? json_integer(o.begin) : json_null());
    json_object_set_new(req.get(), "deadline", o.deadline ? json_integer(o.deadline) : json_null());
    json_object_set_new(doc.get(), "command", json_string("offers"));
    json_object_set_new(doc.get(), "request", req.release());
    json_object_set_new(doc.get(), "clusters", jcl.release());
    json_object_set_new(doc.get(), "choice", choice_json(daemon).release());
    out->out += dump(doc.get());
    return;
  }
  if (!table(o, offer_fields(), kOffersFormat, rows, out)) return;
  if (!o.noheader) render_choice_text(daemon, out);
}

// ---------------------------------------------------------------------------
// profile

void render_profile(const Options& o, const json_t* ex, Output* out) {
  const json_t* clusters = get(ex, "clusters");
  std::vector<Series> series;
  std::vector<Row> rows;
  J jcl(json_array());
  std::int64_t begin = 0;
  std::size_t i;
  json_t* call;
  json_array_foreach(clusters, i, call) {
    J c = cluster_json_base(call);
    if (!http_ok(call)) {
      report(out, call);
      json_array_append_new(jcl.get(), c.release());
      continue;
    }
    const json_t* a = get(call, "answer");
    std::string name = str(call, "target");
    Series s;
    s.name = name;
    const json_t* nodes = get(a, "nodes");
    s.capacity = num(nodes, "published");
    s.label = "partition " + str(a, "partition") + ", " + std::to_string(s.capacity) + " of " +
              std::to_string(num(nodes, "total")) + " nodes published";
    if (!json_is_true(get(a, "partition_up"))) s.label += ", partition DOWN";
    const json_t* bf = get(a, "backfill");
    if (has_num(bf, "plan_age"))
      s.label += ", backfill plan " + format_duration(num(bf, "plan_age")) + " old";
    else
      s.label += ", no backfill plan yet";
    std::int64_t snap = num(a, "snapshot_time");
    if (begin == 0 || snap < begin) begin = snap;
    std::size_t k;
    json_t* st;
    json_array_foreach(get(a, "steps"), k, st) {
      s.steps.push_back({num(st, "start"), num(st, "end"), num(st, "free_nodes")});
      Row r;
      r['C'] = name;
      r['Q'] = str(a, "partition");
      r['S'] = format_time(num(st, "start"));
      r['E'] = format_time(num(st, "end"));
      r['L'] = format_duration(num(st, "end") - num(st, "start"));
      r['D'] = std::to_string(num(st, "free_nodes"));
      r['U'] = std::to_string(num(st, "free_cpus"));
      r['T'] = std::to_string(s.capacity);
      rows.push_back(r);
    }
    for (const char* key : {"partition", "partition_up", "snapshot_time", "horizon_end",
                            "share_percent", "backfill", "nodes", "cpus", "steps"}) {
      const json_t* v = get(a, key);
      json_object_set_new(c.get(), key, v ? json_deep_copy(v) : json_null());
    }
    json_array_append_new(jcl.get(), c.release());
    series.push_back(std::move(s));
  }
  ChartOptions co;
  co.begin = begin ? begin : num(ex, "now");
  co.end = co.begin + o.horizon;
  co.width = o.width > 0 ? o.width : 60;
  if (!o.svg.empty()) out->svg = render_svg(series, co);
  if (o.json) {
    J doc(json_object());
    json_object_set_new(doc.get(), "command", json_string("profile"));
    json_object_set_new(doc.get(), "horizon", json_integer(o.horizon));
    json_object_set_new(doc.get(), "clusters", jcl.release());
    out->out += dump(doc.get());
    return;
  }
  if (o.steps || !o.format.empty()) {
    table(o, step_fields(), kStepsFormat, rows, out);
    return;
  }
  if (!series.empty()) out->out += render_chart(series, co);
}

// ---------------------------------------------------------------------------
// co-allocations

Row coalloc_row(const json_t* c) {
  Row r;
  r['i'] = std::to_string(num(c, "id"));
  r['j'] = str(c, "name", "co-" + std::to_string(num(c, "id")));
  r['u'] = str(c, "user");
  r['T'] = upper(str(c, "state"));
  r['D'] = std::to_string(num(c, "nodes"));
  r['S'] = time_or_na(c, "planned_start");
  r['E'] = time_or_na(c, "planned_end");
  r['L'] = format_duration(has_num(c, "run_time") ? num(c, "run_time") : num(c, "duration"));
  r['d'] = format_duration(num(c, "duration"));
  std::string placement = parts_summary(get(c, "parts"));
  r['M'] = placement.empty() ? "(none)" : placement;
  r['m'] = std::to_string(num(c, "moves"));
  r['P'] = str(c, "policy");
  r['r'] = or_none(str(c, "reason"));
  r['s'] = time_or_na(c, "submitted");
  r['a'] = time_or_na(c, "actual_start");
  r['l'] = time_or_na(c, "deadline");
  r['p'] = std::to_string(json_array_size(get(c, "parts")));
  return r;
}

Row part_row(const json_t* p) {
  Row r;
  r['x'] = std::to_string(num(p, "index"));
  r['C'] = str(p, "cluster");
  r['D'] = std::to_string(num(p, "nodes"));
  r['T'] = upper(str(p, "state"));
  r['R'] = or_none(str(p, "reservation"));
  r['I'] = has_num(p, "job_id") ? std::to_string(num(p, "job_id")) : "None";
  r['J'] = or_none(str(p, "job_state"));
  r['S'] = time_or_na(p, "planned_start");
  r['E'] = time_or_na(p, "planned_end");
  r['a'] = time_or_na(p, "actual_start");
  r['e'] = time_or_na(p, "actual_end");
  r['N'] = or_none(str(p, "node_list"));
  r['X'] = has_num(p, "exit_code") ? std::to_string(num(p, "exit_code")) : "None";
  return r;
}

// The first daemon call, or nullptr after reporting it when it failed.
const json_t* daemon_answer(const json_t* ex, std::size_t index, Output* out) {
  const json_t* call = json_array_get(get(ex, "daemon"), index);
  if (!call) {
    out->err += "sreserve: error: no answer recorded\n";
    worsen(out, kExitError);
    return nullptr;
  }
  if (!http_ok(call)) {
    report(out, call);
    return nullptr;
  }
  return get(call, "answer");
}

void render_list(const Options& o, const json_t* ex, Output* out) {
  const json_t* a = daemon_answer(ex, 0, out);
  if (!a) return;
  if (o.json) {
    out->out += dump(a);
    return;
  }
  std::vector<Row> rows;
  std::size_t i;
  json_t* c;
  json_array_foreach(get(a, "coallocations"), i, c) rows.push_back(coalloc_row(c));
  table(o, coalloc_fields(), kListFormat, rows, out);
}

void render_show(const Options& o, const json_t* ex, Output* out) {
  const json_t* c = daemon_answer(ex, 0, out);
  if (!c) return;
  if (o.json) {
    out->out += dump(c);
    return;
  }
  Row r = coalloc_row(c);
  std::string s;
  s += "CoallocationId=" + r['i'] + " Name=" + r['j'] + " UserId=" + r['u'] + "(" +
       std::to_string(num(c, "uid")) + ")" + " State=" + r['T'] + " Reason=" + r['r'] + "\n";
  char oh[32];
  std::snprintf(oh, sizeof oh, "%.2f", real(c, "overhead"));
  s += "   Policy=" + or_none(r['P']) + " Nodes=" + r['D'] + " TimeLimit=" + r['d'] +
       " RunTime=" + (has_num(c, "run_time") ? format_duration(num(c, "run_time")) : "N/A") +
       " Overhead=" + oh + " MaxParts=" + std::to_string(num(c, "max_parts")) + "\n";
  std::string allowed;
  std::size_t i;
  json_t* v;
  json_array_foreach(get(c, "clusters"), i, v) {
    if (!allowed.empty()) allowed += ",";
    allowed += json_is_string(v) ? json_string_value(v) : "?";
  }
  s += "   SubmitTime=" + r['s'] + " EligibleTime=" + time_or_na(c, "ready") +
       " Deadline=" + (has_num(c, "deadline") ? r['l'] : "None") +
       " LastChange=" + time_or_na(c, "changed") + "\n";
  s += "   PlannedStart=" + r['S'] + " PlannedEnd=" + r['E'] + " ActualStart=" + r['a'] +
       " StartSpread=" +
       (has_num(c, "start_spread") ? std::to_string(num(c, "start_spread")) + "s" : "N/A") +
       " Moves=" + r['m'] + "\n";
  s += "   Clusters=" + (allowed.empty() ? "all" : allowed) + " Placement=" + r['M'] + "\n";
  out->out += s;

  std::vector<Row> parts;
  json_array_foreach(get(c, "parts"), i, v) parts.push_back(part_row(v));
  out->out += o.noheader ? "" : "\nPARTS\n";
  if (!table(o, part_fields(), kPartsFormat, parts, out)) return;

  // Parts of an earlier placement whose release flexcod still retries (a
  // cluster that does not answer), with the error and the next try.
  json_array_foreach(get(c, "releasing"), i, v) {
    if (i == 0) out->out += o.noheader ? "" : "\nRELEASING\n";
    out->out += "   Cluster=" + str(v, "cluster") + " Reservation=" + or_none(str(v, "reservation")) +
                " JobId=" + (has_num(v, "job_id") ? std::to_string(num(v, "job_id")) : "None") +
                " Reason=" + or_none(str(v, "reason")) + "\n";
  }

  static const std::vector<FieldDef> hist = {
      {'t', "TIME", ""}, {'w', "WHAT", ""}, {'f', "FROM", ""}, {'o', "TO", ""}, {'r', "REASON", ""}};
  std::vector<Row> rows;
  json_array_foreach(get(c, "history"), i, v) {
    rows.push_back({{'t', format_time(num(v, "time"))},
                    {'w', str(v, "what")},
                    {'f', upper(or_none(str(v, "from")))},
                    {'o', upper(str(v, "to"))},
                    {'r', str(v, "reason")}});
  }
  if (!rows.empty()) {
    FormatSpec spec;
    std::string err;
    parse_format("%19t %26w %12f %12o %r", hist, &spec, &err);
    out->out += o.noheader ? "" : "\nHISTORY\n";
    out->out += render_table(spec, hist, rows, o.noheader);
  }
  static const std::vector<FieldDef> moves = {{'t', "TIME", ""},       {'k', "KIND", ""},
                                              {'f', "FROM_START", ""}, {'o', "TO_START", ""},
                                              {'F', "FROM_PARTS", ""}, {'O', "TO_PARTS", ""},
                                              {'r', "REASON", ""}};
  rows.clear();
  json_array_foreach(get(c, "move_history"), i, v) {
    rows.push_back({{'t', format_time(num(v, "time"))},
                    {'k', upper(str(v, "kind"))},
                    {'f', format_time(num(v, "from_start"))},
                    {'o', format_time(num(v, "to_start"))},
                    {'F', parts_summary(get(v, "from_parts"))},
                    {'O', parts_summary(get(v, "to_parts"))},
                    {'r', str(v, "reason")}});
  }
  if (!rows.empty()) {
    FormatSpec spec;
    std::string err;
    parse_format("%19t %6k %19f %19o %16F %16O %r", moves, &spec, &err);
    out->out += o.noheader ? "" : "\nMOVES\n";
    out->out += render_table(spec, moves, rows, o.noheader);
  }
}

void render_submit(const Options& o, const json_t* ex, Output* out) {
  const json_t* a = daemon_answer(ex, 0, out);
  if (!a) return;
  if (o.json) {
    out->out += dump(a);
    return;
  }
  if (json_is_true(get(a, "dry_run"))) {
    const json_t* plan = get(a, "plan");
    if (!json_is_object(plan)) {
      out->err += "sreserve: error: co-allocation cannot be placed: " + or_none(str(a, "reason")) + "\n";
      worsen(out, kExitError);
      return;
    }
    std::string parts;
    std::size_t i;
    json_t* p;
    json_array_foreach(get(plan, "parts"), i, p) {
      if (!parts.empty()) parts += ", ";
      parts += str(p, "cluster") + " (" + std::to_string(num(p, "nodes")) + " nodes)";
    }
    out->out += "co-allocation to start at " + format_time(num(plan, "start")) + " (run time " +
                format_duration(num(plan, "run_time")) + ") on " + parts + "\n";
    return;
  }
  std::string id = std::to_string(num(a, "id"));
  if (str(a, "state") == "failed") {
    // A retry under the invocation's Idempotency-Key found the co-allocation
    // the first attempt made, and it failed (flexcod restarted meanwhile).
    out->err += "sreserve: error: co-allocation " + id + " failed: " + or_none(str(a, "reason")) + "\n";
    worsen(out, kExitError);
    return;
  }
  if (o.parsable) {
    out->out += id + "\n";
    return;
  }
  out->out += "Submitted co-allocation " + id + "\n";
  if (o.verbose > 0)
    out->err += "sreserve: co-allocation " + id + " starts at " + time_or_na(a, "planned_start") +
                " on " + parts_summary(get(a, "parts")) + "\n";
}

void render_update_cancel(const Options& o, const json_t* ex, Output* out) {
  const json_t* calls = get(ex, "daemon");
  J all(json_array());
  for (std::size_t i = 0; i < json_array_size(calls); ++i) {
    const json_t* a = daemon_answer(ex, i, out);
    if (a) json_array_append_new(all.get(), json_deep_copy(a));
  }
  if (!o.json) return;
  if (o.command == Command::kUpdate) {
    if (json_array_size(all.get()) == 1) out->out += dump(json_array_get(all.get(), 0));
  } else {
    J doc(json_object());
    json_object_set_new(doc.get(), "coallocations", all.release());
    out->out += dump(doc.get());
  }
}

// sreserve ui: the web view's address with the session token.
void render_ui(const Options& o, const json_t* ex, Output* out) {
  const json_t* a = daemon_answer(ex, 0, out);
  if (!a) return;
  if (o.json) {
    out->out += dump(a);
    return;
  }
  std::string base = str(ex, "url");
  while (!base.empty() && base.back() == '/') base.pop_back();
  out->out += base + str(a, "path") + "\n";
  if (o.verbose > 0) {
    out->err += "sreserve: session token for " + str(a, "user") + ", valid until " +
                time_or_na(a, "expires") + "; it only reads\n";
  }
}

}  // namespace

const std::vector<FieldDef>& offer_fields() {
  static const std::vector<FieldDef> f = {
      {'C', "CLUSTER", "cluster"},          {'Q', "PARTITION", "partition"},
      {'S', "START_TIME", "offered start"}, {'E', "END_TIME", "offered end"},
      {'L', "TIME", "run time"},            {'D', "NODES", "nodes"},
      {'F', "FIT", "what-if fitness, 1 = delays no local job"},
      {'P', "P_RES", "chance a reservation there is still granted later"},
      {'V', "VALID_UNTIL", "offer valid until"},
      {'R', "VERDICT", "placed, collision or head-delayed"},
      {'W', "WAIT", "time from now to the start"}};
  return f;
}

const std::vector<FieldDef>& step_fields() {
  static const std::vector<FieldDef> f = {
      {'C', "CLUSTER", "cluster"},       {'Q', "PARTITION", "partition"},
      {'S', "START_TIME", "step start"}, {'E', "END_TIME", "step end"},
      {'L', "TIME", "step length"},      {'D', "FREE", "free nodes"},
      {'U', "FREE_CPUS", "free CPUs"},   {'T', "PUBLISHED", "published nodes"}};
  return f;
}

const std::vector<FieldDef>& coalloc_fields() {
  static const std::vector<FieldDef> f = {
      {'i', "ID", "co-allocation id"},  {'j', "NAME", "name (co-ID)"},
      {'u', "USER", "owner"},                  {'T', "STATE", "state"},
      {'D', "NODES", "total nodes"},           {'S', "START_TIME", "planned common start"},
      {'E', "END_TIME", "planned end"},        {'L', "TIME", "run time of the placement"},
      {'d', "TIME_LIMIT", "run time asked"},   {'M', "PLACEMENT", "cluster:nodes of each part"},
      {'m', "MOVES", "times rescheduled"},     {'P', "POLICY", "planning policy"},
      {'r', "REASON", "why in this state"},    {'s', "SUBMIT_TIME", "submitted"},
      {'a', "ACTUAL_START", "first part's start"}, {'l', "DEADLINE", "latest end"},
      {'p', "PARTS", "number of parts"}};
  return f;
}

const std::vector<FieldDef>& part_fields() {
  static const std::vector<FieldDef> f = {
      {'x', "PART", "part index"},           {'C', "CLUSTER", "cluster"},
      {'D', "NODES", "nodes"},               {'T', "STATE", "part state"},
      {'R', "RESERVATION", "Slurm reservation"}, {'I', "JOBID", "part job id"},
      {'J', "JOB_STATE", "Slurm job state"}, {'S', "PLANNED_START", "planned start"},
      {'E', "PLANNED_END", "planned end"},   {'a', "ACTUAL_START", "Slurm start time"},
      {'e', "ACTUAL_END", "Slurm end time"}, {'N', "NODELIST", "nodes of the part"},
      {'X', "EXIT_CODE", "part job exit code"}};
  return f;
}

std::vector<std::int64_t> probe_counts(const Options& o, std::size_t n_clusters) {
  std::vector<std::int64_t> counts;
  if (o.nodes_min != o.nodes_max) {
    for (std::int64_t n = o.nodes_min; n <= o.nodes_max && counts.size() < 64; ++n) counts.push_back(n);
    return counts;
  }
  int parts = o.max_parts > 0 ? o.max_parts : std::max<int>(1, static_cast<int>(n_clusters));
  for (int k = 1; k <= parts; ++k) {
    std::int64_t n = (o.nodes_min + k - 1) / k;
    if (std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}

bool check_format(const Options& o, std::string* error) {
  if (o.format.empty() || o.json) return true;
  const std::vector<FieldDef>* fields = nullptr;
  switch (o.command) {
    case Command::kOffers: fields = &offer_fields(); break;
    case Command::kProfile: fields = &step_fields(); break;
    case Command::kList: fields = &coalloc_fields(); break;
    case Command::kShow: fields = &part_fields(); break;
    default: return true;
  }
  FormatSpec spec;
  return parse_format(o.format, *fields, &spec, error);
}

std::string call_error(const json_t* call, int* exit_code) {
  std::string target = str(call, "target");
  bool daemon = target == "flexcod";
  std::string who = daemon ? "flexcod" : "cluster " + target;
  if (answered(call)) {
    *exit_code = kExitError;
    std::string code = str(get(get(call, "answer"), "error"), "code");
    if (code == "munge_unavailable") *exit_code = kExitNoMunge;
    return who + ": " + answer_message(call);
  }
  std::string code = str(call, "code");
  std::string error = str(call, "error");
  if (code == "sign_failed") {
    *exit_code = kExitNoMunge;
    return "cannot sign requests, is munged running? (" + error + ")";
  }
  *exit_code = daemon ? kExitNoDaemon : kExitNoCluster;
  return daemon ? "flexcod is not reachable at " + str(call, "url") + " (" + error + ")"
                : "cluster " + target + ": its flexco plugin is not reachable at " +
                      str(call, "url") + " (" + error + ")";
}

Output render(const Options& o, const json_t* ex) {
  Output out;
  if (o.helpformat) {
    switch (o.command) {
      case Command::kOffers: out.out = help_format(offer_fields()); break;
      case Command::kProfile: out.out = help_format(step_fields()); break;
      case Command::kShow: out.out = help_format(part_fields()); break;
      default: out.out = help_format(coalloc_fields()); break;
    }
    return out;
  }
  switch (o.command) {
    case Command::kOffers: render_offers(o, ex, &out); break;
    case Command::kProfile: render_profile(o, ex, &out); break;
    case Command::kList: render_list(o, ex, &out); break;
    case Command::kShow: render_show(o, ex, &out); break;
    case Command::kSubmit: render_submit(o, ex, &out); break;
    case Command::kUpdate:
    case Command::kCancel: render_update_cancel(o, ex, &out); break;
    case Command::kUi: render_ui(o, ex, &out); break;
    default: break;
  }
  return out;
}

}  // namespace sreserve
