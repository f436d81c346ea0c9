// Renders the OpenAPI document of this server as a readable reference:
// operations grouped by tag, with parameters, request bodies, responses and
// schemas resolved from components. No third-party code: plain DOM.

const METHODS = ["get", "post", "put", "patch", "delete"];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function resolve(doc, schema) {
  if (schema && schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return { name, schema: doc.components?.schemas?.[name] ?? {} };
  }
  return { name: null, schema: schema ?? {} };
}

// typeOf describes a schema in one line: "string (uuid)", "array of Hold".
function typeOf(doc, schema) {
  const { name, schema: s } = resolve(doc, schema);
  if (name) return name;
  let t = Array.isArray(s.type) ? s.type.filter((x) => x !== "null").join(" | ") : s.type ?? "any";
  if (t === "array") return "array of " + typeOf(doc, s.items);
  if (s.format) t += ` (${s.format})`;
  if (s.enum) t += ": " + s.enum.join(", ");
  return t;
}

// schemaLink is a schema's type, linked to its section when it has a name.
function schemaLink(doc, schema) {
  const { name } = resolve(doc, schema);
  return name ? el("a", { href: "#schema-" + name }, name) : typeOf(doc, schema);
}

function limits(s) {
  const parts = [];
  for (const k of ["minimum", "maximum", "minLength", "maxLength", "maxItems", "pattern", "default"]) {
    if (s[k] !== undefined) parts.push(`${k} ${s[k]}`);
  }
  return parts.join(", ");
}

// schemaTable lists an object's fields, one nested level of named schemas
// linked to their own section below.
function schemaTable(doc, schema) {
  const { name, schema: s } = resolve(doc, schema);
  if (s.type !== "object" || !s.properties) {
    return el("p", {}, schemaLink(doc, schema));
  }
  const required = new Set(s.required ?? []);
  const rows = Object.entries(s.properties).map(([field, fs]) => {
    const r = resolve(doc, fs);
    return el("tr", {}, el("td", {}, el("code", {}, field), required.has(field) ? " *" : ""),
      el("td", {}, schemaLink(doc, fs)), el("td", {}, r.schema.description ?? "", " ", el("span", { class: "muted" }, limits(r.schema))));
  });
  return el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"), el("th", {}, "about"))),
    el("tbody", {}, rows));
}

function operation(doc, path, method, op, id) {
  const sec = el("section", { class: "op", id });
  sec.append(el("h3", {}, el("span", { class: "method " + method }, method), el("code", {}, path),
    el("span", {}, op.summary ?? "")));
  if (op.description) sec.append(el("p", {}, op.description));
  if (op.security?.length) {
    sec.append(el("p", { class: "muted" }, "Credentials: " + op.security.map((s) => Object.keys(s).join(" + ")).join(" or ")));
  }
  const params = op.parameters ?? [];
  if (params.length) {
    sec.append(el("h4", {}, "Parameters"), el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "name"), el("th", {}, "in"), el("th", {}, "type"), el("th", {}, "about"))),
      el("tbody", {}, params.map((p) => el("tr", {}, el("td", {}, el("code", {}, p.name), p.required ? " *" : ""),
        el("td", {}, p.in), el("td", {}, typeOf(doc, p.schema)),
        el("td", {}, p.description ?? "", " ", el("span", { class: "muted" }, limits(p.schema ?? {}))))))));
  }
  const body = op.requestBody?.content?.["application/json"]?.schema;
  if (body) sec.append(el("h4", {}, "Request body"), schemaTable(doc, body));
  const responses = Object.entries(op.responses ?? {});
  if (responses.length) {
    sec.append(el("h4", {}, "Responses"), el("table", {}, el("tbody", {}, responses.map(([code, r]) => {
      const content = r.content ?? {};
      const first = Object.values(content)[0];
      return el("tr", {}, el("td", {}, el("code", {}, code)), el("td", {}, r.description ?? ""),
        el("td", {}, first?.schema ? schemaLink(doc, first.schema) : ""));
    }))));
  }
  return sec;
}

