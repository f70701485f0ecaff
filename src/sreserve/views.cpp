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
#include "sreserve/gantt.hpp"
#include "sreserve/timefmt.hpp"

namespace sreserve {

// In -O syntax (table.hpp): some of the columns have no letter.
const char* const kOffersFormat =
    "Cluster:10 ,StartTime:19 ,EndTime:19 ,NumNodes:.5 ,Fit:.5 ,PRes:.5 ,PDeadline:.10 ,ValidUntil:19 ,"
    "Verdict:0";
const char* const kStepsFormat =
    "Cluster:10 ,StartTime:19 ,EndTime:19 ,StepLength:.10 ,FreeNodes:.6 ,FreeCPUs:.9";
const char* const kListFormat =
    "JobID:.8 ,Name:.10 ,UserName:.9 ,State:.10 ,NumNodes:.6 ,StartTime:.19 ,RunTime:.10 ,Moves:.5 ,"
    "Placement:0";
const char* const kPartsFormat =
    "Part:.4 ,Cluster:10 ,NumNodes:.5 ,PartState:10 ,Reservation:12 ,JobID:.7 ,State:10 ,"
    "PlannedStart:19 ,ActualStart:19 ,NodeList:0";

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

// A YAML scalar: JSON's spelling is YAML's (strings double-quoted with
// JSON's escapes, which YAML's double-quoted style reads the same).
std::string yaml_scalar(const json_t* v) {
  char* t = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
  std::string out = t ? t : "null";
  std::free(t);
  return out;
}

std::string yaml_key(const char* key) {
  bool plain = *key != 0 && !std::isdigit(static_cast<unsigned char>(*key));
  for (const char* k = key; *k; ++k)
    plain = plain && (std::isalnum(static_cast<unsigned char>(*k)) || *k == '_' || *k == '-');
  if (plain && std::string(key) != "null" && std::string(key) != "true" && std::string(key) != "false")
    return key;
  J s(json_string(key));
  return yaml_scalar(s.get());
}

bool yaml_nested(const json_t* v) {
  return (json_is_object(v) && json_object_size(v) > 0) || (json_is_array(v) && json_array_size(v) > 0);
}

void yaml_node(const json_t* v, int indent, std::string* out);

// The members of an object, or the items of an array, one a line at
// `indent`; nested collections below their key, in block style.
void yaml_node(const json_t* v, int indent, std::string* out) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (json_is_object(v)) {
    const char* key;
    json_t* m;
    json_object_foreach(const_cast<json_t*>(v), key, m) {
      *out += pad + yaml_key(key) + ":";
      if (json_is_object(m) && json_object_size(m) > 0) {
        *out += "\n";
        yaml_node(m, indent + 2, out);
      } else if (json_is_array(m) && json_array_size(m) > 0) {
        *out += "\n";
        yaml_node(m, indent, out);  // "- " items at the key's indent
      } else {
        *out += " " + yaml_scalar(m) + "\n";
      }
    }
    return;
  }
  std::size_t i;
  json_t* item;
  json_array_foreach(v, i, item) {
    if (!yaml_nested(item)) {
      *out += pad + "- " + yaml_scalar(item) + "\n";
      continue;
    }
    // The item's first line goes after "- ", the rest two columns in.
    std::string inner;
    yaml_node(item, indent + 2, &inner);
    *out += pad + "- " + inner.substr(static_cast<std::size_t>(indent) + 2);
  }
}

