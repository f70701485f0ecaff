// SPDX-License-Identifier: GPL-2.0-or-later
// app.js - flexcod's read-only web view (doc/flexcod.md, "Web view").
// Plain JavaScript, no framework: reads the session token from the URL's
// fragment (#token=..., printed by `sreserve ui`; a fragment never reaches
// a server), keeps it in sessionStorage, and sends it as
// "Authorization: Bearer" on its GETs of flexcod's API.  Everything is
// written with textContent and SVG elements: no markup from the data.
"use strict";

(function () {
  var REFRESH_MS = 30000;
  var DETAILS = 20;  // co-allocations whose history and moves are fetched
  var SVGNS = "http://www.w3.org/2000/svg";

  function takeToken() {
    var m = /(?:^#|&)token=([0-9a-f]{64})(?:&|$)/.exec(window.location.hash || "");
    if (m) {
      try { window.sessionStorage.setItem("flexco-token", m[1]); } catch (e) { /* private mode */ }
      if (window.history && window.history.replaceState) {
        window.history.replaceState(null, "", window.location.pathname);
      }
      return m[1];
    }
    try { return window.sessionStorage.getItem("flexco-token"); } catch (e) { return null; }
  }

  var token = takeToken();

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function when(t) {
    if (t === null || t === undefined || t === 0) return "";
    var d = new Date(t * 1000);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function setStatus(state, text) {
    var s = document.getElementById("status");
    s.setAttribute("data-state", state);
    s.textContent = text;
  }

  function row(tbody, cells, attrs) {
    var tr = document.createElement("tr");
    Object.keys(attrs || {}).forEach(function (k) { tr.setAttribute(k, attrs[k]); });
    cells.forEach(function (c) {
      if (c instanceof Node) { var td = el("td"); td.appendChild(c); tr.appendChild(td); }
      else tr.appendChild(el("td", c));
    });
    tbody.appendChild(tr);
    return tr;
  }

  function body(id) {
    var tb = document.querySelector("#" + id + " tbody");
    while (tb.firstChild) tb.removeChild(tb.firstChild);
    return tb;
  }

  function get(path) {
    return fetch(path, { headers: { "Authorization": "Bearer " + token }, cache: "no-store",
                         credentials: "omit" })
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (j) {
          if (!r.ok) {
            var err = new Error((j && j.error && j.error.message) || ("HTTP " + r.status));
            err.status = r.status;
            throw err;
          }
          return j;
        });
      });
  }

  function partsText(parts) {
    return (parts || []).map(function (p) { return p.cluster + ":" + p.nodes; }).join(" ");
  }

  function active(state) {
    return state === "planning" || state === "committing" || state === "scheduled" ||
      state === "running" || state === "cancelling";
  }

  // A cluster's availability profile as a step chart: free nodes (height)
  // over the next 24 hours, from its plugin's GET /v1/profile via flexcod.
  function profileChart(name, prof) {
    if (!prof || !prof.steps) return el("span", "unavailable", "bad");
    var w = 240, h = 36;
    var total = Math.max(1, (prof.nodes && (prof.nodes.published || prof.nodes.total)) || 1);
    var t0 = prof.snapshot_time, t1 = Math.max(t0 + 1, prof.horizon_end);
    var s = svg("svg", { width: w, height: h + 2, "class": "profile", "data-cluster": name,
                         role: "img", "aria-label": "free nodes of " + name + " over the next day" });
    var d = "M0," + (h + 1);
    prof.steps.forEach(function (st) {
      var x0 = Math.max(0, (st.start - t0) / (t1 - t0) * w);
      var x1 = Math.min(w, (st.end - t0) / (t1 - t0) * w);
      var y = 1 + h - Math.min(1, st.free_nodes / total) * h;
      if (x1 > x0) d += " L" + x0.toFixed(1) + "," + y.toFixed(1) + " L" + x1.toFixed(1) + "," + y.toFixed(1);
    });
    d += " L" + w + "," + (h + 1) + " Z";
    s.appendChild(svg("path", { d: d, "class": "profile-area" }));
    var min = Math.min.apply(null, prof.steps.map(function (st) { return st.free_nodes; }));
    s.appendChild(svg("title", {}, name + ": " + total + " nodes, at least " + min +
                                   " free in the next 24 hours"));
    return s;
  }

  function drawClusters(clusters, coallocs, profiles) {
    var booked = {};
    coallocs.forEach(function (co) {
      if (!active(co.state)) return;
      (co.parts || []).forEach(function (p) { booked[p.cluster] = (booked[p.cluster] || 0) + p.nodes; });
    });
    var tb = body("clusters");
    clusters.forEach(function (c) {
      var health = c.reachable ? (c.reconciled ? "up" : "up, reconciling") :
        "unreachable" + (c.last_error ? ": " + c.last_error : "");
      row(tb, [c.name, el("span", health, c.reachable ? "ok" : "bad"),
               c.nodes === null ? "?" : c.nodes, c.partition || "(default)", when(c.last_contact),
               c.event_seq, (booked[c.name] || 0) + " nodes", profileChart(c.name, profiles[c.name])],
          { "data-cluster": c.name });
    });
  }

  function drawCoallocs(coallocs) {
    var tb = body("coallocations");
    coallocs.forEach(function (co) {
      row(tb, [co.name, co.user, co.state, co.nodes, when(co.planned_start), when(co.planned_end),
               partsText(co.parts), co.moves, co.reason || ""],
          { "data-id": co.id, "data-state": co.state });
    });
  }

  // A Gantt chart of the parts: one row per part, a bar from its planned
  // start to its planned end, coloured by the part's state.
  function drawGantt(coallocs) {
    var box = document.getElementById("gantt");
    while (box.firstChild) box.removeChild(box.firstChild);
    var rows = [];
    coallocs.forEach(function (co) {
      (co.parts || []).forEach(function (p) {
        if (p.planned_start && p.planned_end) rows.push({ co: co, p: p });
      });
    });
    rows = rows.slice(0, 40);
    if (!rows.length) { box.appendChild(el("p", "No parts to draw.")); return; }
    var now = Date.now() / 1000;
    var t0 = Math.min.apply(null, rows.map(function (r) { return r.p.planned_start; }).concat([now]));
    var t1 = Math.max.apply(null, rows.map(function (r) { return r.p.planned_end; }).concat([now + 60]));
    var left = 190, width = 900, rowH = 22, top = 24;
    var height = top + rows.length * rowH + 8;
    var s = svg("svg", { width: left + width + 20, height: height, id: "gantt-svg",
                         role: "img", "aria-label": "planned parts over time" });
    var x = function (t) { return left + (t - t0) / (t1 - t0) * width; };
    for (var k = 0; k <= 6; ++k) {
      var t = t0 + (t1 - t0) * k / 6, gx = x(t);
      s.appendChild(svg("line", { x1: gx, y1: top - 4, x2: gx, y2: height - 4, "class": "gantt-grid" }));
      s.appendChild(svg("text", { x: gx, y: 14, "text-anchor": k === 0 ? "start" : (k === 6 ? "end" : "middle"),
                                  "class": "gantt-axis" }, when(t).slice(5, 16)));
    }
    rows.forEach(function (r, i) {
      var y = top + i * rowH;
      var label = r.co.name + " #" + r.p.index + " " + r.p.cluster + " (" + r.p.nodes + " nodes)";
      s.appendChild(svg("text", { x: 4, y: y + 15, "class": "gantt-label" }, label));
      var bx = x(r.p.planned_start), bw = Math.max(2, x(r.p.planned_end) - bx);
      var bar = svg("rect", { x: bx, y: y + 3, width: bw, height: rowH - 6, rx: 3,
                              "class": "st-" + r.p.state, "data-id": r.co.id, "data-part": r.p.index });
      bar.appendChild(svg("title", {}, label + ": " + r.p.state + ", " + when(r.p.planned_start) +
                                        " - " + when(r.p.planned_end)));
      s.appendChild(bar);
    });
    s.appendChild(svg("line", { x1: x(now), y1: top - 4, x2: x(now), y2: height - 4, "class": "gantt-now" }));
    box.appendChild(s);
  }

  function drawHistory(details) {
    var events = [], moves = [];
    details.forEach(function (co) {
      (co.history || []).forEach(function (h) { events.push({ co: co, h: h }); });
      (co.move_history || []).forEach(function (m) { moves.push({ co: co, m: m }); });
    });
    events.sort(function (a, b) { return b.h.time - a.h.time; });
    moves.sort(function (a, b) { return b.m.time - a.m.time; });
    var tb = body("events");
    events.slice(0, 100).forEach(function (e) {
      row(tb, [when(e.h.time), e.co.name, e.h.what, e.h.from || "", e.h.to, e.h.reason],
          { "data-id": e.co.id });
    });
    tb = body("moves");
    if (!moves.length) row(tb, ["", "", "none yet", "", "", "", "", ""]);
    moves.slice(0, 100).forEach(function (e) {
      row(tb, [when(e.m.time), e.co.name, e.m.kind,
               when(e.m.from_start) + " \u2192 " + when(e.m.to_start),
               when(e.m.from_end) + " \u2192 " + when(e.m.to_end),
               partsText(e.m.from_parts), partsText(e.m.to_parts), e.m.reason],
          { "data-id": e.co.id });
    });
  }

  function load() {
    if (!token) {
      setStatus("error", "no session token: run `sreserve ui` and open the address it prints");
      return;
    }
    Promise.all([get("/v1/clusters"), get("/v1/coallocations?limit=50")])
      .then(function (res) {
        var clusters = res[0].clusters || [], coallocs = res[1].coallocations || [];
        var profiles = {};
        var asked = clusters.map(function (c) {
          return get("/v1/clusters/" + encodeURIComponent(c.name) + "/profile")
            .then(function (p) { profiles[c.name] = p; }, function () { profiles[c.name] = null; });
        });
        return Promise.all(coallocs.slice(0, DETAILS).map(function (co) {
          return get("/v1/coallocations/" + co.id);
        }).concat(asked)).then(function (all) {
          var details = all.slice(0, Math.min(DETAILS, coallocs.length));
          drawClusters(clusters, coallocs, profiles);
          drawGantt(coallocs);
          drawCoallocs(coallocs);
          drawHistory(details);
          setStatus("loaded", "loaded: " + clusters.length + " clusters, " + coallocs.length +
                    " co-allocations");
          document.getElementById("updated").textContent = "Updated " + when(Date.now() / 1000) + ".";
          window.setTimeout(load, REFRESH_MS);
        });
      })
      .catch(function (e) {
        if (e.status === 401) {
          try { window.sessionStorage.removeItem("flexco-token"); } catch (x) { /* nothing */ }
          setStatus("error", "session expired or unknown: run `sreserve ui` again (" + e.message + ")");
        } else {
          setStatus("error", "error: " + e.message);
          window.setTimeout(load, REFRESH_MS);
        }
      });
  }

  document.addEventListener("DOMContentLoaded", load);
})();
