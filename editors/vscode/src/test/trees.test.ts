import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ActivityItem, Impact, Location } from '../core/protocol';
import { displayPath, impactTree, locationText, recentActivityTree, type TreeNode } from '../core/trees';

const ROOT = 'file:///work/repo';

function location(path: string, start: number, end = start): Location {
  return { uri: `${ROOT}/${path}`, range: { start: { line: start, character: 4 }, end: { line: end, character: 0 } } };
}

function impact(overrides: Partial<Impact> = {}): Impact {
  return {
    symbol: 'Store.open',
    definitions: [location('index/store.py', 10, 40)],
    callers: [
      {
        path: 'index/engine.py',
        uri: `${ROOT}/index/engine.py`,
        range: { start: { line: 99, character: 8 }, end: { line: 99, character: 20 } },
        symbol: 'Engine.__init__',
        confirmed: true,
      },
      {
        path: 'bench/perf.py',
        uri: `${ROOT}/bench/perf.py`,
        range: { start: { line: 4, character: 0 }, end: { line: 4, character: 10 } },
        symbol: null,
        confirmed: false,
        reason: 'builtin-name',
      },
    ],
    callees: [
      { symbol: 'sqlite3.connect', definitions: [] },
      { symbol: 'Store.migrate', definitions: [location('index/store.py', 50)] },
      { symbol: 'open_db', definitions: [location('a.py', 1), location('b.py', 2)] },
    ],
    summary: '1 caller (+1 unconfirmed) · 1 mention',
    refCount: 2,
    confirmed: 1,
    mentions: 1,
    risk: 'med',
    hedges: ['1 textual mention could be a call through a variable'],
    complexity: 6,
    ...overrides,
  };
}

function byId(nodes: TreeNode[], id: string): TreeNode {
  const found = nodes.find((node) => node.id === id);
  assert.ok(found, `no node ${id}`);
  return found;
}

function allIds(nodes: TreeNode[]): string[] {
  return nodes.flatMap((node) => [node.id, ...allIds(node.children)]);
}

