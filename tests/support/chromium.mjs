// Headless Debian Chromium driven by playwright-core from web/node_modules, for the
// browser tests: never a browser download. A test calls findChromium() before its own
// work, so that it exits 77 (ctest's SKIP_RETURN_CODE) at once when either is missing.
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../web");

function skip(why) {
  console.log("SKIP: " + why);
  process.exit(77);
}

export function findChromium() {
  const executablePath = process.env.TPS_CHROMIUM || "/usr/bin/chromium";
  if (!fs.existsSync(executablePath))
    skip(executablePath + " is missing (scripts/install-deps.sh --test installs chromium)");
  try {
    return { executablePath, chromium: createRequire(path.join(webDir, "package.json"))("playwright-core").chromium };
  } catch {
    skip("playwright-core is missing in web/node_modules (the build runs npm ci there)");
  }
}

// A fresh profile, no network of its own; close() also removes the profile.
export async function launchChromium({ executablePath, chromium }, viewport) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tps-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport,
  });
  const page = context.pages()[0] || (await context.newPage());
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { page, close };
}
