// The status page's script, as it runs in the browser. It is type-checked and linted here like any
// module; the page inlines the source of the class below (page.ts) and runs it with the browser's
// `document`, `sessionStorage` and `fetch`, so it must stay one self-contained class: nothing from
// outside it at run time (the `import type`s below vanish in the build), its methods reach each
// other through `this`. It polls /status and /nodes every 2 s and builds the DOM with textContent
// only: nothing a node or a helper said is ever parsed as HTML. The API token typed into the page
// goes with every request: a site that sets monitor_api_token lists its nodes only to it.
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

/**
 * The status page's script, run as `new StatusPageClient(document, sessionStorage, fetch).start()`. page.ts inlines
 * this class's source as the whole script: its fields and methods use only `this`, their arguments and the browser.
 */
export class StatusPageClient {
  private readonly POLL_MS = 2000;
  private readonly PAGE_SIZE = 100;
  // the token is kept for this tab only (sessionStorage) and sent only as a bearer header to this origin
  private readonly TOKEN_KEY = 'choria-provisioner-api-token';
  private readonly ACTIVE = ['queued', 'provisioning', 'held', 'locked'];
  /** The monitor port answered 401: the site lists its nodes only to its monitor_api_token. */
  private readonly NeedsToken = class NeedsToken extends Error {};
  private readonly view: View = { site: undefined, state: '', search: '', sort: 'identity', order: 'asc', offset: 0 };
  private sitesCache: ProvisionerStatus[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly document: PageDocument;
  private readonly sessionStorage: PageStorage;
  private readonly fetch: PageFetch;

  constructor(document: PageDocument, sessionStorage: PageStorage, fetch: PageFetch) {
    this.document = document;
    this.sessionStorage = sessionStorage;
    // called as a plain function: the browser's fetch refuses to run as a method of another object
    this.fetch = (url, init) => fetch(url, init);
  }

  /** Fills the token field, listens to the controls and polls, once the markup above the script is there. */
  start(): void {
    this.$<PageControl>('token').value = this.sessionStorage.getItem(this.TOKEN_KEY) || '';
    this.listenToToken();
    this.listenToFilters();
    this.listenToPager();
    this.listenToSorting();
    void this.poll();
  }

  private $<T extends PageElement = PageElement>(id: string): T {
    return this.document.getElementById(id) as T;
  }

  private el(tag: string, attrs: Attrs | undefined, ...children: Child[]): PageElement {
    const e = this.document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = String(v);
      else e.setAttribute(k, String(v));
    }
    for (const c of children)
      if (c !== undefined && c !== null) e.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
    return e;
  }

  private svg(tag: string, attrs: Attrs): PageElement {
    const e = this.document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  private num(n: number): string {
    return Number(n).toLocaleString('en');
  }

  private ago(iso: string | undefined): string {
    if (!iso) return '';
    const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
    const a = Math.abs(s);
    if (a < 2) return 'now';
    const text = a < 90 ? a + ' s' : a < 5400 ? Math.round(a / 60) + ' min' : Math.round(a / 3600) + ' h';
    return s >= 0 ? 'in ' + text : text + ' ago';
  }

  private role(s: ProvisionerStatus): [string, string] | undefined {
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

  private chart(recent: ThroughputSeries | undefined): PageElement {
    const box = this.svg('svg', { class: 'chart', viewBox: '0 0 300 64', preserveAspectRatio: 'none', role: 'img' });
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
        box.append(
          this.svg('rect', { class: 'ok', x: i * w + 0.5, y: 64 - h1, width: Math.max(1, w - 1), height: h1 }),
        );
      if (h2 > 0)
        box.append(
          this.svg('rect', { class: 'failed', x: i * w + 0.5, y: 64 - h1 - h2, width: Math.max(1, w - 1), height: h2 }),
        );
    });
    const title = this.svg('title', {});
    title.textContent = 'nodes per minute, last ' + Math.round((recent.slotMs * ok.length) / 60000) + ' minutes';
    box.prepend(title);
    box.setAttribute('aria-label', title.textContent);
    return box;
  }

  private lastMinute(recent: ThroughputSeries): number {
    const slots = Math.max(1, Math.round(60000 / recent.slotMs));
    return recent.provisioned.slice(-slots).reduce((a, n) => a + n, 0);
  }

  private siteCard(s: ProvisionerStatus): PageElement {
    return this.el(
      'article',
      { class: 'site', 'data-site': s.site },
      this.el(
        'h2',
        {},
        'site ' + (s.site === '' ? '(none)' : s.site),
        this.el('span', { class: 'muted' }, ' ' + s.identity + ' · ' + s.version),
      ),
      this.siteBadges(s),
      this.siteStats(s),
      this.stateCounts(s),
      this.chart(s.recent),
      this.el('div', { class: 'chart-caption' }, 'nodes per minute over the last 10 minutes (red: failed)'),
      this.renewals(s),
    );
  }

