// BoxOffice store: a single-page app on the public store API. Everything it
// needs (tenant, API address, strings) is in the page's data-config.

const cfg = JSON.parse(document.documentElement.dataset.config);
// The store's languages as Europe writes dates and amounts: 24-hour
// clock, day before month.
const locale = { en: "en-GB", pt: "pt-PT" }[cfg.lang] ?? cfg.lang;
const main = document.getElementById("main");
const live = document.getElementById("announce");
let cleanup = []; // what the current view must stop when leaving

// ---------- small helpers ----------

function t(key, vars = {}) {
  let s = cfg.strings[key] ?? key;
  for (const [k, v] of Object.entries(vars)) s = s.replaceAll(`{${k}}`, v);
  return s;
}

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined));
}

function announce(text) {
  live.textContent = "";
  setTimeout(() => (live.textContent = text), 20);
}

// formatter is Intl's formatter of a kind for a set of options, made once:
// making one costs far more than using it, and a page of prices and dates
// would otherwise make dozens while it draws.
const formatters = new Map();
function formatter(Kind, options) {
  const k = `${Kind.name} ${JSON.stringify(options)}`;
  let f = formatters.get(k);
  if (!f) formatters.set(k, (f = new Kind(locale, options)));
  return f;
}

// grouped is a count or a range's end in the shopper's way of grouping
// digits ("1,000,000 free"); a ticket's own number stays as printed.
const grouped = (n) => formatter(Intl.NumberFormat, {}).format(n);

// span is a block of numbers, "1,000,001–2,000,000".
const span = (from, to) => `${grouped(from)}–${grouped(to)}`;

function money(cents, currency) {
  try {
    return formatter(Intl.NumberFormat, { style: "currency", currency }).format(cents / 100);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency}`;
  }
}

function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60), ss = s % 60;
  if (d) return `${d}d ${hh}h`;
  if (hh) return `${hh}h ${m}m`;
  return `${m}:${String(ss).padStart(2, "0")}`;
}

function every(ms, fn) {
  fn();
  const id = setInterval(fn, ms);
  cleanup.push(() => clearInterval(id));
}

const key = (name) => `bo.${cfg.slug}.${name}`;
const token = () => localStorage.getItem(key("token"));
const accessToken = (productId) => sessionStorage.getItem(key(`access.${productId}`));

class APIError extends Error {
  constructor(status, body) {
    super(body?.detail || body?.title || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
  }
}

// routeSeq counts the pages routed to: a page's read that answers after the
// shopper has moved on never resolves, so a slow page cannot draw itself
// over the next one.
let routeSeq = 0;

// A request that may be sent again as it is: the method says so, or its
// Idempotency-Key makes a second send answer as the first did.
const repeatable = (method, headers) => ["GET", "PUT", "DELETE"].includes(method) || !!headers["Idempotency-Key"];
const RETRIES = 4;

async function api(method, path, { body, auth = false, headers = {}, fresh = false } = {}) {
  const seq = routeSeq;
  const h2 = { ...headers };
  if (body !== undefined) h2["Content-Type"] = "application/json";
  if (auth && token()) h2.Authorization = `Bearer ${token()}`;
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      // fresh revalidates what the browser cached (the catalog is
      // cacheable for seconds): an ETag makes that a 304 when nothing
      // changed.
      res = await fetch(cfg.apiBase + path, { method, headers: h2, body: body === undefined ? undefined : JSON.stringify(body),
        cache: fresh ? "no-cache" : "default" });
    } catch (err) {
      // No answer at all (the network, a restarting server).
      if (attempt < RETRIES && repeatable(method, headers)) {
        await pause(1000 * 2 ** attempt);
        continue;
      }
      throw new APIError(0, { detail: t("offline") });
    }
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (method === "GET" && seq !== routeSeq) return new Promise(() => {});
    // Busy for now (a rate limit, a product's lock, the database away):
    // the server says when to come back, and the same request is safe to
    // send again. Only what the shopper did is said; a read goes on quietly
    // (many run in the background: a map's pages, a hold's status).
    const after = Number(res.headers.get("Retry-After"));
    if ((res.status === 429 || res.status === 503) && after > 0 && attempt < RETRIES && repeatable(method, headers)) {
      if (method !== "GET") toast(t("busyRetrying"));
      await pause(Math.min(after, 10) * 1000);
      continue;
    }
    if (!res.ok) throw new APIError(res.status, data);
    return data;
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// toast shows a short message over the page's foot for a few seconds (an
// error for longer, or until closed): a native alert would stop the page,
// its live updates and the shopper's hold clock with it.
const toastBox = document.getElementById("toast");
let toastTimer = 0;
function toast(text, { error = false } = {}) {
  clearTimeout(toastTimer);
  toastBox.className = error ? "toast error" : "toast";
  toastBox.replaceChildren(h("span", {}, text),
    h("button", { type: "button", class: "link", "aria-label": t("close"), onclick: () => (toastBox.hidden = true) }, "×"));
  toastBox.hidden = false;
  toastTimer = setTimeout(() => (toastBox.hidden = true), error ? 10000 : 4000);
}

// backLink leads back: to the events, to an event's dates (label
// "allDates"), or to the sale at href (after a request that did not end in
// a hold, to pick again).
function backLink(href = "#/", label = href === "#/" ? "back" : "backToSale") {
  return h("p", {}, h("a", { href }, t(label)));
}

function errorView(err) {
  // Nothing to try again: say what was not found, in the store's words,
  // and lead back to the events.
  if (err.status === 404) {
    const what = { o: "noSuchOrder", r: "noSuchReservation", checkout: "noSuchReservation" }[main.dataset.view] ?? "noSuchEvent";
    return show(h("h1", {}, t("notFound")), h("p", { role: "alert" }, t(what)), backLink());
  }
  const detail = err.code && cfg.strings[err.code] ? t(err.code) : err.message;
  show(h("p", { class: "error", role: "alert" }, t("error", { detail })),
    h("button", { onclick: () => route() }, t("retry")));
}

// needLogin sends the shopper to log in and back here after; why, a
// string's key, tells them on the login page what they were doing.
function needLogin(why) {
  sessionStorage.setItem(key("after"), location.hash);
  if (why) sessionStorage.setItem(key("loginWhy"), why);
  location.hash = "#/login";
}

// basket is the shopper's active hold, kept in the browser so every page
// leads back to it (the header shows it with its time left) until it is
// paid, released or runs out.
const basket = {
  get() {
    try {
      const b = JSON.parse(localStorage.getItem(key("hold")));
      return b && new Date(b.expiresAt) > Date.now() ? b : null;
    } catch {
      return null;
    }
  },
  set(b) {
    localStorage.setItem(key("hold"), JSON.stringify(b));
    renderAccount();
  },
  clear() {
    localStorage.removeItem(key("hold"));
    renderAccount();
  },
};

// holdClock counts a hold down in el, every second, and calls up once
// when its time has run out.
function holdClock(expiresAt, el, up) {
  const end = new Date(expiresAt);
  let done = false;
  every(1000, () => {
    const left = end - Date.now();
    el.textContent = duration(left);
    if (left <= 0 && !done) {
      done = true;
      up();
    }
  });
}

// summary is what a hold or an order comes to: the event, when and where,
// each seat at its price, the booking fees and the total.
function summary(p, quote) {
  const cur = quote.currency;
  const rows = quote.lines.map((l) => h("tr", {}, h("th", { scope: "row" }, l.seat), h("td", {}, money(l.priceCents, cur))));
  if (quote.discountCents) {
    rows.push(h("tr", { class: "discount" }, h("th", { scope: "row" }, t("discount", { code: quote.discountCode })),
      h("td", {}, "−", money(quote.discountCents, cur))));
  }
  if (quote.feesCents) {
    rows.push(h("tr", { class: "fees" }, h("th", { scope: "row" }, t("fees", { n: quote.lines.length, fee: money(quote.feeCents, cur) })),
      h("td", {}, money(quote.feesCents, cur))));
  }
  return h("section", { class: "summary", "aria-labelledby": "summary-title" },
    h("h2", { id: "summary-title" }, p?.event?.name || p?.name || t("order")),
    p ? eventDetails(p.event, p) : null,
    h("table", { class: "lines" }, h("caption", { class: "visually-hidden" }, t("orderSummary")),
      h("tbody", {}, rows),
      h("tfoot", {}, h("tr", {}, h("th", { scope: "row" }, t("total")), h("td", {}, money(quote.totalCents, cur))))),
    cancelPolicy(p));
}

// hull is the convex hull of points ([x, y]), each pushed out by pad
// from the centre (Andrew's monotone chain).
function hull(points, pad) {
  const pts = [...points].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length < 3) return pts;
  const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const half = (list) => {
    const out = [];
    for (const p of list) {
      while (out.length >= 2 && cross(out[out.length - 2], out[out.length - 1], p) <= 0) out.pop();
      out.push(p);
    }
    out.pop();
    return out;
  };
  const h = [...half(pts), ...half([...pts].reverse())];
  const cx = h.reduce((a, p) => a + p[0], 0) / h.length, cy = h.reduce((a, p) => a + p[1], 0) / h.length;
  return h.map(([x, y]) => {
    const d = Math.hypot(x - cx, y - cy) || 1;
    return [x + ((x - cx) / d) * pad, y + ((y - cy) / d) * pad];
  });
}

// inside reports whether (x, y) is inside the polygon.
function inside(poly, x, y) {
  let in_ = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i], [xj, yj] = poly[j];
    if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) in_ = !in_;
  }
  return in_;
}

// restorePick is the numbers picked before the shopper went to log in
// (taken once: a later visit starts afresh).
function restorePick(productId) {
  const k = key(`pick.${productId}`);
  const saved = sessionStorage.getItem(k);
  sessionStorage.removeItem(k);
  try {
    return (JSON.parse(saved) ?? []).filter(Number.isInteger);
  } catch {
    return [];
  }
}

// heldKind is what a hold's heading calls its numbers: seats, or numbers.
const heldKind = (p) => (p?.kind === "numbered" ? "Numbers" : "Seats");

// ---------- catalog ----------

let catalog = null;
async function products(force = false) {
  if (!catalog || force) catalog = (await api("GET", `/v1/stores/${cfg.slug}/products`, { fresh: force })).products;
  return catalog;
}

// product is one event of the catalog, fetched again when the copy in hand
// cannot be right: the event is not in it (published since the store was
// loaded: the API's copy may lag a second behind too) or its sale should
// have opened.
async function product(id) {
  const stale = (p) => !p || (p.saleStatus === "UPCOMING" && Date.now() >= new Date(p.onSaleAt));
  let p = (await products()).find((x) => x.id === id);
  for (let i = 0; stale(p) && i < 2; i++) {
    if (i) await new Promise((ok) => setTimeout(ok, 1200));
    p = (await products(true)).find((x) => x.id === id);
  }
  return p;
}

// whenOpen counts down to p's opening in el and, once the time has come,
// asks the catalog (at most once a second, until the server agrees the sale
// is open) and calls opened. The countdown never re-renders the page by
// itself: a clock ahead of the server's cannot make it loop.
function whenOpen(p, el, opened) {
  let asking = false;
  every(1000, () => {
    const left = new Date(p.onSaleAt) - Date.now();
    el.textContent = left > 0 ? t("upcoming", { time: duration(left) }) : t("opening");
    if (left > 0 || asking) return;
    asking = true;
    products(true)
      .then((list) => {
        const now = list.find((x) => x.id === p.id);
        if (now && now.saleStatus !== "UPCOMING") opened();
      })
      .catch(() => {})
      .finally(() => (asking = false));
  });
}

function statusText(p) {
  switch (p.saleStatus) {
    case "UPCOMING": return t("upcoming", { time: duration(new Date(p.onSaleAt) - Date.now()) });
    case "SOLD_OUT": return t("soldOut");
    case "CLOSED": return t("closed");
    case "CANCELLED": return t("cancelled");
    default: return t("onSale");
  }
}

// fewLeft: a sale with a tenth or less of its stock left says so.
const fewLeft = (p) => p.saleStatus === "ON_SALE" && p.available > 0 && p.available <= Math.max(1, p.capacity / 10);

// lowestPrice is what the cheapest ticket costs, its fee included.
function lowestPrice(p) {
  return Math.min(p.priceCents, ...p.priceLevels.map((l) => l.priceCents)) + (p.feeCents || 0);
}

// shortWhen is a date on a card: "Sat 12 Dec, 21:00", in the venue's zone.
function shortWhen(p) {
  if (!p.startsAt) return t("dateTBA");
  return formatter(Intl.DateTimeFormat, { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit",
    timeZone: p.event?.timeZone || "UTC" }).format(new Date(p.startsAt));
}

// art is an event's picture, or — without one — a panel in the store's
// colours with the date, so a card never shows a hole.
function art(p, cls) {
  if (p.imageUrl) return h("img", { src: p.imageUrl, alt: "", class: cls, loading: cls === "hero" ? "eager" : "lazy", fetchpriority: cls === "hero" ? "high" : "auto", width: 640, height: 360 });
  const day = p.startsAt ? new Date(p.startsAt) : null;
  const part = (o) => formatter(Intl.DateTimeFormat, { ...o, timeZone: p.event?.timeZone || "UTC" }).format(day);
  return h("div", { class: `${cls} art`, "aria-hidden": "true" },
    day ? [h("span", { class: "art-day" }, part({ day: "numeric" })), h("span", { class: "art-month" }, part({ month: "short" }))] : null);
}

// stateBadge is a date's state; a series' card speaks for several dates,
// so it does not say "few left" of one of them (few = false).
function stateBadge(p, few = fewLeft(p)) {
  const badge = h("span", { class: `badge ${few ? "few" : p.saleStatus.toLowerCase()}` }, few ? t("fewLeft") : statusText(p));
  if (p.saleStatus === "UPCOMING") whenOpen(p, badge, () => route());
  return badge;
}

// home is one card per event: a single date's card opens its sale, a
// series' card (an event of several dates) its list of dates.
async function home() {
  const list = await products(true);
  if (!list.length) return show(h("h1", {}, t("events")), h("p", {}, t("noEvents")));
  const cards = byEvent(list).map((dates) => {
    const series = dates.length > 1;
    const p = series ? leadDate(dates) : dates[0];
    const href = series ? `#/e/${eventOf(p)}` : `#/p/${p.id}`;
    const price = Math.min(...dates.map(lowestPrice));
    return h("li", { class: "card", "data-event": series ? eventOf(p) : null, "data-product": series ? null : p.id },
      h("a", { href, tabindex: "-1", "aria-hidden": "true", class: "card-art" }, art(dates[0], "thumb")),
      h("div", { class: "card-body" },
        h("p", { class: "card-when" }, series ? t("datesFrom", { n: dates.length, when: shortWhen(dates[0]) }) : shortWhen(p)),
        h("h2", {}, h("a", { href }, p.event?.name || p.name)),
        p.event?.venue?.name ? h("p", { class: "muted card-where" }, p.event.venue.name) : null,
        h("p", { class: "card-foot" }, series ? stateBadge(p, false) : stateBadge(p),
          h("span", { class: "card-price" }, t("from", { price: money(price, p.currency) })))));
  });
  show(h("h1", {}, t("events")), h("ul", { class: "cards" }, cards));
}

