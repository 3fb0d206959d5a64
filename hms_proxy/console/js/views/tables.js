// Catalog browsing at any ref: databases and their tables; a table's page (schema, properties,
// location, partitions paged and filtered) and its column statistics (summary rows, histogram
// and top frequencies charts).
import { api, seg } from '../api.js';
import { h, put, uid } from '../dom.js';
import { barChart, dataTable, fmtBound, histogram } from '../charts.js';
import {
  errorView, go, href, loadRefs, loading, pager, plural, refPicker, shortId, table,
} from '../ui.js';

const PART_PAGE = 25;

export async function tablesView(root, params) {
  const refs = await loadRefs();
  const ref = params.get('ref') || refs.default_branch;
  document.title = `Tables at ${ref} · hms-proxy`;
  root.append(h('h1', {}, 'Tables'));
  const form = h('form', { class: 'toolbar panel', 'aria-label': 'Choose the ref' },
    refPicker('At ref', 'ref', ref, refs), h('button', { type: 'submit', class: 'primary' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    go('/tables', { ref: String(new FormData(form).get('ref')).trim() });
  });
  const out = h('div', {}, loading());
  root.append(form, out);
  const dbs = await api('/databases', { query: { ref } });
  const sections = [h('p', { class: 'muted' }, `${dbs.databases.length} database(s) at ${ref} (${shortId(dbs.commit)}).`)];
  for (const db of dbs.databases) {
    const detail = await api(`/databases/${seg(db.name)}`, { query: { ref } });
    const rows = detail.tables.map((t) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: href(`/table/${db.name}/${t.name}`, { ref }) }, t.name)),
      h('td', {}, t.type || '—'),
      h('td', { class: 'num' }, String(t.columns)),
      h('td', { class: 'mono' }, t.partition_keys.map((k) => `${k.name} ${k.type}`).join(', ') || '—'),
      h('td', { class: 'wrap mono' }, t.location || '—')));
    sections.push(h('section', { 'aria-label': `Database ${db.name}` },
      h('h2', {}, db.name, db.description ? h('span', { class: 'muted' }, ` — ${db.description}`) : null),
      rows.length ? table(`Tables of ${db.name}`, ['Table', 'Type', 'Columns', 'Partition keys', 'Location'], rows)
        : h('p', { class: 'muted' }, 'No tables.')));
  }
  put(out, ...sections);
}

