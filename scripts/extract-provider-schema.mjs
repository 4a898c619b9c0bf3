#!/usr/bin/env node
// extract-provider-schema.mjs: writes the provider schema of exactly the
// resource and data source types the modules under terraform/ use, read from
// the CDKTF provider packages (@cdktf/provider-google, @cdktf/provider-archive),
// which are generated from the providers' own schemas.
//
// Run it through scripts/extract-provider-schema.sh, which installs the
// packages into a temporary folder outside the repository:
//
//   scripts/extract-provider-schema.sh            # rewrites terraform/provider-schema.json
//
// or by hand, with the packages already installed under DIR/node_modules:
//
//   node scripts/extract-provider-schema.mjs --node-modules DIR/node_modules \
//     --terraform terraform --out terraform/provider-schema.json
//
// Where the schema lives in a package: every lib/<type>/index.js carries the
// generated TypeScript in an inline source map. There, each attribute and
// block of a resource (or nested block) has a line
//   // <name> - computed: X, optional: Y, required: Z
// in its class, and the function <struct>ToHclTerraform (or the resource's
// synthesizeHclAttributes) lists every settable name with isBlock, its
// collection type and its storage type. A block's nesting shows in the field
// behind its flags line: new <Struct>OutputReference(...) is a block of at
// most one, new <Struct>List(this, "name", isSet) a list or a set.
// Validators, conflicts and defaults are not in the package, and so not here.
import fs from "node:fs";
import path from "node:path";

const providers = {
  google: { pkg: "@cdktf/provider-google", prefix: "google_" },
  archive: { pkg: "@cdktf/provider-archive", prefix: "archive_" },
};

function args() {
  const out = { terraform: "terraform", out: "terraform/provider-schema.json", nodeModules: "" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const need = () => {
      if (i + 1 >= argv.length) fail(`${argv[i]} needs a value`);
      return argv[++i];
    };
    switch (argv[i]) {
      case "--node-modules": out.nodeModules = need(); break;
      case "--terraform": out.terraform = need(); break;
      case "--out": out.out = need(); break;
      default: fail(`unknown argument ${argv[i]} (want --node-modules DIR [--terraform DIR] [--out FILE])`);
    }
  }
  if (!out.nodeModules) fail("--node-modules DIR is required (the folder holding @cdktf/provider-google)");
  return out;
}

function fail(msg) {
  process.stderr.write(`extract-provider-schema: ${msg}\n`);
  process.exit(2);
}

// usedTypes lists the provider blocks, resource and data types declared in
// every .tf file under dir (a line-based scan: terraform fmt puts each block
// header at the start of its line).
function usedTypes(dir) {
  const used = { provider: new Set(), resource: new Set(), data: new Set() };
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== ".terraform" && e.name !== ".build") walk(p);
      } else if (e.name.endsWith(".tf")) {
        for (const m of fs.readFileSync(p, "utf8").matchAll(/^(resource|data|provider) "([a-z0-9_]+)"/gm)) {
          used[m[1]].add(m[2]);
        }
      }
    }
  };
  walk(dir);
  return used;
}

function providerOf(type) {
  for (const [name, p] of Object.entries(providers)) {
    if (type === name || type.startsWith(p.prefix)) return name;
  }
  fail(`no provider package known for type ${type}`);
}

// typeScript returns the generated TypeScript of lib/<dir> in a package.
function typeScript(nodeModules, pkg, dir) {
  const file = path.join(nodeModules, pkg, "lib", dir, "index.js");
  if (!fs.existsSync(file)) fail(`${file} does not exist`);
  const m = fs.readFileSync(file, "utf8").match(/sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/);
  if (!m) fail(`${file} has no inline source map`);
  const map = JSON.parse(Buffer.from(m[1], "base64").toString("utf8"));
  if (!map.sourcesContent || !map.sourcesContent[0]) fail(`${file}: the source map holds no source`);
  return map.sourcesContent[0];
}

function libDir(kind, type, provider) {
  const kebab = (s) => s.replace(/_/g, "-");
  if (kind === "provider") return "provider";
  const rest = type.slice(providers[provider].prefix.length);
  return kind === "data" ? `data-${kebab(type)}` : kebab(rest);
}

// units splits a TypeScript file into its top-level exported declarations.
function units(ts) {
  const re = /^export (class|function|interface) (\w+)/gm;
  const found = [...ts.matchAll(re)];
  return found.map((m, i) => ({
    kind: m[1], name: m[2],
    text: ts.slice(m.index, i + 1 < found.length ? found[i + 1].index : ts.length),
  }));
}

