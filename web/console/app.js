// The BoxOffice console: one page, plain ES module, no toolchain. It signs
// in by exchanging a key for a session cookie (HttpOnly: this script never
// sees it) and then calls the same API as any client, sending the
// session's CSRF token with every change. The API decides what each role
// may do; the pages only leave out what would be refused.

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const whoEl = document.getElementById('who');
const alarm = document.getElementById('alarm');

let session = null; // GET /v1/console/session
let stopPage = () => {}; // closes the current page's stream and timers

// h builds an element: h('a', {href: '#/'}, 'text', child…). Text is set
// as text, never as HTML.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style') el.style.cssText = v; // CSSOM: allowed by the page's CSP
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

class APIError extends Error {
  constructor(status, p) {
    super(p.detail || p.title || `HTTP ${status}`);
    this.status = status;
    this.code = p.code || '';
  }
}

// routeSeq counts navigations. A page's reads that answer after the user has
// moved on never settle: the page they left must not replace the one they
// opened (a slow list that rendered over a form just opened lost the form).
let routeSeq = 0;
const stale = () => new Promise(() => {});

// api calls the API with the session; a 401 sends the user to sign in.
async function api(method, path, body, {raw = false, type, key} = {}) {
  const seq = routeSeq;
  const headers = {Accept: 'application/json'};
  if (key) headers['Idempotency-Key'] = key;
  if (body !== undefined) headers['Content-Type'] = type || 'application/json';
  if (method !== 'GET' && session) headers['X-CSRF-Token'] = session.csrfToken;
  const r = await fetch(path, {method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : raw ? body : JSON.stringify(body)});
  const ct = r.headers.get('Content-Type') || '';
  const data = r.status === 204 ? null : ct.includes('json') ? await r.json().catch(() => ({})) : await r.text();
  if (method === 'GET' && seq !== routeSeq) return stale();
  if (r.status === 204) return null;
  if (!r.ok) {
    const err = new APIError(r.status, typeof data === 'object' ? data : {title: data});
    if (r.status === 401 && path !== '/v1/console/session') signedOut(err.message);
    throw err;
  }
  return data;
}

function signedOut(message) {
  session = null;
  sessionStorage.setItem('signin-message', message || '');
  location.hash = '#/signin';
}

const fmt = new Intl.NumberFormat();
const n = (v) => fmt.format(Math.round(v || 0));
const secs = (v) => (v || 0) < 90 ? `${(v || 0).toFixed(1)} s` : `${Math.round(v / 60)} min`;
// latency shows a request's time to its decision, tens of milliseconds when
// all is well: in seconds it would read 0.0 s until something is wrong.
const latency = (v) => { const ms = Math.round((v || 0) * 1000); return ms < 1000 ? `${ms} ms` : secs(v); };
const money = (cents, cur) => `${((cents || 0) / 100).toFixed(2)} ${cur || ''}`.trim();
// when shows a moment in the browser's zone, which it names: the console's
// forms take times in that zone, and an operator may not be where the venue
// is. Logged moments keep their seconds; scheduled ones (a start, an
// opening, a code's validity) are set to the minute and shown so (planned).
const stamp = (t, seconds) => t ? new Date(t).toLocaleString(undefined, {year: 'numeric', month: 'short', day: 'numeric',
  hour: '2-digit', minute: '2-digit', second: seconds ? '2-digit' : undefined, timeZoneName: 'short'}) : '—';
const when = (t) => stamp(t, true);
const planned = (t) => stamp(t, false);
// stateName says a state the API names by code in an operator's words:
// sales and publications, orders and their capture, tickets, refunds,
// places in line, rehearsals and webhook deliveries. stateBadge shows it
// with the state itself as the class, which gives its colour.
const stateNames = {UPCOMING: 'Upcoming', ON_SALE: 'On sale', SOLD_OUT: 'Sold out', CLOSED: 'Closed', DRAFT: 'Draft',
  PUBLISHED: 'Published', CANCELLED: 'Cancelled',
  PENDING_PAYMENT: 'Awaiting payment', CONFIRMED: 'Confirmed', FAILED: 'Failed', EXPIRED: 'Expired', REFUNDED: 'Refunded',
  REFUND_PENDING: 'Refund pending', REFUND_FAILED: 'Refund failed', NONE: 'Not yet', PENDING: 'Pending', CAPTURED: 'Captured',
  VALID: 'Valid', VOID: 'Void', TRANSFERRED: 'Transferred',
  WAITING: 'Waiting', ADMITTED: 'Admitted', RESERVED: 'Reserved', LEFT: 'Left', RECLAIMED: 'Reclaimed', REMOVED: 'Removed',
  QUEUED: 'Queued', RUNNING: 'Running', DONE: 'Done', DELIVERED: 'Delivered',
  UNKNOWN: 'Unknown', AUTHORIZED: 'Authorized', DECLINED: 'Declined', VOIDED: 'Voided'};
const stateName = (state) => stateNames[state] || state;
// kindNames says a product's kind in words, in the products list and its form.
const kindNames = {numbered: 'Numbered', seated: 'Seated'};
const stateBadge = (state, attrs = {}) => h('span', {...attrs, class: `badge ${state}`}, stateName(state));
// timelineWhat says what an order's timeline entry records in words: a
// state, or "capture" and the capture's state.
const captures = {NONE: 'Payment not captured', PENDING: 'Payment capture pending', CAPTURED: 'Payment captured',
  FAILED: 'Payment capture failed'};