// ---------- an event of several dates ----------

// eventOf is the event a date belongs to.
const eventOf = (p) => p.event?.id || p.id;

// byEvent groups the catalog's dates by event, the events in the
// catalog's order and each one's dates by when they start.
function byEvent(list) {
  const events = new Map();
  for (const p of list) {
    const k = eventOf(p);
    events.set(k, [...(events.get(k) || []), p]);
  }
  const start = (p) => (p.startsAt ? new Date(p.startsAt).getTime() : Infinity);
  return [...events.values()].map((dates) => dates.sort((a, b) => start(a) - start(b)));
}

// leadDate is the date a series' card speaks for: the first on sale, else
// the next to open, else the first sold out (its waiting list), else the
// first.
function leadDate(dates) {
  const in_ = (s) => dates.filter((p) => p.saleStatus === s);
  const opening = in_("UPCOMING").sort((a, b) => new Date(a.onSaleAt) - new Date(b.onSaleAt));
  return in_("ON_SALE")[0] || opening[0] || in_("SOLD_OUT")[0] || dates[0];
}

// siblings are the dates of p's event in the catalog, p among them, by
// start.
async function siblings(p) {
  return byEvent((await products()).filter((x) => eventOf(x) === eventOf(p)))[0] || [p];
}

// eventPage lists a series' dates, each with its state, its price and the
// way into its sale. An event left with one date opens that date.
async function eventPage(eventId) {
  const dates = byEvent((await products(true)).filter((p) => eventOf(p) === eventId))[0];
  if (!dates) throw new APIError(404, { detail: t("noSuchEvent") });
  if (dates.length === 1) return location.replace(`#/p/${dates[0].id}`);
  const first = dates[0];
  const ev = first.event || {};
  const zone = ev.timeZone || "UTC";
  const f = formatIn(zone);
  const rows = dates.map((p) => {
    const day = p.startsAt ? f(p.startsAt, { dateStyle: "full" }) : t("dateTBA");
    const time = p.startsAt ? [f(p.startsAt, { timeStyle: "short" }), p.doorsAt ? t("doors", { time: f(p.doorsAt, { timeStyle: "short" }) }) : null]
      .filter(Boolean).join(" · ") : "";
    const action = { ON_SALE: "getTickets", UPCOMING: "view", SOLD_OUT: "waitlistJoin" }[p.saleStatus];
    return h("li", { class: "date", "data-product": p.id },
      h("p", { class: "date-when" }, h("strong", {}, day), time ? h("span", { class: "muted" }, time) : null),
      h("p", { class: "date-foot" }, stateBadge(p), h("span", { class: "card-price" }, t("from", { price: money(lowestPrice(p), p.currency) })),
        action ? h("a", { href: `#/p/${p.id}`, class: `button${p.saleStatus === "ON_SALE" ? " primary" : ""}`,
          "aria-label": `${t(action)}: ${day}` }, t(action)) : null));
  });
  const where = [ev.venue?.name, ev.venue?.address].filter(Boolean).join(", ");
  show(backLink(),
    h("header", { class: `event-hero${first.imageUrl ? "" : " no-art"}` }, first.imageUrl ? art(first, "hero") : null,
      h("div", { class: "event-head" }, h("h1", {}, ev.name || first.name),
        h("dl", { class: "event-details" }, h("dt", {}, t("when")), h("dd", {}, t("datesIn", { n: dates.length, zone })),
          where ? [h("dt", {}, t("where")), h("dd", {}, where)] : null,
          ev.entryNote ? [h("dt", {}, t("entry")), h("dd", {}, ev.entryNote)] : null),
        first.description ? h("p", { class: "event-description" }, first.description) : null,
        h("p", { class: "tools" }, h("button", { onclick: () => share(first) }, t("share"))))),
    h("h2", {}, t("chooseDate")),
    h("ul", { class: "dates" }, rows));
}

// otherDates links a series' date to its other dates, so a shopper who
// finds no seat they like tries the next night without going back.
function otherDates(p, dates) {
  if (dates.length < 2) return null;
  return h("nav", { class: "other-dates", "aria-label": t("datesNav") }, h("span", {}, t("datesNav")),
    h("ul", {}, dates.map((d) => h("li", {}, d.id === p.id ? h("span", { "aria-current": "page" }, shortWhen(d)) :
      h("a", { href: `#/p/${d.id}` }, shortWhen(d))))));
}

// ---------- availability: the stream, with a polling fallback ----------

function decodeBitmap(b64, size) {
  const raw = atob(b64);
  const bits = new Uint8Array(size);
  for (let i = 0; i < raw.length; i++) bits[i] = raw.charCodeAt(i);
  return bits;
}

// Products of over a million numbers come without their whole bitmap: the
// snapshot lists pages of PAGE numbers with their versions, and the page
// fetches only the pages it shows (want), again when their version moves.
const PAGE = 16384;
const WHOLE_UP_TO = 1000000;

function watchAvailability(productId, capacity, onChange) {
  const paged = capacity > WHOLE_UP_TO;
  const state = { bits: new Uint8Array(paged ? 0 : Math.ceil(capacity / 8)), pages: new Map(), index: [], version: -1 };
  const wanted = new Set();
  // locate returns the bytes holding number n and its bit index there
  // (null while its page is not loaded: shown as free, the claim decides).
  const locate = (n) => {
    if (!paged) return [state.bits, n - 1];
    const pg = state.pages.get(Math.floor((n - 1) / PAGE));
    return pg ? [pg.bits, (n - 1) % PAGE] : [null, 0];
  };
  const taken = (n) => {
    const [bits, i] = locate(n);
    return bits ? (bits[i >> 3] >> (i & 7)) & 1 : 0;
  };
  const set = (n, on) => {
    const [bits, i] = locate(n);
    if (!bits) return;
    const m = 1 << (i & 7);
    bits[i >> 3] = on ? bits[i >> 3] | m : bits[i >> 3] & ~m;
  };
  // refresh loads the wanted pages the client lacks or holds at an older
  // version than the index names.
  const refresh = async () => {
    const stale = state.index.filter((r) => wanted.has(r.page) && (state.pages.get(r.page)?.version ?? -1) < r.version);
    if (!stale.length) return;
    await Promise.all(stale.map(async (r) => {
      const pg = await api("GET", `/v1/products/${productId}/availability/pages/${r.page}`);
      state.pages.set(r.page, { bits: decodeBitmap(pg.bitmap, Math.ceil((pg.last - pg.first + 1) / 8)), version: pg.version });
    }));
    onChange(state, null);
  };
  const want = (pages) => {
    const before = wanted.size;
    pages.forEach((pg) => wanted.add(pg));
    return wanted.size > before ? refresh().catch(() => {}) : Promise.resolve();
  };
  let es, poll, failures = 0;
  const snapshot = (d) => {
    state.version = d.version;
    if (!paged) state.bits = decodeBitmap(d.bitmap, Math.ceil(capacity / 8));
    else state.index = d.pages;
  };
  const apply = (ev, kind) => {
    const d = JSON.parse(ev.data);
    if (kind === "snapshot") snapshot(d);
    else {
      d.taken.forEach((n) => set(n, true));
      d.freed.forEach((n) => set(n, false));
      state.version = d.version;
      for (const r of d.pages || []) {
        const pg = state.pages.get(r.page);
        if (pg) pg.version = r.version;
        if (paged) state.index[r.page] = r;
      }
    }
    onChange(state, kind === "snapshot" ? null : d);
    if (paged && kind === "snapshot") refresh().catch(() => {});
  };
  const startPolling = () => {
    const tick = async () => {
      try {
        const a = await api("GET", `/v1/products/${productId}/availability`);
        if (a.version !== state.version) {
          snapshot(a);
          if (paged) await refresh();
          else onChange(state, null);
        }
      } catch { /* next tick */ }
    };
    tick();
    poll = setInterval(tick, 2000);
  };
  if (window.EventSource) {
    es = new EventSource(`${cfg.apiBase}/v1/products/${productId}/availability/stream`);
    es.addEventListener("snapshot", (ev) => { failures = 0; apply(ev, "snapshot"); });
    es.addEventListener("delta", (ev) => apply(ev, "delta"));
    es.onerror = () => {
      if (++failures >= 3 && !poll) {
        es.close();
        startPolling();
      }
    };
  } else startPolling();
  cleanup.push(() => { es?.close(); clearInterval(poll); });
  // ready says whether number n's state is known (its page loaded).
  const ready = (n) => !paged || state.pages.has(Math.floor((n - 1) / PAGE));
  // freeIn counts the free numbers from..to: a page not loaded counts by
  // the index when the range covers it whole; otherwise the count is not
  // known yet (null).
  const freeIn = (from, to) => {
    let n = 0;
    for (let pg = Math.floor((from - 1) / PAGE); pg <= Math.floor((to - 1) / PAGE); pg++) {
      const first = pg * PAGE + 1, last = Math.min(capacity, first + PAGE - 1);
      const a = Math.max(from, first), b = Math.min(to, last);
      if (!ready(a)) {
        if (a !== first || b !== last || !state.index[pg]) return null;
        n += last - first + 1 - state.index[pg].taken;
        continue;
      }
      const [bits, i0] = locate(a);
      n += b - a + 1 - countBits(bits, i0, i0 + b - a);
    }
    return n;
  };
  return { state, taken, want, ready, freeIn };
}

// countBits counts the set bits i0..i1 of bits, a byte at a time where it can.
const BYTE_BITS = Uint8Array.from({ length: 256 }, (_, b) => { let c = 0; for (; b; b &= b - 1) c++; return c; });
function countBits(bits, i0, i1) {
  let c = 0, i = i0;
  for (; i <= i1 && i & 7; i++) c += (bits[i >> 3] >> (i & 7)) & 1;
  for (; i + 7 <= i1; i += 8) c += BYTE_BITS[bits[i >> 3]];
  for (; i <= i1; i++) c += (bits[i >> 3] >> (i & 7)) & 1;
  return c;
}

// ---------- product page ----------

