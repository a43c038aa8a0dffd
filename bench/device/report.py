#!/usr/bin/env python3
"""Turns one run of bench/device_suite.sh (OUT/meta.tsv, OUT/steps.tsv, OUT/logs/) into
OUT/results.csv (one row per figure) and OUT/results.md (machine, targets, tables, steps).

    report.py OUT            write both files (the suite calls it after every step)
    report.py --check OUT    the same, then exit 1 when a step failed, timed out, was skipped or
                             printed no figure (the dry run's test)

Every figure is parsed from the log of the program that printed it; docs/device-suite.md says
what each step measures and how to read the files.
"""
import csv
import os
import re
import sys

# Programs whose named tests the device run is for (issue 53: GPU-only tests, and the apex test
# that failed on the last GPU machine).
WATCHED_TESTS = {
    "actor_critic_test": ["ActorCriticTest.FollowsTheParametersToCuda"],
    "process_group_test": ["ProcessGroup.NcclCollectivesAreExactOnOneGpuPerRank"],
    "apex_processes_test": ["ApexProcesses.EveryActorsStepsReachTheLearnerInOrderAndParametersReachTheActors"],
}

STEP_TITLES = [
    ("correctness", "CUDA correctness"),
    ("ga3c", "GA3C: central batched inference against per-agent inference (`bench/ga3c_inference`)"),
    ("env_stepping", "Env stepping over threads (`concord rollout`, random actions)"),
    ("multi_learner", "multi_learner over ranks, MinAtar CNN (`bench/multi_learner`)"),
    ("fit_workers", "ResNet-20 on Fashion-MNIST over workers, strong scaling (`bench/data_parallel`)"),
    ("fit_gpu", "ResNet-20 on one GPU against 16 CPU workers (`bench/device_fit`)"),
    ("ppo_cpu", "PPO on MinAtar Breakout over threads, CPU (`concord train`)"),
    ("ppo_gpu", "PPO on MinAtar Breakout with the GPU against the CPU (`concord train`)"),
    ("actor_processes", "actor_processes over actors, MinAtar CNN (`bench/actor_processes`)"),
]


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as handle:
        return [line.rstrip("\n").split("\t") for line in handle if line.strip()]


def read_log(out, log):
    path = os.path.join(out, log) if log else ""
    if not log or not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def figure(step, config, x, value, unit, key=None, baseline=None, ratio=None, status="ok", aux=False):
    return {"step": step, "config": config, "x": x, "value": value, "unit": unit, "baseline": baseline,
            "ratio": ratio, "status": status, "key": key if key is not None else config, "aux": aux}


def number(text):
    return float(text.replace(",", ""))


# --- Parsers: (step record, log text) -> figures -------------------------------------------------

def parse_link(rec, text):
    ok = rec["status"] == "ok"
    return [figure("correctness", rec["config"], "", 1 if ok else 0, "check passed",
                   status="passed" if ok else "failed")]


def parse_gtest(rec, text):
    program = rec["step"]
    counts = {}
    for label, name in (("PASSED", "passed"), ("FAILED", "failed"), ("SKIPPED", "skipped")):
        match = re.search(r"^\[\s*%s\s*\] (\d+) tests?," % label, text, re.M) or \
            re.search(r"^\[\s*%s\s*\] (\d+) tests?\.?$" % label, text, re.M)
        counts[name] = int(match.group(1)) if match else 0
    if counts["passed"] + counts["failed"] + counts["skipped"] == 0:
        return []
    ok = rec["status"] == "ok" and counts["failed"] == 0
    rows = [figure("correctness", rec["config"], "", counts["passed"], "tests passed",
                   status=("passed" if ok else rec["status"] if rec["status"] != "ok" else "failed") +
                   " (%d failed, %d skipped)" % (counts["failed"], counts["skipped"]))]
    for test in WATCHED_TESTS.get(program, []):
        result = "not run"
        for label, word in (("OK", "passed"), ("SKIPPED", "skipped"), ("FAILED", "failed")):
            if re.search(r"^\[\s*%s\s*\] %s( |$)" % (label, re.escape(test)), text, re.M):
                result = word
                break
        rows.append(figure("correctness", test, "", 1 if result == "passed" else 0, "test passed", status=result,
                           aux=True))
    return rows