// flags reads the "// name - computed: ..." lines of a class, with the text
// up to the next one.
function flags(text) {
  const re = /^ {2}\/\/ (\w+) - computed: (true|false), optional: (true|false), required: (true|false)$/gm;
  const found = [...text.matchAll(re)];
  const out = new Map();
  found.forEach((m, i) => {
    const body = text.slice(m.index + m[0].length, i + 1 < found.length ? found[i + 1].index : text.length);
    out.set(m[1], { computed: m[2] === "true", optional: m[3] === "true", required: m[4] === "true", body });
  });
  return out;
}

// settable reads the attrs object of a ToHclTerraform function or of
// synthesizeHclAttributes: name -> {isBlock, type, storage, struct}.
function settable(text) {
  const re = /^ +(\w+): \{\n +value: (.*),\n +isBlock: (true|false),\n +type: "(\w+)",\n +storageClassType: "(\w+)",\n +\}/gm;
  const out = new Map();
  for (const m of text.matchAll(re)) {
    let struct = "";
    if (m[3] === "true") {
      const fn = [...m[2].matchAll(/(\w+)ToHclTerraform\b/g)].map((x) => x[1])
        .filter((f) => !/^(string|number|boolean|any)$/.test(f));
      if (fn.length !== 1) fail(`cannot tell the struct of block ${m[1]} from ${m[2]}`);
      struct = fn[0][0].toUpperCase() + fn[0].slice(1);
    }
    const camel = (m[2].match(/(?:struct!|this)\.(?:_)?(\w+)/) || [])[1] || "";
    out.set(m[1], { isBlock: m[3] === "true", type: m[4], storage: m[5], struct, camel });
  }
  return out;
}

const primitive = { string: "string", number: "number", boolean: "bool", any: "any" };

// tfType renders a settable attribute's type as Terraform writes it.
function tfType(s) {
  const m = s.storage.match(/^(string|number|boolean|any)(List|Map)?$/);
  if (!m) return s.storage; // an object type: its struct name
  const elem = primitive[m[1]];
  if (s.type === "simple") return elem;
  if (s.type === "set") return `set(${elem})`;
  if (s.type === "list") return `list(${elem})`;
  if (s.type === "map") return `map(${elem})`;
  return s.storage;
}