async function productPage(id) {
  const p = await product(id);
  if (!p) throw new APIError(404, { detail: t("noSuchEvent") });
  const dates = await siblings(p);
  const back = dates.length > 1 ? backLink(`#/e/${eventOf(p)}`, "allDates") : backLink();
  const head = [back, eventHero(p), otherDates(p, dates)];
  // A sold-out event's page is its waiting list, unless the shopper holds
  // an offer from it: then the seats the offer keeps are theirs to pick.
  offers.delete(id);
  if (p.saleStatus === "SOLD_OUT" || (p.offered > 0 && token())) {
    const entry = token() ? await api("GET", `/v1/products/${id}/waitlist`, { auth: true }).catch(() => null) : null;
    if (entry?.state === "OFFERED" && new Date(entry.offer.expiresAt) > Date.now()) {
      offers.set(id, entry.id);
      head.push(offerBanner(p, entry));
    } else if (p.saleStatus === "SOLD_OUT") return show(...head, waitlistPanel(p, entry));
  }
  if (p.waitingRoom && !accessToken(id) && !offers.has(id) && !["SOLD_OUT", "CLOSED", "CANCELLED"].includes(p.saleStatus)) {
    return show(...head, p.presale ? presaleQueuePanel(p) : null, h("p", {}, t("queueExplain")),
      h("button", { class: p.presale ? "" : "primary", onclick: () => (location.hash = `#/q/${id}`) }, t("queueJoin")));
  }
  // Behind a waiting room, admission before the general sale comes from a
  // presale's queue: the server's word, whatever this device's clock says.
  const presaleOpen = p.presale && ((p.waitingRoom && accessToken(id)) ||
    (new Date(p.presale.opensAt) <= Date.now() && Date.now() < new Date(p.presale.closesAt)));
  if (p.saleStatus === "UPCOMING" && !(presaleOpen && sessionStorage.getItem(key(`presale.${id}`)))) {
    const when = h("p", { class: "badge upcoming", role: "status" });
    whenOpen(p, when, () => route());
    return show(...head, when, p.presale ? presalePanel(p, presaleOpen) : null);
  }
  if (p.saleStatus === "CLOSED") return show(...head, h("p", {}, t("closed")));
  if (p.saleStatus === "CANCELLED") {
    return show(...head, h("p", { class: "error", role: "status" }, t("cancelledNotice")),
      p.cancelReason ? h("p", {}, p.cancelReason) : null);
  }
  const flash = sessionStorage.getItem(key("flash"));
  sessionStorage.removeItem(key("flash"));
  const notice = flash ? h("p", { class: "error", role: "alert" }, t(flash)) : null;
  if (p.kind === "seated") return seatedPage(p, head, notice);
  return numberedPage(p, head, notice);
}

// ---------- presale ----------

// presalePanel asks a code holder for their code while the presale before
// the general sale is open (the reservation checks it), or says when it
// opens.
function presalePanel(p, open) {
  if (!open) return h("p", { class: "presale" }, t("presaleOpens", { time: moment(p, p.presale.opensAt) }));
  const code = h("input", { id: "presale-code", required: true, autocomplete: "off", maxlength: 40 });
  return h("form", { class: "presale waitlist", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(key(`presale.${p.id}`), code.value.trim());
    route();
  } }, h("h2", {}, t("presaleTitle")), h("p", {}, t("presaleExplain", { time: moment(p, p.presale.closesAt) })),
  h("label", { for: "presale-code" }, t("presaleCode")), code,
  h("p", {}, h("button", { class: "primary", type: "submit", id: "presale-enter" }, t("presaleEnter"))));
}

// ---------- waiting list ----------

// offers are the waiting-list offers the shopper holds, by product: a
// reservation made on the page spends it.
const offers = new Map();

// waitlistPanel is a sold-out event's call to action: join the line (how
// many tickets, the address the offer goes to), or — in it — the place and
// a way out, watched until an offer comes.
function waitlistPanel(p, entry) {
  const box = h("section", { class: "waitlist", "aria-labelledby": "waitlist-title" },
    h("h2", { id: "waitlist-title" }, t("soldOut")));
  if (entry?.state === "WAITING") {
    const where = h("p", { id: "waitlist-position", role: "status" },
      t("waitlistPosition", { position: entry.position, n: entry.quantity, email: entry.email }));
    const leave = h("button", { id: "waitlist-leave", onclick: (e) => once(`waitlist.${p.id}`, e.currentTarget, async () => {
      await api("DELETE", `/v1/products/${p.id}/waitlist`, { auth: true });
      announce(t("waitlistLeft"));
      route();
    }) }, t("waitlistLeave"));
    box.append(h("p", {}, t("waitlistWaiting")), where, leave);
    const watch = setInterval(async () => {
      const now = await api("GET", `/v1/products/${p.id}/waitlist`, { auth: true }).catch(() => null);
      if (now?.state === "OFFERED") route();
      else if (now?.state === "WAITING") where.textContent = t("waitlistPosition", { position: now.position, n: now.quantity, email: now.email });
    }, 5000);
    cleanup.push(() => clearInterval(watch));
    return box;
  }
  if (["EXPIRED", "DECLINED"].includes(entry?.state)) box.append(h("p", { class: "muted" }, t("offerEnded")));
  const qty = h("select", { id: "waitlist-quantity" },
    Array.from({ length: p.perBuyerLimit }, (_, i) => h("option", { value: i + 1, selected: i + 1 === Math.min(2, p.perBuyerLimit) }, i + 1)));
  const email = h("input", { id: "waitlist-email", type: "email", required: true, autocomplete: "email",
    value: entry?.email || localStorage.getItem(key("email")) || "" });
  const form = h("form", { class: "waitlist-form", onsubmit: (e) => {
    e.preventDefault();
    once(`waitlist.${p.id}`, form.querySelector("button"), async () => {
      if (!token()) return needLogin("loginToWait");
      try {
        await api("POST", `/v1/products/${p.id}/waitlist`, { auth: true, body: { quantity: Number(qty.value), email: email.value.trim() } });
        announce(t("waitlistJoined"));
      } catch (err) {
        if (err.status === 401) return needLogin();
        // Back on sale meanwhile (409): the page shows the seats.
        if (err.status !== 409) return toast(err.message, { error: true });
        await products(true);
      }
      route();
    });
  } },
    h("label", {}, t("waitlistQuantity"), qty), h("label", {}, t("waitlistEmail"), email),
    h("button", { class: "primary", type: "submit", id: "waitlist-join" }, t("waitlistJoin")));
  box.append(h("p", {}, t("waitlistExplain")), form);
  return box;
}

// offerBanner tells the shopper holding an offer how many seats are theirs
// and for how long, with a way to turn it down.
function offerBanner(p, entry) {
  const left = h("strong", { class: "offer-clock" });
  // Told once, not in a live region: the clock ticks every second.
  announce(t("offerYours", { n: entry.offer.quantity }));
  const box = h("div", { class: "offer notice", id: "offer" },
    h("p", {}, t("offerYours", { n: entry.offer.quantity }), " ", t("offerLeft"), " ", left),
    h("button", { class: "link", id: "offer-decline", onclick: (e) => once(`waitlist.${p.id}`, e.currentTarget, async () => {
      await api("DELETE", `/v1/products/${p.id}/waitlist`, { auth: true });
      offers.delete(p.id);
      announce(t("offerDeclined"));
      route();
    }) }, t("offerDecline")));
  holdClock(entry.offer.expiresAt, left, () => route());
  return box;
}

// eventHero is the top of an event page: the picture, the name, when and
// where, what it is, what tickets cost, and ways to keep it (calendar,
// share).
function eventHero(p) {
  const levels = p.priceLevels.length ? p.priceLevels : [{ name: t("ticket"), priceCents: p.priceCents }];
  const prices = h("ul", { class: "prices", "aria-label": t("prices") }, levels.map((l) => h("li", {},
    h("span", {}, l.name), " ", h("strong", {}, money(l.priceCents, p.currency)),
    p.feeCents ? h("span", { class: "muted" }, " ", t("plusFee", { fee: money(p.feeCents, p.currency) })) : null)));
  const keep = h("p", { class: "tools" },
    p.startsAt ? h("button", { onclick: () => saveCalendar(p) }, t("addToCalendar")) : null,
    h("button", { onclick: () => share(p) }, t("share")));
  // The picture when the event has one (a panel of colour says nothing
  // the page does not, and would push the seats below the fold).
  return h("header", { class: `event-hero${p.imageUrl ? "" : " no-art"}` }, p.imageUrl ? art(p, "hero") : null,
    // An upcoming sale's countdown is the page's call to action, below.
    h("div", { class: "event-head" }, h("h1", {}, p.event?.name || p.name), p.saleStatus === "UPCOMING" ? null : stateBadge(p),
      eventDetails(p.event, p),
      p.description ? h("p", { class: "event-description" }, p.description) : null, prices, cancelPolicy(p), transferPolicy(p), keep));
}

// cancelUntil is when an order of p stops being the shopper's to cancel,
// or null when it is not (the organiser allows none, or the time is past).
function cancelUntil(p) {
  const until = p?.shopperCancellation?.until;
  return until && new Date(until) > Date.now() ? until : null;
}

// cancelPolicy says, before the shopper buys (the event page, the hold's
// summary), whether and until when they may cancel, and what it costs.
function cancelPolicy(p) {
  const until = cancelUntil(p);
  if (!until) return null;
  const fee = p.shopperCancellation.feeCents;
  return h("p", { class: "muted policy" }, t(fee ? "cancelPolicy" : "cancelPolicyFree", {
    until: moment(p, until),
    fee: money(fee, p.currency) }));
}

// saveCalendar hands the browser an iCalendar entry of the date.
function saveCalendar(p) {
  const utc = (x) => new Date(x).toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "");
  const esc = (x) => String(x).replace(/[\\;,]/g, (c) => "\\" + c).replace(/\n/g, "\\n");
  const lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//BoxOffice//Store//EN", "BEGIN:VEVENT",
    `UID:${p.id}@boxoffice`, `DTSTAMP:${utc(Date.now())}`, `DTSTART:${utc(p.startsAt)}`];
  if (p.endsAt) lines.push(`DTEND:${utc(p.endsAt)}`);
  lines.push(`SUMMARY:${esc(p.event?.name || p.name)}`);
  const where = [p.event?.venue?.name, p.event?.venue?.address].filter(Boolean).join(", ");
  if (where) lines.push(`LOCATION:${esc(where)}`);
  lines.push(`URL:${location.href}`, "END:VEVENT", "END:VCALENDAR");
  const url = URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"], { type: "text/calendar" }));
  const a = h("a", { href: url, download: `${p.slug || "event"}.ics`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// share uses the device's share sheet where there is one, else copies
// the page's address.
async function share(p) {
  const url = location.href;
  try {
    if (navigator.share) return await navigator.share({ title: p.event?.name || p.name, url });
    await navigator.clipboard.writeText(url);
    toast(t("linkCopied"));
  } catch {
    /* the shopper closed the share sheet */
  }
}

// formatIn formats a time with Intl's options in a venue's time zone.
const formatIn = (zone) => (x, o) => formatter(Intl.DateTimeFormat, { ...o, timeZone: zone }).format(new Date(x));

// moment is a deadline or an opening of p's sale, "2 Jan 2027, 19:30", in
// its venue's time zone.
const moment = (p, at) => formatIn(p.event?.timeZone || "UTC")(at, { dateStyle: "medium", timeStyle: "short" });

// whenText says when a date is, in the venue's time zone (as the tickets
// and mails do), or null when it has no date yet.
function whenText(dates, zone) {
  if (!dates?.startsAt) return null;
  const tz = zone || "UTC";
  const f = formatIn(tz);
  let s = f(dates.startsAt, { dateStyle: "full", timeStyle: "short" });
  if (dates.doorsAt) s += ` · ${t("doors", { time: f(dates.doorsAt, { timeStyle: "short" }) })}`;
  return `${s} (${tz})`;
}

// eventDetails is when and where a date is, and its entry note.
function eventDetails(ev, dates) {
  if (!ev) return null;
  const when = whenText(dates, ev.timeZone);
  const where = [ev.venue?.name, ev.venue?.address].filter(Boolean).join(", ");
  const map = ev.venue?.mapUrl?.startsWith("https://")
    ? [" · ", h("a", { href: ev.venue.mapUrl, target: "_blank", rel: "noopener" }, t("map"))] : null;
  if (!when && !where && !ev.entryNote) return null;
  return h("dl", { class: "event-details" },
    when ? [h("dt", {}, t("when")), h("dd", {}, when)] : null,
    where ? [h("dt", {}, t("where")), h("dd", {}, where, map)] : null,
    ev.entryNote ? [h("dt", {}, t("entry")), h("dd", {}, ev.entryNote)] : null);
}

// actionKey is the Idempotency-Key of one shopper action: kept in the tab's
// session until the server has answered it, so a double click, a retry
// after a lost answer or a reload sends the same key and the server records
// the action once. done forgets it (an answer came: the next action is a new
// one).
function actionKey(action, body) {
  const k = key(`idem.${action}`);
  const want = JSON.stringify(body);
  let saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(k));
  } catch {
    saved = null;
  }
  const id = saved?.body === want ? saved.key : crypto.randomUUID();
  sessionStorage.setItem(k, JSON.stringify({ key: id, body: want }));
  return { id, done: () => sessionStorage.removeItem(k) };
}

// keyedSend sends a shopper action under its Idempotency-Key (actionKey)
// and says whether it was done; a refusal is shown in msg, in the
// store's words when it has them for the error's code.
async function keyedSend(action, body, msg, send) {
  const idem = actionKey(action, body);
  try {
    await send(idem.id);
    idem.done();
    return true;
  } catch (err) {
    if (err.status && err.status < 500) idem.done();
    msg.className = "error";
    msg.setAttribute("role", "alert");
    msg.textContent = err.code && cfg.strings[err.code] ? t(err.code) : err.message;
    return false;
  }
}

// once runs one shopper action at a time: a click while it runs does
// nothing, and the control that started it is disabled meanwhile.
const running = new Set();
async function once(action, control, run) {
  if (running.has(action)) return;
  running.add(action);
  if (control) control.disabled = true;
  try {
    await run();
  } finally {
    running.delete(action);
    if (control?.isConnected) control.disabled = false;
  }
}

// decided keeps a reservation's answer that came with its decision (the
// POST waited for it, Prefer: wait) for the reserving page, which then has
// nothing to ask.
const decided = new Map();

