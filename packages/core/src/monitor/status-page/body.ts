// The status page's markup: the header, the site cards' container and the nodes table the
// script (client.ts) fills in.

export const STATUS_PAGE_BODY = `<header>
  <h1>choria-provisioner</h1>
  <span id="updated" class="muted">loading…</span>
  <span id="error" role="alert"></span>
  <span id="notice" role="status"></span>
  <label class="auth" title="the site's monitor_api_token: needed to see the nodes of a site that sets it, \
and to pause, resume, release and retry; kept in this tab only">API token \
<input id="token" type="password" autocomplete="off" placeholder="for the nodes and the actions"></label>
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
  <div class="pager"><button id="prev" type="button">‹ previous</button><span id="range"></span>\
<button id="next" type="button">next ›</button></div>
</section>`;