// A document of `o.command` as JSON or YAML: a "meta" member first (the
// data format's version and the command line, as Slurm's --json), then
// the document's own members.
void emit(const Options& o, const json_t* doc, Output* out) {
  J full(json_object());
  J meta(json_object());
  json_object_set_new(meta.get(), "data_format", json_string(kDataFormat));
  J cmd(json_array());
  json_array_append_new(cmd.get(), json_string("sreserve"));
  for (const auto& a : o.argv) json_array_append_new(cmd.get(), json_string(a.c_str()));
  json_object_set_new(meta.get(), "command", cmd.release());
  json_object_set_new(full.get(), "meta", meta.release());
  if (json_is_object(doc)) {
    const char* key;
    json_t* m;
    json_object_foreach(const_cast<json_t*>(doc), key, m) {
      if (std::string(key) != "meta") json_object_set(full.get(), key, m);
    }
  }
  if (o.yaml) {
    out->out += "---\n";
    yaml_node(full.get(), 0, &out->out);
  } else {
    out->out += dump(full.get());
  }
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
  bool ok = !o.format.empty()        ? parse_format(o.format, fields, &spec, &err)
            : !o.format_long.empty() ? parse_format_long(o.format_long, fields, &spec, &err)
                                     : parse_format_long(dflt, fields, &spec, &err);
  if (!ok) {
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

// HPCM's P(S, d) of a part on `cluster`, from flexcod's dry run (its
// clusters[].p_deadline); null when flexcod did not say.
const json_t* p_deadline_of(const json_t* daemon, const std::string& cluster) {
  if (!http_ok(daemon)) return nullptr;
  std::size_t i;
  const json_t* c;
  json_array_foreach(get(get(daemon, "answer"), "clusters"), i, c) {
    if (str(c, "name") == cluster && json_is_number(get(c, "p_deadline"))) return get(c, "p_deadline");
  }
  return nullptr;
}

Row offer_row(const std::string& cluster, const json_t* doc, const json_t* offer, std::int64_t now,
              const json_t* p_deadline) {
  Row r;
  std::int64_t start = num(offer, "start"), end = num(offer, "end");
  r["Cluster"] = cluster;
  r["Partition"] = str(doc, "partition");
  r["StartTime"] = format_time(start);
  r["EndTime"] = format_time(end);
  r["TimeLimit"] = format_duration(end - start);
  r["NumNodes"] = std::to_string(num(offer, "nodes"));
  r["Fit"] = fixed2(real(offer, "fit"));
  r["PRes"] = fixed2(real(offer, "p_res"));
  r["PDeadline"] = p_deadline ? fixed2(json_number_value(p_deadline)) : "N/A";
  r["ValidUntil"] = format_time(num(offer, "valid_until"));
  r["Verdict"] = str(offer, "verdict");
  r["Wait"] = format_duration(std::max<std::int64_t>(0, start - now));
  r[".start"] = std::to_string(start);  // sort key, no column
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
    const json_t* pd = p_deadline_of(daemon, name);
    json_array_foreach(get(a, "offers"), k, off) {
      rows.push_back(offer_row(name, a, off, now, pd));
      J jo(json_object());
      for (const char* key : {"start", "end", "nodes", "valid_until"})
        json_object_set_new(jo.get(), key, json_integer(num(off, key)));
      json_object_set_new(jo.get(), "fit", json_real(real(off, "fit")));
      json_object_set_new(jo.get(), "p_res", json_real(real(off, "p_res")));
      json_object_set_new(jo.get(), "p_deadline", pd ? json_real(json_number_value(pd)) : json_null());
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
    std::int64_t sa = std::stoll(a.at(".start")), sb = std::stoll(b.at(".start"));
    return sa != sb ? sa < sb : a.at("Cluster") < b.at("Cluster");
  });
  if (o.json || o.yaml) {
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
    emit(o, doc.get(), out);
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
  // The chart shows the span every cluster's profile covers: from the newest
  // snapshot (an idle cluster may answer from an older one) to the earliest
  // horizon end.  Starting at the oldest snapshot drew the newer clusters as
  // having nothing free before their own snapshot.
  std::int64_t begin = 0, end = 0;
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
    std::int64_t hend = has_num(a, "horizon_end") ? num(a, "horizon_end") : snap + o.horizon;
    if (begin == 0 || snap > begin) begin = snap;
    if (end == 0 || hend < end) end = hend;
    std::size_t k;
    json_t* st;
    json_array_foreach(get(a, "steps"), k, st) {
      s.steps.push_back({num(st, "start"), num(st, "end"), num(st, "free_nodes")});
      Row r;
      r["Cluster"] = name;
      r["Partition"] = str(a, "partition");
      r["StartTime"] = format_time(num(st, "start"));
      r["EndTime"] = format_time(num(st, "end"));
      r["StepLength"] = format_duration(num(st, "end") - num(st, "start"));
      r["FreeNodes"] = std::to_string(num(st, "free_nodes"));
      r["FreeCPUs"] = std::to_string(num(st, "free_cpus"));
      r["PublishedNodes"] = std::to_string(s.capacity);
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
  co.end = end > co.begin ? end : co.begin + o.horizon;
  co.width = o.width > 0 ? o.width : 60;
  if (!o.svg.empty()) out->svg = render_svg(series, co);
  if (o.json || o.yaml) {
    J doc(json_object());
    json_object_set_new(doc.get(), "command", json_string("profile"));
    json_object_set_new(doc.get(), "horizon", json_integer(o.horizon));
    json_object_set_new(doc.get(), "clusters", jcl.release());
    emit(o, doc.get(), out);
    return;
  }
  if (o.steps || !o.format.empty() || !o.format_long.empty()) {
    table(o, step_fields(), kStepsFormat, rows, out);
    return;
  }
  if (!series.empty()) out->out += render_chart(series, co);
}

// ---------------------------------------------------------------------------
// co-allocations

// squeue's compact state of a co-allocation state (squeue's %t).
std::string compact_state(const std::string& state) {
  static const struct {
    const char* state;
    const char* code;
  } kCodes[] = {{"planning", "PD"},   {"committing", "PD"}, {"scheduled", "PD"},
                {"running", "R"},     {"completed", "CD"},  {"failed", "F"},
                {"cancelling", "CG"}, {"cancelled", "CA"}};
  for (const auto& k : kCodes)
    if (state == k.state) return k.code;
  return upper(state);
}

// The latest actual end of the parts, 0 if none ended.
std::int64_t parts_end(const json_t* c) {
  std::int64_t end = 0;
  std::size_t i;
  json_t* p;
  json_array_foreach(get(c, "parts"), i, p) end = std::max(end, num(p, "actual_end"));
  return end;
}

Row coalloc_row(const json_t* c, std::int64_t now) {
  Row r;
  std::string state = str(c, "state");
  bool ended = state == "completed" || state == "failed" || state == "cancelled";
  std::int64_t limit = has_num(c, "run_time") ? num(c, "run_time") : num(c, "duration");
  std::int64_t started = num(c, "actual_start");
  std::int64_t used = 0;
  if (started > 0) {
    std::int64_t until = ended ? parts_end(c) : now;
    if (until == 0) until = now;
    used = std::max<std::int64_t>(0, until - started);
  }
  r["JobID"] = std::to_string(num(c, "id"));
  r["Name"] = str(c, "name", "co-" + std::to_string(num(c, "id")));
  r["UserName"] = str(c, "user");
  r["UserID"] = std::to_string(num(c, "uid"));
  r["State"] = upper(state);
  r["StateCompact"] = compact_state(state);
  r["NumNodes"] = std::to_string(num(c, "nodes"));
  r["StartTime"] = started > 0 ? format_time(started) : time_or_na(c, "planned_start");
  r["EndTime"] = ended && parts_end(c) > 0 ? format_time(parts_end(c)) : time_or_na(c, "planned_end");
  r["TimeLimit"] = format_duration(num(c, "duration"));
  r["TimeLeft"] = ended ? format_duration(0) : format_duration(std::max<std::int64_t>(0, limit - used));
  r["TimeUsed"] = format_duration(used);
  r["Reason"] = or_none(str(c, "reason"));
  r["SubmitTime"] = time_or_na(c, "submitted");
  r["RunTime"] = format_duration(limit);
  std::string placement = parts_summary(get(c, "parts"));
  r["Placement"] = placement.empty() ? "(none)" : placement;
  r["Moves"] = std::to_string(num(c, "moves"));
  r["Policy"] = str(c, "policy");
  r["Deadline"] = time_or_na(c, "deadline");
  r["Parts"] = std::to_string(json_array_size(get(c, "parts")));
  r["PlannedStart"] = time_or_na(c, "planned_start");
  r["PlannedEnd"] = time_or_na(c, "planned_end");
  r["ActualStart"] = time_or_na(c, "actual_start");
  std::string allowed;
  std::size_t i;
  json_t* v;
  json_array_foreach(get(c, "clusters"), i, v) {
    if (!allowed.empty()) allowed += ",";
    allowed += json_is_string(v) ? json_string_value(v) : "?";
  }
  r["Clusters"] = allowed.empty() ? "all" : allowed;
  return r;
}

Row part_row(const json_t* p) {
  Row r;
  r["Part"] = std::to_string(num(p, "index"));
  r["Cluster"] = str(p, "cluster");
  r["NumNodes"] = std::to_string(num(p, "nodes"));
  r["PartState"] = upper(str(p, "state"));
  r["Reservation"] = or_none(str(p, "reservation"));
  r["JobID"] = has_num(p, "job_id") ? std::to_string(num(p, "job_id")) : "None";
  r["State"] = or_none(str(p, "job_state"));
  r["StartTime"] = has_num(p, "actual_start") ? time_or_na(p, "actual_start") : time_or_na(p, "planned_start");
  r["EndTime"] = has_num(p, "actual_end") ? time_or_na(p, "actual_end") : time_or_na(p, "planned_end");
  r["PlannedStart"] = time_or_na(p, "planned_start");
  r["PlannedEnd"] = time_or_na(p, "planned_end");
  r["ActualStart"] = time_or_na(p, "actual_start");
  r["ActualEnd"] = time_or_na(p, "actual_end");
  r["NodeList"] = or_none(str(p, "node_list"));
  r["ExitCode"] = has_num(p, "exit_code") ? std::to_string(num(p, "exit_code")) : "None";
  r["Reason"] = or_none(str(p, "reason"));
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

// -M of list, as squeue -M: a co-allocation with a part on one of the
// clusters.
bool on_clusters(const json_t* c, const std::vector<std::string>& clusters) {
  if (clusters.empty()) return true;
  std::size_t i;
  json_t* p;
  json_array_foreach(get(c, "parts"), i, p) {
    if (std::find(clusters.begin(), clusters.end(), str(p, "cluster")) != clusters.end()) return true;
  }
  return false;
}

void render_show_record(const Options& o, const json_t* c, Output* out, std::int64_t now);

void render_list(const Options& o, const json_t* ex, Output* out) {
  const json_t* a = daemon_answer(ex, 0, out);
  if (!a) return;
  J kept(json_array());
  std::size_t i;
  json_t* c;
  json_array_foreach(get(a, "coallocations"), i, c) {
    if (on_clusters(c, o.clusters)) json_array_append(kept.get(), c);
  }
  if (o.json || o.yaml) {
    J doc(json_deep_copy(a));
    json_object_set(doc.get(), "coallocations", kept.get());
    emit(o, doc.get(), out);
    return;
  }
  std::vector<Row> rows;
  std::int64_t now = num(ex, "now");
  json_array_foreach(kept.get(), i, c) rows.push_back(coalloc_row(c, now));
  table(o, coalloc_fields(), kListFormat, rows, out);
}

void render_show(const Options& o, const json_t* ex, Output* out) {
  const json_t* c = daemon_answer(ex, 0, out);
  if (!c) return;
  // --chart, --svg: the co-allocation over time (gantt.hpp), after the
  // record; the clusters' profiles are the exchange's "clusters" calls.
  std::string gantt_text;
  if (o.chart || !o.svg.empty()) {
    Gantt g = gantt_from_json(c, get(ex, "clusters"), num(ex, "now"));
    if (!o.svg.empty()) out->svg = render_gantt_svg(g);
    if (o.chart) gantt_text = render_gantt_chart(g, o.width > 0 ? o.width : 80);
  }
  if (o.json || o.yaml) {
    emit(o, c, out);
    return;
  }
  render_show_record(o, c, out, num(ex, "now"));
  if (!gantt_text.empty()) out->out += (o.noheader ? "" : "\nCHART\n") + gantt_text;
}

void render_show_record(const Options& o, const json_t* c, Output* out, std::int64_t now) {
  Row r = coalloc_row(c, now);
  std::string s;
  s += "CoallocationId=" + r["JobID"] + " Name=" + r["Name"] + " UserId=" + r["UserName"] + "(" +
       r["UserID"] + ")" + " State=" + r["State"] + " Reason=" + r["Reason"] + "\n";
  char oh[32];
  std::snprintf(oh, sizeof oh, "%.2f", real(c, "overhead"));
  s += "   Policy=" + or_none(r["Policy"]) + " Nodes=" + r["NumNodes"] + " TimeLimit=" + r["TimeLimit"] +
       " RunTime=" + (has_num(c, "run_time") ? format_duration(num(c, "run_time")) : "N/A") +
       " Overhead=" + oh + " MaxParts=" + std::to_string(num(c, "max_parts")) + "\n";
  std::size_t i;
  json_t* v;
  s += "   SubmitTime=" + r["SubmitTime"] + " EligibleTime=" + time_or_na(c, "ready") +
       " Deadline=" + (has_num(c, "deadline") ? r["Deadline"] : "None") +
       " LastChange=" + time_or_na(c, "changed") + "\n";
  s += "   PlannedStart=" + r["PlannedStart"] + " PlannedEnd=" + r["PlannedEnd"] +
       " ActualStart=" + r["ActualStart"] + " StartSpread=" +
       (has_num(c, "start_spread") ? std::to_string(num(c, "start_spread")) + "s" : "N/A") +
       " Moves=" + r["Moves"] + "\n";
  s += "   Clusters=" + r["Clusters"] + " Placement=" + r["Placement"] + "\n";
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

  static const std::vector<FieldDef> hist = {{0, "Time", "TIME", ""},
                                             {0, "What", "WHAT", ""},
                                             {0, "From", "FROM", ""},
                                             {0, "To", "TO", ""},
                                             {0, "Reason", "REASON", ""}};
  std::vector<Row> rows;
  json_array_foreach(get(c, "history"), i, v) {
    rows.push_back({{"Time", format_time(num(v, "time"))},
                    {"What", str(v, "what")},
                    {"From", upper(or_none(str(v, "from")))},
                    {"To", upper(str(v, "to"))},
                    {"Reason", str(v, "reason")}});
  }
  if (!rows.empty()) {
    FormatSpec spec;
    std::string err;
    parse_format_long("Time:19 ,What:26 ,From:12 ,To:12 ,Reason:0", hist, &spec, &err);
    out->out += o.noheader ? "" : "\nHISTORY\n";
    out->out += render_table(spec, hist, rows, o.noheader);
  }
  static const std::vector<FieldDef> moves = {
      {0, "Time", "TIME", ""},           {0, "Kind", "KIND", ""},
      {0, "FromStart", "FROM_START", ""}, {0, "ToStart", "TO_START", ""},
      {0, "FromParts", "FROM_PARTS", ""}, {0, "ToParts", "TO_PARTS", ""},
      {0, "Reason", "REASON", ""}};
  rows.clear();
  json_array_foreach(get(c, "move_history"), i, v) {
    rows.push_back({{"Time", format_time(num(v, "time"))},
                    {"Kind", upper(str(v, "kind"))},
                    {"FromStart", format_time(num(v, "from_start"))},
                    {"ToStart", format_time(num(v, "to_start"))},
                    {"FromParts", parts_summary(get(v, "from_parts"))},
                    {"ToParts", parts_summary(get(v, "to_parts"))},
                    {"Reason", str(v, "reason")}});
  }
  if (!rows.empty()) {
    FormatSpec spec;
    std::string err;
    parse_format_long("Time:19 ,Kind:6 ,FromStart:19 ,ToStart:19 ,FromParts:16 ,ToParts:16 ,Reason:0", moves,
                      &spec, &err);
    out->out += o.noheader ? "" : "\nMOVES\n";
    out->out += render_table(spec, moves, rows, o.noheader);
  }
}

void render_submit(const Options& o, const json_t* ex, Output* out) {
  const json_t* a = daemon_answer(ex, 0, out);
  if (!a) return;
  if (o.json || o.yaml) {
    emit(o, a, out);
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
  if (!o.json && !o.yaml) return;
  if (o.command == Command::kUpdate) {
    if (json_array_size(all.get()) == 1) emit(o, json_array_get(all.get(), 0), out);
  } else {
    J doc(json_object());
    json_object_set_new(doc.get(), "coallocations", all.release());
    emit(o, doc.get(), out);
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
      {0, "Cluster", "CLUSTER", "cluster"},
      {'P', "Partition", "PARTITION", "partition"},
      {'S', "StartTime", "START_TIME", "offered start"},
      {'e', "EndTime", "END_TIME", "offered end"},
      {'l', "TimeLimit", "TIME_LIMIT", "run time"},
      {'D', "NumNodes", "NODES", "nodes"},
      {0, "Fit", "FIT", "what-if fitness, 1 = delays no local job"},
      {0, "PRes", "P_RES", "chance a reservation there is still granted later"},
      {0, "PDeadline", "P_DEADLINE", "HPCM's chance a part there meets the deadline (flexcod's model)"},
      {0, "ValidUntil", "VALID_UNTIL", "offer valid until"},
      {0, "Verdict", "VERDICT", "placed, collision or head-delayed"},
      {0, "Wait", "WAIT", "time from now to the start"}};
  return f;
}

const std::vector<FieldDef>& step_fields() {
  static const std::vector<FieldDef> f = {
      {0, "Cluster", "CLUSTER", "cluster"},
      {'P', "Partition", "PARTITION", "partition"},
      {'S', "StartTime", "START_TIME", "step start"},
      {'e', "EndTime", "END_TIME", "step end"},
      {0, "StepLength", "TIME", "step length"},
      {0, "FreeNodes", "FREE", "free nodes"},
      {0, "FreeCPUs", "FREE_CPUS", "free CPUs"},
      {0, "PublishedNodes", "PUBLISHED", "published nodes"}};
  return f;
}

const std::vector<FieldDef>& coalloc_fields() {
  static const std::vector<FieldDef> f = {
      {'i', "JobID", "ID", "co-allocation id"},
      {'j', "Name", "NAME", "name (co-ID)"},
      {'u', "UserName", "USER", "owner"},
      {'U', "UserID", "UID", "owner's uid"},
      {'T', "State", "STATE", "state"},
      {'t', "StateCompact", "ST", "state, compact (PD R CG CD F CA)"},
      {'D', "NumNodes", "NODES", "total nodes"},
      {'S', "StartTime", "START_TIME", "actual start, else planned start"},
      {'e', "EndTime", "END_TIME", "actual end when ended, else planned end"},
      {'l', "TimeLimit", "TIME_LIMIT", "run time asked"},
      {'L', "TimeLeft", "TIME_LEFT", "run time of the placement less time used"},
      {'M', "TimeUsed", "TIME", "time used since the start"},
      {'r', "Reason", "REASON", "why in this state"},
      {'V', "SubmitTime", "SUBMIT_TIME", "submitted"},
      {0, "RunTime", "RUN_TIME", "run time of the placement (with overhead when split)"},
      {0, "Placement", "PLACEMENT", "cluster:nodes of each part"},
      {0, "Moves", "MOVES", "times rescheduled"},
      {0, "Policy", "POLICY", "planning policy"},
      {0, "Deadline", "DEADLINE", "latest end"},
      {0, "Parts", "PARTS", "number of parts"},
      {0, "PlannedStart", "PLANNED_START", "planned common start"},
      {0, "PlannedEnd", "PLANNED_END", "planned end"},
      {0, "ActualStart", "ACTUAL_START", "first part's start"},
      {0, "Clusters", "CLUSTERS", "allowed clusters"}};
  return f;
}

const std::vector<FieldDef>& part_fields() {
  static const std::vector<FieldDef> f = {
      {0, "Part", "PART", "part index"},
      {0, "Cluster", "CLUSTER", "cluster"},
      {'D', "NumNodes", "NODES", "nodes"},
      {0, "PartState", "PART_STATE", "part state"},
      {'T', "State", "STATE", "the part job's Slurm state"},
      {'v', "Reservation", "RESERVATION", "Slurm reservation"},
      {'i', "JobID", "JOBID", "part job id"},
      {'S', "StartTime", "START_TIME", "actual start, else planned start"},
      {'e', "EndTime", "END_TIME", "actual end, else planned end"},
      {'N', "NodeList", "NODELIST", "nodes of the part"},
      {'r', "Reason", "REASON", "why the part is in its state"},
      {0, "PlannedStart", "PLANNED_START", "planned start"},
      {0, "PlannedEnd", "PLANNED_END", "planned end"},
      {0, "ActualStart", "ACTUAL_START", "Slurm start time"},
      {0, "ActualEnd", "ACTUAL_END", "Slurm end time"},
      {0, "ExitCode", "EXIT_CODE", "part job exit code"}};
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
  if ((o.format.empty() && o.format_long.empty()) || o.json || o.yaml) return true;
  const std::vector<FieldDef>* fields = nullptr;
  switch (o.command) {
    case Command::kOffers: fields = &offer_fields(); break;
    case Command::kProfile: fields = &step_fields(); break;
    case Command::kList: fields = &coalloc_fields(); break;
    case Command::kShow: fields = &part_fields(); break;
    default: return true;
  }
  FormatSpec spec;
  return o.format.empty() ? parse_format_long(o.format_long, *fields, &spec, error)
                          : parse_format(o.format, *fields, &spec, error);
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
  if (code == "tls_failed") {
    // Its certificate did not verify (or no TLS there): the request was
    // not sent (core/http_client.hpp).
    return (daemon ? std::string("flexcod") : "cluster " + target) + ": TLS with " +
           str(call, "url") + " failed (" + error +
           "); check TLSCAFile in flexcod.conf or FLEXCO_TLS_CA_FILE";
  }
  return daemon ? "flexcod is not reachable at " + str(call, "url") + " (" + error + ")"
                : "cluster " + target + ": its flexco plugin is not reachable at " +
                      str(call, "url") + " (" + error + ")";
}

Output render(const Options& o, const json_t* ex) {
  Output out;
  if (o.helpformat || o.helpformat_long) {
    const std::vector<FieldDef>* fields = &coalloc_fields();
    switch (o.command) {
      case Command::kOffers: fields = &offer_fields(); break;
      case Command::kProfile: fields = &step_fields(); break;
      case Command::kShow: fields = &part_fields(); break;
      default: break;
    }
    out.out = help_format(*fields, o.helpformat_long);
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