function reserve(p, body, control) {
  return once(`reserve.${p.id}`, control, async () => {
    if (!token()) {
      // The pick waits for the shopper's return from the login.
      sessionStorage.setItem(key(`pick.${p.id}`), JSON.stringify(body.numbers ?? []));
      return needLogin("loginFirst");
    }
    if (offers.has(p.id)) body = { ...body, offer: offers.get(p.id) };
    const presale = p.saleStatus === "UPCOMING" && sessionStorage.getItem(key(`presale.${p.id}`));
    if (presale) body = { ...body, presaleCode: presale };
    const idem = actionKey(`reserve.${p.id}`, body);
    // A decision within two seconds comes with the answer; a later one is
    // waited for on the reserving page, which says the request is queued.
    const headers = { "Idempotency-Key": idem.id, "Prefer": "wait=2" };
    const access = accessToken(p.id);
    if (access && !body.offer) headers["X-Access-Token"] = access;
    // The button says the request is out while its answer waits.
    const label = control?.textContent;
    if (control) {
      control.textContent = t("reservingNow");
      control.setAttribute("aria-busy", "true");
    }
    try {
      const r = await api("POST", `/v1/products/${p.id}/reservations`, { body, auth: true, headers });
      idem.done();
      if (r.status !== "QUEUED") decided.set(r.id, r);
      // The page's live map stops now, not at the hashchange: the
      // shopper's own new hold is not told there as a seat someone took.
      leaveView();
      location.hash = `#/r/${r.id}?p=${p.id}`;
    } catch (err) {
      if (err.status && err.status < 500) idem.done();
      if (err.status === 401) return needLogin();
      toast(err.message, { error: true });
      // A presale code refused: ask for it again.
      if (presale && (err.code?.startsWith("CODE_") || err.code === "PRESALE_CODE_REQUIRED")) {
        sessionStorage.removeItem(key(`presale.${p.id}`));
        route();
      }
    } finally {
      if (control) {
        control.textContent = label;
        control.removeAttribute("aria-busy");
      }
    }
  });
}