describe('impactTree', () => {
  test('top level: risk, hedges, callers, callees, definitions', () => {
    const tree = impactTree(impact(), [ROOT]);
    assert.deepEqual(tree.map((node) => [node.label, node.description]), [
      ['Risk: med', '1 caller (+1 unconfirmed) · 1 mention · complexity 6'],
      ['Hedges', '1'],
      ['Callers', '1'],
      ['Callees', '3'],
      ['Definitions', '1'],
    ]);
    assert.equal(tree[0]?.icon, 'warning');
  });

  test('the risk node opens the definition and its tooltip names the symbol', () => {
    const risk = byId(impactTree(impact(), [ROOT]), 'risk');
    assert.deepEqual(risk.target, { type: 'location', location: location('index/store.py', 10, 40) });
    assert.match(risk.tooltip ?? '', /^Changing Store\.open: risk med/);
  });

  test('risk icons by level, a neutral one for an unknown level', () => {
    const icon = (risk: string): string | undefined => impactTree(impact({ risk } as Partial<Impact>), [])[0]?.icon;
    assert.equal(icon('low'), 'pass');
    assert.equal(icon('high'), 'error');
    assert.equal(icon('extreme'), 'question');
  });

  test('callers are clickable; unconfirmed ones are folded apart, with their reason', () => {
    const callers = byId(impactTree(impact({ unconfirmedReasons: { 'builtin-name': 1 } }), [ROOT]), 'callers');
    assert.equal(callers.expanded, true);
    const [confirmed, folded] = callers.children;
    assert.equal(folded?.id, 'callers/unconfirmed');
    assert.equal(folded?.expanded, false);
    assert.equal(folded?.description, '1');
    assert.match(folded?.tooltip ?? '', /builtin-name: 1/);
    const [unconfirmed] = folded?.children ?? [];
    assert.deepEqual(confirmed, {
      id: 'callers/0',
      label: 'Engine.__init__',
      description: 'index/engine.py:100',
      tooltip: 'A call the server resolved to this symbol',
      icon: 'symbol-method',
      children: [],
      target: { type: 'location', location: { uri: `${ROOT}/index/engine.py`, range: impact().callers[0]?.range } },
    });
    assert.equal(unconfirmed?.label, 'perf.py');
    assert.equal(unconfirmed?.description, 'bench/perf.py:5 · unconfirmed (builtin-name)');
    assert.equal(unconfirmed?.icon, 'question');
    assert.deepEqual(unconfirmed?.target, {
      type: 'location',
      location: { uri: `${ROOT}/bench/perf.py`, range: impact().callers[1]?.range },
    });
  });

  test('callees: none, one or several definitions', () => {
    const [external, single, several] = byId(impactTree(impact(), [ROOT]), 'callees').children;
    assert.equal(external?.description, 'no definition found');
    assert.equal(external?.target, undefined);
    assert.equal(single?.description, 'index/store.py:51');
    assert.deepEqual(single?.target, { type: 'location', location: location('index/store.py', 50) });
    assert.equal(several?.description, '2 definitions');
    assert.equal(several?.target, undefined);
    assert.deepEqual(
      several?.children.map((child) => [child.label, child.target]),
      [
        ['a.py:2', { type: 'location', location: location('a.py', 1) }],
        ['b.py:3', { type: 'location', location: location('b.py', 2) }],
      ],
    );
  });

  test('no callers and no hedges: an empty callers group, no hedges group', () => {
    const tree = impactTree(impact({ callers: [], hedges: [], definitions: [] }), [ROOT]);
    assert.deepEqual(tree.map((node) => node.id), ['risk', 'callers', 'callees']);
    assert.deepEqual(byId(tree, 'callers').children, []);
    assert.equal(byId(tree, 'risk').target, undefined);
  });

  test('hedges are listed in full', () => {
    const hedges = ['zero callers: may be called dynamically', 'tests were not searched'];
    const node = byId(impactTree(impact({ hedges }), [ROOT]), 'hedges');
    assert.deepEqual(node.children.map((child) => [child.label, child.tooltip]), hedges.map((hedge) => [hedge, hedge]));
  });

  test('several definitions: each listed with its confirmed callers and risk, the best first', () => {
    const perDefinition = [
      { definition: location('index/store.py', 10, 40), callers: [], confirmed: 1, unconfirmed: 1, risk: 'med' as const, hedges: [] },
      { definition: location('legacy/store.py', 3, 9), callers: [], confirmed: 0, unconfirmed: 2, risk: 'low' as const, hedges: [] },
    ];
    const node = byId(impactTree(impact({ perDefinition, definitionsMatched: 2 }), [ROOT]), 'definitions');
    assert.equal(node.description, '2 matched · showing the first');
    assert.deepEqual(
      node.children.map((child) => [child.label, child.description]),
      [
        ['index/store.py:11–41', '1 confirmed · risk med'],
        ['legacy/store.py:4–10', '0 confirmed · risk low'],
      ],
    );
  });

  test('ids are unique', () => {
    const ids = allIds(impactTree(impact(), [ROOT]));
    assert.equal(new Set(ids).size, ids.length);
  });
});

describe('locationText and displayPath', () => {
  test('relative to the workspace folder that holds it, with 1-based lines', () => {
    assert.equal(locationText(location('index/store.py', 10, 40), [ROOT]), 'index/store.py:11–41');
    assert.equal(locationText(location('src/a b.py', 3), ['file:///other', `${ROOT}/`]), 'src/a b.py:4');
  });

  test('outside every folder: the decoded file path; not a file: the URI', () => {
    assert.equal(displayPath('file:///tmp/x%20y.py', [ROOT]), '/tmp/x y.py');
    assert.equal(displayPath('untitled:Untitled-1', [ROOT]), 'untitled:Untitled-1');
  });

  test('a folder is not the prefix of its sibling', () => {
    assert.equal(displayPath('file:///work/repo2/a.py', [ROOT]), '/work/repo2/a.py');
  });
});

