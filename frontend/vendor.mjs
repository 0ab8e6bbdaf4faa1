// Copies the browser files of the pinned packages into static/vendor/<package>/, the only place
// templates load libraries from (no CDN, no download at run time). package.json's "vendor" maps a
// package name to the files of it the site serves, e.g. {"uplot": ["dist/uPlot.iife.min.js"]}.
// Run after `npm ci --prefix frontend`; the README's two commands and .ci/run do both.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "static", "vendor");
const { vendor = {} } = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));

rmSync(target, { recursive: true, force: true });
mkdirSync(target, { recursive: true });
const manifest = {};
for (const [name, files] of Object.entries(vendor)) {
  const root = join(here, "node_modules", name);
  let version;
  try {
    ({ version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")));
  } catch {
    console.error(`vendor.mjs: ${name} is not installed: run npm ci --prefix frontend`);
    process.exit(1);
  }
  mkdirSync(join(target, name), { recursive: true });
  for (const file of files) {
    copyFileSync(join(root, file), join(target, name, basename(file)));
  }
  manifest[name] = { version, files: files.map((f) => `${name}/${basename(f)}`) };
}
writeFileSync(join(target, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
console.log(`vendor.mjs: ${Object.keys(manifest).length} package(s) in static/vendor/`);
