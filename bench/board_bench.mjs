// How fast `concord board` draws many live runs, and what it costs while idle.
//   node bench/board_bench.mjs [--concord build/concord] [--runs 20] [--steps 1000000] [--seconds 10]
// Writes --runs synthetic runs of --steps env steps each (a PPO-shaped metrics.csv: a row every
// 512 steps, 16 metric columns), opens the board in headless Chromium (playwright-core, as
// tests/view/board_browser_test.mjs does), then appends a row to every run each second for
// --seconds: a page update is the time from the poll's request to the charts redrawn (the page's
// own window.board.lastUpdateMs). Then the server's CPU over --seconds with the page closed, and
// with it open and polling but no new rows.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const argument = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const concord = path.resolve(argument("--concord", path.join(root, "build/concord")));
const runCount = Number(argument("--runs", 20));
const steps = Number(argument("--steps", 1000000));
const seconds = Number(argument("--seconds", 10));
const require = createRequire(path.join(root, "third_party/npm/node_modules/"));
const { chromium } = require("playwright-core");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const phase = (what) => console.error(`[${(process.uptime()).toFixed(1)} s] ${what}`);

const work = fs.mkdtempSync(path.join(os.tmpdir(), "concord_board_bench_"));
const runs = path.join(work, "runs");
const columns = ["charts/SPS", "charts/episodic_length", "charts/episodic_return", "charts/learning_rate",
                 "losses/approx_kl", "losses/clipfrac", "losses/entropy", "losses/explained_variance",
                 "losses/old_approx_kl", "losses/policy_loss", "losses/value_loss", "charts/policy_lag",
                 "charts/training_queue_length", "charts/clip_coef", "time/rollout_seconds", "time/update_seconds"];
const row = (seed, step) => {
  const t = step / steps;
  const values = columns.map((_, c) => (c === 2 ? 500 * t * (0.8 + 0.2 * Math.sin(seed + step / 9000)) : Math.sin(c + step / 7000)));
  return [step, 1.8e9 + step / 5000, ...values.map((v) => v.toPrecision(8))].join(",") + "\n";
};
const files = [];
for (let seed = 1; seed <= runCount; ++seed) {
  const dir = path.join(runs, `CartPole-v1__train__${seed}__bench`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "config.toml"), `[env]\nid = "CartPole-v1"\n\n[run]\nseed = ${seed}\n\n[train]\nalgo = "ppo"\npolicy = "single"\n`);
  let text = "step,wall_time," + columns.join(",") + "\n";
  for (let step = 512; step <= steps; step += 512) text += row(seed, step);
  fs.writeFileSync(path.join(dir, "metrics.csv"), text);
  files.push({ file: path.join(dir, "metrics.csv"), seed });
}
const rows = Math.floor(steps / 512);

const board = spawn(concord, ["board", runs, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
board.stderr.on("data", (d) => process.stderr.write(d));
// Whatever happens below, the board and the browser do not outlive the benchmark.
let browser = null;
const cleanUp = async () => {
  if (browser) await browser.close().catch(() => {});
  board.kill("SIGINT");
};
process.on("uncaughtException", async (error) => {
  console.error(error);
  await cleanUp();
  process.exit(1);
});
let output = "";
board.stdout.on("data", (d) => { output += d; });
while (!/http:\/\/\S+\//.test(output)) await sleep(50);
const url = output.match(/http:\/\/\S+\//)[0];
const cpuSeconds = () => {
  const fields = fs.readFileSync(`/proc/${board.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime + stime, in Linux's 100 ticks a second
};
const cpuOver = async (ms) => {
  const before = cpuSeconds(), started = Date.now();
  await sleep(ms);
  return (100 * (cpuSeconds() - before)) / ((Date.now() - started) / 1000);
};

phase(`board at ${url}; server CPU with no page open`);
const idleClosed = await cpuOver(seconds * 1000);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "concord_board_bench_chromium_"));
browser = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", headless: true, viewport: { width: 1600, height: 1000 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = browser.pages()[0] || await browser.newPage();
phase("opening the page");
const opened = Date.now();
await page.goto(url);
await page.waitForFunction((n) => window.board.updates > 0 && Object.values(window.board.rows).filter((r) => r >= n).length >= 1, rows, { timeout: 180000 });
const firstLoad = await page.evaluate(() => window.board.lastUpdateMs);
const loadWall = Date.now() - opened;
phase(`first load: ${firstLoad.toFixed(0)} ms in the page (${loadWall} ms from goto)`);
phase("server CPU with the page open, no new rows");
const idleOpen = await cpuOver(seconds * 1000);
phase("a row in every run each second");

const updates = [];
let step = steps;
for (let i = 0; i < seconds; ++i) {
  step += 512;
  for (const { file, seed } of files) fs.appendFileSync(file, row(seed, step));
  const count = await page.evaluate(() => window.board.updates);
  await page.waitForFunction((c) => window.board.updates > c, count, { timeout: 60000 });
  updates.push(await page.evaluate(() => window.board.lastUpdateMs));
}
updates.sort((a, b) => a - b);
const points = await page.evaluate(() => window.board.points["charts/episodic_return"]);
await cleanUp();
fs.rmSync(work, { recursive: true, force: true });
fs.rmSync(profile, { recursive: true, force: true });
console.log(`runs ${runCount} x ${rows} rows x ${columns.length + 2} columns; charts 6 (${points} return points)`);
console.log(`first load: ${firstLoad.toFixed(0)} ms in the page (${loadWall} ms from goto)`);
console.log(`live update (a row in each run): median ${updates[updates.length >> 1].toFixed(1)} ms, max ${updates[updates.length - 1].toFixed(1)} ms over ${updates.length}`);
console.log(`server CPU, no page open: ${idleClosed.toFixed(2)}% of a core; page open, no new rows: ${idleOpen.toFixed(2)}%`);