async function seatedPage(p, head, notice) {
  const started = performance.now();
  const layout = await api("GET", `/v1/products/${p.id}/layout`);
  // Flatten the plan: one entry per seat, rows kept for keyboard moves.
  const seats = [], rows = [], sections = [];
  const [seatBefore, seatAfter] = t("seatName").split("{seat}"); // once, not per seat of a stadium
  for (const s of layout.sections) {
    const first = seats.length;
    for (const r of s.rows) {
      rows.push({ start: seats.length, end: seats.length + r.seats.length, name: r.name, section: s.name });
      const row = `${s.name} · ${t("rowName", { row: r.name })} · ${seatBefore}`;
      for (const seat of r.seats) seats.push({ ...seat, row: rows.length - 1, full: row + seat.label + seatAfter });
    }
    sections.push({ name: s.name, first, last: seats.length });
  }
  // Each section's outline (the hull of its seats, a seat's width out) and
  // box: the whole venue is drawn as these shapes when seats are too small
  // to pick, and a tap on one zooms to its seats.
  for (const sec of sections) {
    const pts = seats.slice(sec.first, sec.last).map((x) => [x.x, x.y]);
    // Rows in order give the section's own shape — a block, or a tier's
    // curve — as its first row along and its last row back; a single row
    // gets its hull.
    const own = rows.filter((r) => r.start >= sec.first && r.end <= sec.last);
    const along = (r) => seats.slice(r.start, r.end).map((x) => [x.x, x.y]);
    sec.hull = own.length >= 2 ? [...along(own[0]), ...along(own[own.length - 1]).reverse()] : hull(pts, 0.8);
    // Its name goes on its middle row's middle seat: on the section, even
    // when the section curves round something else.
    const mid = own[Math.floor(own.length / 2)] ?? { start: sec.first, end: sec.last };
    sec.anchor = seats[Math.floor((mid.start + mid.end - 1) / 2)];
    sec.box = pts.reduce((b, [x, y]) => [Math.min(b[0], x), Math.min(b[1], y), Math.max(b[2], x), Math.max(b[3], y)],
      [Infinity, Infinity, -Infinity, -Infinity]);
  }
  const levels = new Map(layout.priceLevels.map((l, i) => {
    const hue = (i * 67 + 200) % 360;
    return [l.name, { ...l, hue, fill: `hsl(${hue} 65% 45%)` }];
  }));
  const price = (seat) => levels.get(seat.priceLevel)?.priceCents ?? layout.priceCents;
  // A section's free seats as the map last counted them (none before it draws).
  const freeText = (sec) => (sec.free == null ? "" : grouped(sec.free));
  const byNumber = new Map(seats.map((s, i) => [s.number, i]));
  const picked = new Set(restorePick(p.id).map((n) => byNumber.get(n)).filter((i) => i !== undefined));
  let focus = 0;

  const canvas = h("canvas", { class: "map", tabindex: "0", role: "application", "aria-label": t("mapHelp") });
  const total = h("p", { class: "total", "aria-live": "polite" });
  const reserveBtn = h("button", { class: "primary", disabled: true, onclick: (e) => reserve(p, { numbers: [...picked].map((i) => seats[i].number) }, e.currentTarget) }, t("reserve"));
  // How long drawing takes: the first full map, and each delta (kept for
  // the store benchmark's budgets).
  const timing = { firstDrawMs: null, deltaMs: [] };
  let deltaAt = null;
  const lost = h("p", { class: "error", role: "alert", hidden: true }, t("SEAT_TAKEN"));
  const avail = watchAvailability(p.id, p.capacity, (_, delta) => {
    if (delta) deltaAt = performance.now();
    // A seat taken by someone else drops out of the selection, and the
    // shopper is told — unless the shopper's own reservation is out: the
    // seat may be theirs now, and its answer says which.
    const reserving = running.has(`reserve.${p.id}`);
    for (const i of [...picked]) {
      if (!reserving && avail.taken(seats[i].number)) {
        picked.delete(i);
        lost.hidden = false;
        announce(t("SEAT_TAKEN"));
      }
    }
    updateTotal();
    draw();
    syncList();
    if (delta) canvas.dataset.version = avail.state.version;
  });

  // View transform: plan units → CSS pixels.
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const s of seats) { minX = Math.min(minX, s.x); minY = Math.min(minY, s.y); maxX = Math.max(maxX, s.x); maxY = Math.max(maxY, s.y); }
  const view = { scale: 1, ox: 0, oy: 0 };
  let fitted = false; // the first fit sets the view; before it nothing is where it will be
  const fitTo = (x0, y0, x1, y1) => {
    fitted = true;
    const w = canvas.clientWidth || 600, hgt = canvas.clientHeight || 400;
    view.scale = Math.min(w / (x1 - x0 + 2), hgt / (y1 - y0 + 2));
    view.ox = (w - (x1 - x0) * view.scale) / 2 - x0 * view.scale;
    view.oy = (hgt - (y1 - y0) * view.scale) / 2 - y0 * view.scale;
    draw();
  };
  let frame = 0;
  function draw() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const dpr = window.devicePixelRatio || 1;
      const w = canvas.clientWidth, hgt = canvas.clientHeight;
      if (canvas.width !== w * dpr) { canvas.width = w * dpr; canvas.height = hgt * dpr; }
      const g = canvas.getContext("2d");
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, w, hgt);
      const r = Math.max(1, Math.min(view.scale * 0.4, 12));
      const css = getComputedStyle(document.documentElement);
      const free = css.getPropertyValue("--primary"), ink = css.getPropertyValue("--text");
      const px = (x) => x * view.scale + view.ox, py = (y) => y * view.scale + view.oy;
      // Seats too small to pick: the venue as its sections, each coloured
      // by its price and how much of it is left, named with its free seats.
      const overviewMode = r < 2.5;
      // Section names go on last, over the seats they name.
      const labels = [];
      for (const sec of sections) {
        let left = 0;
        for (let i = sec.first; i < sec.last; i++) if (!avail.taken(seats[i].number)) left++;
        sec.free = left;
        const lv = levels.get(seats[sec.first]?.priceLevel);
        g.beginPath();
        sec.hull.forEach(([x, y], k) => (k ? g.lineTo(px(x), py(y)) : g.moveTo(px(x), py(y))));
        g.closePath();
        const share = (sec.last - sec.first) ? left / (sec.last - sec.first) : 0;
        g.fillStyle = !left ? "rgba(150,150,150,0.35)" : lv ? `hsla(${lv.hue} 65% 45% / ${overviewMode ? 0.35 + 0.5 * share : 0.08})` : `color-mix(in srgb, ${free} ${overviewMode ? 30 + 50 * share : 8}%, transparent)`;
        g.fill();
        // A stroke in the same colour, a seat wide, pads the shape out to
        // the seats' edges.
        g.strokeStyle = g.fillStyle;
        g.lineWidth = Math.max(2, 1.4 * view.scale);
        g.lineJoin = "round";
        g.stroke();
        if (r < 8 && sec.anchor) {
          const cx = px(sec.anchor.x), cy = py(sec.anchor.y);
          const name = [sec.name, "600 13px system-ui, sans-serif"];
          labels.push({ x: cx, y: cy, size: sec.last - sec.first,
            lines: overviewMode ? [name, [t("sectionFree", { n: grouped(left) }), "12px system-ui, sans-serif"]] : [name] });
        }
      }
      if (r >= 6) {
        // Row names, left of each row's first seat.
        g.fillStyle = ink;
        g.font = "11px system-ui, sans-serif";
        g.textAlign = "right";
        g.textBaseline = "middle";
        for (const row of rows) g.fillText(row.name, px(seats[row.start].x) - r - 6, py(seats[row.start].y));
      }
      // Free seats are squares in their price's colour, set only when it
      // changes (seats of a row share it, and each setting is parsed);
      // taken seats are crosses, stroked as one path; the picked and
      // focused seats' outlines go on top.
      const crosses = new Path2D(), outlined = [];
      let fill = null;
      for (let i = 0; overviewMode ? false : i < seats.length; i++) {
        const s = seats[i];
        const x = s.x * view.scale + view.ox, y = s.y * view.scale + view.oy;
        if (x < -r || y < -r || x > w + r || y > hgt + r) continue;
        if (avail.taken(s.number)) {
          crosses.moveTo(x - r, y - r); crosses.lineTo(x + r, y + r); crosses.moveTo(x + r, y - r); crosses.lineTo(x - r, y + r);
        } else {
          const want = levels.get(s.priceLevel)?.fill ?? free;
          if (want !== fill) g.fillStyle = fill = want;
          g.fillRect(x - r, y - r, 2 * r, 2 * r);
        }
        if (picked.has(i) || i === focus) outlined.push([i, x, y]);
      }
      g.strokeStyle = "#9a9a9a";
      g.lineWidth = 1;
      g.stroke(crosses);
      const accent = css.getPropertyValue("--accent");
      for (const [i, x, y] of outlined) {
        if (picked.has(i)) {
          g.strokeStyle = accent;
          g.lineWidth = 3;
          g.strokeRect(x - r - 2, y - r - 2, 2 * r + 4, 2 * r + 4);
        }
        if (i === focus && document.activeElement === canvas) {
          g.strokeStyle = "#000";
          g.lineWidth = 2;
          g.strokeRect(x - r - 4, y - r - 4, 2 * r + 8, 2 * r + 8);
        }
      }
      g.textAlign = "center";
      g.textBaseline = "middle";
      g.lineJoin = "round";
      // Where names would overlap or be cut by the map's edge (a stadium on
      // a phone), the larger sections keep theirs; the rest are named by
      // the section buttons and come back as the map zooms in.
      const placed = [];
      for (const l of labels.sort((a, b) => b.size - a.size)) {
        const lineHeight = 16, half = (l.lines.length * lineHeight) / 2;
        let width = 0;
        for (const [text, font] of l.lines) {
          g.font = font;
          width = Math.max(width, g.measureText(text).width);
        }
        const box = { x0: l.x - width / 2 - 3, x1: l.x + width / 2 + 3, y0: l.y - half, y1: l.y + half };
        if (box.x0 < 0 || box.y0 < 0 || box.x1 > w || box.y1 > hgt) continue;
        if (placed.some((o) => box.x0 < o.x1 && o.x0 < box.x1 && box.y0 < o.y1 && o.y0 < box.y1)) continue;
        placed.push(box);
        l.lines.forEach(([text, font], k) => {
          const y = l.y - half + lineHeight * (k + 0.5);
          g.font = font;
          g.lineWidth = 4;
          g.strokeStyle = "rgba(255,255,255,0.9)"; // a halo keeps the name readable over seats
          g.strokeText(text, l.x, y);
          g.fillStyle = ink;
          g.fillText(text, l.x, y);
        });
      }
      if (fitted && avail.state.version >= 0 && timing.firstDrawMs === null) timing.firstDrawMs = performance.now() - started;
      if (deltaAt !== null) {
        timing.deltaMs.push(performance.now() - deltaAt);
        deltaAt = null;
      }
    });
  }
  const describe = (i) => {
    const s = seats[i];
    if (avail.taken(s.number) && !picked.has(i)) return t("seatTaken", { label: s.full });
    return t(picked.has(i) ? "seatPicked" : "seatFree", { label: s.full, price: money(price(s), layout.currency) });
  };
  function updateTotal() {
    let cents = 0;
    for (const i of picked) cents += price(seats[i]);
    total.textContent = t("selection", { n: picked.size, total: money(cents, layout.currency) });
    reserveBtn.disabled = picked.size === 0;
  }
  function toggle(i) {
    if (picked.has(i)) picked.delete(i);
    else if (avail.taken(seats[i].number)) return announce(describe(i));
    else if (picked.size >= p.perBuyerLimit) return announce(t("limit", { n: p.perBuyerLimit }));
    else picked.add(i);
    updateTotal();
    draw();
    syncList();
    announce(describe(i));
  }
  const seatAt = (px, py) => {
    let best = -1, bestD = Infinity;
    const lim = Math.max(8, view.scale * 0.6);
    for (let i = 0; i < seats.length; i++) {
      const dx = seats[i].x * view.scale + view.ox - px, dy = seats[i].y * view.scale + view.oy - py;
      const d = dx * dx + dy * dy;
      if (d < bestD) { bestD = d; best = i; }
    }
    return bestD <= lim * lim ? best : -1;
  };
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, ox: view.ox, oy: view.oy, moved: false }; canvas.setPointerCapture(e.pointerId); });
  // The tooltip: the seat under the pointer (or the keyboard's focus),
  // its price and fee, or that it is taken.
  const tip = h("div", { class: "tip", role: "tooltip", id: `tip-${p.id}`, hidden: true });
  const showTip = (i) => {
    if (i < 0 || view.scale * 0.4 < 2.5) return (tip.hidden = true);
    const s = seats[i];
    tip.textContent = avail.taken(s.number) && !picked.has(i) ? t("seatTaken", { label: s.full })
      : `${s.full} · ${money(price(s), layout.currency)}${p.feeCents ? " " + t("plusFee", { fee: money(p.feeCents, layout.currency) }) : ""}`;
    tip.style.left = `${s.x * view.scale + view.ox}px`;
    tip.style.top = `${s.y * view.scale + view.oy - 14}px`;
    tip.hidden = false;
  };
  canvas.addEventListener("pointerleave", () => (tip.hidden = true));
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) {
      const b = canvas.getBoundingClientRect();
      return showTip(seatAt(e.clientX - b.left, e.clientY - b.top));
    }
    tip.hidden = true;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    view.ox = drag.ox + dx; view.oy = drag.oy + dy;
    if (drag.moved) draw();
  });
  canvas.addEventListener("pointerup", (e) => {
    const wasDrag = drag?.moved;
    drag = null;
    if (wasDrag) return;
    const b = canvas.getBoundingClientRect();
    const cx = e.clientX - b.left, cy = e.clientY - b.top;
    if (view.scale * 0.4 < 2.5) {
      // The whole venue: a tap on a section shows its seats.
      const x = (cx - view.ox) / view.scale, y = (cy - view.oy) / view.scale;
      const sec = sections.find((s) => inside(s.hull, x, y));
      if (sec) {
        focus = sec.first;
        fitTo(...sec.box);
        if (view.scale * 0.4 < 4) {
          // Still too small to tap (a wide section on a phone): close in
          // on where the shopper tapped, seats a finger's width apart
          // (drag to see the rest).
          view.scale = 11;
          view.ox = canvas.clientWidth / 2 - x * view.scale;
          view.oy = canvas.clientHeight / 2 - y * view.scale;
          draw();
        }
        announce(t("sectionShown", { name: sec.name, n: freeText(sec) }));
      }
      return;
    }
    const i = seatAt(cx, cy);
    if (i >= 0) { focus = i; toggle(i); showTip(i); }
  });
  const zoom = (f, cx = canvas.clientWidth / 2, cy = canvas.clientHeight / 2) => {
    view.ox = cx - (cx - view.ox) * f; view.oy = cy - (cy - view.oy) * f; view.scale *= f; draw();
  };
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const b = canvas.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX - b.left, e.clientY - b.top);
  }, { passive: false });
  canvas.addEventListener("focus", () => { draw(); announce(describe(focus)); });
  canvas.addEventListener("blur", draw);
  canvas.addEventListener("keydown", (e) => {
    const s = seats[focus], row = rows[s.row];
    let next = focus;
    if (e.key === "ArrowRight") next = Math.min(focus + 1, row.end - 1);
    else if (e.key === "ArrowLeft") next = Math.max(focus - 1, row.start);
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const other = rows[s.row + (e.key === "ArrowDown" ? 1 : -1)];
      if (other) {
        let bestD = Infinity;
        for (let i = other.start; i < other.end; i++) {
          const d = Math.abs(seats[i].x - s.x);
          if (d < bestD) { bestD = d; next = i; }
        }
      }
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      return toggle(focus);
    } else if (e.key === "+" || e.key === "=") return zoom(1.25);
    else if (e.key === "-") return zoom(0.8);
    else return;
    e.preventDefault();
    focus = next;
    const x = seats[focus].x * view.scale + view.ox, y = seats[focus].y * view.scale + view.oy;
    if (x < 0 || y < 0 || x > canvas.clientWidth || y > canvas.clientHeight) {
      view.ox += canvas.clientWidth / 2 - x; view.oy += canvas.clientHeight / 2 - y;
    }
    draw();
    showTip(focus);
    announce(describe(focus));
  });
  canvas.addEventListener("blur", () => (tip.hidden = true));

  // Best available in a level: adjacent free seats of one row, chosen here
  // from the live map (the claim decides; a race ends in SEAT_TAKEN).
  const qty = h("select", { "aria-label": t("quantity") }, Array.from({ length: p.perBuyerLimit }, (_, i) => h("option", { value: i + 1 }, i + 1)));
  const lvl = h("select", { "aria-label": t("level") }, h("option", { value: "" }, t("anyLevel")),
    [...levels.values()].map((l) => h("option", { value: l.name }, `${l.name} · ${money(l.priceCents, layout.currency)}`)));
  const findBest = () => {
    const n = Number(qty.value), want = lvl.value;
    for (const row of rows) {
      let run = [];
      for (let i = row.start; i < row.end; i++) {
        const ok = !avail.taken(seats[i].number) && (!want || seats[i].priceLevel === want);
        run = ok ? [...run, i] : [];
        if (run.length === n) {
          picked.clear();
          run.forEach((j) => picked.add(j));
          focus = run[0];
          updateTotal();
          fitTo(seats[run[0]].x - 10, seats[run[0]].y - 6, seats[run[n - 1]].x + 10, seats[run[0]].y + 6);
          return announce(run.map((j) => seats[j].full).join(", "));
        }
      }
    }
    toast(t("noneFree"), { error: true });
  };

  const legend = h("ul", { class: "legend", "aria-label": t("legend") },
    [...levels.values()].map((l) => h("li", {}, h("span", { class: "swatch", style: `background:${l.fill}` }), `${l.name} ${money(l.priceCents, layout.currency)}`)),
    // Priced seats are drawn in their level's colour: a "free" swatch in
    // another colour would name seats the map does not have.
    levels.size ? null : h("li", {}, h("span", { class: "swatch free" }), `${t("legendFree")} ${money(layout.priceCents, layout.currency)}`),
    h("li", {}, h("span", { class: "swatch taken" }, "×"), t("legendTaken")),
    h("li", {}, h("span", { class: "swatch mine" }), t("legendMine")));
  // "Whole venue" first: the line scrolls sideways, and it must not be
  // the button out of sight.
  const overview = h("nav", { class: "sections", "aria-label": t("sections") },
    h("button", { onclick: () => fitTo(minX, minY, maxX, maxY) }, t("fit")),
    sections.map((s) => h("button", {
      onclick: () => {
        let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
        for (let i = s.first; i < s.last; i++) { x0 = Math.min(x0, seats[i].x); y0 = Math.min(y0, seats[i].y); x1 = Math.max(x1, seats[i].x); y1 = Math.max(y1, seats[i].y); }
        focus = s.first;
        fitTo(x0, y0, x1, y1);
      },
    }, s.name)));
  // The seat list: the same seats as buttons, section by section and row
  // by row — what a screen reader or a keyboard reads better than a map.
  // Picking there is picking on the map.
  const listButtons = new Map();
  const syncButton = (i) => {
    const b = listButtons.get(i);
    if (!b) return;
    b.disabled = !!avail.taken(seats[i].number) && !picked.has(i);
    b.setAttribute("aria-pressed", String(picked.has(i)));
    b.setAttribute("aria-label", describe(i));
  };
  function syncList() {
    for (const i of listButtons.keys()) syncButton(i);
  }
  const seatList = h("div", { class: "seat-list", id: `seat-list-${p.id}`, hidden: true },
    sections.map((sec) => {
      const body = h("div", { class: "list-rows" });
      sec.from = money(Math.min(...seats.slice(sec.first, sec.last).map(price)), layout.currency);
      const details = h("details", {
        ontoggle: () => {
          if (!details.open || body.childElementCount) return;
          body.replaceChildren(...rows.filter((r) => r.start >= sec.first && r.end <= sec.last).map((row) =>
            h("div", { class: "list-row", role: "group", "aria-label": t("rowName", { row: row.name }) },
              h("span", { class: "row-name", "aria-hidden": "true" }, row.name),
              Array.from({ length: row.end - row.start }, (_, k) => {
                const i = row.start + k;
                const b = h("button", { type: "button", class: "seat-btn", onclick: () => toggle(i) }, seats[i].label);
                listButtons.set(i, b);
                syncButton(i);
                return b;
              }))));
        },
      }, h("summary", {}, t("sectionSummary", { name: sec.name, n: freeText(sec), price: sec.from })), body);
      return details;
    }));
  const mapParts = [];
  const listToggle = h("button", {
    type: "button", "aria-expanded": "false", "aria-controls": seatList.id,
    onclick: () => {
      const open = seatList.hidden;
      seatList.hidden = !open;
      for (const el of mapParts) el.hidden = open;
      listToggle.setAttribute("aria-expanded", String(open));
      listToggle.textContent = t(open ? "showMap" : "showList");
      if (open) {
        // The counts as the map last drew them, then the first section.
        seatList.querySelectorAll("summary").forEach((sum, k) => {
          const sec = sections[k];
          sum.textContent = t("sectionSummary", { name: sec.name, n: freeText(sec), price: sec.from });
        });
        seatList.querySelector("summary")?.focus();
      } else canvas.focus();
    },
  }, t("showList"));
  const zoomBox = h("span", { class: "zoom" },
    h("button", { onclick: () => zoom(1.25), "aria-label": t("zoomIn") }, "+"), " ",
    h("button", { onclick: () => zoom(0.8), "aria-label": t("zoomOut") }, "−"));
  const tools = h("div", { class: "tools" },
    h("span", { class: "best" }, h("label", {}, t("quantity"), " ", qty), h("label", {}, t("level"), " ", lvl),
      h("button", { onclick: findBest }, t("findBest"))));
  // The zoom buttons sit on the map's corner, where a map app has them,
  // and take no line of their own above it.
  const mapWrap = h("div", { class: "map-wrap" }, canvas, tip, zoomBox);
  mapParts.push(overview, mapWrap, zoomBox);
  // How to pick is folded away (the map's own label says it to a screen
  // reader): on a phone the map starts in the first screenful.
  const help = h("div", { class: "map-head" }, h("details", { class: "help" }, h("summary", {}, t("howToPick")), h("p", { class: "muted" }, t("mapHelp"))), listToggle);
  show(...head, notice, lost, help, overview, tools, mapWrap, seatList, legend,
    h("div", { class: "bar" }, total, h("button", { onclick: () => { picked.clear(); updateTotal(); draw(); } }, t("clear")), reserveBtn));
  updateTotal();
  const onResize = () => draw();
  window.addEventListener("resize", onResize);
  cleanup.push(() => window.removeEventListener("resize", onResize));
  requestAnimationFrame(() => fitTo(minX, minY, maxX, maxY));
  // For the browser tests: where a seat is on the page, to click it.
  window.__seatMap = {
    seats, picked,
    pos: (i) => {
      const b = canvas.getBoundingClientRect();
      return { x: b.left + seats[i].x * view.scale + view.ox, y: b.top + seats[i].y * view.scale + view.oy };
    },
    taken: (i) => !!avail.taken(seats[i].number),
    version: () => avail.state.version,
    // The whole venue drawn as sections (seats too small to pick), and
    // where section k's name is.
    overview: () => view.scale * 0.4 < 2.5,
    sectionPos: (k) => {
      const b = canvas.getBoundingClientRect(), a = sections[k].anchor;
      return { x: b.left + a.x * view.scale + view.ox, y: b.top + a.y * view.scale + view.oy };
    },
    // Drawn in its place with the availability known: seats can be clicked.
    ready: () => timing.firstDrawMs !== null,
    timing,
  };
}

