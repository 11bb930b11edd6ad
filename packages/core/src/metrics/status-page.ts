// The status page served at / on the monitor port: one HTML document with its style and script
// inline (no framework, nothing fetched from elsewhere), built on /status (the sites) and /nodes
// (one page of one site's nodes, filtered, searched and sorted by the provisioner, so 100,000
// nodes never reach the browser at once). It polls both every 2 s. Everything a node or a helper
// said (identities, errors) is put in with textContent, never parsed as HTML; the
// Content-Security-Policy allows only this script and style, and requests to this origin.
import { createHash } from 'node:crypto';

const STYLE = `
:root { --fg: #1d2330; --muted: #667085; --line: #d9dee7; --bg: #f6f7f9; --card: #fff; --ok: #1a7f37; --bad: #c62828; --warn: #9a6700; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: baseline; padding: .75rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1rem; margin: 0; }
.muted { color: var(--muted); }
#error { color: var(--bad); font-weight: 600; }
#notice { font-weight: 600; }
#notice.bad { color: var(--bad); }
.auth { margin-left: auto; display: flex; gap: .35rem; align-items: center; }
.auth input { width: 12rem; }
button.act { font: inherit; font-size: .8rem; padding: .05rem .5rem; margin-right: .25rem; cursor: pointer; }
main, section { padding: .75rem 1rem; }
#sites { display: grid; gap: .75rem; grid-template-columns: repeat(auto-fill, minmax(min(100%, 26rem), 1fr)); }
.site { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; }
.site h2 { font-size: 1rem; margin: 0 0 .4rem; }
.badges { display: flex; flex-wrap: wrap; gap: .35rem; margin-bottom: .5rem; }
.badge { border-radius: 999px; padding: .05rem .55rem; font-size: .8rem; border: 1px solid var(--line); }
.badge.good { color: var(--ok); border-color: var(--ok); }
.badge.bad { color: var(--bad); border-color: var(--bad); }
.badge.warn { color: var(--warn); border-color: var(--warn); }
.stats { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; margin: 0 0 .5rem; }
.stats div { display: flex; gap: .35rem; }
.stats dt { color: var(--muted); }
.stats dd { margin: 0; font-weight: 600; }
.counts { display: flex; flex-wrap: wrap; gap: .35rem; list-style: none; padding: 0; margin: 0 0 .5rem; }
.counts button { font: inherit; border: 1px solid var(--line); background: var(--bg); border-radius: 6px; padding: .1rem .5rem; cursor: pointer; }
.counts button b { margin-right: .25rem; }
.chart { width: 100%; height: 64px; display: block; }
.chart rect.ok { fill: var(--accent); }
.chart rect.failed { fill: var(--bad); }
.chart-caption { font-size: .8rem; color: var(--muted); }
#nodes h2 { font-size: 1rem; margin: 0 0 .5rem; }
.controls { display: flex; flex-wrap: wrap; gap: .5rem 1rem; margin-bottom: .5rem; }
.controls label { display: flex; gap: .35rem; align-items: center; }
select, input { font: inherit; padding: .2rem .35rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
input[type=search] { min-width: 14rem; }
.table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; min-width: 48rem; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { cursor: pointer; user-select: none; white-space: nowrap; background: var(--bg); position: sticky; top: 0; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td.error { color: var(--bad); max-width: 36rem; overflow-wrap: anywhere; }
td.identity { font-family: ui-monospace, monospace; white-space: nowrap; }
.pager { display: flex; gap: .75rem; align-items: center; margin-top: .5rem; }
.pager button { font: inherit; padding: .2rem .7rem; }
@media (max-width: 40rem) { main, section { padding: .5rem; } input[type=search] { min-width: 0; width: 100%; } .controls label { flex: 1 1 100%; } }
`;