export async function tableView(root, params, db, name) {
  const refs = await loadRefs();
  const ref = params.get('ref') || refs.default_branch;
  document.title = `${db}.${name} at ${ref} · hms-proxy`;
  root.append(h('h1', {}, `${db}.${name}`));
  const form = h('form', { class: 'toolbar panel', 'aria-label': 'Choose the ref' },
    refPicker('At ref', 'ref', ref, refs), h('button', { type: 'submit', class: 'primary' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    go(`/table/${db}/${name}`, { ref: String(new FormData(form).get('ref')).trim() });
  });
  root.append(form);
  const t = await api(`/databases/${seg(db)}/tables/${seg(name)}`, { query: { ref } });
  root.append(h('div', { class: 'panel' }, h('dl', { class: 'facts' },
    h('dt', {}, 'Ref'), h('dd', {}, h('span', { class: 'mono' }, ref), ` (${shortId(t.commit)})`),
    h('dt', {}, 'Type'), h('dd', {}, t.type || '—'),
    h('dt', {}, 'Owner'), h('dd', {}, t.owner || '—'),
    h('dt', {}, 'Location'), h('dd', { class: 'mono', id: 'table-location' }, t.location || '—'),
    h('dt', {}, 'Formats'), h('dd', { class: 'mono' }, [t.input_format, t.output_format].filter(Boolean).join(' / ') || '—'),
    h('dt', {}, 'SerDe'), h('dd', { class: 'mono' }, t.serde.library || '—'),
    h('dt', {}, 'Partitions'), h('dd', { id: 'partition-count' }, t.partition_keys.length ? String(t.partition_count) : 'not partitioned'),
    t.view_text ? [h('dt', {}, 'View'), h('dd', { class: 'mono' }, t.view_text)] : null)));

  const schemaRows = [
    ...t.columns.map((c) => h('tr', {}, h('th', { scope: 'row', class: 'mono' }, c.name),
      h('td', { class: 'mono' }, c.type), h('td', {}, c.comment || ''), h('td', {}, ''))),
    ...t.partition_keys.map((c) => h('tr', {}, h('th', { scope: 'row', class: 'mono' }, c.name),
      h('td', { class: 'mono' }, c.type), h('td', {}, c.comment || ''), h('td', {}, h('span', { class: 'badge info' }, 'partition key')))),
  ];
  const props = Object.entries(t.parameters).sort(([a], [b]) => a.localeCompare(b));
  root.append(h('div', { class: 'grid-2' },
    h('section', { 'aria-labelledby': 'schema-h' }, h('h2', { id: 'schema-h' }, 'Schema'),
      table(`${plural(t.columns.length, 'column')}, ${plural(t.partition_keys.length, 'partition key')}`, ['Column', 'Type', 'Comment', ''], schemaRows, { id: 'schema' })),
    h('section', { 'aria-labelledby': 'props-h' }, h('h2', { id: 'props-h' }, 'Properties'),
      props.length ? table(plural(props.length, 'property', 'properties'), ['Key', 'Value'],
        props.map(([k, v]) => h('tr', {}, h('th', { scope: 'row', class: 'mono' }, k), h('td', { class: 'wrap mono' }, v))), { id: 'properties' })
        : h('p', { class: 'muted' }, 'No properties.'))));

  if (t.partition_keys.length) {
    const section = h('section', { 'aria-labelledby': 'parts-h' }, h('h2', { id: 'parts-h' }, 'Partitions'));
    root.append(section);
    partitions(section, db, name, ref);
  }
  const stats = h('section', { 'aria-labelledby': 'stats-h', id: 'statistics' }, h('h2', { id: 'stats-h' }, 'Statistics'));
  root.append(stats);
  await statistics(stats, db, name, ref, params);
}

function partitions(section, db, name, ref) {
  const filterId = uid('part-filter');
  const form = h('form', { class: 'toolbar', 'aria-label': 'Filter partitions' },
    h('div', { class: 'field' }, h('label', { for: filterId }, 'Name contains'),
      h('input', { id: filterId, name: 'filter', autocomplete: 'off', placeholder: 'ds=2024-01' })),
    h('button', { type: 'submit' }, 'Filter'));
  const out = h('div', {});
  section.append(form, out);
  let filter = '';
  async function load(offset) {
    put(out, loading());
    try {
      const page = await api(`/databases/${seg(db)}/tables/${seg(name)}/partitions`,
        { query: { ref, filter, offset, limit: PART_PAGE } });
      const rows = page.partitions.map((p) => h('tr', {},
        h('th', { scope: 'row', class: 'mono' }, p.name),
        h('td', { class: 'wrap mono' }, p.location || '—'),
        h('td', { class: 'wrap mono' }, Object.entries(p.parameters).map(([k, v]) => `${k}=${v}`).join(', '))));
      put(out, 
        rows.length ? table(`${page.total} partition${page.total === 1 ? '' : 's'}${filter ? ` matching “${filter}”` : ''}`,
          ['Partition', 'Location', 'Parameters'], rows, { id: 'partitions' }) : h('p', { class: 'muted' }, 'No partitions match.'),
        pager(page, load, 'partitions'));
    } catch (err) {
      put(out, errorView(err));
    }
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    filter = String(new FormData(form).get('filter')).trim();
    load(0);
  });
  load(0);
}

const SUMMARY_COLUMNS = [
  ['count', 'rows'], ['null_count', 'nulls'], ['distinct_count', 'distinct'], ['min', 'min'], ['max', 'max'],
  ['mean', 'mean'], ['stddev', 'stddev'], ['p50', 'median'],
];

function cell(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' && !Number.isInteger(value)) return Number(value.toPrecision(6)).toString();
  return String(value);
}

