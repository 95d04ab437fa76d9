// End-to-end test of `tps load --html`: a small SSE server (this script) answers
// `tps load`, then headless Chromium opens the report and checks that it loads without
// console errors or network requests and that every chart is drawn with data.
// Usage: node report_browser_test.mjs <path of tps> <output folder>
// Exits 77 (ctest SKIP_RETURN_CODE) when Chromium or playwright-core is missing.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { findChromium, launchChromium } from "../support/chromium.mjs";

const tps = path.resolve(process.argv[2]), outDir = path.resolve(process.argv[3]);
const browser = findChromium();
fs.mkdirSync(outDir, { recursive: true });

// An OpenAI-compatible server streaming 12 events 2 ms apart, some carrying 2 tokens
// (per-event usage), one HTTP 500 on the 4th request.
let requests = 0;
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    if (req.url === "/v1/models") return res.end(JSON.stringify({ data: [{ id: "browser-test" }] }));
    if (req.url === "/metrics") return res.end("requests_total " + requests + "\n");
    if (req.url === "/tokenize") {
      const words = (JSON.parse(body).content || "").split(/\s+/).filter(Boolean);
      return res.end(JSON.stringify({ tokens: words.map((_, i) => i) }));
    }
    const index = requests++;
    if (index === 3) {
      res.writeHead(500, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ error: { message: "scripted failure" } }));
    }
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    let sent = 0, tokens = 0;
    const tick = () => {
      if (sent === 12) {
        res.write('data: {"choices":[{"text":"","finish_reason":"length"}]}\n\n');
        res.write("data: [DONE]\n\n");
        return res.end();
      }
      tokens += sent % 3 === 2 ? 2 : 1;
      const chunk = { choices: [{ text: " tok" + sent, finish_reason: null }],
                      usage: { prompt_tokens: 16, completion_tokens: tokens } };
      res.write("data: " + JSON.stringify(chunk) + "\n\n");
      sent++;
      setTimeout(tick, 2);
    };
    tick();
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = "http://127.0.0.1:" + server.address().port;

const json = path.join(outDir, "report.json"), html = path.join(outDir, "report.html");
const args = ["load", "--url", url, "--concurrency", "1,2,4", "--requests", "8", "--input-tokens", "16",
              "--output-tokens", "16", "--slo", "ttft=50ms", "-q", "-o", json, "--html", html];
const code = await new Promise((resolve) => {
  const child = spawn(tps, args, { stdio: ["ignore", "inherit", "inherit"] });
  child.on("exit", resolve);
});
server.close();
if (code !== 0) throw new Error("tps load exited with " + code);

const { page, close } = await launchChromium(browser, { width: 1280, height: 1500 });
const failures = [];
try {
  page.on("console", (m) => m.type() === "error" && failures.push("console error: " + m.text()));
  page.on("pageerror", (e) => failures.push("page error: " + e.message));
  page.on("request", (r) => !r.url().startsWith("file:") && failures.push("network request: " + r.url()));
  await page.goto(pathToFileURL(html).href);
  await page.waitForFunction(() => window.tpsReport && window.tpsReport.charts.length >= 5, null, { timeout: 10000 });
  const charts = await page.evaluate(() => window.tpsReport.charts.map((c) => {
    const ctx = c.canvas.getContext("2d");
    const pixels = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data;
    let inked = 0;
    for (let i = 0; i < pixels.length; i += 4) if (pixels[i + 3] > 0 && (pixels[i] < 200 || pixels[i + 1] < 200 || pixels[i + 2] < 200)) inked++;
    return { title: c.title, points: c.points, inked };
  }));
  const rows = await page.evaluate(() => document.querySelectorAll("#summary tr").length);
  if (rows !== 4) failures.push("summary table has " + rows + " rows, expected a header and 3 sweep values");
  for (const c of charts) {
    console.log(`chart "${c.title}": ${c.points} data points, ${c.inked} inked pixels`);
    if (c.points < 3) failures.push(`chart "${c.title}" has ${c.points} data points`);
    if (c.inked < 500) failures.push(`chart "${c.title}" looks blank (${c.inked} inked pixels)`);
  }
  await page.screenshot({ path: path.join(outDir, "report.png"), fullPage: true });
} finally {
  await close();
}
if (failures.length) {
  for (const f of failures) console.error("FAIL: " + f);
  process.exit(1);
}
console.log("report ok; screenshot " + path.join(outDir, "report.png"));
