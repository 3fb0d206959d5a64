// The diff between two refs: grouped by database and table; a table's field changes side by
// side (before / after) with column changes highlighted; what lies under a table (partitions,
// statistics) rolled up into counts, listed on demand, paged and filtered.
import { api } from '../api.js';
import { h, put, uid } from '../dom.js';
import {
  badge, countsView, errorView, go, loadRefs, loading, pager, refPicker, shortId, valueView,
} from '../ui.js';

const PAGE = 20;
const CHILD_PAGE = 50;
const KIND_LABEL = {
  partition: 'Partitions', statistics: 'Statistics sets', table_column_stats: 'Column statistics',
  partition_column_stats: 'Partition column statistics', table_item: 'Other table items',
};

export async function diffView(root, params) {
  const refs = await loadRefs();
  const left = params.get('left') || refs.default_branch;
  const right = params.get('right') || (refs.branches.find((b) => b.name !== left) || {}).name || left;
  const path = params.get('path') || '';
  document.title = `Diff ${left}…${right} · hms-proxy`;
  root.append(h('h1', {}, 'Diff'));
  const form = h('form', { class: 'toolbar panel', 'aria-label': 'Choose the refs to compare' },
    refPicker('From (left)', 'left', left, refs),
    refPicker('To (right)', 'right', right, refs),
    h('div', { class: 'field' }, h('label', { for: 'diff-path' }, 'Only (DB or DB.TABLE)'),
      h('input', { id: 'diff-path', name: 'path', value: path, placeholder: 'shop.orders', autocomplete: 'off' })),
    h('button', { type: 'submit', class: 'primary' }, 'Compare'),
    h('button', {
      type: 'button',
      onclick: () => {
        const data = new FormData(form);
        go('/diff', { left: data.get('right'), right: data.get('left'), path: data.get('path') });
      },
    }, 'Swap'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    go('/diff', { left: String(data.get('left')).trim(), right: String(data.get('right')).trim(),
      path: String(data.get('path')).trim() });
  });
  const out = h('div', { id: 'diff-result' });
  root.append(form, out);
  await renderDiff(out, { left, right, path, offset: Number(params.get('offset') || 0),
    onPage: (o) => go('/diff', { left, right, path, offset: o }) });
}

/** One page of the grouped diff into ``out``. */
export async function renderDiff(out, { left, right, path = '', offset = 0, onPage }) {
  put(out, loading('Computing the diff…'));
  const diff = await api('/diff', { query: { left, right, path, offset, limit: PAGE } });
  const sides = { left: diff.left.ref, right: diff.right.ref };
  const parts = [summary(diff)];
  if (!diff.total && !diff.global.length) {
    parts.push(h('p', { class: 'notice' }, `No changes from ${diff.left.ref} to ${diff.right.ref}.`));
    put(out, ...parts);
    return diff;
  }
  let section = null;
  let db = null;
  for (const group of diff.groups) {
    if (group.db !== db) {
      db = group.db;
      const own = group.table === null ? group.changes.find((c) => c.kind === 'database') : null;
      section = h('section', { class: 'db-group', 'aria-label': `Database ${db}`, dataset: { db } },
        h('h3', {}, h('span', { class: 'muted' }, 'Database'), h('span', {}, db),
          own ? badge(own.change) : null));
      parts.push(section);
    }
    if (group.table === null) {
      for (const change of group.changes) {
        if (change.kind === 'database' && change.change !== 'modified') continue;
        section.append(entity(change.kind === 'database' ? `database ${db}` : `${change.kind} ${change.path.slice(1).join('.')}`,
          change, {}, sides, null));
      }
    } else {
      const own = group.changes.find((c) => c.kind === 'table');
      section.append(entity(`${group.db}.${group.table}`, own, group, sides,
        { left, right, db: group.db, table: group.table }));
    }
  }
  if (diff.global.length) {
    const other = h('section', { class: 'db-group', 'aria-label': 'Outside databases' }, h('h3', {}, 'Outside databases'));
    for (const change of diff.global) other.append(entity(`${change.kind} ${change.path.join('.')}`, change, {}, sides, null));
    parts.push(other);
  }
  if (diff.total > diff.limit || diff.offset) parts.push(pager(diff, onPage || (() => {}), 'tables and databases'));
  put(out, ...parts);
  return diff;
}