def parse_rollout(rec, text):
    steps = re.search(r"^steps\s+([\d,]+)\s*$", text, re.M)
    wall = re.search(r"^wall time\s+([\d.]+) s", text, re.M)
    if not steps or not wall or float(wall.group(1)) <= 0:
        return []
    return [figure("env_stepping", rec["config"], int(rec["x"]), number(steps.group(1)) / float(wall.group(1)),
                   "steps/s")]


def parse_train(rec, text, out=None):
    """steps/s from the run's metrics.csv, first update to last (the first update's start-up left
    out); with fewer than two updates, the steps over the printed wall time."""
    steps = re.search(r"^steps\s+([\d,]+) \(", text, re.M)
    wall = re.search(r"^wall time\s+([\d.]+) s", text, re.M)
    if not steps or not wall:
        return []
    value = number(steps.group(1)) / float(wall.group(1)) if float(wall.group(1)) > 0 else None
    metrics = os.path.join(out or "", rec["log"].replace(".log", ".metrics.csv"))
    if out and os.path.exists(metrics):
        with open(metrics, encoding="utf-8") as handle:
            updates = [(float(r["step"]), float(r["wall_time"])) for r in csv.DictReader(handle)]
        if len(updates) >= 2 and updates[-1][1] > updates[0][1]:
            value = (updates[-1][0] - updates[0][0]) / (updates[-1][1] - updates[0][1])
    if value is None:
        return []
    policy = rec["config"].split(" on ")[0]
    return [figure(rec["group"], rec["config"], int(rec["x"]), value, "steps/s", key=policy)]


def parse_multi_learner(rec, text):
    rows = []
    pattern = r"^(\d+) ranks?\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)x\s+(\d+)%\s+([\d.]+)"
    for match in re.finditer(pattern, text, re.M):
        ranks = int(match.group(1))
        rows.append(figure("multi_learner", rec["config"], ranks, float(match.group(4)), "steps/s"))
        rows.append(figure("multi_learner", rec["config"], ranks, float(match.group(7)), "cores busy", aux=True))
    return rows


def parse_actor_processes(rec, text):
    rows = []
    for match in re.finditer(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)x\s+([\d.]+)", text, re.M):
        actors = int(match.group(1))
        rows.append(figure("actor_processes", rec["config"], actors, float(match.group(4)), "steps/s"))
        rows.append(figure("actor_processes", rec["config"], actors, float(match.group(6)), "cores busy", aux=True))
    return rows


def parse_data_parallel(rec, text):
    rows = []
    section = text.split("\nstrong scaling:", 1)
    if len(section) < 2:
        return rows
    body = section[1].split("\n\n", 2)
    body = body[0] + ("\n" + body[1] if len(body) > 1 else "")
    pattern = r"^(serial|threads|processes)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s.*?\|\s*([\d.]+)\s+([\d.]+)\s+(\S+)"
    for match in re.finditer(pattern, body, re.M):
        transport, workers, batch = match.group(1), int(match.group(2)), int(match.group(3))
        step_ms, compute_ms, comm = float(match.group(6)), float(match.group(7)), match.group(8)
        config = "serial loop, batch %d" % batch if transport == "serial" else "%s, global batch %d" % (transport, batch)
        rows.append(figure("fit_workers", config, workers, 1000.0 / step_ms, "steps/s", key=transport))
        if transport != "serial":
            rows.append(figure("fit_workers", config, workers, compute_ms, "ms compute", key=transport, aux=True))
            if comm not in ("-", ""):
                rows.append(figure("fit_workers", config, workers, float(comm), "ms comm", key=transport, aux=True))
    return rows


