// Shared pieces of the console's pages: ref pickers, badges, pagers, the confirmation
// dialog, error display and value formatting.
import { api } from './api.js';
import { h, put, uid } from './dom.js';

/** The refs (branches and tags) for pickers, fetched once per page render. */
export async function loadRefs() {
  try {
    return await api('/refs');
  } catch {
    return { branches: [], tags: [], default_branch: 'main' };
  }
}

/** A labelled text input with a datalist of branches and tags (any ref expression works). */
export function refPicker(label, name, value, refs, { branchesOnly = false } = {}) {
  const id = uid(name);
  const listId = uid(`${name}-refs`);
  const options = [
    ...refs.branches.map((b) => h('option', { value: b.name }, `branch ${b.name}`)),
    ...(branchesOnly ? [] : refs.tags.map((t) => h('option', { value: t.name }, `tag ${t.name}`))),
  ];
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('input', { id, name, value: value || '', list: listId, required: true, autocomplete: 'off',
      spellcheck: 'false', size: 16 }),
    h('datalist', { id: listId }, options));
}

export function badge(change, text) {
  return h('span', { class: `badge ${change}` }, text || change);
}

/** "+3 −1 ~0" as coloured spans, with an accessible wording. */
export function countsView(counts) {
  const words = `${counts.added} added, ${counts.removed} removed, ${counts.modified} modified`;
  return h('span', { class: 'counts', title: words },
    h('span', { class: 'count-add', 'aria-hidden': 'true' }, `+${counts.added}`), ' ',
    h('span', { class: 'count-del', 'aria-hidden': 'true' }, `−${counts.removed}`), ' ',
    h('span', { class: 'count-mod', 'aria-hidden': 'true' }, `~${counts.modified}`),
    h('span', { class: 'visually-hidden' }, words));
}

/** Previous / next buttons for a paged answer ({offset, limit, total, next_offset}). */
export function pager(pageInfo, onPage, label = 'items') {
  const { offset, limit, total } = pageInfo;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  const hasTotal = typeof total === 'number';
  return h('nav', { class: 'pager', 'aria-label': `Pages of ${label}` },
    h('button', { type: 'button', disabled: offset <= 0,
      onclick: () => onPage(Math.max(0, offset - limit)) }, '← Previous'),
    h('span', { 'aria-live': 'polite' }, hasTotal ? `${first}–${last} of ${total} ${label}`
      : `${label} ${pageInfo.count ? `${offset + 1}–${offset + pageInfo.count}` : 'none'}`),
    h('button', { type: 'button', disabled: pageInfo.next_offset === null,
      onclick: () => onPage(pageInfo.next_offset) }, 'Next →'));
}

/** Ask before doing something destructive: resolves true when confirmed. */
export function confirmAction(title, text, okLabel = 'Confirm') {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
  });
}

/** An error box in place (and in the page's alert region for screen readers). */
export function errorView(err) {
  return h('div', { class: 'error' },
    h('strong', {}, err.type || 'Error'), err.status ? `(${err.status}) ` : '', err.message || String(err));
}

export function clearAlerts() {
  document.getElementById('alerts').replaceChildren();
}

export function notice(text) {
  return h('div', { class: 'notice', role: 'status' }, text);
}

export function fmtDate(iso) {
  if (!iso) return '';
  return iso.replace('T', ' ').replace('Z', ' UTC');
}

export function shortId(id) {
  return (id || '').slice(0, 12);
}

/** A catalog value: text as is, maps and lists as compact JSON. */
export function valueView(value) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, '—');
  if (typeof value === 'string') return h('span', { class: 'value' }, value);
  if (typeof value === 'number' || typeof value === 'boolean') return h('span', { class: 'value mono' }, String(value));
  return h('pre', { class: 'value mono' }, JSON.stringify(value, null, 1));
}

export function table(caption, headers, rows, attrs = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'data', ...attrs },
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, headers.map((x) => (typeof x === 'string'
        ? h('th', { scope: 'col' }, x) : x)))),
      h('tbody', {}, rows)));
}

export function loading(text = 'Loading…') {
  return h('p', { class: 'muted', role: 'status' }, text);
}

/** Build a console link: #/path?k=v */
export function href(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') query.set(k, v);
  }
  const text = query.toString();
  return `#${path}${text ? `?${text}` : ''}`;
}

export function go(path, params) {
  window.location.hash = href(path, params).slice(1);
}

/** "1 tag", "3 tags" */
export function plural(n, word, many = `${word}s`) {
  return `${n} ${n === 1 ? word : many}`;
}