const timelineWhat = (what) => {
  const [, capture] = what.match(/^capture ([A-Z]+)$/) || [];
  return capture ? captures[capture] || what : stateName(what);
};
// startsWhen says when a date begins, or that it is to be announced.
const startsWhen = (t) => t ? planned(t) : 'to be announced';
// dated names a product with its start: an event's dates share its name.
const dated = (name, startsAt) => startsAt ? `${name} · ${planned(startsAt)}` : name;
// contrast is WCAG's contrast ratio of two #rrggbb colours.
function contrast(a, b) {
  const lum = (hex) => {
    const [r, g, bl] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
      .map((c) => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
const isAdmin = () => session?.role === 'platform-admin';
const isTenantAdmin = () => session?.role === 'tenant-admin';

function tile(k, v, cls) {
  const long = String(v).length > 14 ? ' long' : ''; // words, not a figure: smaller type
  return h('div', {class: `tile ${cls || ''}${long}`}, h('div', {class: 'k'}, k), h('div', {class: 'v'}, v));
}
function errorBox(e) { return h('p', {class: 'error', role: 'alert'}, e.status === 403 ? `Not allowed: ${e.message}` : e.message); }
function page(title, ...children) {
  // replaceChildren writes null as the text "null": leave out what h leaves out.
  main.replaceChildren(h('h1', {}, title), ...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  main.focus({preventScroll: true});
}
function table(head, rows) {
  // A column of numbers is right-aligned, its heading too.
  const first = rows[0]?.children || [];
  return h('table', {}, h('thead', {}, h('tr', {}, head.map((c, i) => h('th', {class: first[i]?.classList.contains('num') ? 'num' : ''}, c)))),
    h('tbody', {}, rows));
}
// form handler: runs fn, shows its error in place.
function guarded(fn) {
  return async (ev) => {
    ev?.preventDefault();
    const form = ev?.target?.closest?.('form') || main;
    form?.querySelector?.('.error')?.remove();
    try { await fn(ev); } catch (e) {
      if (e.status === 401) return;
      form.append(errorBox(e));
    }
  };
}

// uploader is a file input that sends the picked picture straight to the
// stores' bucket (POST path gives a presigned URL) and then puts the name
// the store knows it by into target; status says how it went.
function uploader(id, path, field, target, status) {
  return h('input', {type: 'file', id, accept: 'image/png,image/jpeg,image/webp', onchange: async (ev) => {
    const file = ev.target.files[0];
    if (!file) return;
    status.textContent = `Uploading ${file.name}…`;
    try {
      const up = await api('POST', path, {contentType: file.type});
      const r = await fetch(up.uploadUrl, {method: 'PUT', headers: {'Content-Type': file.type}, body: file});
      if (!r.ok) throw new Error(`the upload was refused (${r.status})`);
      target.value = up[field];
      target.dispatchEvent(new Event('input'));
      status.textContent = `${file.name} uploaded: save to use it.`;
    } catch (e) {
      status.textContent = `${file.name} was not uploaded: ${e.message}`;
    }
  }});
}

// confirmed runs fn on a second click: the first asks (no modal dialogs).
function confirmed(question, fn) {
  return async (ev) => {
    const b = ev.currentTarget;
    if (!b.dataset.armed) {
      b.dataset.armed = '1';
      b.dataset.label = b.textContent;
      b.textContent = question;
      setTimeout(() => { if (b.isConnected) { delete b.dataset.armed; b.textContent = b.dataset.label; } }, 5000);
      return;
    }
    await guarded(fn)(ev);
  };
}

// ---------- sign-in and the shell ----------

function renderSignIn() {
  const msg = sessionStorage.getItem('signin-message');
  sessionStorage.removeItem('signin-message');
  nav.replaceChildren();
  whoEl.replaceChildren();
  const key = h('input', {id: 'key', type: 'password', autocomplete: 'off', required: true});
  const form = h('form', {class: 'panel signin', onsubmit: guarded(async () => {
    session = await api('POST', '/v1/console/session', {key: key.value.trim()});
    key.value = '';
    location.hash = '#/sales';
  })},
  h('h1', {}, 'Sign in'),
  msg ? h('p', {class: 'notice', id: 'signin-message'}, msg) : null,
  h('label', {}, 'API key or platform admin key', key),
  h('p', {class: 'muted'}, 'The key is exchanged once for a session cookie; it is not kept in this browser.'),
  h('button', {class: 'primary', type: 'submit'}, 'Sign in'));
  main.replaceChildren(form);
  key.focus();
}

function shell() {
  const links = [['#/sales', 'Sales']];
  if (isTenantAdmin()) links.push(['#/products', 'Products'], ['#/orders', 'Orders'], ['#/codes', 'Codes'], ['#/store', 'Store'], ['#/webhooks', 'Webhooks'], ['#/keys', 'API keys']);
  if (session.role === 'operator') links.push(['#/orders', 'Orders']);
  if (isAdmin()) links.push(['#/ops', 'Operations']);
  if (isAdmin() || isTenantAdmin()) links.push(['#/audit', 'Audit log']);
  const here = location.hash.split('/').slice(0, 2).join('/');
  nav.replaceChildren(...links.map(([href, t]) => h('a', {href, class: href === here ? 'current' : ''}, t)));
  whoEl.replaceChildren(
    h('span', {id: 'role'}, session.tenant ? `${session.tenant.name} · ${session.role}` : 'Platform admin'),
    h('button', {id: 'sign-out', onclick: async () => {
      try { await api('DELETE', '/v1/console/session'); } catch { /* gone already */ }
      signedOut('Signed out.');
    }}, 'Sign out'));
}

// Each page names the roles it is for; the API refuses the rest anyway.
const TENANT = ['tenant-admin'], WATCH = ['tenant-admin', 'operator', 'platform-admin'];
const routes = [
  [/^#\/sales$/, salesPage, WATCH],
  [/^#\/sales\/([\w-]+)$/, livePage, WATCH],
  [/^#\/report\/([\w-]+)$/, reportPage, WATCH],
  [/^#\/products$/, productsPage, TENANT],
  [/^#\/products\/new$/, newProductPage, TENANT],
  [/^#\/products\/([\w-]+)$/, productPage, TENANT],
  [/^#\/rehearse\/([\w-]+)$/, rehearsePage, TENANT],
  [/^#\/queue\/([\w-]+)$/, queuePage, ['tenant-admin', 'operator']],
  [/^#\/orders$/, ordersPage, ['tenant-admin', 'operator']],
  [/^#\/orders\/([\w-]+)$/, orderPage, ['tenant-admin', 'operator']],
  [/^#\/store$/, storePage, TENANT],
  [/^#\/codes$/, codesPage, TENANT],
  [/^#\/webhooks$/, webhooksPage, TENANT],
  [/^#\/webhooks\/([\w-]+)$/, webhookPage, TENANT],
  [/^#\/keys$/, keysPage, TENANT],
  [/^#\/ops$/, opsPage, ['platform-admin']],
  [/^#\/audit$/, auditPage, ['platform-admin', 'tenant-admin']],
];

async function route() {
  routeSeq++;
  stopPage();
  stopPage = () => {};
  alarm.hidden = true;
  if (location.hash === '#/signin') return renderSignIn();
  if (!session) {
    try { session = await api('GET', '/v1/console/session'); } catch (e) {
      return signedOut(e.status === 401 && e.code === 'SESSION_EXPIRED' ? 'Your session ended: sign in again.' : '');
    }
  }
  if (!location.hash || location.hash === '#/') { location.hash = '#/sales'; return; }
  shell();
  for (const [re, fn, roles] of routes) {
    const m = location.hash.match(re);
    if (m) {
      if (!roles.includes(session.role)) {
        return page('Not allowed', h('p', {class: 'error', role: 'alert', id: 'not-allowed'},
          `Not allowed: this page is for ${roles.join(' or ')} keys; you are signed in as ${session.role}.`));
      }
      try { await fn(...m.slice(1)); } catch (e) {
        // A link to something that is not there (or is another tenant's).
        if (e.status === 404) page('Not found', h('p', {role: 'alert'}, 'Nothing here has this id: it never existed, or it is another tenant\'s.'));
        else if (e.status !== 401) page('Error', errorBox(e));
      }
      return;
    }
  }
  page('Not found', h('p', {}, 'No such page.'));
}
window.addEventListener('hashchange', route);
route();

// ---------- discount codes ----------

// codesPage lists the tenant's discount code lists with their usage, and
// makes new ones: generated, pasted or read from a file (one code a line,
// or the first column of a CSV).
async function codesPage() {
  const [{lists}, {products}] = await Promise.all([api('GET', '/v1/code-lists'), api('GET', '/v1/products')]);
  const names = new Map(products.map((p) => [p.id, dated(p.name, p.startsAt)]));
  const f = {
    list: h('select', {id: 'c-list'}, h('option', {value: 'discount'}, 'Discount codes'), h('option', {value: 'presale'}, 'Presale codes')),
    name: h('input', {id: 'c-name', required: true, placeholder: 'Fan club 20%'}),
    product: h('select', {id: 'c-product'}, h('option', {value: ''}, 'Every product'), products.map((p) => h('option', {value: p.id}, names.get(p.id)))),
    kind: h('select', {id: 'c-kind'}, h('option', {value: 'percent'}, 'Percent off'), h('option', {value: 'amount'}, 'Amount off (EUR)')),
    value: h('input', {id: 'c-value', type: 'number', min: 0.01, step: 0.01, required: true, value: 10}),
    uses: h('input', {id: 'c-uses', type: 'number', min: 1, value: 1}),
    perBuyer: h('input', {id: 'c-per-buyer', type: 'number', min: 1, max: 100, value: 1}),
    from: h('input', {id: 'c-from', type: 'datetime-local'}), until: h('input', {id: 'c-until', type: 'datetime-local'}),
    generate: h('input', {id: 'c-generate', type: 'number', min: 0, max: 10000, value: 0}),
    codes: h('textarea', {id: 'c-codes', placeholder: 'SUMMER-10\nFANCLUB-2027'}),
    file: h('input', {id: 'c-file', type: 'file', accept: '.csv,.txt,text/csv,text/plain'}),
  };
  f.file.addEventListener('change', async () => { f.codes.value = await f.file.files[0].text(); });
  // A presale's codes open a window before the general sale, for one
  // product, and take nothing off.
  const discountRow = h('div', {class: 'row'}, h('label', {}, 'Discount', f.kind), h('label', {}, 'Value', f.value));
  const usesLabel = h('span', {}, 'Orders per code');
  const sync = () => {
    const presale = f.list.value === 'presale';
    discountRow.hidden = presale;
    f.value.required = !presale;
    f.from.required = f.until.required = presale;
    usesLabel.textContent = presale ? 'Buyers per code' : 'Orders per code';
  };
  f.list.addEventListener('change', sync);
  // One code a line; of a CSV line, its first column; a header "code" is skipped.
  const pasted = () => f.codes.value.split(/\r?\n/).map((l) => l.split(',')[0].trim()).filter((c) => c && c.toLowerCase() !== 'code');
  const iso = (el) => el.value ? new Date(el.value).toISOString() : undefined;
  const form = h('form', {class: 'panel', id: 'code-form', onsubmit: guarded(async () => {
    const body = {name: f.name.value, usesPerCode: Number(f.uses.value), perBuyer: Number(f.perBuyer.value),
      validFrom: iso(f.from), validUntil: iso(f.until), codes: pasted(), generate: Number(f.generate.value)};
    if (f.product.value) body.productId = f.product.value;
    if (f.list.value === 'presale') body.kind = 'presale';
    else if (f.kind.value === 'percent') body.percentOff = Math.round(Number(f.value.value));
    else body.amountOffCents = Math.round(Number(f.value.value) * 100);
    if (!body.codes.length) delete body.codes;
    await api('POST', '/v1/code-lists', body);
    route();
  })},
  h('h2', {}, 'New list of codes'),
  h('div', {class: 'row'}, h('label', {}, 'Kind', f.list), h('label', {}, 'Name', f.name), h('label', {}, 'For', f.product)),
  discountRow,
  h('div', {class: 'row'}, h('label', {}, usesLabel, f.uses), h('label', {}, 'Orders per buyer', f.perBuyer)),
  h('div', {class: 'row'}, h('label', {}, 'Valid from (a presale: it opens)', f.from), h('label', {}, 'Valid until (a presale: it closes, by the opening)', f.until)),
  h('div', {class: 'row'}, h('label', {}, 'Generate this many codes', f.generate), h('label', {}, 'and/or read codes from a file', f.file)),
  h('label', {}, 'Codes (one a line)', f.codes),
  h('p', {class: 'muted'}, 'A discount comes off the tickets\' prices, never the booking fees; a code is taken with the order and given back if the payment fails or the hold runs out. A presale lets the codes\' holders reserve in its window, before the general sale; for an event behind a waiting room the code puts them in the presale\'s queue, drawn when the window opens.'),
  h('button', {class: 'primary', type: 'submit', id: 'create-codes'}, 'Create the list'));
  const discount = (l) => l.kind === 'PRESALE' ? 'presale' : l.percentOff ? `${l.percentOff}% off` : `${(l.amountOffCents / 100).toFixed(2)} off`;
  const validity = (l) => [l.validFrom ? `from ${planned(l.validFrom)}` : '', l.validUntil ? `until ${planned(l.validUntil)}` : ''].filter(Boolean).join(' ') || 'always';
  sync();
  page('Discount and presale codes',
    lists.length === 0 ? h('p', {class: 'muted', id: 'no-codes'}, 'No codes yet.') :
      table(['List', 'For', 'Discount', 'Valid', 'Codes', 'Per code / buyer', 'Used', 'Being paid', 'Taken off', ''], lists.map((l) =>
        h('tr', {class: 'code-list', dataset: {id: l.id}},
          h('td', {}, l.name), h('td', {}, l.productId ? names.get(l.productId) || l.productId : 'Every product'),
          h('td', {}, discount(l)), h('td', {}, validity(l)), h('td', {class: 'num'}, n(l.codes)),
          h('td', {class: 'num'}, `${n(l.usesPerCode)} / ${n(l.perBuyer)}`), h('td', {class: 'num used'}, n(l.used)),
          h('td', {class: 'num'}, n(l.reserved)), h('td', {class: 'num'}, (l.discountCents / 100).toFixed(2)),
          h('td', {}, h('a', {href: `/v1/code-lists/${l.id}/codes.csv`, download: `codes-${l.id}.csv`}, 'Codes (CSV)'))))),
    form);
}

// ---------- sales and the live view ----------

async function salesPage() {
  const sales = await api('GET', '/v1/ops/sales');
  page('Sales',
    isTenantAdmin() ? h('p', {}, h('a', {href: '#/products/new'}, 'New product')) : null,
    sales.length === 0 ? h('p', {class: 'muted'}, 'No products yet.') :
      table(['Product', 'Date', 'Status', 'On sale', 'Sold', 'Held', 'Available', ''], sales.map((s) => h('tr', {dataset: {id: s.id}},
        h('td', {}, h('a', {href: `#/sales/${s.id}`}, s.name), s.waitingRoom ? h('span', {class: 'muted'}, ' · waiting room') : null),
        h('td', {class: 'date'}, startsWhen(s.startsAt)),
        h('td', {}, stateBadge(s.saleStatus)),
        h('td', {}, planned(s.onSaleAt)),
        h('td', {class: 'num'}, n(s.sold)), h('td', {class: 'num'}, n(s.held)), h('td', {class: 'num'}, n(s.available)),
        h('td', {}, h('a', {href: `#/report/${s.id}`}, 'Report'), isTenantAdmin() ? [' · ', h('a', {href: `#/products/${s.id}`}, 'Edit')] : null)))));
}

// Charts: drawn on a canvas by this page (no chart library).
const palette = ['#2f5bea', '#e4572e', '#17a398', '#f0a202', '#8e44ad'];
function chart(title, series) {
  const canvas = h('canvas', {width: 600, height: 240});
  const box = h('div', {class: 'chart', dataset: {chart: series.map(([, key]) => key).join(' ')}}, h('h3', {}, title),
    h('div', {class: 'legend'}, series.map(([name], i) => h('span', {}, h('i', {style: `background:${palette[i]}`}), name))), canvas);
  box.draw = (h0) => {
    const ctx = canvas.getContext('2d');
    const W = canvas.width, H = canvas.height, pad = 28;
    ctx.clearRect(0, 0, W, H);
    const all = series.flatMap(([, key]) => h0[key] || []);
    const top = Math.max(1, ...all);
    box.dataset.peak = String(Math.max(0, ...all));
    ctx.strokeStyle = '#e3e6ec'; ctx.fillStyle = '#667085'; ctx.font = '20px system-ui';
    ctx.beginPath(); ctx.moveTo(pad, H - pad); ctx.lineTo(W, H - pad); ctx.stroke();
    ctx.fillText(fmt.format(top), pad + 4, 20);
    ctx.fillText('−15 min', pad, H - 4); ctx.fillText('now', W - 44, H - 4);
    series.forEach(([, key], i) => {
      const v = h0[key] || [];
      ctx.strokeStyle = palette[i]; ctx.lineWidth = 3; ctx.beginPath();
      v.forEach((y, x) => {
        const px = pad + (x / Math.max(1, v.length - 1)) * (W - pad - 4);
        const py = H - pad - (y / top) * (H - pad - 28);
        x ? ctx.lineTo(px, py) : ctx.moveTo(px, py);
      });
      ctx.stroke();
    });
  };
  return box;
}

async function livePage(id) {
  const first = await api('GET', `/v1/ops/sales/${id}`); // a 404 shows here, not as a silent stream
  const tiles = h('div', {id: 'tiles'});
  const charts = [
    chart('Claim backlog: queued requests', [['queued', 'queued']]),
    chart('Requests per step: accepted, decided, rejected', [['accepted', 'accepted'], ['decided', 'decided'], ['rejected', 'rejected']]),
    chart('Waiting room: depth, joins, admissions', [['waiting', 'waiting'], ['joined', 'joined'], ['admitted', 'admitted']]),
    chart('Orders paid and holds expired', [['paid', 'paid'], ['expired', 'expired']]),
  ];
  const controls = h('div', {id: 'controls'});
  const status = h('p', {class: 'muted', id: 'live-status'}, 'Connecting…');
  page('Live sale', h('p', {}, h('a', {href: `#/report/${id}`}, 'Sales report'), ' · ', h('a', {href: '#/sales'}, 'All sales')),
    status, tiles, h('h2', {}, 'Last 15 minutes'), h('div', {class: 'charts'}, charts), controls);
  main.querySelector('h1').id = 'live-title';
  drawLive(first, tiles, status);
  const es = new EventSource(`/v1/ops/sales/${id}/stream`);
  let last = 0;
  es.addEventListener('sale', (ev) => {
    const v = JSON.parse(ev.data);
    last = Date.now();
    drawLive(v, tiles, status);
    charts.forEach((c) => c.draw(v.history));
    if (!controls.dataset.done) { controls.dataset.done = '1'; liveControls(v, controls); }
  });
  es.onerror = async () => {
    status.textContent = 'Reconnecting…';
    // A session that ended shows as a failing stream: find out and sign in.
    try { await api('GET', '/v1/console/session'); } catch { es.close(); }
  };
  const stale = setInterval(() => { if (last && Date.now() - last > 5000) status.textContent = 'No update for ' + secs((Date.now() - last) / 1000); }, 1000);
  stopPage = () => { es.close(); clearInterval(stale); };
}

function drawLive(v, tiles, status) {
  const p = v.product, r = v.requests, hd = v.holds, pay = v.payments;
  main.querySelector('h1').textContent = `Live: ${p.name}`;
  status.textContent = `Updated ${new Date(v.at).toLocaleTimeString()} · starts ${startsWhen(p.startsAt)} · ` +
    `${stateName(p.publication).toLowerCase()} · on sale ${planned(p.onSaleAt)}`;
  if (v.invariant.violations.length) {
    alarm.hidden = false;
    alarm.textContent = `INVARIANT VIOLATION — stop the sale and page the on-call: ${v.invariant.violations.join('; ')}`;
  } else alarm.hidden = true;
  const rejections = Object.entries(r.rejections).map(([k, c]) => `${k} ${n(c)}`).join(', ') || 'none';
  const groups = [
    ['Stock', [tile('Sold', n(p.sold)), tile('Held', n(p.held)),
      v.waitlist.withheld ? tile('Offered to the waiting list', n(v.waitlist.withheld)) : null,
      tile('Available', n(p.available)), tile('Capacity', n(p.capacity))].filter(Boolean)],
    v.room ? ['Waiting room', [
      tile('Waiting', n(v.room.waiting)), tile('Admission rate λ', `${v.room.rate.toFixed(1)}/s`),
      tile('Configured L ÷ W', `${v.room.configuredActiveShoppers} ÷ ${v.room.configuredShoppingSeconds} s`),
      tile('Why λ', v.room.reason || 'at L ÷ W'), tile('Active shoppers', n(v.room.activeShoppers)),
      tile('Wait p50 / p90', `${secs(v.room.waitP50Seconds)} / ${secs(v.room.waitP90Seconds)}`),
      tile('Longest wait', secs(v.room.waitMaxSeconds)), tile('Admitted wait p50', secs(v.room.admittedWaitP50Seconds))]] : null,
    ['Claims', [
      tile('Queued requests', n(r.queued), r.queued > 0 ? 'warn' : ''), tile('Oldest queued', secs(r.oldestQueuedAgeSeconds), r.oldestQueuedAgeSeconds > 30 ? 'bad' : ''),
      tile('Decided / s', r.decidedPerSecond.toFixed(1)), tile('Numbers held / s', r.numbersHeldPerSecond.toFixed(1)),
      tile('Batch size', r.batchSize.toFixed(1)), tile('Latency p50 / p99', `${latency(r.latencyP50Seconds)} / ${latency(r.latencyP99Seconds)}`),
      tile('Rejections', rejections), tile('Dead-lettered', n(r.deadLettered), r.deadLettered ? 'bad' : '')]],
    v.waitlist.waiting + v.waitlist.offered + v.waitlist.converted + v.waitlist.expired + v.waitlist.declined + v.waitlist.left ? ['Waiting list', [
      tile('In line', n(v.waitlist.waiting)), tile('Offers out', n(v.waitlist.offered)), tile('Numbers held back', n(v.waitlist.withheld)),
      tile('Converted', n(v.waitlist.converted)), tile('Expired', n(v.waitlist.expired)),
      tile('Declined', n(v.waitlist.declined)), tile('Left the line', n(v.waitlist.left))]] : null,
    ['Holds', [tile('Active', n(hd.active)), tile('Expiring < 1 min', n(hd.expiringWithinMinute)),
      tile('Expiry lag', secs(hd.expiryLagSeconds), hd.expiryLagSeconds > 30 ? 'bad' : ''), tile('Expired last min', n(hd.expiredLastMinute))]],
    ['Payments', [tile('In flight', n(pay.inFlight)), tile('Unknown', n(pay.unknown), pay.unknown ? 'warn' : ''),
      tile('Oldest unresolved', secs(pay.oldestUnresolvedSeconds), pay.oldestUnresolvedSeconds > 60 ? 'bad' : ''),
      tile('Captures failing', n(pay.capturesFailing), pay.capturesFailing ? 'bad' : ''),
      tile('Paid last min', n(pay.paidLastMinute)), tile('Revenue', money(pay.revenueCents, p.currency)),
      tile('Checkout', v.checkout.paused ? `PAUSED: ${v.checkout.reason}` : 'open', v.checkout.paused ? 'bad' : '')]],
    ['Pipeline', [tile('Outbox lag', secs(v.outboxLagSeconds), v.outboxLagSeconds > 30 ? 'bad' : ''),
      ...v.river.map((q) => tile(`River ${q.name}`, `${n(q.available)} avail · ${n(q.running)} run · ${n(q.discarded)} discarded`, q.discarded ? 'warn' : '')),
      ...(v.sqs ? [tile('SQS main', `${n(v.sqs.main.visible)} visible · ${n(v.sqs.main.notVisible)} in flight`),
        tile('SQS dead letters', n(v.sqs.dlq.visible), v.sqs.dlq.visible ? 'bad' : '')] : [])]],
  ].filter(Boolean);
  tiles.replaceChildren(...groups.map(([name, ts]) => h('section', {dataset: {group: name}}, h('h2', {}, name), h('div', {class: 'tiles'}, ts))));
  const q = tiles.querySelector('[data-group="Claims"] .tile .v');
  if (q) q.id = 'queued';
}

function liveControls(v, box) {
  box.append(h('h2', {}, 'Actions'),
    h('p', {}, isAdmin() ? h('a', {href: '#/ops'}, 'Checkout switch, dead letters and discarded jobs') : null,
      isAdmin() ? null : h('span', {class: 'muted'}, 'Pausing checkout, redriving dead letters and retrying jobs are the platform admin\'s.')));
}

// ---------- sales report ----------

async function reportPage(id) {
  const r = await api('GET', `/v1/products/${id}/report`);
  const cols = ['joined', 'admitted', 'reserved', 'held', 'paid', 'conflicts', 'expired'];
  const active = r.steps.filter((s) => cols.some((c) => s[c]) || s.revenueCents || s.refunds);
  const where = [r.event?.venue?.name, r.event?.venue?.address].filter(Boolean).join(', ');
  const night = r.startsAt ? new Date(r.startsAt).toLocaleString(undefined, {timeZone: r.event?.timeZone || 'UTC', dateStyle: 'full', timeStyle: 'short'}) : 'Date to be announced';
  page(`Sales report: ${r.name}`,
    h('p', {id: 'report-event'}, `${night} (${r.event?.timeZone || 'UTC'})`, where ? ` · ${where}` : ''),
    h('p', {}, h('a', {href: `/v1/products/${id}/report.csv`, download: `sales-${id}.csv`, id: 'csv'}, 'Download CSV'), ' · ',
      h('a', {href: `/v1/products/${id}/attendees.csv`, download: `attendees-${id}.csv`, id: 'attendees-csv'}, 'Orders and attendees (CSV)'), ' · ',
      h('a', {href: `#/sales/${id}`}, 'Live view'), h('span', {class: 'muted'}, ` · steps of ${r.stepSeconds / 60} min from ${planned(r.from)}; quiet steps hidden`)),
    h('div', {class: 'tiles'}, cols.map((c) => tile(c, n(r.totals[c]))), tile('revenue', money(r.totals.revenueCents, r.currency)),
      r.totals.refunds ? tile('refunded', `${money(r.totals.refundedCents, r.currency)} (${n(r.totals.refunds)})`) : null),
    h('h2', {}, 'Funnel by step'),
    table(['Step', ...cols.map((c) => c), 'revenue', 'refunded'], active.map((s) => h('tr', {},
      h('td', {}, new Date(s.at).toLocaleTimeString()), cols.map((c) => h('td', {class: 'num'}, n(s[c]))),
      h('td', {class: 'num'}, money(s.revenueCents, r.currency)), h('td', {class: 'num'}, s.refunds ? money(s.refundedCents, r.currency) : '—')))));
}

// ---------- products (tenant admin) ----------

async function productsPage() {
  const {products} = await api('GET', '/v1/products?limit=100');
  page('Products', h('p', {}, h('a', {href: '#/products/new', id: 'new-product'}, 'New product')),
    table(['Product', 'Starts', 'Kind', 'Capacity', 'Publication', 'On sale', ''], products.map((p) => h('tr', {},
      h('td', {}, h('a', {href: `#/products/${p.id}`}, p.name)), h('td', {}, startsWhen(p.startsAt)), h('td', {}, kindNames[p.kind] || p.kind), h('td', {class: 'num'}, n(p.capacity)),
      h('td', {}, stateBadge(p.publication)), h('td', {}, planned(p.onSaleAt)),
      h('td', {}, h('a', {href: `#/sales/${p.id}`}, 'Live'))))));
}

// localInput turns a date for <input type=datetime-local>.
function localInput(d) {
  if (!d) return '';
  const t = new Date(d);
  return new Date(t.getTime() - t.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function sectionsEditor() {
  const list = h('div', {class: 'sections'});
  const add = (name = '', rows = 'A,B', seats = 10) => {
    const row = h('div', {class: 'section'},
      h('label', {}, 'Section', h('input', {name: 'section', value: name, required: true})),
      h('label', {}, 'Rows (comma-separated)', h('input', {name: 'rows', value: rows, required: true})),
      h('label', {}, 'Seats per row', h('input', {name: 'seats', type: 'number', min: 1, value: seats, required: true})),
      h('button', {type: 'button', onclick: () => row.remove()}, 'Remove section'));
    list.append(row);
  };
  add('Floor');
  const box = h('fieldset', {id: 'sections-editor'}, h('legend', {}, 'Sections and rows'), list,
    h('button', {type: 'button', onclick: () => add()}, 'Add section'));
  box.layout = () => {
    let y = 0;
    const sections = [...list.children].map((el) => {
      const rows = el.querySelector('[name=rows]').value.split(',').map((s) => s.trim()).filter(Boolean);
      const seats = Number(el.querySelector('[name=seats]').value);
      const s = {name: el.querySelector('[name=section]').value.trim(), y, rows: rows.map((r, i) => ({name: r, seats, y: i * 1.5}))};
      y += rows.length * 1.5 + 2;
      return s;
    });
    return {sections};
  };
  return box;
}

// csvSeats counts a seat map's lines (after the header).
const csvSeats = (text) => text.split(/\r?\n/).slice(1).filter((l) => l.trim()).length;

// csvLevels lists the price levels a seat map names (its last column), so
// that the form asks their prices; the server reads the map itself.
const csvLevels = (text) => [...new Set(text.split(/\r?\n/).slice(1)
  .map((l) => l.split(',').at(-1)?.trim()).filter(Boolean))];

// levelPrices is a price input per level named, keeping what was typed.
function levelPrices() {
  const box = h('fieldset', {id: 'level-prices', hidden: true}, h('legend', {}, 'Price levels'));
  const inputs = new Map();
  box.show = (names) => {
    box.hidden = names.length === 0;
    box.replaceChildren(box.firstChild, ...names.map((name) => {
      const input = inputs.get(name) || h('input', {type: 'number', min: 0, step: '0.01', required: true,
        'data-level': name});
      inputs.set(name, input);
      return h('label', {}, `Price of ${name}`, input);
    }));
  };
  box.levels = () => [...box.querySelectorAll('input[data-level]')].map((el) =>
    ({name: el.dataset.level, priceCents: Math.round(Number(el.value) * 100)}));
  return box;
}

function newProductPage() {
  const f = {
    name: h('input', {id: 'p-name', required: true}), slug: h('input', {id: 'p-slug', required: true, pattern: '[a-z0-9][a-z0-9-]*'}),
    kind: h('select', {id: 'p-kind'}, h('option', {value: 'numbered'}, `${kindNames.numbered} (raffle, numbered items)`), h('option', {value: 'seated'}, `${kindNames.seated} (venue)`)),
    capacity: h('input', {id: 'p-capacity', type: 'number', min: 1, value: 100}),
    price: h('input', {id: 'p-price', type: 'number', min: 0, step: '0.01', value: '10.00'}),
    fee: h('input', {id: 'p-fee', type: 'number', min: 0, step: '0.01', value: '0.00'}),
    currency: h('input', {id: 'p-currency', value: 'EUR', pattern: '[A-Z]{3}'}),
    onSale: h('input', {id: 'p-onsale', type: 'datetime-local', value: localInput(Date.now() + 3600e3)}),
    seatSource: h('select', {id: 'p-seat-source'}, h('option', {value: 'editor'}, 'Sections and rows'), h('option', {value: 'csv'}, 'Import a CSV seat map')),
    csv: h('textarea', {id: 'p-csv', placeholder: 'section,row,seat,x,y,price_level\nFloor,A,1,0,0,\n…'}),
    file: h('input', {type: 'file', accept: '.csv,text/csv', id: 'p-csv-file'}),
  };
  f.name.addEventListener('input', () => { f.slug.value = f.name.value.toLowerCase().normalize('NFD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, ''); });
  const levels = levelPrices();
  f.csv.addEventListener('input', () => levels.show(csvLevels(f.csv.value)));
  f.file.addEventListener('change', async () => {
    f.csv.value = await f.file.files[0].text();
    levels.show(csvLevels(f.csv.value));
  });
  const editor = sectionsEditor();
  const csvBox = h('div', {id: 'csv-box'}, h('label', {}, 'CSV (section,row,seat,x,y,price_level)', f.csv), h('label', {}, 'or read it from a file', f.file), levels);
  const capLabel = h('label', {}, 'Capacity', f.capacity);
  const seated = h('div', {}, h('label', {}, 'Seat map', f.seatSource), editor, csvBox);
  const sync = () => {
    const isSeated = f.kind.value === 'seated';
    seated.hidden = !isSeated; capLabel.hidden = isSeated;
    editor.hidden = f.seatSource.value !== 'editor'; csvBox.hidden = f.seatSource.value !== 'csv';
  };
  f.kind.addEventListener('change', sync); f.seatSource.addEventListener('change', sync);
  const form = h('form', {class: 'panel', onsubmit: guarded(async () => {
    const body = {name: f.name.value.trim(), slug: f.slug.value, kind: f.kind.value, priceCents: Math.round(Number(f.price.value) * 100),
      feeCents: Math.round(Number(f.fee.value) * 100),
      currency: f.currency.value, onSaleAt: new Date(f.onSale.value).toISOString(), publication: 'DRAFT'};
    if (body.kind === 'numbered') body.capacity = Number(f.capacity.value);
    else if (f.seatSource.value === 'editor') {
      body.layout = editor.layout();
      body.capacity = body.layout.sections.reduce((a, s) => a + s.rows.reduce((b, r) => b + r.seats, 0), 0);
    } else {
      // One request: a seat map the server refuses creates nothing.
      body.seatMap = f.csv.value;
      body.capacity = csvSeats(body.seatMap);
      const priced = levels.levels();
      if (priced.length) body.priceLevels = priced;
    }
    const p = await api('POST', '/v1/products', body);
    location.hash = `#/products/${p.id}`;
  })},
  h('label', {}, 'Name', f.name), h('label', {}, 'Slug (in the store\'s address)', f.slug), h('label', {}, 'Kind', f.kind),
  capLabel, seated, h('label', {}, 'Price', f.price), h('label', {}, 'Booking fee per ticket', f.fee), h('label', {}, 'Currency', f.currency), h('label', {}, 'On sale at', f.onSale),
  h('p', {class: 'muted'}, 'It is created as a draft: publish it when it is ready.'),
  h('button', {class: 'primary', type: 'submit', id: 'create-product'}, 'Create draft'));
  page('New product', form);
  sync();
}

async function productPage(id) {
  const p = await api('GET', `/v1/products/${id}`);
  const room = p.waitingRoom || {enabled: false, activeShoppers: 200, shoppingSeconds: 120};
  const f = {
    name: h('input', {id: 'e-name', value: p.name}), description: h('textarea', {id: 'e-description'}, p.description || ''),
    image: h('input', {id: 'e-image', value: p.imageUrl || '', placeholder: 'https://…'}),
    price: h('input', {id: 'e-price', type: 'number', step: '0.01', value: (p.priceCents / 100).toFixed(2)}),
    fee: h('input', {id: 'e-fee', type: 'number', min: 0, step: '0.01', value: ((p.feeCents || 0) / 100).toFixed(2)}),
    onSale: h('input', {id: 'e-onsale', type: 'datetime-local', value: localInput(p.onSaleAt)}),
    roomOn: h('input', {id: 'r-enabled', type: 'checkbox', checked: room.enabled}),
    L: h('input', {id: 'r-l', type: 'number', min: 1, value: room.activeShoppers}),
    W: h('input', {id: 'r-w', type: 'number', min: 1, value: room.shoppingSeconds}),
    crowd: h('input', {id: 'r-crowd', type: 'number', min: 1, value: Math.max(p.capacity * 5, 100)}),
    perBuyer: h('input', {id: 'e-per-buyer', type: 'number', min: 1, max: 100, value: p.perBuyerLimit}),
    hold: h('input', {id: 'e-hold', type: 'number', min: 30, max: 86400, value: p.holdSeconds}),
    transferHours: h('input', {id: 'e-transfer-hours', type: 'number', min: 0, max: 8760, placeholder: 'off',
      value: p.transfers ? p.transfers.hoursBefore : ''}),
    transferMax: h('input', {id: 'e-transfer-max', type: 'number', min: 1, max: 10, value: p.transfers?.maxTimes || 1}),
    starts: h('input', {id: 'e-starts', type: 'datetime-local', value: localInput(p.startsAt)}),
    doors: h('input', {id: 'e-doors', type: 'datetime-local', value: localInput(p.doorsAt)}),
    ends: h('input', {id: 'e-ends', type: 'datetime-local', value: localInput(p.endsAt)}),
    offSale: h('input', {id: 'e-offsale', type: 'datetime-local', value: localInput(p.offSaleAt)}),
    cancelHours: h('input', {id: 'e-cancel-hours', type: 'number', min: 0, max: 8760, placeholder: 'off',
      value: p.shopperCancellation ? p.shopperCancellation.hoursBefore : ''}),
    cancelFee: h('input', {id: 'e-cancel-fee', type: 'number', step: '0.01', min: 0,
      value: ((p.shopperCancellation?.feeCents || 0) / 100).toFixed(2)}),
    refund: h('select', {id: 'e-refund'}, ['resell', 'keep'].map((v) => h('option', {value: v, selected: p.refundPolicy === v},
      v === 'resell' ? 'Refunded seats go back on sale' : 'Refunded seats stay off sale'))),
  };
  const ev = p.event || {venue: {}};
  const e = {
    venue: h('input', {id: 'v-name', value: ev.venue.name || ''}), address: h('input', {id: 'v-address', value: ev.venue.address || ''}),
    map: h('input', {id: 'v-map', value: ev.venue.mapUrl || '', placeholder: 'https://…'}),
    zone: h('input', {id: 'v-zone', value: ev.timeZone || 'UTC', placeholder: 'Europe/Lisbon'}),
    note: h('input', {id: 'v-note', value: ev.entryNote || '', placeholder: 'e.g. 18+; no bags'}),
  };
  const iso = (el) => el.value ? new Date(el.value).toISOString() : undefined;
  const imageStatus = h('p', {class: 'muted', id: 'e-image-status', role: 'status'});
  const little = h('p', {class: 'notice', id: 'littles-law'});
  const updateLittle = () => {
    const L = Number(f.L.value), W = Number(f.W.value), N = Number(f.crowd.value);
    if (!(L > 0 && W > 0)) { little.textContent = 'Set L and W.'; return; }
    const rate = L / W;
    little.textContent = `Little's law: λ = L ÷ W = ${rate.toFixed(2)} shoppers/s (${n(rate * 3600)}/hour). ` +
      `${n(N)} people served in ${secs(N / rate)}; at most ${f.perBuyer.value} each, the ${n(p.capacity)} numbers need at least ` +
      `${n(Math.ceil(p.capacity / f.perBuyer.value))} shoppers, ${secs(Math.ceil(p.capacity / f.perBuyer.value) / rate)}.`;
  };
  [f.L, f.W, f.crowd, f.perBuyer].forEach((el) => el.addEventListener('input', updateLittle));
  updateLittle();
  const opened = new Date(p.onSaleAt) <= new Date();
  const save = h('form', {class: 'panel', id: 'edit-form', onsubmit: guarded(async () => {
    const patch = {name: f.name.value, description: f.description.value, imageUrl: f.image.value, refundPolicy: f.refund.value,
      startsAt: iso(f.starts), doorsAt: iso(f.doors), endsAt: iso(f.ends), offSaleAt: iso(f.offSale),
      shopperCancellation: f.cancelHours.value === '' ? {off: true, hoursBefore: 0, feeCents: 0} :
        {hoursBefore: Number(f.cancelHours.value), feeCents: Math.round(Number(f.cancelFee.value) * 100)},
      transfers: f.transferHours.value === '' ? {off: true, hoursBefore: 0} :
        {hoursBefore: Number(f.transferHours.value), maxTimes: Number(f.transferMax.value) || 1},
      perBuyerLimit: Number(f.perBuyer.value), holdSeconds: Number(f.hold.value)};
    const price = Math.round(Number(f.price.value) * 100);
    if (price !== p.priceCents) patch.priceCents = price;
    const fee = Math.round(Number(f.fee.value) * 100);
    if (fee !== (p.feeCents || 0)) patch.feeCents = fee;
    if (!opened) {
      const at = new Date(f.onSale.value).toISOString();
      if (new Date(at).getTime() !== new Date(p.onSaleAt).getTime()) patch.onSaleAt = at;
      patch.waitingRoom = {...room, enabled: f.roomOn.checked, activeShoppers: Number(f.L.value), shoppingSeconds: Number(f.W.value)};
    }
    await api('PATCH', `/v1/products/${id}`, patch);
    route();
  })},
  h('h2', {}, 'Details'), h('label', {}, 'Name', f.name), h('label', {}, 'Description', f.description),
  h('div', {class: 'row'}, h('label', {}, 'Picture URL', f.image),
    h('label', {}, 'or upload a picture (PNG, JPEG or WebP, 2 MiB at most)', uploader('e-image-file', '/v1/store/images', 'imageUrl', f.image, imageStatus))),
  imageStatus,
  h('label', {}, `Price (${p.currency}; fixed once a number is held)`, f.price),
  h('label', {}, `Booking fee per ticket (${p.currency}; fixed once a number is held)`, f.fee),
  h('label', {}, 'On sale at (only before opening)', f.onSale), h('label', {}, 'Sale ends at (optional)', f.offSale),
  h('div', {class: 'row'}, h('label', {}, 'Per buyer at most (numbers held or owned; applies at once)', f.perBuyer),
    h('label', {}, 'Hold time, seconds (new holds)', f.hold)),
  h('h2', {}, 'Date'), h('p', {class: 'muted'}, `Times in your browser's zone; shoppers see them in the venue's (${ev.timeZone || 'UTC'}). Once tickets are sold, a change is mailed to every holder.`),
  h('div', {class: 'row'}, h('label', {}, 'Starts', f.starts), h('label', {}, 'Doors', f.doors), h('label', {}, 'Ends', f.ends)),
  h('label', {}, 'Refund policy', f.refund),
  h('div', {class: 'row'}, h('label', {}, 'Buyers may cancel until … hours before doors (empty: never)', f.cancelHours),
    h('label', {}, `Cancellation fee per ticket (${p.currency})`, f.cancelFee)),
  h('div', {class: 'row'}, h('label', {}, 'Holders may give tickets away until … hours before doors (empty: never)', f.transferHours),
    h('label', {}, 'Times a seat\'s ticket may change hands', f.transferMax)),
  h('h2', {}, 'Waiting room'),
  opened ? h('p', {class: 'muted'}, 'The sale has opened: the on-sale time is fixed. ',
    p.waitingRoom?.enabled ? h('a', {href: `#/queue/${id}`}, 'Change the admission rate, pause it or see the line') : 'It sells without a waiting room.') :
    [h('label', {class: 'check'}, f.roomOn, 'Queue buyers in a waiting room at opening'),
      h('label', {}, 'L: shoppers served at once', f.L), h('label', {}, 'W: seconds each shopper takes', f.W),
      h('label', {}, 'Expected crowd', f.crowd), little],
  h('button', {class: 'primary', type: 'submit', id: 'save-product'}, 'Save'));
  const setPublication = (pub) => guarded(async () => { await api('PATCH', `/v1/products/${id}`, {publication: pub}); route(); });
  const actions = h('div', {class: 'panel row', id: 'publication'},
    h('span', {}, 'Publication: ', stateBadge(p.publication, {id: 'publication-state'})),
    p.publication === 'DRAFT' || p.publication === 'CLOSED' ? h('button', {class: 'primary', id: 'publish', onclick: setPublication('PUBLISHED')}, p.publication === 'DRAFT' ? 'Publish' : 'Reopen') : null,
    p.publication === 'PUBLISHED' ? h('button', {class: 'danger', id: 'close', onclick: setPublication('CLOSED')}, 'Close the sale') : null,
    h('a', {href: `#/sales/${id}`}, 'Live view'), h('a', {href: `#/report/${id}`}, 'Report'),
    h('a', {href: `#/rehearse/${id}`, id: 'rehearse-link'}, 'Rehearse the on-sale'),
    p.waitingRoom?.enabled ? h('a', {href: `#/queue/${id}`, id: 'queue-link'}, 'Waiting room and admission') : null,
    session.tenant ? h('a', {href: `/s/${session.tenant.slug}/`, target: '_blank', rel: 'noopener'}, 'Store') : null);
  let seatMap = null;
  if (p.kind === 'seated') {
    const csv = h('textarea', {id: 'seatmap-csv', placeholder: 'section,row,seat,x,y,price_level'});
    const file = h('input', {type: 'file', accept: '.csv,text/csv'});
    file.addEventListener('change', async () => { csv.value = await file.files[0].text(); });
    const seats = (p.layout?.sections || []).map((s) => `${s.name} (${s.rows.length} rows)`).join(', ');
    seatMap = h('form', {class: 'panel', onsubmit: guarded(async () => {
      await api('PUT', `/v1/products/${id}/seat-map`, csv.value, {raw: true, type: 'text/csv'});
      route();
    })}, h('h2', {}, 'Seat map'), h('p', {}, `Sections: ${seats || '—'}`),
    h('label', {}, 'Replace from CSV (until the first hold)', csv), h('label', {}, 'or read it from a file', file), h('button', {type: 'submit'}, 'Import seat map'));
  }
  const eventForm = h('form', {class: 'panel', id: 'event-form', onsubmit: guarded(async () => {
    await api('PATCH', `/v1/events/${p.eventId}`, {venue: {name: e.venue.value, address: e.address.value, mapUrl: e.map.value},
      timeZone: e.zone.value.trim(), entryNote: e.note.value});
    route();
  })},
  h('h2', {}, `Event: ${ev.name || p.name}`),
  h('p', {class: 'muted'}, 'Shared by every date of the event (name, description and picture too). A change of venue or time zone is mailed to every ticket holder.'),
  h('div', {class: 'row'}, h('label', {}, 'Venue', e.venue), h('label', {}, 'Address', e.address)),
  h('div', {class: 'row'}, h('label', {}, 'Map link', e.map), h('label', {}, 'Time zone (IANA)', e.zone)),
  h('label', {}, 'Entry note', e.note),
  h('button', {type: 'submit', id: 'save-event'}, 'Save the event'));
  const cancelled = p.publication === 'CANCELLED';
  const {dates} = await api('GET', `/v1/events/${p.eventId}`);
  page(p.name, actions, cancelled ? null : save, cancelled ? null : eventForm, datesPanel(p, dates), cancelled ? null : seatMap,
    cancelled ? cancellationPanel(id) : isTenantAdmin() ? cancelDateForm(p) : null);
}

// datesPanel lists the event's dates and adds another: a draft copy of
// this date — kind, seat map, prices, limits, waiting room and policies —
// at a new time, its doors and end as far from its start as this one's.
function datesPanel(p, dates) {
  const starts = h('input', {id: 'd-starts', type: 'datetime-local', required: true});
  const slug = h('input', {id: 'd-slug', required: true, pattern: '[a-z0-9][a-z0-9-]*', value: `${(dates[0] || p).slug}-${dates.length + 1}`});
  const onSale = h('input', {id: 'd-onsale', type: 'datetime-local', required: true,
    value: localInput(Math.max(new Date(p.onSaleAt).getTime(), Date.now() + 3600e3))});
  const add = isTenantAdmin() ? h('form', {id: 'add-date-form', onsubmit: guarded(async () => {
    const at = new Date(starts.value);
    const shifted = (x) => (x && p.startsAt ? new Date(at.getTime() + new Date(x).getTime() - new Date(p.startsAt).getTime()).toISOString() : undefined);
    const body = {eventId: p.eventId, name: p.name, slug: slug.value, kind: p.kind, capacity: p.capacity, priceCents: p.priceCents,
      feeCents: p.feeCents || 0, currency: p.currency, perBuyerLimit: p.perBuyerLimit, holdSeconds: p.holdSeconds,
      refundPolicy: p.refundPolicy, onSaleAt: new Date(onSale.value).toISOString(), startsAt: at.toISOString(),
      doorsAt: shifted(p.doorsAt), endsAt: shifted(p.endsAt), publication: 'DRAFT'};
    if (p.kind === 'seated') body.layout = p.layout;
    if (p.waitingRoom?.enabled) body.waitingRoom = {...p.waitingRoom, paused: undefined};
    if (p.shopperCancellation) body.shopperCancellation = p.shopperCancellation;
    if (p.transfers) body.transfers = p.transfers;
    const made = await api('POST', '/v1/products', body);
    location.hash = `#/products/${made.id}`;
  })},
  h('h3', {}, 'Add a date'),
  h('p', {class: 'muted'}, 'A draft copy of this date (seat map, prices, limits, waiting room and policies) at another time; publish it when it is ready. Times in your browser\'s zone.'),
  h('div', {class: 'row'}, h('label', {}, 'Starts', starts), h('label', {}, 'On sale at', onSale), h('label', {}, 'Slug', slug)),
  h('button', {type: 'submit', id: 'add-date'}, 'Add the date')) : null;
  return h('section', {class: 'panel', id: 'event-dates'}, h('h2', {}, `Dates of the event (${dates.length})`),
    table(['Starts', 'Product', 'Publication', 'On sale'], dates.map((d) => h('tr', {dataset: {product: d.id}},
      h('td', {}, startsWhen(d.startsAt)),
      h('td', {}, d.id === p.id ? h('strong', {'aria-current': 'page'}, `${d.name} (this one)`) : h('a', {href: `#/products/${d.id}`}, d.name)),
      h('td', {}, stateBadge(d.publication)), h('td', {}, planned(d.onSaleAt))))),
    add);
}

// ---------- the waiting room while the sale runs ----------

// queuePage is a room's admission control and its line: L and W (so the
// pace), pause and resume, counts by state, a buyer searched for and taken
// out. It looks again every two seconds; the forms keep what is typed.
async function queuePage(id) {
  const admin = isTenantAdmin();
  const live = h('div', {id: 'queue-live', 'aria-live': 'polite'}, h('p', {}, 'Loading…'));
  let search = '', timer;
  const L = h('input', {id: 'q-l', type: 'number', min: 1}), W = h('input', {id: 'q-w', type: 'number', min: 1});
  const pace = h('p', {class: 'notice', id: 'q-pace'});
  const showPace = () => {
    const rate = Number(L.value) / Number(W.value);
    pace.textContent = rate > 0 ? `λ = L ÷ W = ${rate.toFixed(2)} shoppers/s (${n(rate * 3600)}/hour)` : 'Set L and W.';
  };
  [L, W].forEach((el) => el.addEventListener('input', showPace));
  const tune = (body) => guarded(async () => { await api('PUT', `/v1/products/${id}/queue/admission`, body); await draw(); });
  const pause = h('button', {type: 'button', id: 'q-pause'});
  const control = admin ? h('form', {class: 'panel', id: 'admission-form', onsubmit: (ev) => tune({activeShoppers: Number(L.value), shoppingSeconds: Number(W.value)})(ev)},
    h('h2', {}, 'Admission'), h('div', {class: 'row'}, h('label', {}, 'L: shoppers served at once', L), h('label', {}, 'W: seconds each shopper takes', W)),
    pace, h('p', {class: 'muted'}, 'The next admission step (within a second) follows. The line and its drawn order do not change.'),
    h('div', {class: 'row'}, h('button', {class: 'primary', type: 'submit', id: 'q-apply'}, 'Apply'), pause)) : null;
  const q = h('input', {id: 'q-search', placeholder: 'buyer id or e-mail'});
  const find = h('form', {class: 'panel row', id: 'queue-search', onsubmit: guarded(async () => { search = q.value.trim(); await draw(); })},
    h('label', {}, 'Find a buyer in the line', q), h('button', {type: 'submit'}, 'Search'),
    h('button', {type: 'button', onclick: guarded(async () => { search = ''; q.value = ''; await draw(); })}, 'Next in line'));
  let first = true, drawn = 0;
  // draw shows the line; a timed look (auto) leaves it be while a Remove
  // asks to be pressed again, and only the latest look is shown.
  const draw = async (auto) => {
    clearTimeout(timer);
    const mine = ++drawn;
    const v = await api('GET', `/v1/products/${id}/queue/entries${search ? `?buyer=${encodeURIComponent(search)}` : ''}`);
    if (mine !== drawn) return;
    if (auto && live.querySelector('[data-armed]')) { next(); return; }
    if (first) { L.value = v.settings.activeShoppers; W.value = v.settings.shoppingSeconds; showPace(); first = false; }
    pause.className = v.settings.paused ? 'primary' : 'danger';
    pause.textContent = v.settings.paused ? 'Resume admission' : 'Pause admission';
    pause.onclick = tune({paused: !v.settings.paused});
    const c = v.counts;
    live.replaceChildren(
      h('p', {}, h('span', {class: `badge ${v.settings.paused ? 'CLOSED' : 'ON_SALE'}`, id: 'q-state'}, v.settings.paused ? 'Admission paused' : 'Admitting'),
        ` Now serving #${n(v.nowServing)} · ${v.ratePerSecond.toFixed(2)} shoppers/s at the last step`, v.rateReason ? ` (${v.rateReason})` : '',
        v.drawn ? '' : ' · the draw runs at opening'),
      h('div', {class: 'tiles'}, tile('Waiting', n(c.waiting), 'waiting'), tile('Admitted', n(c.admitted)), tile('Reserved', n(c.reserved)),
        tile('Left', n(c.left)), tile('Reclaimed', n(c.reclaimed)), tile('Removed', n(c.removed))),
      h('h2', {}, search ? `Search: ${search}` : 'Next in line'),
      v.entries.length === 0 ? h('p', {class: 'muted'}, search ? 'Not in this line.' : 'Nobody is waiting.') :
        table(['Place', 'Buyer', 'State', 'Joined', 'Admitted', ''], v.entries.map((e) => h('tr', {dataset: {entry: e.id}},
          h('td', {class: 'num'}, e.position ? `#${n(e.position)}` : '—'), h('td', {}, e.buyerId),
          h('td', {}, stateBadge(e.state)), h('td', {}, when(e.joinedAt)), h('td', {}, when(e.admittedAt)),
          h('td', {}, admin && ['WAITING', 'ADMITTED', 'RESERVED'].includes(e.state) ? h('button', {type: 'button', class: 'danger remove-entry',
            onclick: confirmed('Take them out of the line?', async () => {
              await api('DELETE', `/v1/products/${id}/queue/entries/${e.id}`);
              await draw();
            })}, 'Remove') : null)))));
    next();
  };
  // Redrawn every 2 s, but not under a Remove that asks to be pressed
  // again: a redraw would put back an unarmed button.
  const next = () => {
    clearTimeout(timer);
    timer = setTimeout(() => draw(true).catch((e) => live.append(errorBox(e))), 2000);
  };
  page('Waiting room', h('p', {}, admin ? h('a', {href: `#/products/${id}`}, 'Back to the product') : null, ' ', h('a', {href: `#/sales/${id}`}, 'Live view')),
    control, live, find);
  stopPage = () => clearTimeout(timer);
  await draw();
}

// cancelDateForm cancels the date: every order refunded, every buyer told.
function cancelDateForm(p) {
  const reason = h('input', {id: 'cancel-reason', required: true, maxlength: 500, placeholder: 'e.g. the artist is ill; the show will not take place'});
  const go = confirmed('Cancel the date and refund everyone?', async () => {
    await api('POST', `/v1/products/${p.id}/cancellation`, {reason: reason.value.trim()});
    route();
  });
  return h('form', {class: 'panel', id: 'cancel-date-form', onsubmit: (ev) => ev.preventDefault()},
    h('h2', {}, 'Cancel this date'),
    h('p', {class: 'muted'}, 'Nothing more is sold, no ticket admits, every order is refunded in full and each buyer gets one e-mail with the reason. It cannot be undone.'),
    h('label', {}, 'Reason (told to the buyers)', reason),
    h('button', {type: 'button', class: 'danger', id: 'cancel-date', onclick: (ev) => {
      if (!reason.value.trim()) return guarded(() => { throw new Error('Say why: the buyers are told.'); })(ev);
      return go(ev);
    }}, 'Cancel the date'));
}

// cancellationPanel shows how far the refunds of a cancelled date have got,
// looking again every two seconds until they are done.
function cancellationPanel(id) {
  const box = h('section', {class: 'panel', id: 'cancellation', 'aria-live': 'polite'}, h('p', {}, 'Loading…'));
  let timer;
  const draw = async () => {
    const c = await api('GET', `/v1/products/${id}/cancellation`);
    const done = c.state === 'DONE';
    box.replaceChildren(...[h('h2', {}, done ? 'Cancelled: every order refunded' : 'Cancelled: refunding the orders'),
      h('p', {}, `Cancelled ${when(c.cancelledAt)} by ${c.cancelledBy}: ${c.reason}`),
      h('div', {class: 'tiles'}, tile('Orders to refund', n(c.remaining), 'remaining'), tile('Being paid', n(c.paying)),
        tile('Refunds awaited', n(c.refunding)), tile('Refunded', n(c.refunded), 'refunded'),
        tile('Refused', n(c.failed), c.failed ? 'bad' : ''), tile('Buyers mailed', n(c.buyersMailed), 'mailed')),
      c.failed ? h('p', {class: 'error'}, 'Some refunds were refused: find those orders (their refunds say “Refund failed”) and retry or settle each by hand.') : null,
      h('p', {class: 'muted', id: 'cancellation-state', dataset: {state: c.state}}, done ? `Finished ${when(c.finishedAt)}.` : 'Working… this page follows it.'),
      h('p', {}, h('a', {href: `#/report/${id}`}, 'Report'), ' ', h('a', {href: `/v1/products/${id}/attendees.csv`, download: `attendees-${id}.csv`}, 'Orders and attendees (CSV)'))]
      .filter(Boolean));
    if (!done) timer = setTimeout(() => draw().catch((e) => box.append(errorBox(e))), 2000);
  };
  draw().catch((e) => box.replaceChildren(errorBox(e)));
  stopPage = () => clearTimeout(timer);
  return box;
}

// ---------- rehearsals ----------

async function rehearsePage(id) {
  const [p, runs] = await Promise.all([api('GET', `/v1/products/${id}`), api('GET', `/v1/products/${id}/rehearsals`)]);
  const last = runs[0]?.params || {};
  const room = p.waitingRoom || {};
  const f = {
    buyers: h('input', {id: 'h-buyers', type: 'number', min: 1, max: 20000, value: last.buyers || Math.min(20000, p.capacity * 3)}),
    L: h('input', {id: 'h-l', type: 'number', min: 1, value: last.activeShoppers || room.activeShoppers || 200}),
    W: h('input', {id: 'h-w', type: 'number', min: 1, value: last.shoppingSeconds || room.shoppingSeconds || 60}),
    arrival: h('input', {id: 'h-arrival', type: 'number', min: 1, max: 600, value: last.arrivalSeconds || 20}),
    pay: h('input', {id: 'h-pay', type: 'number', min: 0, max: 100, value: Math.round((last.payShare ?? 0.6) * 100)}),
  };
  const running = runs.some((r) => r.status === 'QUEUED' || r.status === 'RUNNING');
  const form = h('form', {class: 'panel', onsubmit: guarded(async () => {
    await api('POST', `/v1/products/${id}/rehearsals`, {buyers: Number(f.buyers.value), activeShoppers: Number(f.L.value),
      shoppingSeconds: Number(f.W.value), arrivalSeconds: Number(f.arrival.value), payShare: Number(f.pay.value) / 100});
    route();
  })},
  h('p', {class: 'muted'}, 'A shadow copy of this product is sold to synthetic buyers through the real waiting room, claims and a test-mode payment provider. Real stock, orders and money are never touched.'),
  h('div', {class: 'row'}, h('label', {}, 'Buyers', f.buyers), h('label', {}, 'L: shoppers at once', f.L),
    h('label', {}, 'W: seconds each', f.W), h('label', {}, 'Arrivals over (s)', f.arrival), h('label', {}, 'Share that pays (%)', f.pay)),
  h('button', {class: 'primary', type: 'submit', id: 'start-rehearsal', disabled: running}, running ? 'A rehearsal is running…' : 'Rehearse'));
  const pct = (x) => `${Math.round((x || 0) * 100)} %`;
  const rows = runs.map((r) => {
    const res = r.result || {};
    const useIt = r.status === 'DONE' && new Date(p.onSaleAt) > new Date() ? h('button', {class: 'use-room', onclick: guarded(async () => {
      await api('PATCH', `/v1/products/${id}`, {waitingRoom: {...(p.waitingRoom || {}), enabled: true,
        activeShoppers: r.params.activeShoppers, shoppingSeconds: r.params.shoppingSeconds}});
      location.hash = `#/products/${id}`;
    })}, `Use L=${r.params.activeShoppers}, W=${r.params.shoppingSeconds}`) : '';
    return h('tr', {class: 'rehearsal', dataset: {status: r.status}},
      h('td', {}, when(r.createdAt)), h('td', {}, stateName(r.status), r.error ? h('div', {class: 'muted'}, r.error) : null,
        r.shadowId && r.status === 'RUNNING' ? h('div', {}, h('a', {href: `#/sales/${r.shadowId}`}, 'watch live')) : null),
      h('td', {class: 'num'}, n(r.params.buyers)), h('td', {class: 'num'}, `${r.params.activeShoppers ?? '—'} / ${r.params.shoppingSeconds ?? '—'} s`),
      h('td', {class: 'num sellout'}, r.result ? (res.soldOut ? secs(res.sellOutSeconds) : 'not sold out') : '—'),
      h('td', {class: 'num'}, r.result ? `${res.admissionRate.toFixed(1)}/s` : '—'),
      h('td', {class: 'num conflicts'}, !r.result ? '—' : res.chosen ? `${pct(res.conflictRate)} of ${n(res.chosen)} chosen` : 'none chosen'),
      h('td', {class: 'num'}, r.result ? n(res.peakClaimBacklog) : '—'),
      h('td', {class: 'num'}, r.result ? `${n(res.paid)} paid · ${res.paymentsPerSecond.toFixed(0)}/s peak · ${n(res.peakPaymentsInFlight)} in flight` : '—'),
      h('td', {}, useIt));
  });
  page(`Rehearse: ${p.name}`, h('p', {}, h('a', {href: `#/products/${id}`}, 'Back to the product')), form,
    h('h2', {}, 'Rehearsals'),
    runs.length === 0 ? h('p', {class: 'muted'}, 'None yet.') :
      table(['Started', 'State', 'Buyers', 'L / W', 'Sold out after', 'Admission', 'Seats taken first', 'Peak claim backlog', 'Payments', ''], rows));
  if (running) {
    const timer = setTimeout(() => route(), 2000);
    stopPage = () => clearTimeout(timer);
  }
}

// ---------- orders ----------

async function ordersPage() {
  const q = h('input', {id: 'order-q', type: 'search', placeholder: 'Order reference or id, e-mail, buyer, number or seat', value: sessionStorage.getItem('order-q') || ''});
  const results = h('div', {id: 'order-results'});
  const search = guarded(async () => {
    sessionStorage.setItem('order-q', q.value);
    const list = await api('GET', `/v1/tenant/orders?q=${encodeURIComponent(q.value)}`);
    results.replaceChildren(list.length === 0 ? h('p', {class: 'muted'}, 'No orders found.') :
      table(['Order', 'For', 'E-mail', 'Buyer', 'Seats', 'Status', 'Amount', 'Created'], list.map((o) => h('tr', {},
        h('td', {}, h('a', {href: `#/orders/${o.id}`}, o.ref)), h('td', {class: 'for'}, dated(o.product, o.startsAt)), h('td', {}, o.email), h('td', {}, o.buyerId),
        h('td', {}, o.seats.join(', ')), h('td', {}, stateName(o.status)), h('td', {class: 'num'}, money(o.amountCents, o.currency)), h('td', {}, when(o.createdAt))))));
  });
  page('Orders', h('form', {class: 'inline', onsubmit: search}, q, h('button', {class: 'primary', type: 'submit'}, 'Search')), results);
  await search();
}

async function orderPage(id) {
  const t = await api('GET', `/v1/tenant/orders/${id}`);
  const o = t.order;
  const refundable = isTenantAdmin() && o.status === 'CONFIRMED' && t.tickets.some((k) => k.status === 'VALID');
  const picks = new Map(); // ticket id -> checkbox
  const ticketRows = t.tickets.map((k) => {
    const label = k.seat || `Number ${k.number}`;
    const pick = refundable && k.status === 'VALID' ? h('input', {type: 'checkbox', class: 'refund-pick', 'aria-label': `Refund ${label}`}) : null;
    if (pick) picks.set(k.id, pick);
    return h('tr', {dataset: {ticket: k.id, status: k.status}}, refundable ? h('td', {}, pick) : null,
      h('td', {}, label), h('td', {class: 'ticket-status'}, stateName(k.status), k.heldBy ? h('span', {class: 'muted'}, ` · held by ${k.heldBy}`) : null),
      h('td', {}, k.checkedInAt ? `${when(k.checkedInAt)} by ${k.checkedInBy}` : 'no'),
      // A check-in cannot be undone, and the gate turns the ticket away
      // after it: the desk confirms it first, as a refund.
      h('td', {}, k.checkedInAt || k.status !== 'VALID' ? '' : h('button', {class: 'check-in', onclick: confirmed(`Check in ${label}?`, async () => {
        await api('POST', '/v1/tickets/check-in', {code: k.code});
        route();
      })}, 'Check in')));
  });
  page(`Order ${o.ref}`, h('p', {id: 'order-for'}, dated(o.product, o.startsAt)),
    h('div', {class: 'tiles'}, tile('Status', stateName(o.status), 'order-status'), tile('Capture', stateName(o.captureStatus)), tile('Amount', money(o.amountCents, o.currency)),
      o.refundedCents ? tile('Refunded', money(o.refundedCents, o.currency), 'refunded') : null,
      tile('Buyer', o.buyerId), tile('E-mail', o.email || '—'), tile('Seats', o.seats.join(', '))),
    h('h2', {}, 'Timeline'),
    table(['When', 'Source', 'What', 'Detail'], t.events.map((e) => h('tr', {}, h('td', {}, when(e.at)), h('td', {}, e.source), h('td', {}, timelineWhat(e.what)), h('td', {}, e.detail || '')))),
    h('h2', {}, 'Tickets'),
    t.tickets.length === 0 ? h('p', {class: 'muted'}, 'No tickets: the order is not confirmed.') :
      table([refundable ? 'Refund' : null, 'Seat', 'State', 'Checked in', ''].filter((c) => c !== null), ticketRows),
    isTenantAdmin() && t.tickets.some((k) => k.status === 'VALID') && ['CONFIRMED', 'REFUND_PENDING', 'REFUND_FAILED'].includes(o.status) ?
      h('form', {class: 'inline', onsubmit: (ev) => ev.preventDefault()}, h('button', {type: 'button', id: 'resend-tickets', onclick: guarded(async (ev) => {
        const b = ev.target;
        await api('POST', `/v1/tenant/orders/${o.id}/tickets/resend`);
        b.textContent = `Sent again to ${o.email || 'the buyer'}`;
        b.disabled = true;
      })}, 'Resend the tickets')) : null,
    refundable ? refundForm(o, picks) : null,
    t.refunds.length ? [h('h2', {}, 'Refunds'), refundsTable(t.refunds)] : null);
  if (o.status === 'REFUND_PENDING') {
    const timer = setTimeout(() => route(), 2000);
    stopPage = () => clearTimeout(timer);
  }
}

// refundForm refunds the tickets ticked, or the whole order. One key per
// form shown, so a second click or a retried request is the same refund.
function refundForm(o, picks) {
  const key = crypto.randomUUID();
  const reason = h('input', {id: 'refund-reason', required: true, maxlength: 500, placeholder: 'e.g. the buyer cannot attend'});
  const ticked = () => [...picks].filter(([, c]) => c.checked).map(([id]) => id);
  // The form's mistakes show on the first click; a valid refund asks for a
  // second one.
  const send = (all) => {
    const go = confirmed(all ? `Refund all of ${money(o.amountCents - o.refundedCents, o.currency)}?` : 'Refund the ticked tickets?', async () => {
      await api('POST', `/v1/tenant/orders/${o.id}/refunds`, {ticketIds: all ? undefined : ticked(), reason: reason.value.trim()},
        {key: key + (all ? ':all' : `:${ticked().join(',')}`)});
      route();
    });
    return (ev) => {
      const form = ev.currentTarget.closest('form');
      form.querySelector('.error')?.remove();
      const problem = !all && ticked().length === 0 ? 'Tick the tickets to refund, or refund the whole order.' :
        !reason.value.trim() ? 'Say why: the buyer is told.' : '';
      if (problem) return form.append(errorBox(new Error(problem)));
      return go(ev);
    };
  };
  return h('form', {class: 'panel', id: 'refund-form', onsubmit: (ev) => ev.preventDefault()},
    h('h2', {}, 'Refund'),
    h('p', {class: 'muted'}, 'The tickets stop admitting at once; the money goes back to the buyer\'s card. Seats go back on sale or stay off it by the product\'s refund policy.'),
    h('label', {}, 'Reason', reason),
    h('div', {class: 'row'},
      h('button', {type: 'button', id: 'refund-selected', onclick: send(false)}, 'Refund ticked tickets'),
      h('button', {type: 'button', class: 'danger', id: 'refund-all', onclick: send(true)}, 'Refund the whole order')));
}

function refundsTable(refunds) {
  return table(['Asked', 'Kind', 'State', 'Amount', 'Numbers', 'Reason', 'By', ''], refunds.map((r) => {
    let act = '';
    if (r.status === 'REFUND_FAILED' && isTenantAdmin()) {
      const note = h('input', {class: 'settle-note', placeholder: 'How it was paid back', 'aria-label': 'How it was paid back'});
      act = h('form', {class: 'inline', onsubmit: (ev) => ev.preventDefault()},
        h('button', {type: 'button', class: 'retry-refund', onclick: guarded(async () => {
          await api('POST', `/v1/tenant/refunds/${r.id}/retry`);
          route();
        })}, 'Retry'),
        note,
        h('button', {type: 'button', class: 'settle-refund', onclick: guarded(async () => {
          if (!note.value.trim()) throw new Error('Say how the money was given back.');
          await api('POST', `/v1/tenant/refunds/${r.id}/settle`, {note: note.value.trim()});
          route();
        })}, 'Settled by hand'));
    }
    return h('tr', {class: 'refund', dataset: {status: r.status}}, h('td', {}, when(r.createdAt)),
      h('td', {}, r.kind === 'CANCELLATION' ? `cancelled by the buyer (fee ${money(r.feeCents, r.currency)})` : 'refund'),
      h('td', {}, stateName(r.status), r.lastError && r.status === 'REFUND_FAILED' ? h('div', {class: 'muted'}, r.lastError) : null,
        r.settledByHand ? h('div', {class: 'muted'}, `by hand: ${r.settledByHand}`) : null),
      h('td', {class: 'num'}, money(r.amountCents, r.currency)), h('td', {}, r.numbers.join(', ')),
      h('td', {}, r.reason), h('td', {}, r.requestedBy), h('td', {}, act));
  }));
}

// ---------- store ----------

async function storePage() {
  const p = await api('GET', `/v1/stores/${session.tenant.slug}`);
  const theme = p.theme || {};
  const colours = p.colours || {};
  const f = {
    name: h('input', {id: 's-name', value: p.name}),
    primary: h('input', {id: 's-primary', type: 'color', value: colours.primary}),
    accent: h('input', {id: 's-accent', type: 'color', value: colours.accent}),
    background: h('input', {id: 's-background', type: 'color', value: colours.background}),
    text: h('input', {id: 's-text', type: 'color', value: colours.text}),
    language: h('select', {id: 's-language'}, [['en', 'English'], ['pt', 'Português']].map(([v, label]) =>
      h('option', {value: v, selected: (theme.language || 'en') === v}, label))),
    replyTo: h('input', {id: 's-reply-to', type: 'email', value: theme.replyTo || '', placeholder: 'box-office@example.com'}),
    logo: h('input', {id: 's-logo', value: theme.logoUrl || '', placeholder: 'https://… or logo URL from an upload'}),
    domains: h('input', {id: 's-domains', value: (p.domains || []).join(', '), placeholder: 'tickets.example.com'}),
  };
  const preview = h('div', {class: 'preview', id: 'store-preview'});
  const draw = () => {
    preview.style.background = f.background.value; preview.style.color = f.text.value;
    const btn = h('span', {class: 'btn'}, 'Reserve');
    btn.style.background = f.primary.value; btn.style.color = '#fff';
    const tag = h('span', {class: 'badge'}, 'On sale');
    tag.style.background = f.accent.value; tag.style.color = '#fff';
    preview.replaceChildren(...[f.logo.value.startsWith('https://') ? h('img', {src: f.logo.value, alt: '', style: 'max-height:40px'}) : null,
      h('h2', {}, f.name.value || 'Your store'), h('p', {}, tag, ' Sample event · 12 seats left'), btn].filter(Boolean));
    // The store draws white on the primary and accent colours, and the text
    // on the background: below WCAG's 4.5:1 shoppers struggle to read it.
    const hard = [['Text on the background', f.text.value, f.background.value], ['White on the primary colour', '#ffffff', f.primary.value],
      ['White on the accent colour', '#ffffff', f.accent.value]].filter(([, a, b]) => contrast(a, b) < 4.5);
    contrastNote.replaceChildren(...hard.map(([what, a, b]) => h('li', {}, `${what}: ${contrast(a, b).toFixed(1)}:1, below the 4.5:1 easy reading needs`)));
    contrastNote.hidden = hard.length === 0;
  };
  const contrastNote = h('ul', {class: 'notice', id: 'contrast-note', role: 'status'});
  Object.values(f).forEach((el) => el.addEventListener('input', draw));
  draw();
  const status = h('p', {id: 'store-status', class: 'muted'});
  const logoStatus = h('p', {class: 'muted', id: 's-logo-status', role: 'status'});
  const form = h('form', {class: 'panel', onsubmit: guarded(async () => {
    // Keys the form does not show (font, …) are kept as they were.
    const t = {...theme, primary: f.primary.value, accent: f.accent.value, background: f.background.value, text: f.text.value,
      language: f.language.value, logoUrl: f.logo.value.trim(), replyTo: f.replyTo.value.trim()};
    for (const k of ['logoUrl', 'replyTo']) if (!t[k]) delete t[k];
    await api('PUT', '/v1/store', {name: f.name.value, theme: t, domains: f.domains.value.split(',').map((d) => d.trim()).filter(Boolean)});
    status.textContent = 'Saved: the store is being rebuilt and published.';
  })},
  h('label', {}, 'Store name', f.name), h('div', {class: 'row'}, ['primary', 'accent', 'background', 'text'].map((k) => h('label', {}, k, f[k]))),
  h('div', {class: 'row'}, h('label', {}, 'Logo URL', f.logo),
    h('label', {}, 'or upload a logo (PNG, JPEG or WebP)', uploader('s-logo-file', '/v1/store/logo', 'logoUrl', f.logo, logoStatus))),
  logoStatus, h('label', {}, 'Domains (comma-separated)', f.domains),
  h('div', {class: 'row'}, h('label', {}, 'Language of the store and its mail', f.language),
    h('label', {}, 'Replies to the store\'s mail go to', f.replyTo)),
  h('h2', {}, 'Preview'), preview, contrastNote,
  h('div', {class: 'row'}, h('button', {class: 'primary', type: 'submit', id: 'save-store'}, 'Save and publish'),
    h('button', {type: 'button', id: 'publish-store', onclick: guarded(async () => {
      const r = await api('POST', '/v1/store/publish');
      status.textContent = 'Publishing…';
      if (r.storeUrl) status.replaceChildren('Publishing: ', h('a', {href: r.storeUrl, target: '_blank', rel: 'noopener'}, r.storeUrl));
    })}, 'Publish again'),
    h('a', {href: `/s/${session.tenant.slug}/`, target: '_blank', rel: 'noopener'}, 'Open the store')),
  status);
  page('Store', form);
}

// ---------- API keys and secrets ----------

async function keysPage() {
  const tid = session.tenant.id;
  const keys = await api('GET', `/v1/tenants/${tid}/api-keys`);
  const shown = h('div', {id: 'shown-secret'});
  const role = h('select', {id: 'k-role'}, h('option', {value: 'operator'}, 'operator (watch, check in)'), h('option', {value: 'tenant-admin'}, 'tenant-admin (manage)'));
  const label = h('input', {id: 'k-label', placeholder: 'What it is for'});
  const overlap = h('input', {id: 'overlap', type: 'number', min: 0, value: 3600});
  page('API keys',
    shown,
    h('form', {class: 'inline panel', onsubmit: guarded(async () => {
      const k = await api('POST', `/v1/tenants/${tid}/api-keys`, {role: role.value, label: label.value});
      await keysPage();
      main.querySelector('#shown-secret').replaceChildren(h('p', {class: 'notice'}, 'The new key, shown once: copy it now.'), h('p', {class: 'secret', id: 'new-key'}, k.apiKey));
    })}, h('label', {}, 'Role', role), h('label', {}, 'Label', label), h('button', {class: 'primary', type: 'submit', id: 'create-key'}, 'Create key')),
    table(['Label', 'Prefix', 'Role', 'Created', 'Last used', 'State', ''], keys.map((k) => h('tr', {dataset: {key: k.id}},
      h('td', {}, k.label || '—'), h('td', {}, h('code', {}, k.prefix || '—')), h('td', {}, k.role), h('td', {}, when(k.createdAt)),
      h('td', {}, when(k.lastUsedAt)), h('td', {}, k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'active'),
      h('td', {}, k.revokedAt || k.id === session.keyId ? '' : h('button', {class: 'danger revoke', onclick: confirmed('Revoke? Click again', async () => {
        await api('DELETE', `/v1/tenants/${tid}/api-keys/${k.id}`);
        await keysPage();
      })}, 'Revoke'))))),
    h('h2', {}, 'Buyer-token secret'),
    h('form', {class: 'inline panel', onsubmit: guarded(async () => {
      const r = await api('POST', `/v1/tenants/${tid}/buyer-token-secret/rotate`, {overlapSeconds: Number(overlap.value)});
      main.querySelector('#shown-secret').replaceChildren(h('p', {class: 'notice'}, `New secret, shown once. Tokens signed with the previous one verify until ${when(r.previousValidUntil)}.`),
        h('p', {class: 'secret', id: 'new-secret'}, r.buyerTokenSecret));
    })}, h('label', {}, 'Overlap: seconds the previous secret still verifies', overlap), h('button', {type: 'submit', id: 'rotate'}, 'Rotate')));
}

// ---------- webhooks ----------

// shownSecret carries a new endpoint's secret to its page, which shows it
// once.
let shownSecret = null;

// webhooksPage lists the tenant's endpoints and subscribes a new one.
async function webhooksPage() {
  const tid = session.tenant.id;
  const [{endpoints}, {types}] = await Promise.all([api('GET', `/v1/tenants/${tid}/webhooks`), api('GET', '/v1/webhook-event-types')]);
  const f = {
    url: h('input', {id: 'w-url', type: 'url', required: true, placeholder: 'https://crm.example.com/boxoffice'}),
    description: h('input', {id: 'w-description', maxlength: 200, placeholder: 'What receives it'}),
    email: h('input', {id: 'w-email', type: 'email', required: true, value: '', placeholder: 'dev-team@example.com'}),
  };
  const picks = types.filter((t) => t.name !== 'webhook.test').map((t) =>
    h('label', {class: 'check', title: t.description}, h('input', {type: 'checkbox', class: 'w-type', value: t.name}), h('code', {}, t.name)));
  const form = h('form', {class: 'panel', id: 'webhook-form', onsubmit: guarded(async () => {
    const eventTypes = [...form.querySelectorAll('.w-type:checked')].map((c) => c.value);
    const e = await api('POST', `/v1/tenants/${tid}/webhooks`, {url: f.url.value.trim(), description: f.description.value.trim(),
      alertEmail: f.email.value.trim(), eventTypes});
    shownSecret = {id: e.id, secret: e.secret};
    location.hash = `#/webhooks/${e.id}`;
  })},
  h('h2', {}, 'New endpoint'),
  h('label', {}, 'URL (https)', f.url),
  h('div', {class: 'row'}, h('label', {}, 'Description', f.description), h('label', {}, 'Alert e-mail (told if it is disabled)', f.email)),
  h('fieldset', {class: 'types'}, h('legend', {}, 'Events (none ticked: every event)'), picks),
  h('button', {class: 'primary', type: 'submit', id: 'create-webhook'}, 'Create the endpoint'));
  const state = (e) => !e.enabled ? h('span', {class: 'badge paused'}, 'disabled') :
    e.failingSince ? h('span', {class: 'badge DRAFT'}, `failing since ${when(e.failingSince)}`) : h('span', {class: 'badge ON_SALE'}, 'enabled');
  page('Webhooks',
    h('p', {class: 'muted'}, 'BoxOffice POSTs your events to these endpoints as they happen, signed the Standard Webhooks way, and retries for about a day. ',
      h('a', {href: '/docs', target: '_blank', rel: 'noopener'}, 'API reference (Webhooks)')),
    endpoints.length === 0 ? h('p', {class: 'muted', id: 'no-webhooks'}, 'No endpoints yet.') :
      table(['Endpoint', 'Events', 'State', 'Created'], endpoints.map((e) => h('tr', {class: 'webhook', dataset: {id: e.id}},
        h('td', {}, h('a', {href: `#/webhooks/${e.id}`}, e.url), e.description ? h('div', {class: 'muted'}, e.description) : null),
        h('td', {}, e.eventTypes.length ? e.eventTypes.join(', ') : 'every event'), h('td', {}, state(e)), h('td', {}, when(e.createdAt))))),
    form);
}

// webhookPage is one endpoint: its settings, a test event, the secret's
// rotation, and the delivery log (refreshed while open) with redelivery.
async function webhookPage(id) {
  const tid = session.tenant.id;
  const path = `/v1/tenants/${tid}/webhooks/${id}`;
  const [e, log] = await Promise.all([api('GET', path), api('GET', `${path}/deliveries?limit=50`)]);
  const secret = shownSecret?.id === id ? shownSecret.secret : null;
  shownSecret = null;
  const shown = h('div', {id: 'shown-secret'}, secret ? [h('p', {class: 'notice'}, 'The signing secret, shown once: copy it to your receiver now.'),
    h('p', {class: 'secret', id: 'new-secret'}, secret)] : null);
  const logBox = h('section', {id: 'deliveries'});
  // Deliveries opened to read their body and attempts, kept open (and
  // read again) as the log refreshes.
  const opened = new Map(); // delivery id -> its detail
  const detailRow = (d) => h('tr', {class: 'delivery-detail'}, h('td', {colspan: 8},
    h('pre', {class: 'body'}, JSON.stringify(d.body, null, 2)),
    table(['Attempt', 'When', 'Answer', 'Latency', 'Response'], d.attemptLog.map((a, i) => h('tr', {},
      h('td', {class: 'num'}, `${i + 1}${a.manual ? ' (redelivery)' : ''}`), h('td', {}, when(a.at)),
      h('td', {}, a.statusCode ? `HTTP ${a.statusCode}` : a.error), h('td', {class: 'num'}, `${n(a.durationMs)} ms`),
      h('td', {}, a.excerpt ? h('code', {class: 'excerpt'}, a.excerpt) : ''))))));
  const drawLog = (deliveries) => logBox.replaceChildren(h('h2', {}, 'Deliveries'), deliveries.length === 0 ?
    h('p', {class: 'muted', id: 'no-deliveries'}, 'Nothing sent yet: send a test event.') :
    table(['When', 'Event', 'Status', 'Attempts', 'Answer', 'Latency', 'Response', ''], deliveries.flatMap((d) => {
      const a = d.lastAttempt;
      const row = h('tr', {class: 'delivery', dataset: {id: d.id, status: d.status}},
        h('td', {}, when(d.createdAt)),
        h('td', {}, h('button', {class: 'link show-delivery', 'aria-expanded': String(opened.has(d.id)), onclick: guarded(async () => {
          if (opened.has(d.id)) opened.delete(d.id);
          else opened.set(d.id, await api('GET', `${path}/deliveries/${d.id}`));
          drawLog(deliveries);
        })}, h('code', {}, d.eventType)), h('div', {class: 'muted'}, `#${d.sequence}`)),
        h('td', {class: 'delivery-status'}, stateName(d.status)), h('td', {class: 'num attempts'}, d.attempts),
        h('td', {class: 'answer'}, a ? (a.statusCode ? `HTTP ${a.statusCode}` : a.error) : '—'),
        h('td', {class: 'num'}, a ? `${n(a.durationMs)} ms` : '—'),
        h('td', {}, a?.excerpt ? h('code', {class: 'excerpt'}, a.excerpt.slice(0, 120)) : ''),
        h('td', {}, e.enabled ? h('button', {class: 'redeliver', onclick: guarded(async (ev) => {
          ev.target.disabled = true;
          await api('POST', `${path}/deliveries/${d.id}/redeliver`);
          ev.target.textContent = 'Queued';
        })}, 'Redeliver') : ''));
      return opened.has(d.id) ? [row, detailRow(opened.get(d.id))] : [row];
    })));
  const refresh = async () => {
    const {deliveries} = await api('GET', `${path}/deliveries?limit=50`);
    for (const id of opened.keys()) opened.set(id, await api('GET', `${path}/deliveries/${id}`));
    drawLog(deliveries);
  };
  drawLog(log.deliveries);
  const overlap = h('input', {id: 'w-overlap', type: 'number', min: 0, max: 604800, value: 86400});
  const toggle = h('button', {id: 'w-toggle', class: e.enabled ? '' : 'primary', onclick: guarded(async () => {
    await api('PATCH', path, {enabled: !e.enabled});
    route();
  })}, e.enabled ? 'Disable' : 'Enable');
  page(e.url,
    shown,
    h('div', {class: 'tiles'}, tile('State', e.enabled ? 'enabled' : 'disabled', e.enabled ? '' : 'bad'),
      tile('Events', e.eventTypes.length ? e.eventTypes.join(', ') : 'every event'), tile('Alert e-mail', e.alertEmail),
      e.failingSince ? tile('Failing since', when(e.failingSince), 'warn') : null,
      e.previousSecretUntil ? tile('Previous secret signs until', when(e.previousSecretUntil)) : null),
    e.disabledReason ? h('p', {class: 'error', id: 'disabled-reason'}, `Disabled: ${e.disabledReason}`) : null,
    e.description ? h('p', {}, e.description) : null,
    h('div', {class: 'row panel'},
      h('button', {class: 'primary', id: 'send-test', disabled: !e.enabled, onclick: guarded(async () => {
        await api('POST', `${path}/test`);
        await refresh();
      })}, 'Send a test event'),
      toggle,
      h('button', {class: 'danger', id: 'w-delete', onclick: confirmed('Delete it and its log? Click again', async () => {
        await api('DELETE', path);
        location.hash = '#/webhooks';
      })}, 'Delete')),
    h('form', {class: 'inline panel', onsubmit: guarded(async () => {
      const r = await api('POST', `${path}/secret/rotate`, {overlapSeconds: Number(overlap.value)});
      main.querySelector('#shown-secret').replaceChildren(h('p', {class: 'notice'}, `New secret, shown once. Deliveries are signed with the previous one too until ${when(r.previousValidUntil)}.`),
        h('p', {class: 'secret', id: 'new-secret'}, r.secret));
    })}, h('label', {}, 'Overlap: seconds the previous secret still signs', overlap), h('button', {type: 'submit', id: 'w-rotate'}, 'Rotate the secret')),
    logBox);
  // The log follows deliveries as they are tried.
  const timer = setInterval(async () => {
    try { await refresh(); } catch { /* the next tick tries again */ }
  }, 2000);
  stopPage = () => clearInterval(timer);
}

// ---------- operations (platform admin) ----------

async function opsPage() {
  const [co, q, dlq, jobs] = await Promise.all([api('GET', '/v1/ops/checkout'), api('GET', '/v1/ops/queues'),
    api('GET', '/v1/ops/dlq'), api('GET', '/v1/ops/river/discarded')]);
  const reason = h('input', {id: 'pause-reason', placeholder: 'Why (operators only)'});
  const message = h('input', {id: 'pause-message', maxlength: 300,
    placeholder: 'Optional: what shoppers are told (default: payments are paused, seats stay held)'});
  const again = () => route();
  // Pausing stops new checkouts of every tenant: the first press asks.
  const confirmPause = h('p', {class: 'notice', id: 'pause-confirm', hidden: true},
    'This stops new checkouts for every tenant at once. Press again to pause.');
  const pause = guarded(async () => {
    if (confirmPause.hidden) {
      confirmPause.hidden = false;
      return;
    }
    await api('POST', '/v1/ops/checkout/pause', {reason: reason.value, shopperMessage: message.value});
    again();
  });
  page('Operations',
    h('section', {class: 'panel', id: 'checkout-switch'}, h('h2', {}, 'Checkout'),
      h('p', {}, 'New checkouts are ', h('strong', {id: 'checkout-state'}, co.paused ? `paused: ${co.reason}` : 'open'), '.'),
      co.paused ? h('button', {class: 'primary', id: 'resume', onclick: guarded(async () => { await api('POST', '/v1/ops/checkout/resume'); again(); })}, 'Resume checkout') :
        h('form', {class: 'inline', onsubmit: pause},
          h('label', {}, 'Reason', reason), h('label', {}, 'Message to shoppers', message),
          h('button', {class: 'danger', type: 'submit', id: 'pause'}, 'Pause checkout'), confirmPause)),
    h('section', {class: 'panel'}, h('h2', {}, `Queues (${{river: 'River', sqs: 'SQS'}[q.backend] || q.backend})`),
      table(['Queue', 'Available', 'Running', 'Retryable', 'Discarded', 'Oldest (seconds)'], q.river.map((r) => h('tr', {},
        h('td', {}, r.name), h('td', {class: 'num'}, n(r.available)), h('td', {class: 'num'}, n(r.running)), h('td', {class: 'num'}, n(r.retryable)),
        h('td', {class: 'num'}, n(r.discarded)), h('td', {class: 'num'}, r.oldestAvailableAgeSeconds.toFixed(1))))),
      q.sqs ? h('p', {id: 'sqs-depth'}, `SQS main: ${n(q.sqs.main.visible)} visible, ${n(q.sqs.main.notVisible)} in flight · dead letters: ${n(q.sqs.dlq.visible)}`) : null,
      h('p', {}, h('a', {href: '/ops/river', target: '_blank', rel: 'noopener'}, 'River UI'))),
    h('section', {class: 'panel', id: 'dlq'}, h('h2', {}, 'Dead-letter queue'),
      dlq.backend !== 'sqs' ? h('p', {class: 'muted'}, 'The River backend has no dead-letter queue: see discarded jobs.') : [
        dlq.messages.length === 0 ? h('p', {class: 'muted', id: 'dlq-empty'}, 'Empty.') :
          table(['Message', 'Request', 'Sent'], dlq.messages.map((m) => h('tr', {class: 'dead-letter'}, h('td', {}, h('code', {}, m.messageId.slice(0, 12))),
            h('td', {}, m.request ? `request ${m.request.requestId} (product ${m.request.productId})` : h('code', {}, m.body.slice(0, 80))),
            h('td', {}, when(m.sentAt))))),
        h('button', {class: 'primary', id: 'redrive', disabled: dlq.messages.length === 0, onclick: guarded(async () => {
          const r = await api('POST', '/v1/ops/dlq/redrive');
          await opsPage();
          main.querySelector('#dlq').append(h('p', {class: 'notice', id: 'redriven'}, `Moved ${r.moved} message(s) back to the main queue.`));
        })}, 'Redrive all to the main queue')]),
    h('section', {class: 'panel', id: 'discarded'}, h('h2', {}, 'Discarded jobs'),
      jobs.jobs.length === 0 ? h('p', {class: 'muted'}, 'None.') :
        table(['Job', 'Kind', 'Queue', 'Attempts', 'Last error', ''], jobs.jobs.map((j) => h('tr', {},
          h('td', {}, j.id), h('td', {}, j.kind), h('td', {}, j.queue), h('td', {class: 'num'}, j.attempt), h('td', {}, j.lastError || ''),
          h('td', {}, h('button', {onclick: guarded(async () => { await api('POST', `/v1/ops/river/jobs/${j.id}/retry`); again(); })}, 'Retry')))))));
}

// ---------- audit ----------

async function auditPage() {
  const {entries} = await api('GET', '/v1/audit?limit=200');
  page('Audit log', table(['When', 'Who', 'Action', 'Target', 'Status', 'From'], entries.map((e) => h('tr', {class: 'audit-entry'},
    h('td', {}, when(e.at)), h('td', {}, e.actor), h('td', {}, e.action), h('td', {}, h('code', {}, e.target)),
    h('td', {class: 'num'}, e.status), h('td', {}, e.from)))));
}