def parse_device_fit(rec, text):
    match = re.search(r"^concord-device-fit: (\S+) (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)", text, re.M)
    if not match:
        return []
    config = "resnet20 on %s, batch %s" % (match.group(1), match.group(2))
    return [figure("fit_gpu", config, 1, float(match.group(6)), "steps/s"),
            figure("fit_gpu", config, 1, float(match.group(5)), "samples/s", aux=True)]


def parse_ga3c(rec, text):
    devices = re.search(r"^devices: central batched on (\S+), own batch-1 on (\S+)", text, re.M)
    central_device, own_device = (devices.group(1), devices.group(2)) if devices else ("?", "?")
    rows = []
    pattern = r"^\| (.+?) \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \| ([\d.]+)x \|\s*$"
    for match in re.finditer(pattern, text, re.M):
        workload, agents = match.group(1), int(match.group(2))
        central, batch, own = float(match.group(3)), float(match.group(4)), float(match.group(5))
        config = "%s; central on %s, own on %s" % (workload, central_device, own_device)
        key = (rec["step"], workload, central_device, own_device)
        rows.append(figure("ga3c", config, agents, central, "PPS", key=key, baseline=own,
                           ratio=central / own if own > 0 else None))
        rows.append(figure("ga3c", config, agents, batch, "rows per forward", key=key, aux=True))
    return rows


PARSERS = {"link": parse_link, "gtest": parse_gtest, "rollout": parse_rollout, "train": parse_train,
           "multi_learner": parse_multi_learner, "actor_processes": parse_actor_processes,
           "data_parallel": parse_data_parallel, "device_fit": parse_device_fit, "ga3c": parse_ga3c}
STEP_OF_KIND = {"link": "correctness", "gtest": "correctness", "rollout": "env_stepping",
                "multi_learner": "multi_learner", "actor_processes": "actor_processes",
                "data_parallel": "fit_workers", "device_fit": "fit_gpu", "ga3c": "ga3c"}


def load(out):
    meta = {}
    for fields in read_tsv(os.path.join(out, "meta.tsv")):
        if len(fields) >= 2:
            meta[fields[0]] = fields[1]
    records, figures = [], []
    names = ["kind", "group", "step", "config", "x", "status", "wall", "cpu", "log"]
    for fields in read_tsv(os.path.join(out, "steps.tsv")):
        rec = dict(zip(names, fields + [""] * (len(names) - len(fields))))
        rec["figures"] = 0
        if rec["kind"] != "build" and rec["status"] != "" and not rec["status"].startswith("skipped"):
            try:
                parser = PARSERS[rec["kind"]]
                if parser is parse_train:
                    parsed = parse_train(rec, read_log(out, rec["log"]), out)
                else:
                    parsed = parser(rec, read_log(out, rec["log"]))
            except (KeyError, ValueError, ZeroDivisionError):
                parsed = []
            rec["figures"] = len(parsed)
            if rec["status"] != "ok":
                for row in parsed:
                    if row["status"] == "ok":
                        row["status"] = "partial: step " + rec["status"]
            figures.extend(parsed)
        if rec["kind"] != "build" and rec["figures"] == 0:
            step = rec["group"] if rec["kind"] == "train" else STEP_OF_KIND.get(rec["kind"], rec["group"])
            status = rec["status"] if rec["status"] != "ok" else "no figure in the log"
            figures.append(figure(step, rec["config"], rec["x"], None, "", status=status))
        records.append(rec)
    baselines(figures)
    return meta, records, figures


def primary(figures, step, unit="steps/s"):
    return [f for f in figures if f["step"] == step and f["unit"] == unit and f["value"] is not None and not f["aux"]]


