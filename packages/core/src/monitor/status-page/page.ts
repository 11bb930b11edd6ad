// The status page served at / on the monitor port: one HTML document with its style and script
// inline (no framework, nothing fetched from elsewhere), built on /status (the sites) and /nodes
// (one page of one site's nodes, filtered, searched and sorted by the provisioner, so 100,000
// nodes never reach the browser at once). The Content-Security-Policy allows only this script
// and style, and requests to this origin.
import { createHash } from 'node:crypto';
import { STATUS_PAGE_BODY } from './body.js';
import { StatusPageClient } from './client.js';
import { STATUS_PAGE_STYLE } from './style.js';

/**
 * The client class's compiled source (all the script runs: it uses nothing outside the class), started with the
 * browser's globals once the markup above the script is there. The CSP hash below is of exactly this text.
 */
const SCRIPT = `\nnew (${StatusPageClient.toString()})(document, sessionStorage, fetch).start();\n`;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('base64');

/** The page's HTML. */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>choria-provisioner status</title>
<style>${STATUS_PAGE_STYLE}</style>
</head>
<body>
${STATUS_PAGE_BODY}
<script>${SCRIPT}</script>
</body>
</html>
`;

/** Only this page's own script and style run, and it talks only to the monitor port itself. */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${sha256(SCRIPT)}'`,
  `style-src 'sha256-${sha256(STATUS_PAGE_STYLE)}'`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