async function numberedPage(p, head, notice) {
  const avail = watchAvailability(p.id, p.capacity, () => sync());
  const picked = new Set(restorePick(p.id));
  const total = h("p", { class: "total", "aria-live": "polite" });
  const reserveBtn = h("button", { class: "primary", disabled: true, onclick: (e) => reserve(p, { numbers: [...picked] }, e.currentTarget) }, t("reserve"));
  const update = () => {
    total.textContent = t("selection", { n: picked.size, total: money(picked.size * p.priceCents, p.currency) });
    reserveBtn.disabled = picked.size === 0;
    pickedList.replaceChildren(...[...picked].map((n) => h("li", {}, `#${n}`, h("button", { "aria-label": t("removeNumber", { n }), onclick: () => drop(n) }, "×"))));
    sync();
  };
  const drop = (n) => {
    picked.delete(n);
    update();
  };
  const pickedList = h("ul", { class: "picked" });
  const add = (n) => {
    if (picked.size >= p.perBuyerLimit) return announce(t("limit", { n: p.perBuyerLimit }));
    picked.add(n);
    update();
    announce(`#${n}`);
  };
  const input = h("input", { type: "number", min: 1, max: p.capacity, id: "number", inputmode: "numeric" });
  const result = h("p", { "aria-live": "polite", id: "number-result" });
  // The number searched for, and what was last said of it: the answer
  // follows the picks and the availability (picked, then taken by someone
  // else), and keeps the keyboard's place when its button changes.
  let searched = null, said = "";
  const showResult = () => {
    if (searched === null) return;
    const n = searched, state = picked.has(n) ? "picked" : avail.taken(n) ? "taken" : "free";
    if (state === said) return;
    said = state;
    const focused = result.contains(document.activeElement);
    result.replaceChildren(...{
      picked: [t("numberPicked", { n }), " ", h("button", { onclick: () => drop(n) }, t("remove"))],
      taken: [t("numberTaken", { n })],
      free: [t("numberFree", { n }), " ", h("button", { onclick: () => add(n) }, t("pick"))],
    }[state]);
    if (focused) (result.querySelector("button") ?? input).focus();
  };
  const search = async (e) => {
    e.preventDefault();
    const n = Number(input.value);
    searched = null;
    said = "";
    if (!Number.isInteger(n) || n < 1 || n > p.capacity) return result.replaceChildren(t("numberOut", { n: input.value }));
    await avail.want([Math.floor((n - 1) / PAGE)]);
    searched = n;
    showResult();
  };
  // Browsing: blocks of 100, 10,000, 1,000,000… numbers, at most 100 of
  // them a level, down to the numbers themselves. A level fetches only the
  // bitmap pages its blocks' counts need: the pages a block covers whole
  // are counted by the availability's index.
  let top = 1;
  while (Math.ceil(p.capacity / top) > 100) top *= 100;
  const trail = [{ from: 1, to: p.capacity, size: top }];
  const crumbs = h("nav", { class: "crumbs", "aria-label": t("browse") });
  const ranges = h("ul", { class: "ranges" });
  const shown = new Map(); // what the level shows: number or block start → [button, to]
  const level = () => trail[trail.length - 1];
  const wantFor = (lv) => {
    const pages = new Set(), pageOf = (n) => Math.floor((n - 1) / PAGE);
    for (let a = lv.from; a <= lv.to; a += lv.size) {
      const b = Math.min(lv.to, a + lv.size - 1);
      if (lv.size === 1 || (a - 1) % PAGE || pageOf(a) === pageOf(b)) pages.add(pageOf(a));
      if (b % PAGE && b !== p.capacity) pages.add(pageOf(b));
    }
    return avail.want([...pages]);
  };
  // sync brings what is shown up to date, without rebuilding it (a shopper
  // moving by keyboard keeps their place).
  function sync() {
    showResult();
    const numbers = level().size === 1;
    for (const [from, [b, to]] of shown) {
      if (!numbers) {
        // Two lines, the block above its count (the space between them
        // keeps the two apart in what a screen reader says).
        const free = avail.freeIn(from, to);
        b.replaceChildren(h("strong", {}, span(from, to)), " ", h("span", {}, t("rangeFree", { free: free == null ? "…" : grouped(free) })));
        continue;
      }
      const mine = picked.has(from), gone = !mine && !!avail.taken(from);
      b.disabled = gone;
      b.setAttribute("aria-pressed", String(mine));
      b.setAttribute("aria-label", t(gone ? "numberIsTaken" : mine ? "numberIsPicked" : "numberIsFree", { n: from }));
    }
  }
  function renderRanges() {
    const lv = level(), numbers = lv.size === 1;
    const label = (c, k) => (k ? span(c.from, c.to) : t("allNumbers"));
    crumbs.replaceChildren(...trail.map((c, k) => k === trail.length - 1
      ? h("span", { "aria-current": "location" }, label(c, k))
      : h("button", { type: "button", class: "link", onclick: () => { trail.length = k + 1; renderRanges(); ranges.querySelector("button")?.focus(); } },
        label(c, k))));
    crumbs.hidden = trail.length === 1;
    ranges.className = numbers ? "numbers" : "ranges";
    shown.clear();
    for (let from = lv.from; from <= lv.to; from += lv.size) {
      const to = Math.min(lv.to, from + lv.size - 1);
      const b = numbers
        ? h("button", { type: "button", onclick: () => (picked.has(from) ? drop(from) : add(from)) }, String(from))
        : h("button", { type: "button", onclick: () => {
          trail.push({ from, to, size: Math.max(1, lv.size / 100) });
          wantFor(level());
          renderRanges();
          ranges.querySelector("button:not([disabled])")?.focus();
        } });
      shown.set(from, [b, to]);
    }
    ranges.replaceChildren(...[...shown.values()].map(([b]) => h("li", {}, b)));
    sync();
  }
  wantFor(level());
  const count = h("select", { "aria-label": t("quantity") }, Array.from({ length: p.perBuyerLimit }, (_, i) => h("option", { value: i + 1 }, i + 1)));
  // The button says how many it reserves, following the select.
  const randomBtn = h("button", { class: "random", onclick: (e) => reserve(p, { quantity: Number(count.value), mode: "random" }, e.currentTarget) },
    t("getRandom", { n: 1 }));
  count.addEventListener("change", () => (randomBtn.textContent = t("getRandom", { n: count.value })));
  show(...head, notice,
    h("form", { onsubmit: search, class: "search" }, h("label", { for: "number" }, t("searchNumber")), input, h("button", {}, t("search"))),
    result, h("h2", {}, t("random")),
    h("p", {}, count, " ", randomBtn),
    h("h2", {}, t("browse")), crumbs, ranges, h("div", { class: "bar" }, total, pickedList, reserveBtn));
  update();
  renderRanges();
}

// presaleQueuePanel asks a code holder for their code before and during a
// presale behind the waiting room: the code gates the presale's queue,
// whose places are drawn when its window opens.
function presaleQueuePanel(p) {
  const code = h("input", { id: "presale-code", required: true, autocomplete: "off", maxlength: 40 });
  return h("form", { class: "presale waitlist", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(key(`presale.${p.id}`), code.value.trim());
    sessionStorage.removeItem(key(`queue.${p.id}`)); // a shopper in the general queue moves to the presale's
    location.hash = `#/q/${p.id}`;
  } }, h("h2", {}, t("presaleTitle")),
  h("p", {}, t("presaleRoomExplain", { opens: moment(p, p.presale.opensAt), closes: moment(p, p.presale.closesAt) })),
  h("label", { for: "presale-code" }, t("presaleCode")), code,
  h("p", {}, h("button", { class: "primary", type: "submit", id: "presale-enter" }, t("presaleRoomEnter"))));
}

// ---------- waiting room ----------

async function solve(challenge, bits) {
  const enc = new TextEncoder();
  for (let i = 0; ; i++) {
    const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(`${challenge}:${i}`)));
    let zeros = 0;
    for (const b of sum) {
      if (b === 0) { zeros += 8; continue; }
      zeros += Math.clz32(b) - 24;
      break;
    }
    if (zeros >= bits) return String(i);
  }
}

async function queuePage(id) {
  if (!token()) return needLogin();
  const p = await product(id);
  const status = h("div", { class: "queue", "aria-live": "polite" }, t("queueSolving"));
  show(h("h1", {}, t("queueTitle"), " · ", p?.name ?? ""), status,
    h("p", {}, h("a", { href: `${cfg.apiBase}/v1/products/${id}/queue/fairness`, target: "_blank", rel: "noopener" }, t("fairness"))));
  let qt = sessionStorage.getItem(key(`queue.${id}`));
  if (!qt) {
    const headers = {};
    const ch = await api("GET", `/v1/products/${id}/queue/challenge`, { auth: true });
    if (ch.bits > 0) {
      headers["X-Queue-Challenge"] = ch.challenge;
      headers["X-Queue-Solution"] = await solve(ch.challenge, ch.bits);
    }
    const code = sessionStorage.getItem(key(`presale.${id}`));
    let j;
    try {
      j = await api("POST", `/v1/products/${id}/queue`, { auth: true, headers, body: code ? { presaleCode: code } : undefined });
    } catch (err) {
      if (!code || !err.code?.startsWith("CODE_")) throw err;
      // A presale code refused: say why, and ask for it again.
      sessionStorage.removeItem(key(`presale.${id}`));
      announce(err.message);
      status.replaceChildren(h("p", { class: "error", role: "alert" }, err.message), backLink(`#/p/${id}`));
      return;
    }
    qt = j.queueToken;
    sessionStorage.setItem(key(`queue.${id}`), qt);
  }
  let delay = 1000;
  const tick = async () => {
    let st;
    try {
      st = await api("GET", `/v1/queue/${qt}`);
    } catch (err) {
      // A poll that failed (a network blip, a busy server) is tried
      // again, more slowly; only a token refused ends the waiting.
      status.textContent = err.message;
      if (err.status === 401) return;
      delay = Math.min(delay * 2, 10000);
      const again = setTimeout(tick, delay);
      cleanup.push(() => clearTimeout(again));
      return;
    }
    // As often as the room says: every second near the front, rarely far back.
    delay = Math.max(1000, (st.pollAfterSeconds || 1) * 1000);
    if (st.status === "ADMITTED" && st.accessToken) {
      sessionStorage.setItem(key(`access.${id}`), st.accessToken);
      announce(t("queueAdmitted"));
      location.hash = `#/p/${id}`;
      return;
    }
    const parts = [];
    if (st.status === "SOLD_OUT") parts.push(h("p", {}, t("queueSoldOut"), " ", h("a", { href: `#/p/${id}` }, t("waitlistJoin"))));
    else if (["EXPIRED", "LEFT", "RECLAIMED", "REMOVED"].includes(st.status)) parts.push(h("p", {}, t("queueEnded")));
    else if (!st.position) {
      const time = st.opensAt ? formatIn(p?.event?.timeZone || "UTC")(st.opensAt, { dateStyle: "medium", timeStyle: "short" }) : "";
      parts.push(h("p", {}, t(st.presale ? "queuePresaleBeforeDraw" : "queueBeforeDraw", { time })));
    }
    else {
      parts.push(h("p", {}, t("queuePosition", { position: st.position, serving: st.nowServing })));
      if (st.etaSeconds) parts.push(h("p", {}, t("queueEta", { time: duration(st.etaSeconds * 1000) })));
      parts.push(h("progress", { max: st.position, value: Math.min(st.nowServing, st.position), "aria-label": t("queueTitle") }));
    }
    status.replaceChildren(...parts);
    const id2 = setTimeout(tick, delay);
    cleanup.push(() => clearTimeout(id2));
  };
  tick();
}

// ---------- reserving ----------

async function reservationPage(id, params) {
  const productId = params.get("p");
  const box = h("div", { "aria-live": "polite" }, h("h1", {}, t("reserving")), h("p", {}, t("queued")));
  show(box);
  let delay = 400, stopped = false;
  cleanup.push(() => (stopped = true));
  // The reservation's answer usually brought the decision (decided);
  // otherwise each read waits at the server for it (Prefer: wait), so one
  // read usually brings it; one that comes back at once still QUEUED
  // (a server that could not wait) is followed by reads backing off.
  const poll = async () => {
    if (stopped) return;
    let r = decided.get(id);
    decided.delete(id);
    const asked = Date.now();
    try {
      r ??= await api("GET", `/v1/reservations/${id}`, { auth: true, fresh: true, headers: { "Prefer": "wait=15" } });
    } catch (err) {
      return errorView(err);
    }
    if (r.status === "QUEUED") {
      if (Date.now() - asked > 1000) return poll();
      delay = Math.min(delay * 1.5, 3000);
      return setTimeout(poll, delay);
    }
    if (r.status === "REJECTED") {
      if (r.reason === "SEAT_TAKEN") {
        sessionStorage.setItem(key("flash"), "SEAT_TAKEN");
        location.hash = `#/p/${productId}`;
        return;
      }
      return box.replaceChildren(h("p", { class: "error", role: "alert" }, t(r.reason)), backLink(`#/p/${productId}`));
    }
    if (r.status === "EXPIRED" || r.status === "RELEASED") {
      return box.replaceChildren(h("p", { role: "alert" }, t(r.status === "EXPIRED" ? "expired" : "released")), backLink(`#/p/${productId}`));
    }
    if (r.status === "CONVERTED") {
      location.hash = "#/orders";
      return;
    }
    // HELD: the seats, what they come to, and the time left to pay.
    const p = await product(productId).catch(() => null);
    basket.set({ r: id, p: productId, holdId: r.holdId, expiresAt: r.expiresAt, name: p?.name ?? "" });
    const clock = h("strong", { class: "countdown" });
    const checkout = `#/checkout/${r.holdId}?p=${productId}&r=${id}`;
    box.replaceChildren(h("h1", {}, t(`holdTitle${heldKind(p)}`), " ", clock),
      r.quote ? summary(p, r.quote) : h("ul", { class: "seats" }, (r.seats ?? r.numbers.map((n) => `#${n}`)).map((x) => h("li", {}, x))),
      h("div", { class: "bar" },
        h("button", { class: "primary", onclick: () => (location.hash = checkout) }, t("toCheckout")),
        h("button", {
          onclick: (e) => once(`release.${r.holdId}`, e.currentTarget, async () => {
            await api("DELETE", `/v1/holds/${r.holdId}`, { auth: true });
            basket.clear();
            box.replaceChildren(h("p", { role: "alert" }, t("released")), backLink(`#/p/${productId}`));
          }),
        }, t("release"))));
    holdClock(r.expiresAt, clock, () => holdEnded(box, id, productId));
  };
  poll();
}

