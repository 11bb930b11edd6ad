// The status page's style sheet, inline in the page (the Content-Security-Policy admits it by its
// hash): plain CSS, light, readable on a phone.

export const STATUS_PAGE_STYLE = `
:root { --fg: #1d2330; --muted: #667085; --line: #d9dee7; --bg: #f6f7f9; --card: #fff; \
--ok: #1a7f37; --bad: #c62828; --warn: #9a6700; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; \
color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: baseline; padding: .75rem 1rem; \
background: var(--card); border-bottom: 1px solid var(--line); }
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
.counts button { font: inherit; border: 1px solid var(--line); background: var(--bg); border-radius: 6px; \
padding: .1rem .5rem; cursor: pointer; }
.counts button b { margin-right: .25rem; }
.chart { width: 100%; height: 64px; display: block; }
.chart rect.ok { fill: var(--accent); }
.chart rect.failed { fill: var(--bad); }
.chart-caption { font-size: .8rem; color: var(--muted); }
#nodes h2 { font-size: 1rem; margin: 0 0 .5rem; }
.controls { display: flex; flex-wrap: wrap; gap: .5rem 1rem; margin-bottom: .5rem; }
.controls label { display: flex; gap: .35rem; align-items: center; }
select, input { font: inherit; padding: .2rem .35rem; border: 1px solid var(--line); border-radius: 6px; \
background: var(--card); }
input[type=search] { min-width: 14rem; }
.table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; min-width: 48rem; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { cursor: pointer; user-select: none; white-space: nowrap; background: var(--bg); position: sticky; top: 0; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td.error { color: var(--bad); max-width: 36rem; overflow-wrap: anywhere; }
td.identity { font-family: ui-monospace, monospace; white-space: nowrap; }
td.locked { color: var(--muted); text-align: center; padding: 1rem; }
.pager { display: flex; gap: .75rem; align-items: center; margin-top: .5rem; }
.pager button { font: inherit; padding: .2rem .7rem; }
@media (max-width: 40rem) { main, section { padding: .5rem; } input[type=search] { min-width: 0; width: 100%; } \
.controls label { flex: 1 1 100%; } }
`;
