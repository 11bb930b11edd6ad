// The status page's script, as it runs in the browser. It is type-checked and linted here like any
// module; the page inlines its source (page.ts) and calls it with the browser's `document`,
// `sessionStorage` and `fetch`, so it must stay one self-contained function: nothing from outside at run time
// (the `import type`s below vanish in the build). It polls /status and /nodes every 2 s and builds
// the DOM with textContent only: nothing a node or a helper said is ever parsed as HTML. The API
// token typed into the page goes with every request: a site that sets monitor_api_token lists its
// nodes only to it.
import type { PageControl, PageDocument, PageElement, PageEvent, PageFetch, PageStorage } from './browser.js';
import type { HostStatus, NodePage } from '../../provisioner/node-listing.js';
import type { ProvisionerStatus } from '../../provisioner/site-status.js';
import type { ThroughputSeries } from '../../provisioner/throughput.js';

type Attrs = Record<string, string | number | boolean | undefined | null>;
type Child = PageElement | string | number | undefined | null;

/** What the table shows: the site, the filters, the order and the page. */
interface View {
  site: string | undefined;
  state: string;
  search: string;
  sort: string;
  order: 'asc' | 'desc';
  offset: number;
}

/** What a control request answers (monitor/control.ts). */
interface ControlBody {
  error?: string;
  sites?: { site: string; result: string }[];
}