def baselines(figures):
    """Each curve against its own x = 1 (or smallest x); the GPU rows against the CPU's."""
    for step in ("env_stepping", "ppo_cpu", "multi_learner", "actor_processes", "fit_workers"):
        rows = primary(figures, step)
        for row in rows:
            if row["key"] == "serial":
                continue
            same = [r for r in rows if r["key"] == row["key"] and r["config"] == row["config"]] or \
                [r for r in rows if r["key"] == row["key"]]
            first = min(same, key=lambda r: r["x"])
            row["baseline"] = first["value"]
            row["ratio"] = row["value"] / first["value"] if first["value"] else None
    cpu = primary(figures, "ppo_cpu")
    for row in primary(figures, "ppo_gpu"):
        match = [r for r in cpu if r["key"] == row["key"] and r["x"] == row["x"]]
        if match:
            row["baseline"] = match[0]["value"]
            row["ratio"] = row["value"] / match[0]["value"]
    workers = [r for r in primary(figures, "fit_workers") if r["key"] == "threads"]
    for row in primary(figures, "fit_gpu"):
        if workers:
            most = max(workers, key=lambda r: r["x"])
            row["baseline"] = most["value"]
            row["ratio"] = row["value"] / most["value"]
            row["baseline_note"] = "%d CPU workers" % most["x"]


# --- Targets (issue 53) ---------------------------------------------------------------------------

def at_x(rows, x, dry):
    if not rows:
        return None
    if dry:
        x = max(r["x"] for r in rows)
    match = [r for r in rows if r["x"] == x]
    return match[0] if match else None


def cores_busy(records, step_name):
    for rec in records:
        if rec["step"] == step_name:
            try:
                return float(rec["cpu"]) / float(rec["wall"])
            except (ValueError, ZeroDivisionError):
                return None
    return None


def targets(meta, records, figures, dry):
    result = []

    def add(name, row, threshold, where):
        if row is None or row.get("ratio") is None:
            result.append((name, "not measured", "-", ""))
            return
        met = row["ratio"] >= threshold
        measured = "%.2fx at x = %s (%s against %s %s)" % (row["ratio"], row["x"], fmt(row["value"]),
                                                            fmt(row["baseline"]), row["unit"])
        result.append((name, measured, "met" if met else "**missed**", "" if met else where(row)))

    if not primary(figures, "env_stepping"):
        result.append(("env stepping: 16 threads >= 12x one thread", "not measured", "-", ""))
    for row_config in sorted({r["config"] for r in primary(figures, "env_stepping")}):
        rows = [r for r in primary(figures, "env_stepping") if r["config"] == row_config]
        row = at_x(rows, 16, dry)

        def where_env(r, rc=row_config):
            busy = cores_busy(records, "env_%s_x%s" % (rc.split(",")[0].replace("/", "-"), r["x"]))
            return ("the process kept %.1f cores busy of %s (CPU s / wall s, start-up included)" % (busy, r["x"])
                    if busy is not None else "")
        add("env stepping, %s: 16 threads >= 12x one thread" % row_config, row, 12.0, where_env)

    ga3c = primary(figures, "ga3c", "PPS")
    large = [r for r in ga3c if r["key"][0] == "ga3c_large" and r["key"][2] == r["key"][3]]
    row = at_x(large, 32, dry)

    def where_ga3c(r):
        batch = [f for f in figures if f["step"] == "ga3c" and f["unit"] == "rows per forward" and
                 f["key"] == r["key"] and f["x"] == r["x"]]
        own_cpu = [f for f in ga3c if f["key"][0] == "ga3c_large_own_cpu" and f["x"] == r["x"]]
        text = "mean prediction batch %s rows" % fmt(batch[0]["value"]) if batch else ""
        if own_cpu:
            text += "; against per-agent inference on the CPU's cores: %.2fx" % own_cpu[0]["ratio"]
        return text
    add("GA3C, larger network: central >= 5x per-agent inference at 32 agents on the GPU", row, 5.0, where_ga3c)

    rows = primary(figures, "multi_learner")
    row = at_x(rows, 8, dry)

    def where_ml(r):
        busy = [f for f in figures if f["step"] == "multi_learner" and f["unit"] == "cores busy" and f["x"] == r["x"]]
        return "cores busy %s of %s ranks (CPU time of train() / wall)" % (fmt(busy[0]["value"]), r["x"]) if busy else ""
    add("multi_learner, MinAtar CNN: 8 ranks >= 6x one rank", row, 6.0, where_ml)

    rows = [r for r in primary(figures, "fit_workers") if r["key"] == "threads"]
    row = at_x(rows, 8, dry)

    def where_fit(r):
        parts = {f["unit"]: f["value"] for f in figures
                 if f["step"] == "fit_workers" and f["aux"] and f["key"] == "threads" and f["x"] == r["x"]}
        one = {f["unit"]: f["value"] for f in figures
               if f["step"] == "fit_workers" and f["aux"] and f["key"] == "threads" and f["x"] == 1}
        if not parts:
            return ""
        text = "a step: %s ms compute (slowest worker) + %s ms communication and waiting" % (
            fmt(parts.get("ms compute")), fmt(parts.get("ms comm")))
        if one.get("ms compute"):
            text += "; compute at 1 worker %s ms, so 1/%s of it would be %s ms" % (
                fmt(one["ms compute"]), r["x"], fmt(one["ms compute"] / r["x"]))
        return text
    add("concord fit ResNet-20: 8 workers >= 6x one worker", row, 6.0, where_fit)
    return result


