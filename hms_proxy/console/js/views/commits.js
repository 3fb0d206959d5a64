// The commit log of a ref (authors, messages, dates; paged) and one commit with its changes.
import { api, seg } from '../api.js';
import { h, put } from '../dom.js';
import { fmtDate, go, href, loadRefs, loading, pager, refPicker, shortId, table } from '../ui.js';
import { renderDiff } from './diff.js';

const PAGE = 25;

export async function commitsView(root, params) {
  const refs = await loadRefs();
  const ref = params.get('ref') || refs.default_branch;
  const path = params.get('path') || '';
  const offset = Number(params.get('offset') || 0);
  document.title = `Commits of ${ref} · hms-proxy`;
  root.append(h('h1', {}, 'Commits'));
  const form = h('form', { class: 'toolbar panel', 'aria-label': 'Choose the log' },
    refPicker('Ref', 'ref', ref, refs),
    h('div', { class: 'field' }, h('label', { for: 'log-path' }, 'Only changes to (DB or DB.TABLE)'),
      h('input', { id: 'log-path', name: 'path', value: path, placeholder: 'shop.orders', autocomplete: 'off' })),
    h('button', { type: 'submit', class: 'primary' }, 'Show log'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    go('/commits', { ref: String(data.get('ref')).trim(), path: String(data.get('path')).trim() });
  });
  const out = h('div', {}, loading());
  root.append(form, out);
  const log = await api('/commits', { query: { ref, path, offset, limit: PAGE } });
  const rows = log.commits.map((c) => h('tr', {},
    h('td', {}, h('a', { href: href(`/commit/${c.id}`), class: 'mono', 'aria-label': `Commit ${c.short_id}` }, c.short_id)),
    h('td', {}, fmtDate(c.date)),
    h('td', {}, c.author || '—'),
    h('td', { class: 'wrap' }, (c.message || '').split('\n')[0],
      c.parents.length > 1 ? [' ', h('span', { class: 'badge info' }, 'merge')] : null)));
  const onPage = (o) => go('/commits', { ref, path, offset: o });
  const info = { offset: log.offset, limit: log.limit, count: log.commits.length, next_offset: log.next_offset };
  put(out, 
    h('p', { class: 'muted' }, `Newest first, from ${ref} at `, h('span', { class: 'mono' }, shortId(log.head)),
      path ? `, touching ${path}` : ''),
    log.commits.length ? table(`Commits of ${ref}`, ['Commit', 'Date', 'Author', 'Message'], rows, { id: 'log' })
      : h('p', {}, 'No commits.'),
    pager(info, onPage, 'commits'));
}

export async function commitView(root, params, id) {
  document.title = `Commit ${shortId(id)} · hms-proxy`;
  const data = await api(`/commits/${seg(id)}`, { query: { limit: 1 } });
  const c = data.commit;
  root.append(h('h1', {}, 'Commit ', h('span', { class: 'mono' }, c.short_id)));
  const meta = Object.entries(c.metadata || {});
  root.append(h('div', { class: 'panel' }, h('dl', { class: 'facts' },
    h('dt', {}, 'Id'), h('dd', { class: 'mono' }, c.id),
    h('dt', {}, 'Author'), h('dd', {}, c.author || '—'),
    h('dt', {}, 'Date'), h('dd', {}, fmtDate(c.date)),
    h('dt', {}, c.parents.length > 1 ? 'Parents' : 'Parent'),
    h('dd', {}, c.parents.length ? c.parents.map((p, i) => [i ? ', ' : '',
      h('a', { href: href(`/commit/${p}`), class: 'mono' }, shortId(p))]) : '(root commit)'),
    meta.length ? [h('dt', {}, 'Metadata'), h('dd', {}, meta.map(([k, v]) => h('div', { class: 'mono' }, `${k}=${v}`)))] : null,
    h('dt', {}, 'Message'), h('dd', {}, h('pre', { class: 'value' }, c.message || '')))));
  if (!c.parents.length) {
    root.append(h('p', { class: 'muted' }, 'The root commit has no changes to show.'));
    return;
  }
  root.append(h('h2', {}, 'Changes against ', h('span', { class: 'mono' }, shortId(c.parents[0]))));
  const out = h('div', {});
  root.append(out);
  await renderDiff(out, { left: c.parents[0], right: c.id, offset: Number(params.get('offset') || 0),
    onPage: (o) => go(`/commit/${id}`, { offset: o }) });
}