  /** The site's credential renewals: the counts, why they stopped (and a button to resume), the nodes listed. */
  private renewals(s: ProvisionerStatus): PageElement {
    const box = this.el('div', { class: 'renewals', 'data-field': 'renewals' });
    const r = s.renewals;
    if (!r) return box;
    const c = r.counts;
    box.append(
      this.el(
        'div',
        {},
        'renewals: ' +
          c.scheduled +
          ' scheduled, ' +
          c.due +
          ' due, ' +
          c['in-flight'] +
          ' in flight, ' +
          c.failed +
          ' failed, ' +
          c['not-renewable'] +
          ' not renewable',
      ),
    );
    if (r.stopped !== undefined) {
      const resume = this.el('button', { type: 'button', class: 'act', 'data-action': 'resume-renewals' }, 'resume');
      resume.addEventListener('click', () => this.act('renewals/resume' + this.siteParam(s.site)));
      box.append(
        this.el('div', { class: 'badge bad', 'data-field': 'renewals-stopped' }, 'stopped: ' + r.stopped),
        resume,
      );
    }
    const list = this.el('ul', { class: 'renewal-list' });
    const shown = [...r.failed, ...r.inFlight, ...r.next].slice(0, 10);
    for (const e of shown)
      list.append(
        this.el(
          'li',
          { 'data-renewal': e.state },
          e.identity + ' · ' + e.state + ' · ' + (e.reason ?? 'expires ' + this.ago(e.expiresAt)),
        ),
      );
    if (shown.length > 0) box.append(list);
    return box;
  }

  /** Running or paused, connected or not, its role, dry run, the pause/resume button and the history store. */
  private siteBadges(s: ProvisionerStatus): PageElement {
    const badges = this.el(
      'div',
      { class: 'badges' },
      this.el(
        'span',
        { class: 'badge ' + (s.paused ? 'warn' : 'good'), 'data-field': 'run-state' },
        s.paused ? 'paused' : 'running',
      ),
      this.el(
        'span',
        { class: 'badge ' + (s.connected ? 'good' : 'bad'), 'data-field': 'connection' },
        s.connected ? 'connected' : 'not connected',
      ),
    );
    const r = this.role(s);
    if (r) badges.append(this.el('span', { class: 'badge ' + r[1], 'data-field': 'role' }, r[0]));
    if (s.dryRun) badges.append(this.el('span', { class: 'badge warn', 'data-field': 'dry-run' }, 'dry run'));
    const toggle = this.el(
      'button',
      { type: 'button', class: 'act', 'data-action': s.paused ? 'resume' : 'pause' },
      s.paused ? 'resume' : 'pause',
    );
    toggle.addEventListener('click', () => this.act((s.paused ? 'resume' : 'pause') + this.siteParam(s.site)));
    badges.append(toggle);
    if (s.history) {
      const h = s.history;
      badges.append(
        this.el(
          'span',
          { class: 'badge' + (h.store === 'kv' ? '' : ' warn'), 'data-field': 'history', title: h.reason || '' },
          h.store === 'kv'
            ? 'history: ' + h.bucket + (h.connection === 'choria' ? ' (choria account)' : '')
            : 'history: this process only',
        ),
      );
    }
    return badges;
  }

  /** The busy workers, the queue and how many nodes finished in the last minute. */
  private siteStats(s: ProvisionerStatus): PageElement {
    const stat = (label: string, value: string, field: string): PageElement =>
      this.el('div', {}, this.el('dt', {}, label), this.el('dd', { 'data-field': field }, value));
    return this.el(
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
      stat('queue', this.num(s.queue), 'queue'),
      stat('finished in the last minute', s.recent ? this.num(this.lastMinute(s.recent)) : '-', 'rate'),
    );
  }

  /** The nodes per state, each a button that shows that state's nodes of the site in the table. */
  private stateCounts(s: ProvisionerStatus): PageElement {
    const counts = this.el('ul', { class: 'counts', 'aria-label': 'nodes per state' });
    for (const [state, n] of Object.entries(s.hostCounts).sort()) {
      const b = this.el(
        'button',
        { type: 'button', 'data-count': state, title: 'show the ' + state + ' nodes' },
        this.el('b', {}, this.num(n)),
        state,
      );
      b.addEventListener('click', () => {
        this.view.site = s.site;
        this.view.state = state;
        this.view.offset = 0;
        this.reload();
      });
      counts.append(this.el('li', {}, b));
    }
    return counts;
  }