async function statistics(section, db, name, ref, params) {
  const base = `/databases/${seg(db)}/tables/${seg(name)}/stats`;
  const overview = await api(base, { query: { ref } });
  if (!overview.available) {
    section.append(h('p', { class: 'muted' }, `No computed statistics at ${ref} (hms-proxy stats compute ${db}.${name}).`));
    return;
  }
  let partition = params.get('partition') || '';
  const levelId = uid('stats-level');
  const level = h('select', { id: levelId, name: 'partition' }, h('option', { value: '' }, 'Table level'));
  if (overview.partitioned) {
    const parts = await api(`${base}/partitions`, { query: { ref, limit: 1000 } });
    for (const p of parts.partitions) level.append(h('option', { value: p, selected: p === partition }, p));
  }
  const summaryOut = h('div', {});
  const columnOut = h('div', { id: 'column-stats', 'aria-live': 'polite' });
  section.append(
    h('p', { class: 'muted', id: 'stats-source' }, 'Table level from ',
      h('span', { class: 'mono wrap' }, overview.source || ''),
      overview.stale ? h('span', { class: 'badge warn' }, ' may be stale') : null),
    h('div', { class: 'toolbar' }, h('div', { class: 'field' }, h('label', { for: levelId }, 'Level'), level)),
    summaryOut, columnOut);
  const types = Object.fromEntries(overview.columns.map((c) => [c.name, c]));

  async function showSummary() {
    put(summaryOut, loading());
    try {
      const res = await api(`${base}/summary`, { query: { ref, partition } });
      const rows = res.rows.map((r) => h('tr', { dataset: { column: r.column } },
        h('th', { scope: 'row', class: 'mono' }, r.column),
        h('td', { class: 'mono' }, r.type),
        SUMMARY_COLUMNS.map(([key]) => h('td', { class: 'num' },
          key === 'distinct_count' && r.distinct_exact === false && r[key] !== null ? `~${cell(r[key])}` : cell(r[key]))),
        h('td', {}, h('button', { type: 'button', 'aria-label': `Charts of ${r.column}`,
          onclick: () => showColumn(r.column) }, 'Charts'))));
      put(summaryOut, table(`Summary (${res.partition || 'table level'})`,
        ['Column', 'Type', ...SUMMARY_COLUMNS.map(([, label]) => h('th', { scope: 'col', class: 'num' }, label)), ''],
        rows, { id: 'stats-summary' }));
    } catch (err) {
      put(summaryOut, errorView(err));
    }
  }

  async function showColumn(column, range = {}) {
    const info = types[column];
    for (const tr of summaryOut.querySelectorAll('tr[data-column]')) {
      tr.classList.toggle('selected', tr.dataset.column === column);
    }
    put(columnOut, loading());
    const query = { ref, partition, column };
    const parts = [h('h3', { id: 'column-h', tabindex: '-1' }, `Column ${column} `, h('span', { class: 'muted mono' }, info.type))];
    try {
      const summary = await api(`${base}/summary`, { query: { ref, partition, columns: column } });
      const row = summary.rows[0];
      const keys = Object.keys(row).filter((k) => !['column', 'type'].includes(k) && row[k] !== null);
      parts.push(table(`Summary row of ${column}`, keys.map((k) => h('th', { scope: 'col', class: 'num' }, k)),
        [h('tr', {}, keys.map((k) => h('td', { class: 'num' }, cell(row[k]))))], { id: 'column-summary' }));
      const charts = h('div', { class: 'charts' });
      if (info.numeric) {
        const res = await api(`${base}/histogram`, { query: { ...query, lo: range.lo, hi: range.hi } });
        const loId = uid('lo');
        const hiId = uid('hi');
        const rangeForm = h('form', { class: 'toolbar', 'aria-label': `Histogram range of ${column}` },
          h('div', { class: 'field' }, h('label', { for: loId }, `Range from${info.unit ? ' (ISO date)' : ''}`),
            h('input', { id: loId, name: 'lo', value: range.lo || '', size: 12 })),
          h('div', { class: 'field' }, h('label', { for: hiId }, 'Range to'),
            h('input', { id: hiId, name: 'hi', value: range.hi || '', size: 12 })),
          h('button', { type: 'submit' }, 'Apply range'));
        rangeForm.addEventListener('submit', (event) => {
          event.preventDefault();
          const data = new FormData(rangeForm);
          showColumn(column, { lo: String(data.get('lo')).trim(), hi: String(data.get('hi')).trim() });
        });
        charts.append(h('figure', { class: 'chart', id: 'histogram' },
          h('figcaption', {}, `Histogram of ${column}`),
          histogram(res.bins, { column, unit: res.unit }), rangeForm,
          dataTable(`Histogram of ${column}`, ['from', 'to', 'count'],
            res.bins.map((b) => [fmtBound(b.lower, res.unit), fmtBound(b.upper, res.unit), String(b.count)]))));
      }
      if (info.discrete) {
        const res = await api(`${base}/top`, { query: { ...query, n: 10 } });
        charts.append(h('figure', { class: 'chart', id: 'top-values' },
          h('figcaption', {}, `Top ${res.values.length} values of ${column}`,
            res.duplicates_only ? h('span', { class: 'muted' }, ' (values occurring more than once)') : null),
          barChart(res.values, { column }),
          dataTable(`Top values of ${column}`, ['value', 'rows'], res.values.map((v) => [v.value ?? '(null)', String(v.frequency)]))));
      }
      if (!info.numeric && !info.discrete) parts.push(h('p', { class: 'muted' }, 'No histogram nor frequencies for this type.'));
      parts.push(charts);
      put(columnOut, ...parts);
    } catch (err) {
      put(columnOut, ...parts, errorView(err));
    }
    const heading = columnOut.querySelector('#column-h');
    if (heading) heading.focus();
  }

  level.addEventListener('change', async () => {
    partition = level.value;
    columnOut.replaceChildren();
    await showSummary();
  });
  await showSummary();
  const chosen = params.get('column');
  if (chosen && types[chosen]) await showColumn(chosen);
}
