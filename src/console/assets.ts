/** The console's only stylesheet and script, served by the gateway itself (no CDN, no fonts: the
 * machines may have no internet). The script is progressive: every page works without it; it adds
 * the copy buttons, the sign-in code from the link's fragment, confirmations and local times. */

export const CONSOLE_CSS = `
:root { --fg:#1b1f24; --muted:#5b6472; --bg:#fff; --panel:#f5f7fa; --line:#d8dee6; --accent:#1f5fbf; --bad:#b3261e; --ok:#1e7a3c;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
* { box-sizing: border-box; }
body { margin: 0; line-height: 1.45; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px; z-index: 10; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 20px; padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top .brand { font-weight: 700; }
nav ul { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
header.top form { margin-left: auto; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.5rem; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.15rem; margin: 1.4em 0 0.5em; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px; background: var(--panel); }
.card .label { color: var(--muted); font-size: 0.85rem; }
.card .value { font-size: 1.35rem; font-weight: 600; overflow-wrap: anywhere; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 0.92rem; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: var(--muted); }
.status-success, .ok { color: var(--ok); }
.status-error, .status-rejected, .bad { color: var(--bad); }
.notice { border: 1px solid var(--line); border-left: 4px solid var(--accent); padding: 10px 12px; margin: 12px 0; background: var(--panel); }
.notice.error { border-left-color: var(--bad); }
.secret { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.secret code { word-break: break-all; background: #fff8d6; padding: 6px; border: 1px solid #e5d37a; border-radius: 4px; }
form.inline { display: inline; }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
form.inline input[name="reason"] { width: 12em; }
form.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: 10px; align-items: end; }
label { display: block; font-size: 0.9rem; }
input, select, button { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 4px; max-width: 100%; }
input[type="text"], input[type="email"], input[type="password"], input[type="search"], input[type="date"], input[type="datetime-local"], input[type="number"], select { width: 100%; }
button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
.actions { display: flex; flex-wrap: wrap; gap: 6px; }
.chart { margin: 0 0 12px; }
.chart svg { width: 100%; height: auto; max-height: 260px; }
.chart-title { font-weight: 600; font-size: 0.95rem; }
.chart-narrow { display: none; }
.chart-table summary { cursor: pointer; color: var(--accent); }
td.model { word-break: break-word; }
.field-error { color: var(--bad); font-size: 0.85rem; margin: 4px 0 0; }
input[aria-invalid="true"] { border-color: var(--bad); }
footer.zone-note { max-width: 1100px; margin: 0 auto; padding: 8px 16px 24px; font-size: 0.85rem; }
.legend { display: flex; flex-wrap: wrap; gap: 10px; list-style: none; padding: 0; font-size: 0.85rem; }
.sw { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.s0 { fill: #1f5fbf; background: #1f5fbf; } .s1 { fill: #e07b00; background: #e07b00; } .s2 { fill: #2e8b57; background: #2e8b57; }
.s3 { fill: #8e44ad; background: #8e44ad; } .s4 { fill: #c0392b; background: #c0392b; } .s5 { fill: #7f8c8d; background: #7f8c8d; }
.axis { fill: var(--muted); font-size: 13px; }
.chart-narrow .axis { font-size: 12px; }
.grid-line { stroke: var(--line); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; word-break: break-word; }
@media (max-width: 600px) { main { padding: 10px; } th, td { padding: 5px; } .hide-narrow { display: none; }
  .chart-wide { display: none; } .chart-narrow { display: block; } }
`;

export const CONSOLE_JS = `
'use strict';
(function () {
  // Dates: the page carries UTC; the viewer reads them in their own time zone.
  var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  document.querySelectorAll('time[datetime]').forEach(function (t) {
    var d = new Date(t.getAttribute('datetime'));
    if (!isNaN(d)) { t.title = t.textContent; t.textContent = fmt.format(d); }
  });
  // The call log's filter dates are days in the viewer's time zone: say which, and send it.
  // So are the key form's expiry day and the overview chart's days (a cookie tells the server the zone).
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  var shown = zone;
  document.querySelectorAll('input[data-zone]').forEach(function (i) {
    if (!i.value && zone) i.value = zone;
    shown = i.value || shown;
  });
  if (shown) document.querySelectorAll('[data-tz]').forEach(function (s) { s.textContent = shown; });
  if (zone && document.cookie.indexOf('console_tz=' + encodeURIComponent(zone)) < 0) {
    document.cookie = 'console_tz=' + encodeURIComponent(zone) + '; path=/console; max-age=31536000; samesite=lax';
  }
  // The sign-in code travels in the link's fragment (never sent to the server, never logged).
  var code = document.getElementById('token');
  function fromFragment() {
    if (!code || location.hash.length < 2) return;
    code.value = decodeURIComponent(location.hash.slice(1));
    history.replaceState(null, '', location.pathname + location.search);
    var go = document.getElementById('sign-in');
    if (go) go.focus();
  }
  fromFragment();
  // A second link opened in the same tab changes only the fragment: no new page load.
  window.addEventListener('hashchange', fromFragment);
  // Copy buttons: the text of the element they name.
  document.querySelectorAll('button[data-copy]').forEach(function (b) {
    b.hidden = false;
    b.addEventListener('click', function () {
      var el = document.getElementById(b.getAttribute('data-copy'));
      if (!el || !navigator.clipboard) return;
      navigator.clipboard.writeText(el.textContent.trim()).then(function () { b.textContent = 'Copied'; }, function () { b.textContent = 'Select and copy'; });
    });
  });
  // Destructive actions ask first.
  document.querySelectorAll('form[data-confirm]').forEach(function (f) {
    f.addEventListener('submit', function (e) { if (!window.confirm(f.getAttribute('data-confirm'))) e.preventDefault(); });
  });
})();
`;