export function statusPageClient(document: PageDocument, sessionStorage: PageStorage, fetch: PageFetch): void {
  'use strict';
  const POLL_MS = 2000;
  const PAGE_SIZE = 100;
  const view: View = { site: undefined, state: '', search: '', sort: 'identity', order: 'asc', offset: 0 };
  // the token is kept for this tab only (sessionStorage) and sent only as a bearer header to this origin
  const TOKEN_KEY = 'choria-provisioner-api-token';
  const ACTIVE = ['queued', 'provisioning', 'held', 'locked'];
  const $ = <T extends PageElement = PageElement>(id: string): T => document.getElementById(id) as T;
  let sitesCache: ProvisionerStatus[] = [];
  /** The monitor port answered 401: the site lists its nodes only to its monitor_api_token. */
  class NeedsToken extends Error {}
  let timer: ReturnType<typeof setTimeout> | undefined;

  function el(tag: string, attrs: Attrs | undefined, ...children: Child[]): PageElement {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = String(v);
      else e.setAttribute(k, String(v));
    }
    for (const c of children)
      if (c !== undefined && c !== null) e.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
    return e;
  }
  const svg = (tag: string, attrs: Attrs): PageElement => {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  };
  const num = (n: number): string => Number(n).toLocaleString('en');
  function ago(iso: string | undefined): string {
    if (!iso) return '';
    const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
    const a = Math.abs(s);
    if (a < 2) return 'now';
    const text = a < 90 ? a + ' s' : a < 5400 ? Math.round(a / 60) + ' min' : Math.round(a / 3600) + ' h';
    return s >= 0 ? 'in ' + text : text + ' ago';
  }

  function role(s: ProvisionerStatus): [string, string] | undefined {
    const c = s.coordination;
    if (c.effective === 'active_active')
      return [
        'active member' +
          (c.membership ? ' (' + c.membership.members.length + ' members, ' + c.membership.state + ')' : ''),
        c.membership && c.membership.state === 'formed' ? 'good' : 'warn',
      ];
    if (c.effective === 'lock_only') return ['active/active lock-only', 'warn'];
    if (s.leader === true) return ['leader', 'good'];
    if (s.leader === false) return ['standby', 'warn'];
    return undefined;
  }

  function chart(recent: ThroughputSeries | undefined): PageElement {
    const box = svg('svg', { class: 'chart', viewBox: '0 0 300 64', preserveAspectRatio: 'none', role: 'img' });
    if (!recent) return box;
    const perMin = 60000 / recent.slotMs;
    const ok = recent.provisioned.map((n) => n * perMin);
    const failed = recent.failed.map((n) => n * perMin);
    const max = Math.max(1, ...ok.map((v, i) => v + (failed[i] ?? 0)));
    const w = 300 / ok.length;
    ok.forEach((v, i) => {
      const h1 = (v / max) * 60;
      const h2 = ((failed[i] ?? 0) / max) * 60;
      if (h1 > 0)
        box.append(svg('rect', { class: 'ok', x: i * w + 0.5, y: 64 - h1, width: Math.max(1, w - 1), height: h1 }));
      if (h2 > 0)
        box.append(
          svg('rect', { class: 'failed', x: i * w + 0.5, y: 64 - h1 - h2, width: Math.max(1, w - 1), height: h2 }),
        );
    });
    const title = svg('title', {});
    title.textContent = 'nodes per minute, last ' + Math.round((recent.slotMs * ok.length) / 60000) + ' minutes';
    box.prepend(title);
    box.setAttribute('aria-label', title.textContent);
    return box;
  }

  function lastMinute(recent: ThroughputSeries): number {
    const slots = Math.max(1, Math.round(60000 / recent.slotMs));
    return recent.provisioned.slice(-slots).reduce((a, n) => a + n, 0);
  }

  function siteCard(s: ProvisionerStatus): PageElement {
    const badges = el(
      'div',
      { class: 'badges' },
      el(
        'span',
        { class: 'badge ' + (s.paused ? 'warn' : 'good'), 'data-field': 'run-state' },
        s.paused ? 'paused' : 'running',
      ),
      el(
        'span',
        { class: 'badge ' + (s.connected ? 'good' : 'bad'), 'data-field': 'connection' },
        s.connected ? 'connected' : 'not connected',
      ),
    );
    const r = role(s);
    if (r) badges.append(el('span', { class: 'badge ' + r[1], 'data-field': 'role' }, r[0]));
    if (s.dryRun) badges.append(el('span', { class: 'badge warn', 'data-field': 'dry-run' }, 'dry run'));
    const toggle = el(
      'button',
      { type: 'button', class: 'act', 'data-action': s.paused ? 'resume' : 'pause' },
      s.paused ? 'resume' : 'pause',
    );
    toggle.addEventListener('click', () => act((s.paused ? 'resume' : 'pause') + siteParam(s.site)));
    badges.append(toggle);
    if (s.history) {
      const h = s.history;
      badges.append(
        el(
          'span',
          { class: 'badge' + (h.store === 'kv' ? '' : ' warn'), 'data-field': 'history', title: h.reason || '' },
          h.store === 'kv'
            ? 'history: ' + h.bucket + (h.connection === 'choria' ? ' (choria account)' : '')
            : 'history: this process only',
        ),
      );
    }
    const stat = (label: string, value: string, field: string): PageElement =>
      el('div', {}, el('dt', {}, label), el('dd', { 'data-field': field }, value));
    const stats = el(
      'dl',
      { class: 'stats' },
      stat(
        'workers busy',
        s.busyWorkers +
          ' / ' +
          s.workers +
          (s.watchingNodes > 0 ? ' (+' + s.watchingNodes + ' watching after a lost reply)' : ''),
        'workers',
      ),
      stat('queue', num(s.queue), 'queue'),
      stat('finished in the last minute', s.recent ? num(lastMinute(s.recent)) : '-', 'rate'),
    );
    const counts = el('ul', { class: 'counts', 'aria-label': 'nodes per state' });
    for (const [state, n] of Object.entries(s.hostCounts).sort()) {
      const b = el(
        'button',
        { type: 'button', 'data-count': state, title: 'show the ' + state + ' nodes' },
        el('b', {}, num(n)),
        state,
      );
      b.addEventListener('click', () => {
        view.site = s.site;
        view.state = state;
        view.offset = 0;
        reload();
      });
      counts.append(el('li', {}, b));
    }
    return el(
      'article',
      { class: 'site', 'data-site': s.site },
      el(
        'h2',
        {},
        'site ' + (s.site === '' ? '(none)' : s.site),
        el('span', { class: 'muted' }, ' ' + s.identity + ' · ' + s.version),
      ),
      badges,
      stats,
      counts,
      chart(s.recent),
      el('div', { class: 'chart-caption' }, 'nodes per minute over the last 10 minutes (red: failed)'),
    );
  }

  function renderSites(sites: ProvisionerStatus[]): void {
    sitesCache = sites;
    $('sites').replaceChildren(...sites.map(siteCard));
    if (view.site === undefined || !sites.some((s) => s.site === view.site))
      view.site = sites.length > 0 ? sites[0]?.site : undefined;
    const current = sites.find((s) => s.site === view.site);
    const states = current ? Object.keys(current.hostCounts).sort() : [];
    if (view.state !== '' && !states.includes(view.state)) states.push(view.state);
    // the menus are rebuilt only when their choices change: not under the user's hand every poll
    replaceOptions(
      $<PageControl>('site'),
      sites.map((s) => [s.site, s.site === '' ? '(none)' : s.site]),
      view.site,
    );
    replaceOptions(
      $<PageControl>('state'),
      [['', 'every state'], ...states.map((st): [string, string] => [st, st])],
      view.state,
    );
  }

  function replaceOptions(select: PageControl, choices: [string, string][], selected: string | undefined): void {
    const key = JSON.stringify([choices, selected]);
    if (select.dataset['choices'] === key) return;
    select.dataset['choices'] = key;
    select.replaceChildren(
      ...choices.map(([value, label]) => el('option', { value, selected: value === selected }, label)),
    );
  }

  function nodeActions(n: HostStatus): PageElement[] {
    const buttons: PageElement[] = [];
    const add = (action: string, label: string): void => {
      const b = el('button', { type: 'button', class: 'act', 'data-action': action }, label);
      b.addEventListener('click', () =>
        act('nodes/' + encodeURIComponent(n.identity) + '/' + action + siteParam(view.site)),
      );
      buttons.push(b);
    };
    if (n.state === 'quarantined') add('release', 'release');
    if (!ACTIVE.includes(n.state)) add('retry', 'retry now');
    return buttons;
  }

  function renderNodes(page: NodePage): void {
    const rows = page.nodes.map((n) =>
      el(
        'tr',
        { 'data-identity': n.identity },
        el('td', { class: 'identity' }, n.identity),
        el('td', { 'data-field': 'state' }, n.state),
        el('td', {}, n.step || ''),
        el('td', {}, String(n.attempts)),
        el('td', { class: 'error', 'data-field': 'lastError' }, n.lastError || ''),
        el('td', { title: n.nextAttemptAt || '' }, ago(n.nextAttemptAt)),
        el('td', { title: n.updatedAt || '' }, ago(n.updatedAt)),
        el('td', {}, ...nodeActions(n)),
      ),
    );
    $('node-rows').replaceChildren(...rows);
    const first = page.total === 0 ? 0 : page.offset + 1;
    $('range').textContent = num(first) + '–' + num(page.offset + page.nodes.length) + ' of ' + num(page.total);
    $<PageControl>('prev').disabled = page.offset === 0;
    $<PageControl>('next').disabled = page.offset + page.nodes.length >= page.total;
    for (const th of document.querySelectorAll('th[data-sort]'))
      th.setAttribute(
        'aria-sort',
        th.dataset['sort'] === view.sort ? (view.order === 'asc' ? 'ascending' : 'descending') : 'none',
      );
  }

  function notice(text: string, bad: boolean): void {
    const n = $('notice');
    n.textContent = text;
    n.className = bad ? 'bad' : '';
  }

  /** A control request (POST) with the token; says what came of it and polls again. */
  async function act(path: string): Promise<void> {
    const token = sessionStorage.getItem(TOKEN_KEY) || '';
    if (token === '') {
      notice("enter the API token (the site's monitor_api_token) first", true);
      return;
    }
    try {
      const res = await fetch(path, {
        method: 'POST',
        cache: 'no-store',
        headers: { authorization: 'Bearer ' + token },
      });
      const body = (await res.json().catch(() => ({}))) as ControlBody;
      const said = (body.sites || []).map((s) => (s.site === '' ? '(none)' : s.site) + ': ' + s.result).join('; ');
      // a refusal says why in `error`, or per site (a retry no paused site can take: 409)
      if (res.ok) notice(said, false);
      else notice(body.error || said || path.split('?')[0] + ' answered ' + res.status, true);
    } catch (err) {
      notice('could not reach the provisioner: ' + (err as Error).message, true);
    }
    void poll();
  }
  const siteParam = (site: string | undefined): string => '?site=' + encodeURIComponent(site ?? '');

  /** A GET with the token, when one was entered: a site with monitor_api_token lists its nodes only to it. */
  async function getJson<T>(path: string): Promise<T> {
    const token = sessionStorage.getItem(TOKEN_KEY) || '';
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token !== '') headers['authorization'] = 'Bearer ' + token;
    const res = await fetch(path, { cache: 'no-store', headers });
    if (res.status === 401) throw new NeedsToken();
    if (!res.ok) throw new Error(path.split('?')[0] + ' answered ' + res.status);
    return (await res.json()) as T;
  }

  /** The /nodes query of what the table shows now. */
  function nodesQuery(): string {
    const q = new URLSearchParams({
      site: view.site ?? '',
      sort: view.sort,
      order: view.order,
      offset: String(view.offset),
      limit: String(PAGE_SIZE),
    });
    if (view.state !== '') q.set('state', view.state);
    if (view.search !== '') q.set('search', view.search);
    return q.toString();
  }

  async function refreshNodes(): Promise<void> {
    if (view.site === undefined) return;
    const wanted = nodesQuery();
    let page: NodePage;
    try {
      page = await getJson<NodePage>('nodes?' + wanted);
    } catch (err) {
      if (!(err instanceof NeedsToken)) throw err;
      if (wanted === nodesQuery()) renderLocked();
      return;
    }
    // a slower answer to an older question must not overwrite a newer one
    if (wanted === nodesQuery()) renderNodes(page);
  }

  /** The site lists its nodes only to its token: the table says so instead. */
  function renderLocked(): void {
    const text =
      (sessionStorage.getItem(TOKEN_KEY) || '') === ''
        ? "this site lists its nodes only with its API token (the site's monitor_api_token): enter it above"
        : "the API token entered is not this site's monitor_api_token";
    $('node-rows').replaceChildren(
      el('tr', {}, el('td', { colspan: 8, class: 'locked', 'data-field': 'locked' }, text)),
    );
    $('range').textContent = '';
    $<PageControl>('prev').disabled = true;
    $<PageControl>('next').disabled = true;
  }
  /** After the user changed the view: errors show at the next poll. */
  const reload = (): void => void refreshNodes().catch(() => undefined);

  async function poll(): Promise<void> {
    clearTimeout(timer);
    try {
      const status = await getJson<{ sites?: ProvisionerStatus[] }>('status?limit=0');
      renderSites(status.sites || []);
      await refreshNodes();
      $('error').textContent = '';
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      document.body.dataset['polls'] = String(Number(document.body.dataset['polls'] || 0) + 1);
    } catch (err) {
      $('error').textContent = 'could not reach the provisioner: ' + (err as Error).message;
    }
    timer = setTimeout(() => void poll(), POLL_MS);
  }

  const inputValue = (e: PageEvent): string => (e.target as PageControl).value;
  $<PageControl>('token').value = sessionStorage.getItem(TOKEN_KEY) || '';
  $('token').addEventListener('change', (e) => {
    const t = inputValue(e).trim();
    if (t === '') sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, t);
    reload();
  });
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  $('search').addEventListener('input', (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      view.search = inputValue(e).trim();
      view.offset = 0;
      reload();
    }, 250);
  });
  $('state').addEventListener('change', (e) => {
    view.state = inputValue(e);
    view.offset = 0;
    reload();
  });
  $('site').addEventListener('change', (e) => {
    view.site = inputValue(e);
    view.state = '';
    view.offset = 0;
    renderSites(sitesCache);
    reload();
  });
  $('prev').addEventListener('click', () => {
    view.offset = Math.max(0, view.offset - PAGE_SIZE);
    reload();
  });
  $('next').addEventListener('click', () => {
    view.offset += PAGE_SIZE;
    reload();
  });
  for (const th of document.querySelectorAll('th[data-sort]')) {
    th.addEventListener('click', () => {
      if (view.sort === th.dataset['sort']) view.order = view.order === 'asc' ? 'desc' : 'asc';
      else {
        view.sort = th.dataset['sort'] ?? 'identity';
        view.order = 'asc';
      }
      view.offset = 0;
      reload();
    });
  }
  void poll();
}
