// The merge preview: a dry run of SOURCE into DEST with a strategy lists what would be applied
// and every conflict (type, path, fields, both sides); the Merge button is enabled only when the
// preview of exactly these choices has no conflict left unresolved.
import { api } from '../api.js';
import { h, put } from '../dom.js';
import {
  badge, confirmAction, countsView, errorView, go, href, loadRefs, loading, notice, refPicker,
  shortId, valueView,
} from '../ui.js';

const STRATEGIES = [
  ['fail', 'fail: stop on conflicts'],
  ['source-wins', 'source-wins: take the source’s side'],
  ['dest-wins', 'dest-wins: keep the destination’s side'],
];

export async function mergeView(root, params) {
  const refs = await loadRefs();
  const dest = params.get('dest') || refs.default_branch;
  const source = params.get('source') || (refs.branches.find((b) => b.name !== dest) || {}).name || '';
  const strategy = params.get('strategy') || 'fail';
  document.title = `Merge ${source} into ${dest} · hms-proxy`;
  root.append(h('h1', {}, 'Merge'));
  const form = h('form', { class: 'toolbar panel', 'aria-label': 'Choose the merge' },
    refPicker('Source', 'source', source, refs),
    refPicker('Into branch', 'dest', dest, refs, { branchesOnly: true }),
    h('div', { class: 'field' }, h('label', { for: 'merge-strategy' }, 'On conflicts'),
      h('select', { id: 'merge-strategy', name: 'strategy' },
        STRATEGIES.map(([value, text]) => h('option', { value, selected: value === strategy }, text)))),
    h('button', { type: 'submit', class: 'primary' }, 'Preview (dry run)'));
  const result = h('div', { class: 'merge-result', 'aria-live': 'polite' });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    go('/merge', { source: String(data.get('source')).trim(), dest: String(data.get('dest')).trim(),
      strategy: data.get('strategy'), preview: '1' });
  });
  // a changed choice invalidates the preview shown
  form.addEventListener('input', () => {
    const button = result.querySelector('#merge-button');
    if (button) {
      button.disabled = true;
      button.title = 'Preview these choices first';
    }
  });
  root.append(form, result);
  if (params.get('preview') && source && dest) await preview(result, source, dest, strategy);
  else result.append(h('p', { class: 'muted' }, 'Pick a source and a destination branch, then preview the merge.'));
}

async function preview(out, source, dest, strategy) {
  put(out, loading('Previewing the merge…'));
  let res;
  try {
    res = await api('/merge', { method: 'POST', body: { source, dest, strategy, dry_run: true } });
  } catch (err) {
    put(out, errorView(err));
    return;
  }
  const parts = [];
  const blocked = !res.mergeable;
  parts.push(h('h2', {}, 'Preview: ', h('span', { class: 'mono' }, source), ' into ',
    h('span', { class: 'mono' }, dest), ' ',
    blocked ? badge('removed', `${res.conflicts_total} conflict${res.conflicts_total === 1 ? '' : 's'}`)
      : (res.up_to_date ? badge('info', 'up to date') : badge('added', 'mergeable'))));
  const kinds = Object.entries(res.applied.by_kind);
  parts.push(h('p', { id: 'merge-summary' },
    res.up_to_date && !blocked ? `${dest} already has everything of ${source}.`
      : (blocked ? 'Nothing would be applied while conflicts remain.'
        : ['Would apply: ', kinds.map(([kind, counts], i) => [i ? '; ' : '', `${kind} `, countsView(counts)])]),
    res.base ? h('span', { class: 'muted' }, ` (merge base ${shortId(res.base)})`) : null));
  if (res.conflicts.length) {
    parts.push(conflictTable(res, source, dest));
    if (!blocked) parts.push(h('p', {}, `These conflicts will be resolved by ${res.strategy}.`));
  } else {
    parts.push(h('p', { id: 'no-conflicts' }, 'No conflicts.'));
  }
  const button = h('button', { type: 'button', class: 'primary', id: 'merge-button',
    disabled: blocked || res.up_to_date || document.body.dataset.readOnly === 'true',
    title: blocked ? 'Resolve the conflicts (or choose a strategy) first' : null }, `Merge ${source} into ${dest}`);
  const status = h('div', { 'aria-live': 'polite' });
  button.addEventListener('click', async () => {
    const ok = await confirmAction(`Merge ${source} into ${dest}?`,
      `A merge commit will be made on ${dest} (strategy ${strategy}${res.conflicts_total ? `, resolving ${res.conflicts_total} conflict(s)` : ''}).`,
      'Merge');
    if (!ok) return;
    button.disabled = true;
    try {
      const done = await api('/merge', { method: 'POST', body: { source, dest, strategy, dry_run: false } });
      put(status, done.commit
        ? notice(['Merged: commit ', h('a', { href: href(`/commit/${done.commit.id}`), class: 'mono' }, done.commit.short_id), ` on ${dest}.`])
        : notice(`${dest} was already up to date.`));
    } catch (err) {
      put(status, errorView(err));
      button.disabled = false;
    }
  });
  const hint = blocked ? h('span', { class: 'muted', id: 'merge-hint' },
    'Enabled once the preview has no unresolved conflict: change the branches, or choose source-wins or dest-wins and preview again.')
    : null;
  if (hint) button.setAttribute('aria-describedby', 'merge-hint');
  parts.push(h('div', { class: 'actions' }, button, hint), status);
  put(out, ...parts);
}

function conflictTable(res, source, dest) {
  const rows = res.conflicts.map((c) => h('tr', { dataset: { conflict: c.type } },
    h('td', {}, h('span', { class: 'badge removed' }, c.type)),
    h('td', { class: 'wrap' }, `${c.kind} `, h('span', { class: 'mono' }, c.path.join('.'))),
    h('td', { class: 'mono wrap' }, c.fields.join(', ') || '—'),
    h('td', { class: 'after' }, valueView(c.source)),
    h('td', { class: 'before' }, valueView(c.dest))));
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data conflicts', id: 'conflicts' },
    h('caption', {}, `${res.conflicts_total} conflict${res.conflicts_total === 1 ? '' : 's'}`
      + (res.conflicts_total > res.conflicts.length ? ` (first ${res.conflicts.length} shown)` : '')),
    h('thead', {}, h('tr', {}, ['Type', 'Entity', 'Fields', `Source (${source})`, `Destination (${dest})`]
      .map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows)));
}
