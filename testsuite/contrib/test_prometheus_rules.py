#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""contrib/prometheus/flexco-rules.yml, the example alert rules: `promtool
check rules` accepts it, and `promtool test rules` shows its alerts fire
on the series flexcod and the plugin export (doc/admin.md, Prometheus)
and stay quiet otherwise: a cluster unreachable for 5 minutes, commits
rolled back with none committed, a part that started alone."""

import os
import shutil
import subprocess
import tempfile

import flexcotest as t

RULES = os.path.join(t.srcdir(), "contrib", "prometheus", "flexco-rules.yml")

UNIT = """
rule_files: [%(rules)s]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'flexcod_cluster_reachable{job="flexcod",cluster="alpha"}'
        values: '1 1 0 0 0 0 0 0 0 0'
      - series: 'flexcod_cluster_reachable{job="flexcod",cluster="beta"}'
        values: '1 1 1 1 1 1 1 1 1 1'
    alert_rule_test:
      - eval_time: 4m
        alertname: FlexcoClusterUnreachable
        exp_alerts: []
      - eval_time: 8m
        alertname: FlexcoClusterUnreachable
        exp_alerts:
          - exp_labels: {severity: critical, job: flexcod, cluster: alpha}
            exp_annotations:
              summary: "flexcod cannot reach the flexco plugin of cluster alpha"
              description: "The plugin of alpha has not answered flexcod for 5 minutes: nothing is planned there and its parts cannot be released.  Is slurmctld up, and the plugin listening (flexco.conf ListenAddress/ListenPort)?"
  - interval: 1m
    input_series:
      - series: 'flexcod_errors_total{job="flexcod",kind="late_parts"}'
        values: '0 0 0 1 1 1'
    alert_rule_test:
      - eval_time: 2m
        alertname: FlexcoPartRunningAlone
        exp_alerts: []
      - eval_time: 4m
        alertname: FlexcoPartRunningAlone
        exp_alerts:
          - exp_labels: {severity: warning, job: flexcod, kind: late_parts}
            exp_annotations:
              summary: "A co-allocation's part started while another did not (PartStartSkew)"
              description: "1 parts had not started PartStartSkew seconds after the first part of their co-allocation in the last 10 minutes: a part runs alone (PartStartPolicy says whether the co-allocation failed)."
  - interval: 1m
    input_series:
      - series: 'flexcod_errors_total{job="flexcod",kind="rollbacks"}'
        values: '0+1x60'
      - series: 'flexcod_commit_duration_seconds_count{job="flexcod"}'
        values: '5x60'
    alert_rule_test:
      - eval_time: 10m
        alertname: FlexcoCommitsFailing
        exp_alerts: []
      - eval_time: 40m
        alertname: FlexcoCommitsFailing
        exp_alerts:
          - exp_labels: {severity: critical, job: flexcod, kind: rollbacks}
            exp_annotations:
              summary: "flexcod rolls co-allocations back and commits none"
              description: "In the last 15 minutes flexcod rolled back 15 commits and committed none: a cluster refuses reservations or part jobs (see flexcod's log and GET /v1/stats)."
"""


def main():
    t.plan(3)
    promtool = shutil.which("promtool")
    if not promtool:
        t.bail_out("promtool not found: contrib/install-deps installs Debian's prometheus")
    r = subprocess.run([promtool, "check", "rules", RULES], capture_output=True, text=True,
                       timeout=120)
    t.ok(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool check rules accepts flexco-rules.yml",
         r.stdout + r.stderr)
    names = set()
    with open(RULES) as f:
        for line in f:
            if line.strip().startswith("- alert:"):
                names.add(line.split(":", 1)[1].strip())
    t.ok({"FlexcoClusterUnreachable", "FlexcoCommitsFailing", "FlexcoPartRunningAlone"} <= names,
         "it has the alerts for an unreachable cluster, failing commits, a part running alone",
         "%r" % sorted(names))
    d = tempfile.mkdtemp(prefix="flexco-rules-")
    try:
        unit = os.path.join(d, "unit.yml")
        with open(unit, "w") as f:
            f.write(UNIT % {"rules": RULES})
        r = subprocess.run([promtool, "test", "rules", unit], capture_output=True, text=True,
                           timeout=120)
        t.ok(r.returncode == 0, "promtool test rules: each fires on its series, and not before",
             r.stdout + r.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