// computedType guesses a computed-only attribute's type from its getter.
function computedType(body) {
  const pairs = [
    [/getStringAttribute\(/, "string"], [/getNumberAttribute\(/, "number"], [/getBooleanAttribute\(/, "bool"],
    [/getListAttribute\(/, "list(string)"], [/getNumberListAttribute\(/, "list(number)"],
    [/new cdktf\.StringMap\(/, "map(string)"], [/new cdktf\.NumberMap\(/, "map(number)"], [/new cdktf\.BooleanMap\(/, "map(bool)"],
    [/getAnyMapAttribute\(/, "map(any)"], [/getStringMapAttribute\(/, "map(string)"],
    [/new \w+List\(this, "\w+", true\)/, "set(object)"], [/new \w+List\(this, "\w+", false\)/, "list(object)"],
    [/new \w+OutputReference\(/, "object"],
  ];
  for (const [re, t] of pairs) if (re.test(body)) return t;
  return "";
}

function mode(f) {
  if (f.required) return "required";
  if (f.optional && f.computed) return "optional+computed";
  if (f.optional) return "optional";
  return "computed";
}

// interfaceFlags reads the flags of a struct that has no class of its own
// (a provider's nested blocks): from its interface, where a required field
// has no "?". camel maps the struct's field names to the Terraform names.
function interfaceFlags(all, struct, st) {
  const iface = all.get(struct);
  if (!iface || iface.kind !== "interface") return null;
  const out = new Map();
  for (const [name, s] of st) {
    const f = iface.text.match(new RegExp(`^ {2}readonly ${s.camel}(\\?)?: ([^;]+);`, "m"));
    if (!f) fail(`interface ${struct} has no field ${s.camel} (${name})`);
    out.set(name, { computed: false, optional: f[1] === "?", required: f[1] !== "?", body: `private _${s.camel}: ${f[2]};` });
  }
  return out;
}

// nesting tells how a block nests from the field behind its flags line.
function nesting(s, name, body) {
  if (new RegExp(`new ${s.struct}OutputReference\\(this, "${name}"\\)`).test(body)) return { nesting: "list", max_items: 1 };
  const list = body.match(new RegExp(`new ${s.struct}List\\(this, "${name}", (true|false)\\)`));
  if (list) return { nesting: list[1] === "true" ? "set" : "list" };
  const field = body.match(new RegExp(`private _\\w+\\??: ${s.struct}(\\[\\])?[ ;|]`));
  if (field) return field[1] ? { nesting: "list" } : { nesting: "list", max_items: 1 };
  return null;
}

// block builds the schema of one block (a resource or a nested block) from
// its flags (the class) and its settable names (the ToHclTerraform).
function block(all, fl, st, where) {
  const out = { attributes: {}, blocks: {} };
  for (const [name] of st) {
    if (!fl.has(name)) fail(`${where}: ${name} is settable but has no flags line`);
  }
  for (const [name, f] of fl) {
    const s = st.get(name);
    if (s && s.isBlock) {
      const nb = nesting(s, name, f.body);
      if (!nb) fail(`${where}: cannot tell how block ${name} nests`);
      if (f.required) nb.min_items = 1;
      if (f.computed) nb.computed = true;
      const fn = all.get(`${s.struct[0].toLowerCase()}${s.struct.slice(1)}ToHclTerraform`);
      if (!fn) fail(`${where}: block ${name}: no ToHclTerraform for ${s.struct}`);
      const nst = settable(fn.text);
      const cls = all.get(`${s.struct}OutputReference`);
      const nfl = cls ? flags(cls.text) : interfaceFlags(all, s.struct, nst);
      if (!nfl) fail(`${where}: block ${name}: no class or interface for ${s.struct}`);
      out.blocks[name] = Object.assign(nb, block(all, nfl, nst, `${where}.${name}`));
      continue;
    }
    const a = { mode: mode(f), type: s ? tfType(s) : computedType(f.body) };
    if (s && a.mode === "computed") fail(`${where}: ${name} is settable but computed only`);
    if (!s && a.mode !== "computed") fail(`${where}: ${name} is ${a.mode} but not settable`);
    out.attributes[name] = a;
  }
  for (const k of ["attributes", "blocks"]) if (Object.keys(out[k]).length === 0) delete out[k];
  return out;
}

function extract(nodeModules, kind, type) {
  const provider = providerOf(type);
  const ts = typeScript(nodeModules, providers[provider].pkg, libDir(kind, type, provider));
  const all = new Map(units(ts).map((u) => [u.name, u]));
  const base = { resource: "TerraformResource", data: "TerraformDataSource", provider: "TerraformProvider" }[kind];
  const top = [...all.values()].find((u) => u.kind === "class" && u.text.includes(`extends cdktf.${base} {`));
  if (!top) fail(`${kind} ${type}: no class extending cdktf.${base}`);
  const declared = top.text.match(/static readonly tfResourceType = "(\w+)"/);
  if (!declared || declared[1] !== type) {
    fail(`${kind} ${type}: the package's class declares ${declared ? declared[1] : "no type"}`);
  }
  const synth = top.text.match(/protected synthesizeHclAttributes\(\)[\s\S]*?\n {2}\}\n/);
  if (!synth) fail(`${kind} ${type}: no synthesizeHclAttributes`);
  return block(all, flags(top.text), settable(synth[0]), `${kind} ${type}`);
}

function pkgInfo(nodeModules, pkg) {
  const j = JSON.parse(fs.readFileSync(path.join(nodeModules, pkg, "package.json"), "utf8"));
  return { source: j.cdktf.provider.name, version: j.cdktf.provider.version, package: `${pkg}@${j.version}` };
}

// write renders JSON with sorted keys, one attribute per line, so that a
// new provider version reads as a small diff.
function render(v, indent = "") {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const keys = Object.keys(v).sort();
  const flat = keys.every((k) => v[k] === null || typeof v[k] !== "object");
  if (flat) return "{" + keys.map((k) => `${JSON.stringify(k)}: ${JSON.stringify(v[k])}`).join(", ") + "}";
  const inner = indent + "  ";
  return "{\n" + keys.map((k) => `${inner}${JSON.stringify(k)}: ${render(v[k], inner)}`).join(",\n") + `\n${indent}}`;
}

const a = args();
const used = usedTypes(a.terraform);
const out = {
  _comment: "Generated by scripts/extract-provider-schema.sh from the CDKTF provider packages; do not edit. Read by terraform/provider_schema_test.go.",
  providers: {},
  provider: {},
  resource: {},
  data: {},
};
const seen = new Set();
for (const kind of ["provider", "resource", "data"]) {
  for (const type of [...used[kind]].sort()) {
    const p = providerOf(type);
    seen.add(p);
    out[kind][type] = extract(a.nodeModules, kind, type);
  }
}
for (const p of [...seen].sort()) out.providers[p] = pkgInfo(a.nodeModules, providers[p].pkg);
fs.writeFileSync(a.out, render(out) + "\n");
const n = (k) => Object.keys(out[k]).length;
process.stderr.write(`extract-provider-schema: wrote ${a.out}: ${n("resource")} resource types, ${n("data")} data sources, ${n("provider")} provider configs from ${Object.values(out.providers).map((p) => `${p.source} ${p.version}`).join(", ")}\n`);
