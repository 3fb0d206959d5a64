// Branches and tags: list, create, delete (confirmed), protect / unprotect.
import { api, seg } from '../api.js';
import { h, put, uid } from '../dom.js';
import {
  badge, confirmAction, errorView, fmtDate, href, loading, notice, plural, refPicker, shortId, table,
} from '../ui.js';

export async function refsView(root) {
  document.title = 'Branches and tags · hms-proxy';
  root.append(h('h1', {}, 'Branches and tags'));
  const status = h('div', { 'aria-live': 'polite' });
  const body = h('div', {}, loading());
  root.append(status, body);
  const refs = await api('/refs');
  const readOnly = document.body.dataset.readOnly === 'true';

  async function act(fn, done) {
    status.replaceChildren();
    try {
      await fn();
      put(status, notice(done));
      await refresh();
    } catch (err) {
      put(status, errorView(err));
    }
  }

  async function refresh() {
    const fresh = await api('/refs');
    put(body, ...render(fresh));
  }

  function branchRow(b) {
    const name = b.name;
    return h('tr', { dataset: { branch: name } },
      h('th', { scope: 'row' }, h('span', { class: 'mono' }, name), ' ',
        name === refs.default_branch ? badge('info', 'default') : null, ' ',
        b.protected ? badge('warn', 'protected') : null, ' ',
        b.uncommitted ? badge('modified', 'uncommitted changes') : null),
      h('td', {}, h('a', { href: href(`/commit/${b.head}`), class: 'mono' }, shortId(b.head))),
      h('td', { class: 'wrap' }, (b.commit.message || '').split('\n')[0]),
      h('td', {}, b.commit.author || '—'),
      h('td', {}, fmtDate(b.commit.date)),
      h('td', {}, h('div', { class: 'actions' },
        h('a', { href: href('/commits', { ref: name }), 'aria-label': `Log of ${name}` }, 'Log'),
        h('a', { href: href('/tables', { ref: name }), 'aria-label': `Browse ${name}` }, 'Browse'),
        name !== refs.default_branch ? h('a', {
          href: href('/diff', { left: refs.default_branch, right: name }),
          'aria-label': `Diff ${refs.default_branch} to ${name}`,
        }, 'Diff') : null,
        name !== refs.default_branch ? h('a', {
          href: href('/merge', { source: name, dest: refs.default_branch }),
          'aria-label': `Merge ${name} into ${refs.default_branch}`,
        }, 'Merge') : null,
        h('button', {
          type: 'button', disabled: readOnly,
          'aria-label': `${b.protected ? 'Unprotect' : 'Protect'} branch ${name}`,
          onclick: async () => {
            const on = !b.protected;
            const ok = await confirmAction(`${on ? 'Protect' : 'Unprotect'} branch ${name}?`,
              on ? `A protected branch cannot be deleted or reset, and refuses direct writes: it changes by merges.`
                : `Branch ${name} will accept direct writes again, and may be deleted.`,
              on ? 'Protect' : 'Unprotect');
            if (ok) {
              await act(() => api(`/branches/${seg(name)}/protection`, { method: 'PUT', body: { protected: on } }),
                `Branch ${name} is ${on ? 'now' : 'no longer'} protected.`);
            }
          },
        }, b.protected ? 'Unprotect' : 'Protect'),
        h('button', {
          type: 'button', class: 'danger', disabled: readOnly || b.protected,
          'aria-label': `Delete branch ${name}`,
          onclick: async () => {
            const ok = await confirmAction(`Delete branch ${name}?`,
              `Branch ${name} (at ${shortId(b.head)}) and its uncommitted changes will be deleted. Its commits stay reachable from other refs only.`,
              'Delete');
            if (ok) await act(() => api(`/branches/${seg(name)}`, { method: 'DELETE' }), `Deleted branch ${name}.`);
          },
        }, 'Delete'))));
  }

  function tagRow(t) {
    return h('tr', { dataset: { tag: t.name } },
      h('th', { scope: 'row' }, h('span', { class: 'mono' }, t.name)),
      h('td', {}, h('a', { href: href(`/commit/${t.commit}`), class: 'mono' }, shortId(t.commit))),
      h('td', { class: 'wrap' }, (t.commit_info.message || '').split('\n')[0]),
      h('td', {}, fmtDate(t.commit_info.date)),
      h('td', {}, h('div', { class: 'actions' },
        h('a', { href: href('/tables', { ref: t.name }), 'aria-label': `Browse tag ${t.name}` }, 'Browse'),
        h('button', {
          type: 'button', class: 'danger', disabled: readOnly, 'aria-label': `Delete tag ${t.name}`,
          onclick: async () => {
            const ok = await confirmAction(`Delete tag ${t.name}?`, `Tag ${t.name} (at ${shortId(t.commit)}) will be deleted.`, 'Delete');
            if (ok) await act(() => api(`/tags/${seg(t.name)}`, { method: 'DELETE' }), `Deleted tag ${t.name}.`);
          },
        }, 'Delete'))));
  }

  function createBranchForm(all) {
    const nameId = uid('new-branch');
    const form = h('form', { class: 'toolbar panel', 'aria-label': 'Create a branch' },
      h('div', { class: 'field' }, h('label', { for: nameId }, 'New branch name'),
        h('input', { id: nameId, name: 'name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9_.\\-]*', autocomplete: 'off' })),
      refPicker('From', 'from', all.default_branch, all),
      h('button', { type: 'submit', class: 'primary', disabled: readOnly }, 'Create branch'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const name = String(data.get('name')).trim();
      act(() => api('/branches', { method: 'POST', body: { name, from: String(data.get('from')).trim() } }),
        `Created branch ${name}.`);
    });
    return form;
  }

  function createTagForm(all) {
    const nameId = uid('new-tag');
    const form = h('form', { class: 'toolbar panel', 'aria-label': 'Create a tag' },
      h('div', { class: 'field' }, h('label', { for: nameId }, 'New tag name'),
        h('input', { id: nameId, name: 'name', required: true, autocomplete: 'off' })),
      refPicker('At ref', 'ref', all.default_branch, all),
      h('button', { type: 'submit', class: 'primary', disabled: readOnly }, 'Create tag'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const name = String(data.get('name')).trim();
      act(() => api('/tags', { method: 'POST', body: { name, ref: String(data.get('ref')).trim() } }),
        `Created tag ${name}.`);
    });
    return form;
  }

  function render(all) {
    return [
      h('h2', {}, 'Branches'),
      table(plural(all.branches.length, 'branch', 'branches'), ['Branch', 'Head', 'Message', 'Author', 'Date', 'Actions'],
        all.branches.map(branchRow), { id: 'branches' }),
      createBranchForm(all),
      h('h2', {}, 'Tags'),
      all.tags.length ? table(plural(all.tags.length, 'tag'), ['Tag', 'Commit', 'Message', 'Date', 'Actions'],
        all.tags.map(tagRow), { id: 'tags' }) : h('p', { class: 'muted' }, 'No tags.'),
      createTagForm(all),
    ];
  }

  put(body, ...render(refs));
}
