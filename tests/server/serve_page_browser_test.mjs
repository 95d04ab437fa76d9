// End-to-end test of the page `tps serve` answers at /: the real server on a small model,
// headless Chromium on the page. Both tabs render without console errors or requests
// elsewhere; a chat answer streams in and shows its TTFT and tokens/s; Stop ends an
// answer; the live charts move while `tps load` drives the server. Saves a screenshot of
// each tab (chat.png, live.png) in the output folder, or in --screenshots DIR /
// $TPS_PAGE_SCREENSHOTS when given.
// Usage: node serve_page_browser_test.mjs <path of tps> <output folder> [--screenshots DIR]
// Exits 77 (ctest SKIP_RETURN_CODE) when Chromium or playwright-core is missing.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { storiesModel } from "../support/stories_model.mjs";
import { findChromium, launchChromium } from "../support/chromium.mjs";

const args = process.argv.slice(2);
const flag = args.indexOf("--screenshots");
const screenshotDir = path.resolve(flag >= 0 ? args.splice(flag, 2)[1] : process.env.TPS_PAGE_SCREENSHOTS || args[1]);
const tps = path.resolve(args[0]), outDir = path.resolve(args[1]);
const browser = findChromium();
fs.mkdirSync(outDir, { recursive: true });
fs.mkdirSync(screenshotDir, { recursive: true });

// Starts `tps serve` on any free port; resolves with the process and its URL.
function serve() {
  const child = spawn(tps, ["serve", "-m", storiesModel(tps, outDir), "--port", "0", "-t", "1", "--ctx-size", "16384",
                            "--log-file", path.join(outDir, "serve.log")],
                      { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/[^:\s]+:(\d+)/);
      if (m) resolve({ child, url: "http://127.0.0.1:" + m[1] });
    });
    child.on("exit", (code) => reject(new Error("tps serve exited with " + code + ": " + out)));
  });
}