  private renderSites(sites: ProvisionerStatus[]): void {
    const view = this.view;
    this.sitesCache = sites;
    this.$('sites').replaceChildren(...sites.map((s) => this.siteCard(s)));
    if (view.site === undefined || !sites.some((s) => s.site === view.site))
      view.site = sites.length > 0 ? sites[0]?.site : undefined;
    const current = sites.find((s) => s.site === view.site);
    const states = current ? Object.keys(current.hostCounts).sort() : [];
    if (view.state !== '' && !states.includes(view.state)) states.push(view.state);
    // the menus are rebuilt only when their choices change: not under the user's hand every poll
    this.replaceOptions(
      this.$<PageControl>('site'),
      sites.map((s) => [s.site, s.site === '' ? '(none)' : s.site]),
      view.site,
    );
    this.replaceOptions(
      this.$<PageControl>('state'),
      [['', 'every state'], ...states.map((st): [string, string] => [st, st])],
      view.state,
    );
  }

  private replaceOptions(select: PageControl, choices: [string, string][], selected: string | undefined): void {
    const key = JSON.stringify([choices, selected]);
    if (select.dataset['choices'] === key) return;
    select.dataset['choices'] = key;
    select.replaceChildren(
      ...choices.map(([value, label]) => this.el('option', { value, selected: value === selected }, label)),
    );
  }

  private nodeActions(n: HostStatus): PageElement[] {
    const buttons: PageElement[] = [];
    const add = (action: string, label: string): void => {
      const b = this.el('button', { type: 'button', class: 'act', 'data-action': action }, label);
      b.addEventListener('click', () =>
        this.act('nodes/' + encodeURIComponent(n.identity) + '/' + action + this.siteParam(this.view.site)),
      );
      buttons.push(b);
    };
    if (n.state === 'quarantined') add('release', 'release');
    if (!this.ACTIVE.includes(n.state)) add('retry', 'retry now');
    return buttons;
  }

  private nodeRow(n: HostStatus): PageElement {
    return this.el(
      'tr',
      { 'data-identity': n.identity },
      this.el('td', { class: 'identity' }, n.identity),
      this.el('td', { 'data-field': 'state' }, n.state),
      this.el('td', {}, n.step || ''),
      this.el('td', {}, String(n.attempts)),
      this.el('td', { class: 'error', 'data-field': 'lastError' }, n.lastError || ''),
      this.el('td', { title: n.nextAttemptAt || '' }, this.ago(n.nextAttemptAt)),
      this.el('td', { title: n.updatedAt || '' }, this.ago(n.updatedAt)),
      this.el('td', {}, ...this.nodeActions(n)),
    );
  }

  private renderNodes(page: NodePage): void {
    const view = this.view;
    this.$('node-rows').replaceChildren(...page.nodes.map((n) => this.nodeRow(n)));
    const first = page.total === 0 ? 0 : page.offset + 1;
    this.$('range').textContent =
      this.num(first) + '–' + this.num(page.offset + page.nodes.length) + ' of ' + this.num(page.total);
    this.$<PageControl>('prev').disabled = page.offset === 0;
    this.$<PageControl>('next').disabled = page.offset + page.nodes.length >= page.total;
    for (const th of this.document.querySelectorAll('th[data-sort]'))
      th.setAttribute(
        'aria-sort',
        th.dataset['sort'] === view.sort ? (view.order === 'asc' ? 'ascending' : 'descending') : 'none',
      );
  }

  private notice(text: string, bad: boolean): void {
    const n = this.$('notice');
    n.textContent = text;
    n.className = bad ? 'bad' : '';
  }

  /** A control request (POST) with the token; says what came of it and polls again. */
  private async act(path: string): Promise<void> {
    const token = this.sessionStorage.getItem(this.TOKEN_KEY) || '';
    if (token === '') {
      this.notice("enter the API token (the site's monitor_api_token) first", true);
      return;
    }
    try {
      const res = await this.fetch(path, {
        method: 'POST',
        cache: 'no-store',
        headers: { authorization: 'Bearer ' + token },
      });
      const body = (await res.json().catch(() => ({}))) as ControlBody;
      const said = (body.sites || []).map((s) => (s.site === '' ? '(none)' : s.site) + ': ' + s.result).join('; ');
      // a refusal says why in `error`, or per site (a retry no paused site can take: 409)
      if (res.ok) this.notice(said, false);
      else this.notice(body.error || said || path.split('?')[0] + ' answered ' + res.status, true);
    } catch (err) {
      this.notice('could not reach the provisioner: ' + (err as Error).message, true);
    }
    void this.poll();
  }

  private siteParam(site: string | undefined): string {
    return '?site=' + encodeURIComponent(site ?? '');
  }

