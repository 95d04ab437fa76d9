// The model the Node tests serve: the stories260K fixture, which writes English, or
// without ../shared a synthesized model of its shape (written into `outDir`).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export function storiesModel(tps, outDir) {
  const fixtures = process.env.TPS_FIXTURES || path.resolve(here, "../../../shared/fixtures");
  const stories = path.join(fixtures, "models/stories260K.gguf");
  if (fs.existsSync(stories)) return stories;
  const synth = path.join(outDir, "stories260k-synth.gguf");
  const r = spawnSync(tps, ["synth", "--preset", "stories260k", "--type", "q8_0", "-o", synth, "-t", "1"], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("tps synth failed");
  return synth;
}