# --- Output ---------------------------------------------------------------------------------------

def fmt(value):
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        return value
    if abs(value) >= 1000:
        return "{:,.0f}".format(value)
    if abs(value) >= 100:
        return "%.0f" % value
    if abs(value) >= 10:
        return "%.1f" % value
    return "%.2f" % value


def cell(row):
    if row["value"] is None:
        return row["status"]
    text = fmt(row["value"])
    if row.get("ratio") is not None and row["x"] != "" and not row["aux"]:
        text += " (%.2fx)" % row["ratio"]
    if row["status"] != "ok":
        text += " [%s]" % row["status"]
    return text


def curve_table(rows, lines):
    """Rows: one per (config, unit); columns: x."""
    xs = sorted({r["x"] for r in rows if isinstance(r["x"], int)})
    if not xs:
        for r in rows:
            lines.append("- %s: %s" % (r["config"], cell(r)))
        return
    lines.append("| config | unit | " + " | ".join("x = %d" % x for x in xs) + " |")
    lines.append("|---|---|" + "---:|" * len(xs))
    seen = []
    for r in rows:
        if (r["config"], r["unit"]) not in seen:
            seen.append((r["config"], r["unit"]))
    for config, unit in seen:
        cells = []
        for x in xs:
            match = [r for r in rows if r["config"] == config and r["unit"] == unit and r["x"] == x]
            cells.append(cell(match[0]) if match else "")
        failed = [r for r in rows if r["config"] == config and r["value"] is None and not isinstance(r["x"], int)]
        lines.append("| %s | %s | %s |" % (config, unit or (failed[0]["status"] if failed else ""), " | ".join(cells)))