// holdEnded tells the shopper their time ran out, once the server agrees
// the hold has expired (a clock ahead of the server's says so early).
function holdEnded(box, requestId, productId) {
  box.replaceChildren(h("p", { role: "alert" }, t("timeUp")));
  let stopped = false;
  cleanup.push(() => (stopped = true));
  const check = async () => {
    if (stopped) return;
    const again = await api("GET", `/v1/reservations/${requestId}`, { auth: true }).catch(() => null);
    if (again?.status === "EXPIRED") {
      basket.clear();
      box.replaceChildren(h("h1", {}, t("expiredTitle")), h("p", { role: "alert", class: "expired" }, t("expired")),
        h("a", { href: `#/p/${productId}`, class: "button primary" }, t("pickAgain")));
    } else setTimeout(check, 1000);
  };
  check();
}

// ---------- checkout and orders ----------

// Stripe.js, loaded from Stripe's host only when the store takes cards:
// the card is entered in Stripe's own frame and becomes a payment method id
// before anything reaches the API.
let stripe = null;
async function loadStripe() {
  if (stripe) return stripe;
  await new Promise((resolve, reject) => {
    const s = h("script", { src: "https://js.stripe.com/v3/", onload: resolve, onerror: reject });
    document.head.append(s);
  });
  stripe = window.Stripe(cfg.stripeKey);
  return stripe;
}

// testMethods are the payment simulator's methods, offered where no real
// provider is set up (development and demos), named as a shopper reads them.
const testMethods = [["sim_ok", "testApproved"], ["sim_decline", "testDeclined"], ["sim_timeout_after_auth", "testTimeout"]];

async function checkoutPage(holdId, params) {
  const productId = params.get("p"), requestId = params.get("r");
  const [r, p] = await Promise.all([requestId ? api("GET", `/v1/reservations/${requestId}`, { auth: true }) : null,
    productId ? product(productId).catch(() => null) : null]);
  if (r && r.status !== "HELD") {
    // Back or reload after the hold ended: say what became of it.
    if (r.status === "CONVERTED") {
      basket.clear();
      location.hash = "#/orders";
      return;
    }
    basket.clear();
    return show(h("h1", {}, t("expiredTitle")), h("p", { role: "alert" }, t(r.status === "RELEASED" ? "released" : "expired")),
      h("a", { href: `#/p/${productId}`, class: "button primary" }, t("pickAgain")));
  }
  const email = h("input", { type: "email", id: "email", required: true, autocomplete: "email",
    value: localStorage.getItem(key("email")) ?? "" });
  let card = null;
  const method = cfg.stripeKey ? h("div", { id: "method", class: "card-element" }) : h("select", { id: "method" },
    testMethods.map(([m, label]) => h("option", { value: m }, t(label))));
  if (cfg.stripeKey) {
    loadStripe().then((s) => {
      card = s.elements().create("card");
      card.mount(method);
    }).catch((err) => method.replaceChildren(t("error", { detail: err.message || "Stripe" })));
  }
  const paymentMethod = async () => {
    if (!cfg.stripeKey) return method.value;
    const res = await stripe.createPaymentMethod({ type: "card", card, billing_details: { email: email.value } });
    if (res.error) throw new Error(res.error.message);
    return res.paymentMethod.id;
  };
  const payLabel = (quote) => quote ? t("payNow", { total: money(quote.totalCents, quote.currency) }) : t("pay");
  // A discount code is tried before paying (the price it gives is shown)
  // and sent with the order, which takes one of its uses.
  let discountCode = "";
  const codeInput = h("input", { id: "discount-code", autocomplete: "off", maxlength: 40, autocapitalize: "characters" });
  const codeNote = h("p", { id: "discount-note", class: "muted", role: "status" });
  const applyCode = (e) => once(`code.${holdId}`, e.currentTarget, async () => {
    const code = codeInput.value.trim();
    try {
      const priced = code ? await api("POST", `/v1/holds/${holdId}/price`, { auth: true, body: { discountCode: code } }) : null;
      discountCode = priced?.discountCode ?? "";
      const quote = r?.quote && { ...r.quote, discountCents: priced?.discountCents ?? 0, discountCode,
        totalCents: priced?.totalCents ?? r.quote.totalCents };
      if (quote) grid.replaceChildren(summary(p, quote), form);
      form.querySelector("button.primary").textContent = payLabel(quote);
      codeNote.textContent = discountCode ? t("codeApplied", { code: discountCode }) : "";
      codeNote.className = "muted";
    } catch (err) {
      discountCode = "";
      codeNote.textContent = err.message;
      codeNote.className = "error";
    }
  });
  const codeBox = h("div", { class: "discount-box" }, h("label", { for: "discount-code" }, t("discountCode")),
    h("div", { class: "row" }, codeInput, h("button", { type: "button", id: "apply-code", onclick: applyCode }, t("applyCode"))), codeNote);
  const form = h("form", {
    class: "checkout",
    onsubmit: (e) => {
      e.preventDefault();
      return once(`pay.${holdId}`, form.querySelector("button.primary"), async () => {
        // The key is the hold's pay action's: a card's payment method is
        // new on each try, so it is not part of what makes the action.
        const idem = actionKey(`pay.${holdId}`, holdId);
        const headers = { "Idempotency-Key": idem.id };
        const access = accessToken(productId);
        if (access) headers["X-Access-Token"] = access;
        try {
          const body = { holdId, paymentMethod: await paymentMethod(), email: email.value };
          if (discountCode) body.discountCode = discountCode;
          const o = await api("POST", "/v1/orders", { auth: true, headers, body });
          idem.done();
          localStorage.setItem(key("email"), email.value);
          location.hash = `#/o/${o.id}?p=${productId}&r=${requestId ?? ""}`;
        } catch (err) {
          if (err.status && err.status < 500) idem.done();
          announce(err.message);
          form.append(h("p", { class: "error", role: "alert" }, err.message));
        }
      });
    },
  }, h("label", { for: "email" }, t("emailTickets")), email, h("label", { for: "method" }, t(cfg.stripeKey ? "payWith" : "payWithTest")), method,
  cfg.stripeKey ? null : h("p", { class: "muted" }, t("testMode")), codeBox,
  h("button", { class: "primary" }, payLabel(r?.quote)));
  const clock = h("strong", { class: "countdown" });
  const grid = h("div", { class: "checkout-grid" }, r?.quote ? summary(p, r.quote) : null, form);
  const page = h("div", { class: "checkout-page" },
    h("h1", {}, t("checkout")),
    r ? h("p", { class: "hold-left", role: "timer" }, t("holdLeft"), " ", clock) : null,
    grid);
  show(page);
  if (r) holdClock(r.expiresAt, clock, () => holdEnded(page, requestId, productId));
}