const SCRIPT = `
'use strict';
const POLL_MS = 2000;
const PAGE_SIZE = 100;
const view = { site: undefined, state: '', search: '', sort: 'identity', order: 'asc', offset: 0 };
// the token is kept for this tab only (sessionStorage) and sent only as a bearer header to this origin
const TOKEN_KEY = 'choria-provisioner-api-token';
const ACTIVE = ['queued', 'provisioning', 'held', 'locked'];
const $ = (id) => document.getElementById(id);
let sitesCache = [];
let timer;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return e;
}
const svg = (tag, attrs) => {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
};
const num = (n) => Number(n).toLocaleString('en');
function ago(iso) {
  if (!iso) return '';
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  const a = Math.abs(s);
  if (a < 2) return 'now';
  const text = a < 90 ? a + ' s' : a < 5400 ? Math.round(a / 60) + ' min' : Math.round(a / 3600) + ' h';
  return s >= 0 ? 'in ' + text : text + ' ago';
}

function role(s) {
  const c = s.coordination || {};
  if (c.effective === 'active_active') return ['active member' + (c.membership ? ' (' + c.membership.members.length + ' members, ' + c.membership.state + ')' : ''), c.membership && c.membership.state === 'formed' ? 'good' : 'warn'];
  if (c.effective === 'lock_only') return ['active/active lock-only', 'warn'];
  if (s.leader === true) return ['leader', 'good'];
  if (s.leader === false) return ['standby', 'warn'];
  return undefined;
}

function chart(recent) {
  const box = svg('svg', { class: 'chart', viewBox: '0 0 300 64', preserveAspectRatio: 'none', role: 'img' });
  if (!recent) return box;
  const perMin = 60000 / recent.slotMs;
  const ok = recent.provisioned.map((n) => n * perMin);
  const failed = recent.failed.map((n) => n * perMin);
  const max = Math.max(1, ...ok.map((v, i) => v + failed[i]));
  const w = 300 / ok.length;
  ok.forEach((v, i) => {
    const h1 = (v / max) * 60;
    const h2 = (failed[i] / max) * 60;
    if (h1 > 0) box.append(svg('rect', { class: 'ok', x: i * w + 0.5, y: 64 - h1, width: Math.max(1, w - 1), height: h1 }));
    if (h2 > 0) box.append(svg('rect', { class: 'failed', x: i * w + 0.5, y: 64 - h1 - h2, width: Math.max(1, w - 1), height: h2 }));
  });
  const title = svg('title', {});
  title.textContent = 'nodes per minute, last ' + Math.round((recent.slotMs * ok.length) / 60000) + ' minutes';
  box.prepend(title);
  box.setAttribute('aria-label', title.textContent);
  return box;
}

function lastMinute(recent) {
  const slots = Math.max(1, Math.round(60000 / recent.slotMs));
  return recent.provisioned.slice(-slots).reduce((a, n) => a + n, 0);
}

function siteCard(s) {
  const badges = el('div', { class: 'badges' },
    el('span', { class: 'badge ' + (s.paused ? 'warn' : 'good'), 'data-field': 'run-state' }, s.paused ? 'paused' : 'running'),
    el('span', { class: 'badge ' + (s.connected ? 'good' : 'bad'), 'data-field': 'connection' }, s.connected ? 'connected' : 'not connected'));
  const r = role(s);
  if (r) badges.append(el('span', { class: 'badge ' + r[1], 'data-field': 'role' }, r[0]));
  if (s.dryRun) badges.append(el('span', { class: 'badge warn', 'data-field': 'dry-run' }, 'dry run'));
  const toggle = el('button', { type: 'button', class: 'act', 'data-action': s.paused ? 'resume' : 'pause' }, s.paused ? 'resume' : 'pause');
  toggle.addEventListener('click', () => act((s.paused ? 'resume' : 'pause') + siteParam(s.site)));
  badges.append(toggle);
  if (s.history) badges.append(el('span', { class: 'badge' + (s.history.store === 'kv' ? '' : ' warn'), 'data-field': 'history', title: s.history.reason || '' }, s.history.store === 'kv' ? 'history: ' + s.history.bucket + (s.history.connection === 'choria' ? ' (choria account)' : '') : 'history: this process only'));
  const stat = (label, value, field) => el('div', {}, el('dt', {}, label), el('dd', { 'data-field': field }, value));
  const stats = el('dl', { class: 'stats' },
    stat('workers busy', s.busyWorkers + ' / ' + s.workers, 'workers'),
    stat('queue', num(s.queue), 'queue'),
    stat('finished in the last minute', s.recent ? num(lastMinute(s.recent)) : '-', 'rate'));
  const counts = el('ul', { class: 'counts', 'aria-label': 'nodes per state' });
  for (const [state, n] of Object.entries(s.hostCounts).sort()) {
    const b = el('button', { type: 'button', 'data-count': state, title: 'show the ' + state + ' nodes' }, el('b', {}, num(n)), state);
    b.addEventListener('click', () => { view.site = s.site; view.state = state; view.offset = 0; reload(); });
    counts.append(el('li', {}, b));
  }
  return el('article', { class: 'site', 'data-site': s.site },
    el('h2', {}, 'site ' + (s.site === '' ? '(none)' : s.site), el('span', { class: 'muted' }, ' ' + s.identity + ' · ' + s.version)),
    badges, stats, counts, chart(s.recent),
    el('div', { class: 'chart-caption' }, 'nodes per minute over the last 10 minutes (red: failed)'));
}

function renderSites(sites) {
  sitesCache = sites;
  $('sites').replaceChildren(...sites.map(siteCard));
  if (view.site === undefined || !sites.some((s) => s.site === view.site)) view.site = sites.length > 0 ? sites[0].site : undefined;
  const current = sites.find((s) => s.site === view.site);
  const states = current ? Object.keys(current.hostCounts).sort() : [];
  if (view.state !== '' && !states.includes(view.state)) states.push(view.state);
  // the menus are rebuilt only when their choices change: not under the user's hand every poll
  replaceOptions($('site'), sites.map((s) => [s.site, s.site === '' ? '(none)' : s.site]), view.site);
  replaceOptions($('state'), [['', 'every state'], ...states.map((st) => [st, st])], view.state);
}

function replaceOptions(select, choices, selected) {
  const key = JSON.stringify([choices, selected]);
  if (select.dataset.choices === key) return;
  select.dataset.choices = key;
  select.replaceChildren(...choices.map(([value, label]) => el('option', { value, selected: value === selected }, label)));
}

function nodeActions(n) {
  const buttons = [];
  const add = (action, label) => {
    const b = el('button', { type: 'button', class: 'act', 'data-action': action }, label);
    b.addEventListener('click', () => act('nodes/' + encodeURIComponent(n.identity) + '/' + action + siteParam(view.site)));
    buttons.push(b);
  };
  if (n.state === 'quarantined') add('release', 'release');
  if (!ACTIVE.includes(n.state)) add('retry', 'retry now');
  return buttons;
}

function renderNodes(page) {
  const rows = page.nodes.map((n) => el('tr', { 'data-identity': n.identity },
    el('td', { class: 'identity' }, n.identity),
    el('td', { 'data-field': 'state' }, n.state),
    el('td', {}, n.step || ''),
    el('td', {}, String(n.attempts)),
    el('td', { class: 'error', 'data-field': 'lastError' }, n.lastError || ''),
    el('td', { title: n.nextAttemptAt || '' }, ago(n.nextAttemptAt)),
    el('td', { title: n.updatedAt || '' }, ago(n.updatedAt)),
    el('td', {}, ...nodeActions(n))));
  $('node-rows').replaceChildren(...rows);
  const first = page.total === 0 ? 0 : page.offset + 1;
  $('range').textContent = num(first) + '–' + num(page.offset + page.nodes.length) + ' of ' + num(page.total);
  $('prev').disabled = page.offset === 0;
  $('next').disabled = page.offset + page.nodes.length >= page.total;
  for (const th of document.querySelectorAll('th[data-sort]')) th.setAttribute('aria-sort', th.dataset.sort === view.sort ? (view.order === 'asc' ? 'ascending' : 'descending') : 'none');
}

function notice(text, bad) {
  const n = $('notice');
  n.textContent = text;
  n.className = bad ? 'bad' : '';
}

/** A control request (POST) with the token; says what came of it and polls again. */
async function act(path) {
  const token = sessionStorage.getItem(TOKEN_KEY) || '';
  if (token === '') {
    notice("enter the API token (the site's monitor_api_token) first", true);
    return;
  }
  try {
    const res = await fetch(path, { method: 'POST', cache: 'no-store', headers: { authorization: 'Bearer ' + token } });
    const body = await res.json().catch(() => ({}));
    if (res.ok) notice((body.sites || []).map((s) => (s.site === '' ? '(none)' : s.site) + ': ' + s.result).join('; '), false);
    else notice(body.error || path.split('?')[0] + ' answered ' + res.status, true);
  } catch (err) {
    notice('could not reach the provisioner: ' + err.message, true);
  }
  poll();
}
const siteParam = (site) => '?site=' + encodeURIComponent(site);

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store', headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(path.split('?')[0] + ' answered ' + res.status);
  return res.json();
}

/** The /nodes query of what the table shows now. */
function nodesQuery() {
  const q = new URLSearchParams({ site: view.site, sort: view.sort, order: view.order, offset: String(view.offset), limit: String(PAGE_SIZE) });
  if (view.state !== '') q.set('state', view.state);
  if (view.search !== '') q.set('search', view.search);
  return q.toString();
}

async function refreshNodes() {
  if (view.site === undefined) return;
  const wanted = nodesQuery();
  const page = await getJson('nodes?' + wanted);
  // a slower answer to an older question must not overwrite a newer one
  if (wanted === nodesQuery()) renderNodes(page);
}
/** After the user changed the view: errors show at the next poll. */
const reload = () => refreshNodes().catch(() => undefined);

async function poll() {
  clearTimeout(timer);
  try {
    const status = await getJson('status?limit=0');
    renderSites(status.sites || []);
    await refreshNodes();
    $('error').textContent = '';
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  } catch (err) {
    $('error').textContent = 'could not reach the provisioner: ' + err.message;
  }
  timer = setTimeout(poll, POLL_MS);
}

$('token').value = sessionStorage.getItem(TOKEN_KEY) || '';
$('token').addEventListener('change', (e) => {
  const t = e.target.value.trim();
  if (t === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, t);
});
let searchTimer;
$('search').addEventListener('input', (e) => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => { view.search = e.target.value.trim(); view.offset = 0; reload(); }, 250);
});
$('state').addEventListener('change', (e) => { view.state = e.target.value; view.offset = 0; reload(); });
$('site').addEventListener('change', (e) => { view.site = e.target.value; view.state = ''; view.offset = 0; renderSites(sitesCache); reload(); });
$('prev').addEventListener('click', () => { view.offset = Math.max(0, view.offset - PAGE_SIZE); reload(); });
$('next').addEventListener('click', () => { view.offset += PAGE_SIZE; reload(); });
for (const th of document.querySelectorAll('th[data-sort]')) {
  th.addEventListener('click', () => {
    if (view.sort === th.dataset.sort) view.order = view.order === 'asc' ? 'desc' : 'asc';
    else { view.sort = th.dataset.sort; view.order = 'asc'; }
    view.offset = 0;
    reload();
  });
}
poll();
`;