function render(doc) {
  const nav = document.getElementById("nav");
  const main = document.getElementById("main");
  nav.replaceChildren();
  main.replaceChildren();
  if (doc.info?.description) main.append(el("p", {}, doc.info.description));
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push({ path, method, op });
    }
  }
  for (const [tag, ops] of byTag) {
    nav.append(el("h2", { "data-tag": tag }, tag));
    main.append(el("h2", { class: "tag", "data-tag": tag }, tag));
    for (const { path, method, op } of ops) {
      const id = "op-" + (op.operationId ?? method + path).replace(/[^a-zA-Z0-9-]/g, "-");
      const link = el("a", { href: "#" + id }, `${method.toUpperCase()} ${path}`);
      link.dataset.search = `${method} ${path} ${op.summary ?? ""} ${tag}`.toLowerCase();
      link.dataset.of = tag;
      nav.append(link);
      const sec = operation(doc, path, method, op, id);
      sec.dataset.search = link.dataset.search;
      main.append(sec);
    }
  }
  const schemas = Object.entries(doc.components?.schemas ?? {});
  if (schemas.length) {
    main.append(el("h2", { class: "tag" }, "Schemas"));
    for (const [name, s] of schemas) {
      main.append(el("section", { class: "op", id: "schema-" + name }, el("h3", {}, name),
        s.description ? el("p", {}, s.description) : null, schemaTable(doc, s)));
    }
  }
}

// problemSection explains a problem type URI (/docs#problem-CODE, the
// "type" of every problem+json answer): what the answer holds, and the
// operations whose description names the code.
function problemSection(doc, code) {
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op && JSON.stringify(op).includes(code)) {
        const id = "op-" + (op.operationId ?? method + path).replace(/[^a-zA-Z0-9-]/g, "-");
        ops.push(el("li", {}, el("a", { href: "#" + id }, `${method.toUpperCase()} ${path}`), " — ", op.summary ?? ""));
      }
    }
  }
  return el("section", { class: "op problem", id: "problem-" + code },
    el("h2", {}, "Problem ", el("code", {}, code)),
    el("p", {}, "An error answer (application/problem+json): ", el("code", {}, `{"type": "/docs#problem-${code}", "title", "status", "code": "${code}", "detail"}`),
      ". The code is stable: program against it. The detail says, in words, what was wrong with this request."),
    ops.length ? [el("p", {}, "Operations that describe it:"), el("ul", {}, ops)] :
      el("p", {}, "Any operation may answer it; its responses list the statuses it gives."));
}

function showProblem(doc) {
  const code = decodeURIComponent(location.hash).match(/^#problem-([A-Z0-9_]+)$/)?.[1];
  document.querySelector("section.problem")?.remove();
  if (!code) return;
  const sec = problemSection(doc, code);
  document.getElementById("main").prepend(sec);
  sec.scrollIntoView();
}

// filter shows the operations whose method, path, summary or tag holds
// the text, and the headings of the tags left with any.
function filter(text) {
  const q = text.trim().toLowerCase();
  for (const node of document.querySelectorAll("[data-search]")) {
    node.hidden = q !== "" && !node.dataset.search.includes(q);
  }
  const shown = new Set([...document.querySelectorAll("#nav a[data-of]:not([hidden])")].map((a) => a.dataset.of));
  for (const h of document.querySelectorAll("[data-tag]")) h.hidden = !shown.has(h.dataset.tag);
}

async function start() {
  try {
    const resp = await fetch("/openapi.json");
    if (!resp.ok) throw new Error(`GET /openapi.json: ${resp.status}`);
    const doc = await resp.json();
    render(doc);
    if (location.hash.startsWith("#problem-")) showProblem(doc);
    else if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
    window.addEventListener("hashchange", () => showProblem(doc));
  } catch (err) {
    document.getElementById("main").replaceChildren(el("p", {}, "Could not load the API description: " + err.message));
  }
  const input = document.getElementById("filter");
  input.addEventListener("input", () => filter(input.value));
}

start();
