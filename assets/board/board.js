// Concord board: lists the runs the server finds, polls their new metrics rows every second and
// draws them with uPlot. The server (src/concord/view/board_server.h) sends only the rows after the
// ones the page holds, so a poll of idle runs carries almost nothing.
"use strict";

const POLL_MS = 1000;        // new rows of the runs shown
const RESCAN_MS = 5000;      // new runs and columns
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf"];
// Shown first where a run has them: return, losses, entropy, speed, a policy's own charts.
const PREFERRED = ["charts/episodic_return", "charts/episodic_length", "charts/SPS", "losses/value_loss",
                   "losses/policy_loss", "losses/entropy", "losses/td_loss", "charts/policy_lag",
                   "charts/training_queue_length", "charts/prediction_queue_length", "rollout/episode_return"];

const state = {
  runs: new Map(),      // id -> {id, name, group, columns, data: [column arrays], generation, shown, colour}
  groups: [],           // [{label, members: [ids], seeds}]
  metrics: new Set(),   // columns shown as charts
  metricsChosen: false, // the user changed the selection: keep it
  charts: new Map(),    // metric -> {plot, element, key}
};
// Read by the browser test and the bench (tests/view/board_browser_test.mjs, bench/board_bench.mjs).
window.board = { updates: 0, lastUpdateMs: 0, maxUpdateMs: 0, points: {}, rows: {} };

const $ = (id) => document.getElementById(id);

async function getJson(url) {
  const response = await fetch(url, { cache: "no-store" });
  if (!response.ok) throw new Error(url + ": " + response.status);
  return response.json();
}

async function rescan() {
  const listing = await getJson("/api/runs");
  let changed = false;
  listing.runs.forEach((info, index) => {
    let run = state.runs.get(info.id);
    if (!run) {
      run = { id: info.id, name: info.name, columns: [], data: [], generation: -1, shown: true };
      state.runs.set(info.id, run);
      changed = true;
    }
    run.group = info.group;
    run.colour = PALETTE[index % PALETTE.length];
    if (info.columns.join() !== run.knownColumns) {
      run.knownColumns = info.columns.join();
      changed = true;
    }
  });
  for (const id of [...state.runs.keys()]) {
    if (!listing.runs.some((r) => r.id === id)) {
      state.runs.delete(id);
      changed = true;
    }
  }
  state.groups = listing.groups;
  if (changed) renderSidebar(listing);
}

function allColumns(listing) {
  const columns = new Set();
  for (const run of listing.runs) run.columns.slice(2).forEach((c) => columns.add(c));
  return [...columns].sort((a, b) => {
    const pa = PREFERRED.indexOf(a), pb = PREFERRED.indexOf(b);
    if (pa >= 0 || pb >= 0) return (pa < 0 ? 99 : pa) - (pb < 0 ? 99 : pb);
    return a < b ? -1 : 1;
  });
}

function renderSidebar(listing) {
  const runsDiv = $("runs");
  runsDiv.textContent = "";
  for (const group of state.groups) {
    const box = document.createElement("div");
    box.className = "group";
    const title = document.createElement("div");
    title.className = "group-name";
    title.textContent = group.label + (group.members.length > 1 ? " (seeds " + group.seeds.join(", ") + ")" : "");
    box.appendChild(title);
    for (const id of group.members) {
      const run = state.runs.get(id);
      if (!run) continue;
      const row = document.createElement("div");
      row.className = "run";
      row.dataset.run = id;
      const check = document.createElement("input");
      check.type = "checkbox";
      check.checked = run.shown;
      check.onchange = () => { run.shown = check.checked; redraw(); };
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = run.colour;
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = run.name;
      name.title = id;
      name.onclick = () => showConfig(run);
      const rows = document.createElement("span");
      rows.className = "rows";
      row.append(check, swatch, name, rows);
      box.appendChild(row);
    }
    runsDiv.appendChild(box);
  }
  const columns = allColumns(listing);
  if (!state.metricsChosen) {
    state.metrics = new Set(columns.filter((c) => PREFERRED.includes(c)));
    if (state.metrics.size === 0) columns.slice(0, 4).forEach((c) => state.metrics.add(c));
  }
  const metricsDiv = $("metrics");
  metricsDiv.textContent = "";
  for (const column of columns) {
    const label = document.createElement("label");
    const check = document.createElement("input");
    check.type = "checkbox";
    check.checked = state.metrics.has(column);
    check.onchange = () => {
      state.metricsChosen = true;
      if (check.checked) state.metrics.add(column); else state.metrics.delete(column);
      redraw();
    };
    label.append(check, " " + column);
    metricsDiv.appendChild(label);
  }
  updateRowCounts();
  redraw();
}