// saveFile downloads one of the shopper's files (it needs their token, so
// a plain link will not do) under name.
async function saveFile(path, name) {
  const res = await fetch(cfg.apiBase + path, { headers: { Authorization: `Bearer ${token()}` } });
  if (!res.ok) {
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    return toast(new APIError(res.status, body).message, { error: true });
  }
  const url = URL.createObjectURL(await res.blob());
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function qrImage(ticketId, label) {
  const res = await fetch(`${cfg.apiBase}/v1/tickets/${ticketId}/qr.svg`, { headers: { Authorization: `Bearer ${token()}` } });
  const url = URL.createObjectURL(await res.blob());
  cleanup.push(() => URL.revokeObjectURL(url));
  return h("img", { src: url, alt: `${t("ticket")} ${label}`, width: 160, height: 160, class: "qr" });
}

// orderPage is one order: right after checkout it waits for the payment's
// outcome; later (from My orders or the tickets' e-mail) it is the order as
// it stands — its date, state, what it cost and what came back, its tickets,
// and the way to cancel it while the organiser allows.
async function orderPage(id, params) {
  if (!token()) return needLogin(); // the e-mail's link, opened where the shopper is not signed in
  const fromCheckout = params.has("p");
  const box = h("div", { class: "order-page", "aria-live": "polite" }, h("h1", {}, t("order")),
    h("p", {}, t(fromCheckout ? "confirming" : "loading")));
  show(box);
  let stopped = false;
  cleanup.push(() => (stopped = true));
  // Each read waits at the server for the payment's outcome (Prefer:
  // wait); one that comes back at once still pending (a server that could
  // not wait) is followed by another in a moment. A refund has no such
  // wait: its read is repeated every two seconds until it is done. A read
  // that fails says so as any page does (a session that ended: log in).
  const next = (ms = 0) => setTimeout(() => read().catch((err) => {
    if (stopped) return;
    if (err.status === 401) needLogin();
    else errorView(err);
  }), ms);
  const read = async () => {
    if (stopped) return;
    const asked = Date.now();
    const o = await api("GET", `/v1/orders/${id}`, { auth: true, headers: { "Prefer": "wait=15" } });
    if (stopped) return;
    if (o.status === "PENDING_PAYMENT") return next(Date.now() - asked > 1000 ? 0 : 700);
    if (o.status === "FAILED" && fromCheckout) {
      return box.replaceChildren(h("h1", {}, t("order")), h("p", { class: "error", role: "alert" }, t("declined")),
        h("button", { class: "primary", onclick: () => (location.hash = `#/checkout/${o.holdId}?p=${params.get("p") ?? o.productId}&r=${params.get("r") ?? ""}`) }, t("payAgain")));
    }
    if (o.status === "CONFIRMED" && basket.get()?.holdId === o.holdId) basket.clear();
    const p = (await products()).find((x) => x.id === o.productId);
    box.replaceChildren(...(await orderView(o, p, fromCheckout, () => next())).filter(Boolean));
    if (o.status === "REFUND_PENDING") next(2000);
    if (fromCheckout && o.status === "CONFIRMED") announce(t("confirmedDone"));
  };
  next();
}

// orderView is an order's page: its date (p, when the catalog still has
// it), its state in words, what it cost, its tickets and what may be done.
async function orderView(o, p, fresh, reload) {
  const name = p ? p.event?.name || p.name : t("order");
  const tickets = await Promise.all((o.tickets ?? []).map((tk) => ticketItem(tk, p)));
  const paid = [t("total"), ": ", money(o.amountCents, o.currency)];
  if (o.feeCents) paid.push(` (${t("feesIncluded", { fees: money(o.feeCents, o.currency) })})`);
  if (o.discountCents) paid.push(` · ${t("discount", { code: o.discountCode })} −${money(o.discountCents, o.currency)}`);
  if (o.refundedCents) paid.push(` · ${t("refunded", { amount: money(o.refundedCents, o.currency) })}`);
  const valid = o.tickets?.some((tk) => tk.status === "VALID" && tk.code);
  const email = localStorage.getItem(key("email"));
  const state = fresh && o.status === "CONFIRMED"
    ? h("p", { class: "notice" }, t(email ? "confirmedSent" : "confirmedDone", { email }))
    : h("p", { class: "order-state" }, h("span", { class: `badge order-${o.status.toLowerCase()}` }, t(`order_${o.status}`)),
      cfg.strings[`orderNote_${o.status}`] ? [" ", t(`orderNote_${o.status}`)] : null);
  const files = valid ? h("p", { class: "tools" },
    h("button", { class: "primary", id: "tickets-pdf",
      onclick: (e) => once(`pdf.${o.id}`, e.currentTarget, () => saveFile(`/v1/orders/${o.id}/tickets.pdf`, `tickets-${o.id}.pdf`)) }, t("downloadTickets")),
    p?.startsAt ? h("button", { onclick: (e) => once(`ics.${o.id}`, e.currentTarget, () => saveFile(`/v1/orders/${o.id}/calendar.ics`, `event-${o.id}.ics`)) }, t("addToCalendar")) : null) : null;
  // Right after paying, the page celebrates: cancelling waits for a
  // later visit.
  return [h("h1", {}, name), p ? eventDetails(p.event, p) : null, state,
    h("p", { class: "muted" }, t("orderRef", { ref: o.ref })), h("p", {}, ...paid), files,
    tickets.length ? h("ul", { class: "tickets" }, tickets) : null,
    !fresh && o.status === "CONFIRMED" && valid && cancelUntil(p) ? cancelPanel(o, p, reload) : null];
}

// cancelPanel lets the shopper cancel their order while the organiser's
// policy allows: every ticket still theirs is refunded, less the fee, to
// the card it was paid with. It asks once more before it acts.
function cancelPanel(o, p, reload) {
  const fee = p.shopperCancellation.feeCents;
  const until = moment(p, cancelUntil(p));
  const msg = h("p", { "aria-live": "polite" });
  const confirm = h("form", {
    class: "cancel-order",
    hidden: true,
    onsubmit: (e) => {
      e.preventDefault();
      return once(`cancel.${o.id}`, confirm.querySelector("button.danger"), async () => {
        const asked = await keyedSend(`cancel.${o.id}`, {}, msg, (k) =>
          api("POST", `/v1/orders/${o.id}/cancel`, { auth: true, headers: { "Idempotency-Key": k } }));
        if (!asked) return;
        announce(t("cancelAsked"));
        reload();
      });
    },
  }, h("p", {}, t(fee ? "cancelTerms" : "cancelTermsFree", { fee: money(fee, o.currency) })),
  h("button", { class: "danger" }, t("cancelConfirm")),
  h("button", { type: "button", onclick: () => { confirm.hidden = true; open.hidden = false; open.focus(); } }, t("cancelKeep")), msg);
  const open = h("button", {
    type: "button",
    onclick: () => {
      confirm.hidden = false;
      open.hidden = true;
      confirm.querySelector("button.danger").focus();
    },
  }, t("cancelOrder"));
  return h("section", { class: "panel cancel", "aria-labelledby": "cancel-title" },
    h("h2", { id: "cancel-title" }, t("cancelTitle")), h("p", { class: "muted" }, t("cancelUntil", { until })), open, confirm);
}

// ticketItem shows one ticket of an order: its code and QR while it is the
// shopper's to use (with a way to give it to someone while its date p
// allows), or what became of it.
async function ticketItem(tk, p) {
  const seat = h("strong", {}, tk.seat);
  if (tk.status === "TRANSFERRED") return h("li", { class: "ticket gone" }, seat, " ", t("ticketTransferred"));
  if (tk.heldBy) return h("li", { class: "ticket gone" }, seat, " ", t("ticketGivenTo", { who: tk.heldBy }));
  if (tk.status !== "VALID" || !tk.code) return h("li", { class: "ticket gone" }, seat, " ", t("ticketVoid"));
  return h("li", { class: "ticket", "data-ticket": tk.id }, seat, await qrImage(tk.id, tk.seat), h("code", {}, tk.code),
    transfersOpen(p) ? transferForm(tk) : null);
}

// transferPolicy says, before the shopper buys, whether and until when
// its tickets may be given to someone else.
function transferPolicy(p) {
  if (!transfersOpen(p)) return null;
  const until = p.transfers.until;
  return h("p", { class: "muted policy" }, until
    ? t("transferPolicy", { until: moment(p, until) })
    : t("transferPolicyOpen"));
}

// transfersOpen says whether p's tickets may change hands now.
function transfersOpen(p) {
  const until = p?.transfers?.until;
  return !!p?.transfers && (!until || new Date(until) > Date.now());
}

// transferForm gives a ticket to another e-mail address: the code shown
// here stops working, and the other person is mailed a new one.
function transferForm(tk) {
  const email = h("input", { type: "email", id: `transfer-${tk.id}`, required: true, autocomplete: "off" });
  const msg = h("p", { "aria-live": "polite" });
  const form = h("form", {
    class: "transfer",
    hidden: true,
    onsubmit: (e) => {
      e.preventDefault();
      return once(`transfer.${tk.id}`, form.querySelector("button.primary"), async () => {
        const sent = await keyedSend(`transfer.${tk.id}`, email.value, msg, (k) =>
          api("POST", `/v1/tickets/${tk.id}/transfer`, { auth: true, headers: { "Idempotency-Key": k }, body: { email: email.value } }));
        if (!sent) return;
        sessionStorage.setItem(key("sent"), email.value);
        if (location.hash.startsWith("#/tickets")) route();
        else location.hash = "#/tickets";
      });
    },
  }, h("label", { for: email.id }, t("transferTo")), email, h("p", { class: "muted" }, t("transferHelp")),
  h("button", { class: "primary" }, t("transferSend")), msg);
  const open = h("button", {
    type: "button", class: "link", "aria-expanded": "false",
    onclick: () => {
      form.hidden = !form.hidden;
      open.setAttribute("aria-expanded", String(!form.hidden));
      if (!form.hidden) email.focus();
    },
  }, t("transfer"));
  return h("div", {}, open, form);
}

// ticketsPage is every ticket the shopper holds, bought or given to them.
async function ticketsPage() {
  if (!token()) return needLogin();
  const sent = sessionStorage.getItem(key("sent"));
  sessionStorage.removeItem(key("sent"));
  const [{ tickets }, list] = await Promise.all([api("GET", "/v1/tickets", { auth: true }), products()]);
  const of = new Map(list.map((p) => [p.id, p]));
  const notice = sent ? h("p", { class: "notice", role: "status" }, t("transferDone", { who: sent })) : null;
  if (!tickets.length) return show(h("h1", {}, t("myTickets")), notice, h("p", {}, t("noTickets")), backLink());
  const items = await Promise.all(tickets.map(async (tk) => {
    const item = await ticketItem({ ...tk, status: "VALID" }, of.get(tk.productId));
    // prepend, unlike h, would write a null as the text "null".
    item.prepend(...[h("h2", {}, tk.event?.name || tk.product), eventDetails(tk.event, tk),
      tk.received ? h("p", { class: "muted" }, t("ticketReceived")) : null].filter(Boolean));
    return item;
  }));
  show(h("h1", {}, t("myTickets")), notice, h("ul", { class: "tickets held" }, items));
  if (sent) announce(t("transferDone", { who: sent }));
}

// ordersPage lists the shopper's orders, each with the event and date it
// is for (from the catalog: a date no longer in it shows without), its
// seats, amount and state.
async function ordersPage() {
  if (!token()) return needLogin();
  const [{ orders }, list] = await Promise.all([api("GET", "/v1/orders", { auth: true }), products()]);
  if (!orders.length) return show(h("h1", {}, t("myOrders")), h("p", {}, t("noOrders")), backLink());
  const of = new Map(list.map((p) => [p.id, p]));
  show(h("h1", {}, t("myOrders")), h("ul", { class: "order-list" }, orders.map((o) => {
    const p = of.get(o.productId);
    return h("li", { "data-order": o.id },
      h("p", {}, h("a", { href: `#/o/${o.id}` }, h("strong", {}, p ? p.event?.name || p.name : t("order"))),
        p?.startsAt ? [" · ", shortWhen(p)] : null),
      h("p", { class: "muted" }, o.seats.join(", ")),
      h("p", {}, h("span", { class: `badge order-${o.status.toLowerCase()}` }, t(`order_${o.status}`)), " ",
        money(o.amountCents - o.refundedCents, o.currency), " · ",
        new Date(o.createdAt).toLocaleDateString(locale, { dateStyle: "medium" })));
  })));
}

// ---------- login ----------

// A tenant with its own login hands a buyer token over by sending the
// shopper back to #/login?token=…&state=…, where state is the nonce this
// store made when it sent the shopper there. A token arriving with any
// other state (a link someone else made, to sign the shopper in as them)
// is refused.
function startHandoff() {
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  sessionStorage.setItem(key("handoff"), nonce);
  const back = location.origin + location.pathname + "#/login";
  const url = new URL(cfg.loginUrl);
  url.searchParams.set("state", nonce);
  url.searchParams.set("return", back);
  location.assign(url.toString());
}

function acceptHandoff(params) {
  const expected = sessionStorage.getItem(key("handoff"));
  sessionStorage.removeItem(key("handoff"));
  history.replaceState(null, "", location.pathname + "#/login");
  if (!expected || params.get("state") !== expected) return false;
  localStorage.setItem(key("token"), params.get("token"));
  localStorage.removeItem(key("email")); // the tenant's login says who this is
  return true;
}

function loginPage(params) {
  // Sent here on the way to something (needLogin): said once, above the form.
  const why = sessionStorage.getItem(key("loginWhy"));
  sessionStorage.removeItem(key("loginWhy"));
  let refused = why && cfg.strings[why] ? h("p", { class: "notice" }, t(why)) : null;
  if (params.get("token")) {
    if (acceptHandoff(params)) {
      announce(t("loggedIn"));
      return afterLogin();
    }
    refused = h("p", { role: "alert", class: "notice" }, t("handoffRefused"));
  }
  const email = h("input", { type: "email", id: "login-email", autocomplete: "email" });
  const phone = h("input", { type: "tel", id: "login-phone", autocomplete: "tel" });
  const code = h("input", { id: "login-code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", maxlength: 6 });
  const msg = h("p", { "aria-live": "polite" });
  const who = () => (email.value ? { email: email.value } : { phone: phone.value });
  const step2 = h("form", {
    hidden: true,
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const r = await api("POST", `/v1/stores/${cfg.slug}/login/verify`, { body: { ...who(), code: code.value } });
        localStorage.setItem(key("token"), r.buyerToken);
        if (email.value) localStorage.setItem(key("email"), email.value); // checkout's address, filled in
        announce(t("loggedIn"));
        afterLogin();
      } catch {
        msg.textContent = t("badCode");
      }
    },
  }, h("label", { for: "login-code" }, t("code")), code, h("button", { class: "primary" }, t("verify")));
  const step1 = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        // Each code asked for costs a little work (the server may ask
        // for none): cheap for a shopper, dear for a script pumping codes.
        const headers = {};
        const ch = await api("POST", `/v1/stores/${cfg.slug}/login/challenge`, { body: who() });
        if (ch.bits > 0) {
          headers["X-Queue-Challenge"] = ch.challenge;
          headers["X-Queue-Solution"] = await solve(ch.challenge, ch.bits);
        }
        await api("POST", `/v1/stores/${cfg.slug}/login`, { body: who(), headers });
        msg.textContent = t("codeSent");
        step2.hidden = false;
        code.focus();
      } catch (err) {
        msg.textContent = err.message;
      }
    },
  }, h("label", { for: "login-email" }, t("email")), email, h("label", { for: "login-phone" }, t("phone")), phone,
  h("button", {}, t("sendCode")));
  const own = cfg.loginUrl ? h("p", {}, h("button", { class: "primary", id: "login-own", onclick: startHandoff },
    t("logInWith", { name: cfg.name }))) : null;
  show(h("h1", {}, t("loginTitle")), refused, own, h("p", {}, t("loginHelp")), step1, msg, step2);
}

// signedInAs is the buyer the stored token names (its sub), for the page
// to say who is signed in; the API checks the token, not this.
function signedInAs() {
  try {
    const part = token().split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)).sub || "";
  } catch {
    return "";
  }
}

function afterLogin() {
  const back = sessionStorage.getItem(key("after")) || "#/";
  sessionStorage.removeItem(key("after"));
  location.hash = back;
  renderAccount();
}

// The header's basket: a link back to the active hold with its time left,
// ticking on every page.
let basketTimer = 0;

function renderAccount() {
  const nav = document.getElementById("account");
  clearInterval(basketTimer);
  const held = token() ? basket.get() : null;
  let back = null;
  if (held) {
    const left = h("span", { class: "countdown" });
    back = h("a", { href: `#/r/${held.r}?p=${held.p}`, class: "basket", id: "basket" }, t("basket"), " · ", left);
    const tick = () => {
      const ms = new Date(held.expiresAt) - Date.now();
      if (ms <= 0) return back.remove();
      left.textContent = duration(ms);
    };
    tick();
    basketTimer = setInterval(tick, 1000);
  }
  if (token()) {
    // The address of an e-mail login reads better than the buyer's opaque id.
    const who = localStorage.getItem(key("email")) || signedInAs();
    nav.replaceChildren(back ?? "", h("span", { id: "signed-in-as" }, t("signedInAs", { who })), " ",
      h("a", { href: "#/tickets" }, t("myTickets")), " ", h("a", { href: "#/orders" }, t("myOrders")), " ",
      h("button", { class: "link", onclick: () => {
        for (const k of ["token", "email", "hold"]) localStorage.removeItem(key(k));
        renderAccount();
        location.hash = "#/";
      } }, t("logOut")));
  } else nav.replaceChildren(h("a", { href: "#/login" }, t("logIn")));
}

// ---------- router ----------

// leaveView stops what the current view runs (its live streams, timers).
function leaveView() {
  cleanup.forEach((f) => f());
  cleanup = [];
}

async function route() {
  const seq = ++routeSeq;
  leaveView();
  window.__seatMap = undefined; // the browser tests' handle is the current page's only
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean);
  main.dataset.view = parts[0] ?? "home";
  try {
    switch (parts[0]) {
      case undefined: return await home();
      case "e": return await eventPage(parts[1]);
      case "p": return await productPage(parts[1]);
      case "q": return await queuePage(parts[1]);
      case "r": return await reservationPage(parts[1], params);
      case "checkout": return await checkoutPage(parts[1], params);
      case "o": return await orderPage(parts[1], params);
      case "orders": return await ordersPage();
      case "tickets": return await ticketsPage();
      case "login": return loginPage(params);
      default: return await home();
    }
  } catch (err) {
    // A page the shopper has left does not draw its failure over the next.
    if (seq === routeSeq) errorView(err);
  }
}

window.addEventListener("hashchange", route);
renderAccount();
route();