describe('recentActivityTree', () => {
  const now = Date.UTC(2026, 10, 29, 12, 0, 0);
  const minute = 60_000;
  const items: ActivityItem[] = [
    { id: 'index/store.py', symbol: 'Store.open', kind: 'code', lastEditedAt: now - 2 * minute, edits: 3 },
    { id: 'README.md', symbol: 'Using it', kind: 'doc', lastEditedAt: now - 5 * minute, edits: 1 },
    { id: 'index/store.py', symbol: null, kind: 'code', lastEditedAt: now - 90 * minute, edits: 1 },
    { id: 'index/engine.py', symbol: 'Engine.recall', kind: 'code', lastEditedAt: now - 3 * 24 * 60 * minute, edits: 12 },
  ];

  test('files by most recent edit, symbols under their file', () => {
    const tree = recentActivityTree(items, now);
    assert.deepEqual(tree.map((node) => [node.label, node.description]), [
      ['store.py', 'index · 2 min ago'],
      ['README.md', '5 min ago'],
      ['engine.py', 'index · 3 d ago'],
    ]);
    assert.deepEqual(tree[0]?.children.map((node) => [node.label, node.description]), [
      ['Store.open', '3 edits · 2 min ago'],
      ['(module level)', '1 edit · 1 h ago'],
    ]);
  });

  test('every node opens its file, children at their symbol', () => {
    const [store, readme] = recentActivityTree(items, now);
    assert.deepEqual(store?.target, { type: 'symbol', path: 'index/store.py', symbol: null });
    assert.deepEqual(store?.children.map((node) => node.target), [
      { type: 'symbol', path: 'index/store.py', symbol: 'Store.open' },
      { type: 'symbol', path: 'index/store.py', symbol: null },
    ]);
    assert.equal(readme?.children[0]?.icon, 'book');
    assert.equal(store?.children[0]?.icon, 'symbol-method');
  });

  test('one path in two workspace folders is two files, each opened by its own URI', () => {
    const two: ActivityItem[] = [
      { id: 'pkg/util.py', uri: 'file:///w/b/pkg/util.py', symbol: 'beta_new', kind: 'code', lastEditedAt: now, edits: 1 },
      { id: 'pkg/util.py', uri: 'file:///w/a/pkg/util.py', symbol: 'alpha', kind: 'code', lastEditedAt: now - minute, edits: 1 },
    ];
    const [b, a] = recentActivityTree(two, now);
    assert.deepEqual(b?.children.map((node) => node.target), [
      { type: 'symbol', path: 'pkg/util.py', symbol: 'beta_new', uri: 'file:///w/b/pkg/util.py' },
    ]);
    assert.deepEqual(a?.target, { type: 'symbol', path: 'pkg/util.py', symbol: null, uri: 'file:///w/a/pkg/util.py' });
    assert.notEqual(a?.id, b?.id);
  });

  test('files edited at the same moment are ordered by path', () => {
    const tied: ActivityItem[] = [
      { id: 'b.py', symbol: 'f', kind: 'code', lastEditedAt: now, edits: 1 },
      { id: 'a.py', symbol: 'g', kind: 'code', lastEditedAt: now, edits: 1 },
    ];
    assert.deepEqual(recentActivityTree(tied, now).map((node) => node.label), ['a.py', 'b.py']);
  });

  test('the same symbol in code and doc rows stays two nodes with distinct ids', () => {
    const twice: ActivityItem[] = [
      { id: 'a.md', symbol: 'Intro', kind: 'doc', lastEditedAt: now, edits: 1 },
      { id: 'a.md', symbol: 'Intro', kind: 'code', lastEditedAt: now, edits: 1 },
    ];
    const ids = allIds(recentActivityTree(twice, now));
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 3);
  });

  test('nothing edited: an empty tree', () => {
    assert.deepEqual(recentActivityTree([], now), []);
  });
});
