// `concord board` in a real browser: Debian's Chromium, headless, driven by playwright-core (npm,
// third_party/npm). While a short `concord train` writes its run, the page must show the run's
// return curve with more points on a second look, then the video `concord eval --video` made of it;
// the server must refuse paths out of its run root;
// Ctrl-C must stop it within a second with one line. Run by ctest (board_browser):
//   node tests/view/board_browser_test.mjs --concord build/concord [--screenshot docs/board.png]
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argument = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const concord = path.resolve(argument("--concord", path.join(root, "build/concord")));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "concord_board_browser_"));
const screenshot = argument("--screenshot", path.join(work, "board.png"));
const require = createRequire(path.join(root, "third_party/npm/node_modules/"));
const { chromium } = require("playwright-core");

const children = [];
let failures = 0;
const check = (ok, what) => {
  console.log((ok ? "ok   " : "FAIL ") + what);
  if (!ok) failures += 1;
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const start = (args) => {
  const child = spawn(concord, args, { cwd: work, stdio: ["ignore", "pipe", "pipe"] });
  child.output = "";
  child.stdout.on("data", (d) => { child.output += d; });
  child.stderr.on("data", (d) => { child.output += d; });
  child.exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  children.push(child);
  return child;
};
async function until(what, seconds, condition) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting for " + what);
    await sleep(100);
  }
}
// A GET with the path exactly as written: fetch() and URL would resolve the "..".
const rawGet = (port, requestPath) => new Promise((resolve, reject) => {
  const request = http.request({ host: "127.0.0.1", port, path: requestPath, method: "GET" }, (response) => {
    let body = "";
    response.on("data", (d) => { body += d; });
    response.on("end", () => resolve({ status: response.statusCode, body }));
  });
  request.on("error", reject);
  request.end();
});

let browser, profile;
try {
  const runs = path.join(work, "runs");
  fs.mkdirSync(runs);
  fs.writeFileSync(path.join(work, "secret.txt"), "SECRET beside the run root");
  const train = start(["train", "--config", "ppo_cartpole", "--total-timesteps", "150000", "--run-root", runs,
                       "--progress", "off"]);
  const board = start(["board", runs, "--port", "0"]);
  const url = await until("the board's URL", 10, () => (board.output.match(/http:\/\/127\.0\.0\.1:\d+\//) || [])[0]);
  const port = Number(url.match(/:(\d+)\//)[1]);
  check(/^board: \d+ runs? under /.test(board.output), "the board prints one line with its URL: " + url);
  await until("the run's first rows", 30, () => {
    const dirs = fs.readdirSync(runs);
    return dirs.length && fs.existsSync(path.join(runs, dirs[0], "metrics.csv")) &&
           fs.readFileSync(path.join(runs, dirs[0], "metrics.csv"), "utf8").split("\n").length > 3;
  });

  profile = fs.mkdtempSync(path.join(os.tmpdir(), "concord_board_chromium_"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = browser.pages()[0] || await browser.newPage();
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(url);
  const metric = "charts/episodic_return";
  const first = await until("a curve", 15, () => page.evaluate((m) => window.board.points[m] || 0, metric));
  const second = await until("the curve to grow", 15, async () => {
    const points = await page.evaluate((m) => window.board.points[m] || 0, metric);
    return points > first ? points : 0;
  });
  check(second > first, `the live run's return curve grows: ${first} then ${second} points`);
  check(await page.locator(".chart").count() >= 3, "charts for return, losses and entropy are drawn");
  check(requests.every((u) => u.startsWith(url)), "the page loads nothing from outside the board");
  // The run stopped (Ctrl-C keeps its checkpoint) and its agent filmed where the board looks for videos.
  train.kill("SIGINT");
  await train.exited;
  const id = fs.readdirSync(runs)[0];
  const film = start(["eval", path.join(runs, id), "--video", path.join(runs, id, "videos", "episode.gif")]);
  check((await film.exited).code === 0, "concord eval --video films the run: " + film.output.trim());
  await page.locator(".run .name").first().click();
  await until("the run's config", 5, () => page.locator("#config").innerText().then((t) => t.includes("[algo")));
  check(true, "clicking a run shows its config.toml");
  const width = await until("the run's video", 10, () => page.evaluate(() => {
    const picture = document.querySelector("#video img");
    return picture && picture.complete ? picture.naturalWidth : 0;
  }));
  check(width === 600, `and its newest video, played on the page (${width} pixels wide)`);
  await page.screenshot({ path: screenshot });
  check(fs.statSync(screenshot).size > 10000, "screenshot written to " + screenshot);

  for (const bad of ["/files/0/../secret.txt", `/files/0/${id}/../../secret.txt`, "/files/0/%2e%2e/secret.txt",
                     "/files/0/..%2fsecret.txt", "/files/0//etc/passwd", "/files/0/%2fetc%2fpasswd",
                     "/files/1/secret.txt", "/../secret.txt", "/files/0/" + encodeURIComponent(path.join(work, "secret.txt"))]) {
    const reply = await rawGet(port, bad);
    check(reply.status === 404 && !reply.body.includes("SECRET") && !reply.body.includes("root:"),
          `refused ${bad} (${reply.status})`);
  }
  const allowed = await rawGet(port, `/files/0/${id}/config.toml`);
  check(allowed.status === 200 && allowed.body.includes("[algo"), "serves a file under the run root");

  const before = board.output;
  const stopped = Date.now();
  board.kill("SIGINT");
  const exit = await Promise.race([board.exited, sleep(1000).then(() => null)]);
  check(exit !== null, `Ctrl-C stops the board within a second (${Date.now() - stopped} ms)`);
  const tail = board.output.slice(before.length).trim().split("\n");
  check(tail.length === 1 && tail[0] === "board: stopped", "with one line: " + JSON.stringify(tail));
} catch (error) {
  check(false, String(error && error.stack || error));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  fs.rmSync(work, { recursive: true, force: true });
  if (typeof profile === "string") fs.rmSync(profile, { recursive: true, force: true });
}
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