async function showConfig(run) {
  const response = await fetch("/api/config?run=" + encodeURIComponent(run.id), { cache: "no-store" });
  $("config-title").textContent = "Config: " + run.name;
  $("config").textContent = await response.text();
  // Its newest video (concord eval RUN --video RUN/videos/NAME.mp4), when it has one.
  const video = await getJson("/api/video?run=" + encodeURIComponent(run.id));
  const box = $("video");
  box.textContent = "";
  if (!video.file) return;
  const player = document.createElement(video.file.endsWith(".gif") ? "img" : "video");
  if (player.tagName === "VIDEO") Object.assign(player, { controls: true, autoplay: true, loop: true, muted: true });
  player.src = video.file;
  player.title = video.file.split("/").pop();
  box.appendChild(player);
}

function updateRowCounts() {
  for (const element of document.querySelectorAll(".run")) {
    const run = state.runs.get(element.dataset.run);
    const rows = run && run.data.length ? run.data[0].length : 0;
    element.querySelector(".rows").textContent = "(" + rows + ")";
    window.board.rows[element.dataset.run] = rows;
  }
}

// Appends what the server sent; a new generation (the file was rewritten) replaces everything.
function merge(run, reply) {
  if (reply.error) return false;
  if (reply.generation !== run.generation || reply.from === 0) {
    run.generation = reply.generation;
    run.columns = reply.columns;
    run.data = reply.columns.map(() => []);
    if (reply.rows.length === 0) return true;
  }
  for (const row of reply.rows) {
    for (let c = 0; c < run.data.length; ++c) run.data[c].push(row[c] === undefined ? null : row[c]);
  }
  return reply.rows.length > 0;
}

async function poll() {
  const started = performance.now();
  const runs = [...state.runs.values()].filter((r) => r.shown);
  if (runs.length === 0) return;
  // One comma-separated list each for from and generation: cpp-httplib keeps only one of several
  // equal key=value pairs, so seeds with as many rows would lose their "from".
  const query = runs.map((r) => "run=" + encodeURIComponent(r.id)).join("&") +
                "&from=" + runs.map((r) => (r.data.length ? r.data[0].length : 0)).join(",") +
                "&generation=" + runs.map((r) => Math.max(r.generation, 0)).join(",");
  const reply = await getJson("/api/metrics?" + query);
  let changed = false;
  reply.runs.forEach((r, i) => { if (merge(runs[i], r)) changed = true; });
  if (!changed) return;
  updateRowCounts();
  redraw();
  const elapsed = performance.now() - started;
  window.board.updates += 1;
  window.board.lastUpdateMs = elapsed;
  window.board.maxUpdateMs = Math.max(window.board.maxUpdateMs, elapsed);
  $("status").textContent = "updated " + new Date().toLocaleTimeString() + " in " + elapsed.toFixed(0) + " ms";
}

// One run's [x, y] for a metric, points with a value only.
function seriesOf(run, metric, byTime) {
  const column = run.columns.indexOf(metric);
  const xs = [], ys = [];
  if (column < 0 || !run.data.length) return [xs, ys];
  const x = run.data[byTime ? 1 : 0], y = run.data[column];
  const start = byTime ? x[0] : 0;
  for (let i = 0; i < y.length; ++i) {
    if (y[i] !== null && x[i] !== null) { xs.push(x[i] - start); ys.push(y[i]); }
  }
  return [xs, ys];
}

// The seeds' mean, min and max at the first series' x where every series has points, the others
// interpolated linearly: what view::aggregate computes for `concord plot --group`.
function aggregate(series) {
  const used = series.filter((s) => s[0].length > 0);
  if (!used.length) return null;
  const low = Math.max(...used.map((s) => s[0][0])), high = Math.min(...used.map((s) => s[0][s[0].length - 1]));
  const at = (s, x) => {
    let lo = 0, hi = s[0].length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (s[0][mid] < x) lo = mid + 1; else hi = mid; }
    if (s[0][lo] === x || lo === 0) return s[1][lo];
    const t = (x - s[0][lo - 1]) / (s[0][lo] - s[0][lo - 1]);
    return s[1][lo - 1] + t * (s[1][lo] - s[1][lo - 1]);
  };
  const out = [[], [], [], []];
  for (const x of used[0][0]) {
    if (x < low || x > high) continue;
    const values = used.map((s) => at(s, x));
    out[0].push(x);
    out[1].push(values.reduce((a, b) => a + b, 0) / values.length);
    out[2].push(Math.min(...values));
    out[3].push(Math.max(...values));
  }
  return { x: out[0], mean: out[1], min: out[2], max: out[3], n: used.length };
}

