// The official `openai` Node client against the real `tps serve`: models.list and
// models.retrieve (an alias and the file name), an unknown model as the SDK's NotFoundError
// with code model_not_found, a streamed chat with usage, a completion with logprobs,
// null for optional fields, and SIGTERM during a stream (the stream ends, exit 0).
// Usage: node serve_openai_sdk_test.mjs <path of tps> <output folder>
// Exits 77 (ctest SKIP_RETURN_CODE) when web/node_modules lacks the openai package.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { storiesModel } from "../support/stories_model.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
let OpenAI;
try {
  OpenAI = createRequire(path.resolve(here, "../../web/package.json"))("openai");
} catch {
  console.log("SKIP: the openai package is missing in web/node_modules (the build runs npm ci there)");
  process.exit(77);
}
const tps = path.resolve(process.argv[2]), outDir = path.resolve(process.argv[3]);
fs.mkdirSync(outDir, { recursive: true });


const file = storiesModel(tps, outDir);
const server = spawn(tps, ["serve", "-m", file, "--port", "0", "-t", "1", "--alias", "stories", "--log-file",
                           path.join(outDir, "serve.log")], { stdio: ["ignore", "pipe", "inherit"] });
const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
const url = await new Promise((resolve, reject) => {
  let out = "";
  server.stdout.on("data", (d) => {
    out += d;
    const m = out.match(/http:\/\/[^:\s]+:(\d+)/);
    if (m) resolve("http://127.0.0.1:" + m[1]);
  });
  exited.then(({ code }) => reject(new Error("tps serve exited with " + code + ": " + out)));
});

const failures = [];
const check = (ok, what) => ok || failures.push(what);
const client = new OpenAI({ baseURL: url + "/v1", apiKey: "none", maxRetries: 0 });
try {
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check(ids.includes("stories"), "models.list names the alias: " + JSON.stringify(ids));
  const byAlias = await client.models.retrieve("stories");
  check(byAlias.id === "stories" && byAlias.object === "model", "models.retrieve(alias): " + JSON.stringify(byAlias));
  const byFile = await client.models.retrieve(path.basename(file));
  check(byFile.object === "model", "models.retrieve(file name): " + JSON.stringify(byFile));
  for (const call of [() => client.models.retrieve("no-such-model"),
                      () => client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })]) {
    try {
      await call();
      failures.push("an unknown model was served");
    } catch (e) {
      check(e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
            "unknown model: " + e.constructor.name + " " + e.status + " " + e.code);
    }
  }

  const stream = await client.chat.completions.create({
    model: "stories", messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }],
    stream: true, stream_options: { include_usage: true }, max_tokens: 16, temperature: 0, seed: 7 });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].delta.content ?? "";
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    usage = chunk.usage ?? usage;
  }
  check(text.length > 0 && finish === "length", "streamed chat: " + JSON.stringify({ text, finish }));
  check(usage && usage.completion_tokens === 16 && usage.prompt_tokens > 0, "stream usage: " + JSON.stringify(usage));

  const completion = await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 4,
                                                       temperature: 0, logprobs: 1 });
  const lp = completion.choices[0].logprobs;
  check(lp && lp.token_logprobs.length === 4 && lp.token_logprobs.every((v) => v <= 0),
        "completion logprobs: " + JSON.stringify(lp));

  // n choices, and logit_bias banning a token, through the SDK.
  const two = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Hi" }],
                                                     n: 2, max_tokens: 6, temperature: 1, seed: 3, ignore_eos: true });
  check(two.choices.length === 2 && two.choices.every((c, i) => c.index === i && c.finish_reason === "length") &&
        two.usage.completion_tokens === 12, "n = 2: " + JSON.stringify(two));
  const first = (await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 1,
                                                   temperature: 0, logprobs: 1 })).choices[0];
  const banned = await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 1,
                                                   temperature: 0, logprobs: 1, logit_bias: { "432": -100 } });
  check(first.logprobs.tokens[0] === "," && banned.choices[0].logprobs.tokens[0] !== ",",
        "logit_bias did not ban ',' (token 432): " + JSON.stringify([first.logprobs, banned.choices[0].logprobs]));

  // null is "not given": the same greedy text as without the fields.
  const plain = await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 8, temperature: 0 });
  const nulls = await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 8, temperature: 0,
                                                  stop: null, top_p: null, presence_penalty: null, seed: null, user: null });
  check(nulls.choices[0].text === plain.choices[0].text, "null fields changed the text: " +
        JSON.stringify([plain.choices[0].text, nulls.choices[0].text]));

  // SIGTERM while a stream runs: it ends with a finish reason, and the server exits 0.
  const long = await client.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 400,
                                                 stream: true, ignore_eos: true });
  let reason = null, pieces = 0;
  for await (const chunk of long) {
    if (++pieces === 2) server.kill("SIGTERM");
    reason = chunk.choices[0]?.finish_reason ?? reason;
  }
  check(reason === "length" || reason === "abort", "stream under SIGTERM ended with " + reason);
  const { code, signal } = await exited;
  check(code === 0, "exit after SIGTERM: " + code + " " + signal);
} catch (e) {
  failures.push("threw: " + (e.stack || e));
} finally {
  server.kill("SIGKILL");
}
if (failures.length) {
  console.error("FAILED:\n  " + failures.join("\n  "));
  process.exit(1);
}
console.log("ok: the openai client against tps serve");
