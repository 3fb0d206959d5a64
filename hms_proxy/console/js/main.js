// The console's entry point: a hash router (#/refs, #/commits, #/commit/ID, #/diff, #/merge,
// #/tables, #/table/DB/TABLE) over views that call the HTTP API only.
import { api, actingUser, setActingUser } from './api.js';
import { h } from './dom.js';
import { clearAlerts, errorView } from './ui.js';
import { refsView } from './views/refs.js';
import { commitsView, commitView } from './views/commits.js';
import { diffView } from './views/diff.js';
import { mergeView } from './views/merge.js';
import { tablesView, tableView } from './views/tables.js';

const ROUTES = [
  [/^\/(?:refs)?$/, 'refs', refsView],
  [/^\/commits$/, 'commits', commitsView],
  [/^\/commit\/([^/]+)$/, 'commits', commitView],
  [/^\/diff$/, 'diff', diffView],
  [/^\/merge$/, 'merge', mergeView],
  [/^\/tables$/, 'tables', tablesView],
  [/^\/table\/([^/]+)\/([^/]+)$/, 'tables', tableView],
];

let current = 0;

function parseHash() {
  const raw = window.location.hash.replace(/^#/, '') || '/refs';
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const params = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  return { path, params };
}

async function render() {
  const token = ++current;
  const { path, params } = parseHash();
  const main = document.getElementById('view');
  const container = h('div', { class: 'page' });
  main.replaceChildren(container);
  clearAlerts();
  const found = ROUTES.map(([re, nav, view]) => [re.exec(path), nav, view]).find(([m]) => m);
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (found && link.dataset.nav === found[1]) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (!found) {
    container.append(h('h1', {}, 'Not found'), h('p', {}, `No page ${path}.`));
    return;
  }
  const [match, , view] = found;
  const args = match.slice(1).map(decodeURIComponent);
  main.setAttribute('aria-busy', 'true');
  try {
    await view(container, params, ...args);
  } catch (err) {
    if (token === current) container.append(errorView(err));
  } finally {
    if (token === current) main.setAttribute('aria-busy', 'false');
  }
}

async function showCaller() {
  const who = document.getElementById('who');
  const input = document.getElementById('who-user');
  input.value = actingUser();
  try {
    const info = await api('/info');
    const caller = info.caller;
    who.textContent = caller.identity ? `${caller.identity} (${caller.auth})` : 'anonymous';
    document.body.dataset.readOnly = info.read_only ? 'true' : 'false';
  } catch (err) {
    who.textContent = `(${err.message})`;
  }
}

document.getElementById('who-form').addEventListener('submit', (event) => {
  event.preventDefault();
  setActingUser(document.getElementById('who-user').value.trim());
  showCaller();
  render();
});

window.addEventListener('hashchange', render);
showCaller().finally(render);  // (pages disable writes on a read-only server)