function chartData(metric) {
  const byTime = $("x-axis").value === "time";
  const tables = [], series = [{ label: byTime ? "wall time (s)" : "env steps" }], bands = [];
  if ($("group-seeds").checked) {
    state.groups.forEach((group) => {
      const members = group.members.map((id) => state.runs.get(id)).filter((r) => r && r.shown);
      const summary = aggregate(members.map((r) => seriesOf(r, metric, byTime)));
      if (!summary) return;
      const colour = members[0].colour;
      const first = series.length;
      tables.push([summary.x, summary.mean], [summary.x, summary.min], [summary.x, summary.max]);
      series.push({ label: group.label + " (" + summary.n + " seeds)", stroke: colour, width: 1.5, spanGaps: true },
                  { label: "min", stroke: colour + "55", width: 0.5, spanGaps: true },
                  { label: "max", stroke: colour + "55", width: 0.5, spanGaps: true });
      bands.push({ series: [first + 2, first + 1], fill: colour + "33" });
    });
  } else {
    for (const run of state.runs.values()) {
      if (!run.shown) continue;
      const [xs, ys] = seriesOf(run, metric, byTime);
      if (!xs.length) continue;
      tables.push([xs, ys]);
      series.push({ label: run.name, stroke: run.colour, width: 1.5, spanGaps: true });
    }
  }
  const data = tables.length ? uPlot.join(tables) : [[]];
  return { data, series, bands };
}

// Tick text as `concord plot` writes it: 250k, 1.5M.
function tick(value) {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6) return +(value / 1e6).toPrecision(6) + "M";
  if (magnitude >= 1e3) return +(value / 1e3).toPrecision(6) + "k";
  return +value.toPrecision(6) + "";
}
const ticks = (u, splits) => splits.map(tick);

function chartSize() {
  const width = Math.max(360, Math.floor(($("charts").clientWidth - 64) / 2));
  return { width, height: Math.round(width * 0.55) };
}

function redraw() {
  const container = $("charts");
  for (const [metric, chart] of state.charts) {
    if (!state.metrics.has(metric)) {
      chart.plot.destroy();
      chart.element.remove();
      state.charts.delete(metric);
    }
  }
  for (const metric of state.metrics) {
    const { data, series, bands } = chartData(metric);
    const key = series.map((s) => s.label + s.stroke).join("|");
    let chart = state.charts.get(metric);
    if (chart && chart.key !== key) {
      chart.plot.destroy();
      chart.element.remove();
      chart = null;
    }
    if (!chart) {
      const element = document.createElement("div");
      element.className = "chart";
      element.dataset.metric = metric;
      const title = document.createElement("h3");
      title.textContent = metric;
      element.appendChild(title);
      container.appendChild(element);
      const plot = new uPlot({ ...chartSize(), series, bands, scales: { x: { time: false } },
                               axes: [{ label: series[0].label, values: ticks }, { values: ticks, size: 56 }] }, data, element);
      chart = { plot, element, key };
      state.charts.set(metric, chart);
    } else {
      chart.plot.setData(data);
    }
    window.board.points[metric] = data.length > 1 ? data.slice(1).reduce((n, ys) => n + ys.filter((y) => y !== null && y !== undefined).length, 0) : 0;
  }
}

async function loop(what, every) {
  for (;;) {
    try {
      await what();
    } catch (error) {
      $("status").textContent = "the board's server does not answer (" + error.message + ")";
    }
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

$("x-axis").onchange = () => { for (const c of state.charts.values()) { c.plot.destroy(); c.element.remove(); }
                               state.charts.clear(); redraw(); };
$("group-seeds").onchange = () => redraw();
window.addEventListener("resize", () => { for (const c of state.charts.values()) c.plot.setSize(chartSize()); });

(async () => {
  await rescan().catch((error) => { $("status").textContent = error.message; });
  loop(poll, POLL_MS);
  setTimeout(() => loop(rescan, RESCAN_MS), RESCAN_MS);
})();