function summary(diff) {
  const totals = Object.entries(diff.totals);
  return h('p', { class: 'diff-summary' },
    h('span', { class: 'mono' }, diff.left.ref), ` (${shortId(diff.left.commit)}) → `,
    h('span', { class: 'mono' }, diff.right.ref), ` (${shortId(diff.right.commit)})`,
    ': ',
    totals.length ? totals.map(([kind, counts], i) => [i ? '; ' : '', `${kind} `, countsView(counts)]) : 'no changes',
    diff.right.branch ? h('span', { class: 'muted' }, ` (branch ${diff.right.branch}: its uncommitted changes included)`) : null);
}

/** A changed entity: a header (a disclosure button when there is more to see) and a body. */
function entity(label, change, group, sides, childrenOf) {
  const children = Object.entries(group.children || {});
  const fields = change ? change.fields : [];
  const columnFields = fields.filter((f) => f.field.startsWith('columns'));
  const bodyId = uid('entity');
  const expandable = fields.length > 0 || children.length > 0;
  const head = h('h4', { class: 'entity-head' });
  const body = h('div', { class: 'entity-body', id: bodyId, hidden: true });
  const article = h('article', { class: 'entity', dataset: { entity: label } }, head, body);
  const title = expandable
    ? h('button', { type: 'button', class: 'disclosure', 'aria-expanded': 'false', 'aria-controls': bodyId },
      h('span', { class: 'caret', 'aria-hidden': 'true' }, '▸'), label)
    : h('span', { class: 'entity-name' }, label);
  head.append(title, change ? badge(change.change) : badge('modified', 'contents changed'));
  const chips = h('span', { class: 'chips' });
  if (columnFields.length) {
    const added = columnFields.find((f) => f.field === 'columns.added');
    const dropped = columnFields.find((f) => f.field === 'columns.dropped');
    chips.append(h('span', { class: 'chip columns-chip' }, 'columns ',
      added ? h('span', { class: 'count-add' }, `+${Object.keys(added.after || {}).length} `) : null,
      dropped ? h('span', { class: 'count-del' }, `−${Object.keys(dropped.before || {}).length} `) : null,
      columnFields.filter((f) => !['columns.added', 'columns.dropped'].includes(f.field)).map((f) => `${f.field.slice(8)} `)));
  }
  if (fields.length - columnFields.length > 0) {
    chips.append(h('span', { class: 'chip' }, `${fields.length - columnFields.length} field${fields.length - columnFields.length === 1 ? '' : 's'}`));
  }
  for (const [kind, counts] of children) {
    chips.append(h('span', { class: `chip rollup-${kind}`, dataset: { kind } },
      `${(KIND_LABEL[kind] || kind).toLowerCase()} `, countsView(counts)));
  }
  head.append(chips);
  const iceberg = group.iceberg ? group.iceberg.lines || [] : [];
  if (iceberg.length) {  // an Iceberg table's snapshots, columns and properties, in its terms
    article.insertBefore(h('ul', { class: 'iceberg-changes', 'aria-label': `Iceberg changes of ${label}` },
      iceberg.map((line) => h('li', { class: 'mono' }, line))), body);
  }
  if (!expandable) return article;
  let filled = false;
  title.addEventListener('click', () => {
    const open = title.getAttribute('aria-expanded') !== 'true';
    title.setAttribute('aria-expanded', String(open));
    body.hidden = !open;
    if (open && !filled) {
      filled = true;
      if (fields.length) body.append(fieldsTable(label, fields, sides));
      for (const [kind, counts] of children) body.append(rollup(kind, counts, childrenOf));
    }
  });
  return article;
}

/** Field-level changes side by side; column changes highlighted. */
export function fieldsTable(label, fields, sides) {
  const rows = fields.map((f) => {
    const isColumn = f.field.startsWith('columns');
    return h('tr', { class: isColumn ? 'column-change' : '', dataset: { field: f.field } },
      h('th', { scope: 'row', class: 'mono' }, f.field),
      h('td', { class: 'before' }, fieldValue(f.field, f.before, 'before')),
      h('td', { class: 'after' }, fieldValue(f.field, f.after, 'after')));
  });
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data fields' },
    h('caption', {}, `Changed fields of ${label}`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Field'),
      h('th', { scope: 'col' }, `Before (${sides.left})`), h('th', { scope: 'col' }, `After (${sides.right})`))),
    h('tbody', {}, rows)));
}