const failures = [];
const check = (ok, what) => ok || failures.push(what);
const { child: server, url } = await serve();
let load = null;
const { page, close } = await launchChromium(browser, { width: 1360, height: 900 });
try {
  page.on("console", (m) => m.type() === "error" && failures.push("console error: " + m.text()));
  page.on("pageerror", (e) => failures.push("page error: " + e.message));
  page.on("request", (r) => !r.url().startsWith(url) && !r.url().startsWith("data:") &&
                            failures.push("request elsewhere: " + r.url()));
  await page.goto(url + "/");
  await page.waitForFunction(() => window.tpsApp && document.getElementById("model").textContent !== "…");
  check(await page.isVisible("#panel-chat"), "the chat tab is not shown first");

  // Chat: an answer comes, with its TTFT and tokens/s.
  await page.fill("#system", "You are a storyteller.");
  await page.fill("#max-tokens", "96");
  await page.fill("#prompt", "Once upon a time");
  await page.press("#prompt", "Enter");
  await page.waitForFunction(() => {
    const a = [...document.querySelectorAll(".msg.assistant")].pop();
    return a && a.dataset.tokensPerS !== undefined;
  }, null, { timeout: 30000 });
  const answer = await page.evaluate(() => {
    const a = [...document.querySelectorAll(".msg.assistant")].pop();
    return { text: a.querySelector(".text").textContent, meta: a.querySelector(".meta").textContent,
             ttft: Number(a.dataset.ttftMs), rate: Number(a.dataset.tokensPerS), error: a.classList.contains("error") };
  });
  console.log("chat answer:", JSON.stringify(answer));
  check(!answer.error && answer.text.trim().length > 0, "no answer text: " + JSON.stringify(answer));
  check(answer.ttft > 0 && answer.rate > 0, "the answer lacks TTFT or tokens/s: " + answer.meta);
  check(/TTFT [\d.]+ ms/.test(answer.meta) && /[\d.]+ tok\/s/.test(answer.meta), "meta line: " + answer.meta);
  await page.screenshot({ path: path.join(screenshotDir, "chat.png") });

  // Markdown: an answer renders as Markdown, and what would run script or load from
  // elsewhere is removed. No small model writes a chosen text, so this answer is
  // scripted: its events (split inside the bold, the code fence and the tags) replace
  // the server's. The next question sends the answer's Markdown, not its rendering.
  const pieces = ["Some **bo", "ld** and `code`:\n\n```js\nlet x = 1;\n``", "`\n\n- one\n- two\n\n",
                  "<img src=x onerror=\"window.pwned=1\"><scr", "ipt>window.pwned=2</script>",
                  "<style>body { display: none; }</style>![an image](https://example.com/a.png) ",
                  "<p class=\"msg user\">a fake question</p> ",
                  "[a link](javascript:window.pwned=3) [docs](https://example.com/)"];
  const markdown = pieces.join("");
  const events = pieces.map((p) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: p } }] })}\n\n`)
    .concat([`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`,
             "data: [DONE]\n\n"]);
  await page.route("**/v1/chat/completions", (route) =>
    route.fulfill({ status: 200, contentType: "text/event-stream", body: events.join("") }));
  await page.fill("#prompt", "Show me some Markdown");
  await page.press("#prompt", "Enter");
  await page.waitForFunction(() => /stop/.test([...document.querySelectorAll(".msg.assistant .meta")].pop().textContent));
  await page.unroute("**/v1/chat/completions");
  const rendered = await page.evaluate(() => {
    const t = [...document.querySelectorAll(".msg.assistant .text")].pop();
    const links = [...t.querySelectorAll("a")];
    return { strong: t.querySelector("strong")?.textContent, code: t.querySelector(":not(pre) > code")?.textContent,
             block: t.querySelector("pre > code")?.textContent, items: t.querySelectorAll("li").length,
             scripts: t.querySelectorAll("script").length, handlers: t.querySelectorAll("[onerror]").length,
             others: t.querySelectorAll("img, style, [class]").length,
             hrefs: links.map((a) => a.getAttribute("href")), targets: links.map((a) => a.target),
             pwned: window.pwned };
  });
  console.log("markdown answer:", JSON.stringify(rendered));
  check(rendered.strong === "bold" && rendered.code === "code" && rendered.block === "let x = 1;\n" &&
        rendered.items === 2, "the answer's Markdown did not render: " + JSON.stringify(rendered));
  check(rendered.scripts === 0 && rendered.handlers === 0 && rendered.others === 0 && rendered.pwned === undefined &&
        !rendered.hrefs.some((h) => h && h.startsWith("javascript")),
        "the answer's HTML was not sanitized: " + JSON.stringify(rendered));
  check(rendered.targets.every((t) => t === "_blank"), "a link would navigate away: " + JSON.stringify(rendered));
  let sentHistory = null;
  await page.route("**/v1/chat/completions", (route) => {
    sentHistory = JSON.parse(route.request().postData()).messages;
    route.fulfill({ status: 200, contentType: "text/event-stream", body: "data: [DONE]\n\n" });
  });
  await page.fill("#prompt", "And again");
  await page.press("#prompt", "Enter");
  await page.waitForFunction(() => !document.getElementById("send").disabled && document.querySelectorAll(".msg.assistant").length >= 3);
  await page.unroute("**/v1/chat/completions");
  const previous = sentHistory && sentHistory.filter((m) => m.role === "assistant").pop();
  check(previous && previous.content === markdown, "the history holds the rendering, not the Markdown: " +
        JSON.stringify(previous));

  // Streaming and Stop: a long answer (past end-of-text: this test adds ignore_eos to the
  // request) shows text while it is still streaming; Stop ends it as "stopped" and the
  // server cancels it. The server is paused (SIGSTOP) from its first text until Stop,
  // so the answer cannot end first however fast the machine.
  await page.route("**/v1/chat/completions", (route) => {
    const body = JSON.parse(route.request().postData());
    route.continue({ postData: JSON.stringify({ ...body, ignore_eos: true }) });
  });
  await page.fill("#max-tokens", "16000");
  await page.fill("#prompt", "Tell me a long story");
  await page.press("#prompt", "Enter");
  const early = await page.waitForFunction(() => {
    const a = [...document.querySelectorAll(".msg.assistant")].pop();
    return a.querySelector(".text").textContent.length > 0 && a.querySelector(".meta").textContent;
  });
  server.kill("SIGSTOP");
  const streaming = await early.jsonValue();
  check(/streaming/.test(streaming), "text appeared only when the answer ended: " + streaming);
  await page.click("#stop");
  await page.waitForFunction(() => !document.getElementById("send").disabled);
  const stopped = await page.evaluate(() => [...document.querySelectorAll(".msg.assistant .meta")].pop().textContent);
  server.kill("SIGCONT");
  check(/stopped/.test(stopped), "Stop did not stop the answer: " + stopped);
  await page.unroute("**/v1/chat/completions");
  const cancelled = () => fs.readFileSync(path.join(outDir, "serve.log"), "utf8").includes('"finish":"cancelled"');
  for (let i = 0; i < 50 && !cancelled(); i++) await new Promise((r) => setTimeout(r, 100));
  check(cancelled(), "the server did not log the stopped answer as cancelled");

  // Live: the charts move while `tps load` drives the server.
  await page.click("#tab-live");
  check(await page.isVisible("#panel-live"), "the live tab is not shown");
  const before = await page.evaluate(() => window.tpsApp.live.snapshots);
  load = spawn(tps, ["load", "--url", url, "--concurrency", "4", "--duration", "8", "--input-tokens", "64",
                     "--output-tokens", "96", "-q", "-o", path.join(outDir, "load.json")], { stdio: "ignore" });
  const loadEnded = new Promise((resolve) => load.on("exit", resolve));
  await page.waitForFunction((n) => {
    const live = window.tpsApp.live;
    const busy = live.data[0][1].filter((v) => v > 0).length;  // seconds with output tokens
    const ttft = live.data[2][1].filter((v) => v != null).length;
    return live.snapshots >= n + 4 && busy >= 3 && ttft >= 2 && live.last.running > 0;
  }, before, { timeout: 60000 });
  const charts = await page.evaluate(() => window.tpsApp.live.charts.map((c, i) => {
    const canvas = c.box.querySelector("canvas");
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let inked = 0;
    for (let p = 0; p < pixels.length; p += 4) if (pixels[p + 3] > 0) inked++;
    const values = window.tpsApp.live.data[i].slice(1).flat().filter((v) => v != null);
    return { title: c.title, points: values.length, distinct: new Set(values).size, inked };
  }));
  const tiles = await page.evaluate(() => [...document.querySelectorAll(".tile")].map((t) => t.textContent));
  console.log("tiles:", JSON.stringify(tiles));
  for (const c of charts) {
    console.log(`chart "${c.title}": ${c.points} values (${c.distinct} distinct), ${c.inked} inked pixels`);
    check(c.points >= 3, `chart "${c.title}" has ${c.points} values`);
    check(c.inked > 500, `chart "${c.title}" looks blank`);
  }
  for (const moving of ["Tokens/s", "Sequences", "KV blocks"])
    check(charts.find((c) => c.title === moving).distinct >= 2, `chart "${moving}" does not move`);
  check(/no profile/.test(tiles.join(" ")), "the MBU tile does not say 'no profile'");
  await page.screenshot({ path: path.join(screenshotDir, "live.png"), fullPage: true });
  const code = await loadEnded;
  check(code === 0, "tps load exited with " + code);
} finally {
  if (load && load.exitCode === null) load.kill();
  await close();
  server.kill("SIGCONT");  // in case a failure came while it was paused
  server.kill();
}
if (failures.length) {
  for (const f of failures) console.error("FAIL: " + f);
  process.exit(1);
}
console.log("serve page ok; screenshots " + path.join(screenshotDir, "chat.png") + " and live.png");