const BODY = `<header>
  <h1>choria-provisioner</h1>
  <span id="updated" class="muted">loading…</span>
  <span id="error" role="alert"></span>
  <span id="notice" role="status"></span>
  <label class="auth" title="the site's monitor_api_token: needed to pause, resume, release and retry; kept in this tab only">API token <input id="token" type="password" autocomplete="off" placeholder="for pause, retry, release"></label>
</header>
<main id="sites" aria-label="sites"></main>
<section id="nodes">
  <h2>Nodes</h2>
  <div class="controls">
    <label>Site <select id="site"></select></label>
    <label>State <select id="state"><option value="">every state</option></select></label>
    <label>Identity <input id="search" type="search" placeholder="search by identity" autocomplete="off"></label>
  </div>
  <div class="table-wrap">
    <table>
      <thead><tr>
        <th data-sort="identity" scope="col">Identity</th>
        <th data-sort="state" scope="col">State</th>
        <th data-sort="step" scope="col">Step</th>
        <th data-sort="attempts" scope="col">Attempts</th>
        <th data-sort="lastError" scope="col">Last error</th>
        <th data-sort="nextAttemptAt" scope="col">Next attempt</th>
        <th data-sort="updatedAt" scope="col">Updated</th>
        <th scope="col">Actions</th>
      </tr></thead>
      <tbody id="node-rows"></tbody>
    </table>
  </div>
  <div class="pager"><button id="prev" type="button">‹ previous</button><span id="range"></span><button id="next" type="button">next ›</button></div>
</section>`;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('base64');

/** The page's HTML. */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>choria-provisioner status</title>
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script>${SCRIPT}</script>
</body>
</html>
`;

/** Only this page's own script and style run, and it talks only to the monitor port itself. */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${sha256(SCRIPT)}'`,
  `style-src 'sha256-${sha256(STYLE)}'`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