function fieldValue(field, value, side) {
  if (value && typeof value === 'object' && !Array.isArray(value) && field.startsWith('columns.')
      && field !== 'columns.reordered') {
    const Tag = side === 'after' && field === 'columns.added' ? 'ins'
      : (side === 'before' && field === 'columns.dropped' ? 'del' : 'span');
    return h('span', {}, Object.entries(value).map(([name, type]) => h(Tag, { class: 'col mono' },
      `${name} ${type === null ? '' : type}`)));
  }
  return valueView(value);
}

/** "Partitions: +3 −1 ~0 [List partitions]" and, on demand, the paged list. */
function rollup(kind, counts, where) {
  const label = KIND_LABEL[kind] || kind;
  const listId = uid('children');
  const list = h('div', { class: 'children', id: listId, hidden: true });
  const button = h('button', { type: 'button', 'aria-expanded': 'false', 'aria-controls': listId,
    'aria-label': `List ${label.toLowerCase()} of ${where.db}.${where.table}` }, `List ${label.toLowerCase()}`);
  let loaded = false;
  button.addEventListener('click', async () => {
    const open = button.getAttribute('aria-expanded') !== 'true';
    button.setAttribute('aria-expanded', String(open));
    list.hidden = !open;
    if (open && !loaded) {
      loaded = true;
      await childList(list, kind, where);
    }
  });
  return h('div', { class: 'rollup-block', dataset: { kind } },
    h('div', { class: 'rollup' }, h('strong', {}, `${label}:`), countsView(counts), button), list);
}

async function childList(list, kind, where) {
  const filterId = uid('child-filter');
  const form = h('form', { class: 'toolbar', 'aria-label': `Filter ${kind} changes` },
    h('div', { class: 'field' }, h('label', { for: filterId }, 'Name contains'),
      h('input', { id: filterId, name: 'filter', autocomplete: 'off', placeholder: 'ds=2024' })),
    h('button', { type: 'submit' }, 'Filter'));
  const rows = h('div', {});
  put(list, form, rows);
  let filter = '';
  async function load(offset) {
    put(rows, loading());
    try {
      const page = await api('/diff/children', { query: { ...where, kind, filter, offset, limit: CHILD_PAGE } });
      const sides = { left: page.left.ref, right: page.right.ref };
      const items = page.changes.map((c) => {
        const detailId = uid('child');
        const detail = h('td', { colspan: 3, id: detailId, hidden: true });
        const has = c.fields.length > 0;
        const toggle = has ? h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', 'aria-controls': detailId,
          onclick: (event) => {
            const open = event.currentTarget.getAttribute('aria-expanded') !== 'true';
            event.currentTarget.setAttribute('aria-expanded', String(open));
            detail.hidden = !open;
            if (open && !detail.childElementCount) detail.append(fieldsTable(c.name, c.fields, sides));
          } }, `${c.fields.length} field${c.fields.length === 1 ? '' : 's'}`) : h('span', { class: 'muted' }, '—');
        return [h('tr', { dataset: { child: c.name } },
          h('th', { scope: 'row', class: 'mono' }, c.name), h('td', {}, badge(c.change)), h('td', {}, toggle)),
        h('tr', { class: 'detail-row' }, detail)];
      });
      put(rows, 
        page.total ? h('div', { class: 'table-wrap' }, h('table', { class: 'data children-table' },
          h('caption', {}, `${page.total} ${kind} change${page.total === 1 ? '' : 's'} in ${where.db}.${where.table}`),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Change'),
            h('th', { scope: 'col' }, 'Fields'))),
          h('tbody', {}, items))) : h('p', { class: 'muted' }, 'None match.'),
        page.total > page.limit || page.offset ? pager(page, load, kind) : null);
    } catch (err) {
      put(rows, errorView(err));
    }
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    filter = String(new FormData(form).get('filter')).trim();
    load(0);
  });
  await load(0);
}