  /** A GET with the token, when one was entered: a site with monitor_api_token lists its nodes only to it. */
  private async getJson<T>(path: string): Promise<T> {
    const token = this.sessionStorage.getItem(this.TOKEN_KEY) || '';
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token !== '') headers['authorization'] = 'Bearer ' + token;
    const res = await this.fetch(path, { cache: 'no-store', headers });
    if (res.status === 401) throw new this.NeedsToken();
    if (!res.ok) throw new Error(path.split('?')[0] + ' answered ' + res.status);
    return (await res.json()) as T;
  }

  /** The /nodes query of what the table shows now. */
  private nodesQuery(): string {
    const view = this.view;
    const q = new URLSearchParams({
      site: view.site ?? '',
      sort: view.sort,
      order: view.order,
      offset: String(view.offset),
      limit: String(this.PAGE_SIZE),
    });
    if (view.state !== '') q.set('state', view.state);
    if (view.search !== '') q.set('search', view.search);
    return q.toString();
  }

  private async refreshNodes(): Promise<void> {
    if (this.view.site === undefined) return;
    const wanted = this.nodesQuery();
    let page: NodePage;
    try {
      page = await this.getJson<NodePage>('nodes?' + wanted);
    } catch (err) {
      if (!(err instanceof this.NeedsToken)) throw err;
      if (wanted === this.nodesQuery()) this.renderLocked();
      return;
    }
    // a slower answer to an older question must not overwrite a newer one
    if (wanted === this.nodesQuery()) this.renderNodes(page);
  }

  /** The site lists its nodes only to its token: the table says so instead. */
  private renderLocked(): void {
    const text =
      (this.sessionStorage.getItem(this.TOKEN_KEY) || '') === ''
        ? "this site lists its nodes only with its API token (the site's monitor_api_token): enter it above"
        : "the API token entered is not this site's monitor_api_token";
    this.$('node-rows').replaceChildren(
      this.el('tr', {}, this.el('td', { colspan: 8, class: 'locked', 'data-field': 'locked' }, text)),
    );
    this.$('range').textContent = '';
    this.$<PageControl>('prev').disabled = true;
    this.$<PageControl>('next').disabled = true;
  }

  /** After the user changed the view: errors show at the next poll. */
  private reload(): void {
    void this.refreshNodes().catch(() => undefined);
  }

  private async poll(): Promise<void> {
    clearTimeout(this.timer);
    try {
      const status = await this.getJson<{ sites?: ProvisionerStatus[] }>('status?limit=10');
      this.renderSites(status.sites || []);
      await this.refreshNodes();
      this.$('error').textContent = '';
      this.$('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      this.document.body.dataset['polls'] = String(Number(this.document.body.dataset['polls'] || 0) + 1);
    } catch (err) {
      this.$('error').textContent = 'could not reach the provisioner: ' + (err as Error).message;
    }
    this.timer = setTimeout(() => void this.poll(), this.POLL_MS);
  }

  private inputValue(e: PageEvent): string {
    return (e.target as PageControl).value;
  }

  /** The token typed in is kept for this tab (an empty one forgotten), and the table asked again with it. */
  private listenToToken(): void {
    this.$('token').addEventListener('change', (e) => {
      const t = this.inputValue(e).trim();
      if (t === '') this.sessionStorage.removeItem(this.TOKEN_KEY);
      else this.sessionStorage.setItem(this.TOKEN_KEY, t);
      this.reload();
    });
  }

  /** The identity search (once typing pauses for 250 ms), the state menu and the site menu. */
  private listenToFilters(): void {
    const view = this.view;
    this.$('search').addEventListener('input', (e) => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => {
        view.search = this.inputValue(e).trim();
        view.offset = 0;
        this.reload();
      }, 250);
    });
    this.$('state').addEventListener('change', (e) => {
      view.state = this.inputValue(e);
      view.offset = 0;
      this.reload();
    });
    this.$('site').addEventListener('change', (e) => {
      view.site = this.inputValue(e);
      view.state = '';
      view.offset = 0;
      this.renderSites(this.sitesCache);
      this.reload();
    });
  }

  private listenToPager(): void {
    this.$('prev').addEventListener('click', () => {
      this.view.offset = Math.max(0, this.view.offset - this.PAGE_SIZE);
      this.reload();
    });
    this.$('next').addEventListener('click', () => {
      this.view.offset += this.PAGE_SIZE;
      this.reload();
    });
  }

  /** A column's header sorts by it; a second click on the same column reverses the order. */
  private listenToSorting(): void {
    const view = this.view;
    for (const th of this.document.querySelectorAll('th[data-sort]')) {
      th.addEventListener('click', () => {
        if (view.sort === th.dataset['sort']) view.order = view.order === 'asc' ? 'desc' : 'asc';
        else {
          view.sort = th.dataset['sort'] ?? 'identity';
          view.order = 'asc';
        }
        view.offset = 0;
        this.reload();
      });
    }
  }
}