def write_markdown(out, meta, records, figures, dry):
    lines = ["# Device suite results", ""]
    if dry:
        lines += ["**Dry run**: the CPU build at tiny sizes, to check the suite's command lines. "
                  "Its figures mean nothing.", ""]
    lines += ["## Machine", "", "| | |", "|---|---|"]
    for key in ("date", "commit", "mode", "cpu", "cores", "memory", "gpu", "torch", "compiler", "os", "build",
                "budget", "wall"):
        if key in meta:
            lines.append("| %s | %s |" % (key, meta[key].replace("|", "/") or "-"))
    lines += ["", "## Targets (issue 53)", ""]
    if dry:
        lines += ["(Dry run: evaluated at the largest x measured, not at the issue's.)", ""]
    lines += ["| target | measured | status | where the time goes (when missed) |", "|---|---|---|---|"]
    for name, measured, status, where in targets(meta, records, figures, dry):
        lines.append("| %s | %s | %s | %s |" % (name, measured, status, where))
    lines += ["", "## Figures", "",
              "A cell is the value, then in brackets its ratio to the baseline: the same curve at its smallest x, "
              "the CPU at the same x (PPO on the GPU), the most CPU workers (ResNet-20 on the GPU), per-agent "
              "inference (GA3C).", ""]
    for step, title in STEP_TITLES:
        rows = [f for f in figures if f["step"] == step]
        if not rows:
            continue
        lines += ["### " + title, ""]
        if step == "correctness":
            lines += ["| check | result | status |", "|---|---:|---|"]
            for r in rows:
                value = "-" if r["value"] is None else "%d" % r["value"]
                lines.append("| %s | %s %s | %s |" % (r["config"], value, r["unit"], r["status"]))
        elif step == "ga3c":
            lines += ["| workload; devices | agents | central PPS | own PPS | ratio | mean prediction batch |",
                      "|---|---:|---:|---:|---:|---:|"]
            for r in rows:
                if r["aux"]:
                    continue
                if r["value"] is None:
                    lines.append("| %s | | %s | | | |" % (r["config"], r["status"]))
                    continue
                batch = [f for f in rows if f["aux"] and f["key"] == r["key"] and f["x"] == r["x"]]
                lines.append("| %s | %s | %s | %s | %s | %s |" % (
                    r["config"], r["x"], fmt(r["value"]), fmt(r["baseline"]),
                    "%.2fx" % r["ratio"] if r["ratio"] is not None else "-", fmt(batch[0]["value"]) if batch else "-"))
        elif step in ("ppo_gpu", "fit_gpu"):
            lines += ["| config | x | value | baseline | ratio | status |", "|---|---:|---:|---:|---:|---|"]
            for r in rows:
                base = fmt(r["baseline"])
                if r.get("baseline_note"):
                    base += " (%s)" % r["baseline_note"]
                elif step == "ppo_gpu" and r["baseline"] is not None:
                    base += " (CPU, same x)"
                lines.append("| %s | %s | %s %s | %s | %s | %s |" % (
                    r["config"], r["x"], fmt(r["value"]), r["unit"], base,
                    "%.2fx" % r["ratio"] if r["ratio"] is not None else "-", r["status"]))
        else:
            curve_table(rows, lines)
        lines.append("")
    lines += ["## Steps", "", "| step | config | status | wall s | CPU s | cores busy | log |",
              "|---|---|---|---:|---:|---:|---|"]
    for rec in records:
        try:
            busy = "%.1f" % (float(rec["cpu"]) / float(rec["wall"]))
        except (ValueError, ZeroDivisionError):
            busy = "-"
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            rec["step"], rec["config"] + (" (x = %s)" % rec["x"] if rec["x"] else ""), rec["status"], rec["wall"],
            rec["cpu"], busy, rec["log"]))
    lines.append("")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


def write_csv(out, figures):
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "config", "x", "value", "unit", "baseline", "ratio", "status"])
        for r in figures:
            writer.writerow([r["step"], r["config"], r["x"], "" if r["value"] is None else "%.6g" % r["value"],
                             r["unit"], "" if r["baseline"] is None else "%.6g" % r["baseline"],
                             "" if r["ratio"] is None else "%.4f" % r["ratio"], r["status"]])


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    out = args[0]
    meta, records, figures = load(out)
    dry = meta.get("mode", "").startswith("dry")
    write_csv(out, figures)
    write_markdown(out, meta, records, figures, dry)
    if not check:
        return 0
    bad = [r for r in records if r["status"] != "ok" or (r["kind"] != "build" and r["figures"] == 0)]
    for r in bad:
        sys.stderr.write("device_suite: step %s: %s (%s)\n" % (
            r["step"], r["status"] if r["status"] != "ok" else "no figure in its log", r["log"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
