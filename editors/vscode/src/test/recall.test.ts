import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Hit, RecallResult } from '../core/protocol';
import { hitLocation, hitsInOrder, recallParams, recallPickItems, recallTitle, RECALL_HITS_PER_KIND } from '../core/recall';

function codeHit(overrides: Partial<Hit> = {}): Hit {
  return {
    path: 'index/store.py',
    kind: 'code',
    format: 'python',
    score: 7.5,
    chunk: { symbol: 'Store.open', startLine: 11, endLine: 39 },
    uri: 'file:///repo/index/store.py',
    range: { start: { line: 11, character: 0 }, end: { line: 39, character: 17 } },
    ...overrides,
  };
}

const docHit: Hit = {
  path: 'docs/protocol.md',
  kind: 'doc',
  format: 'markdown',
  score: 3,
  chunk: { symbol: 'Errors', startLine: 80, endLine: 80 },
  uri: 'file:///repo/docs/protocol.md',
  range: { start: { line: 80, character: 0 }, end: { line: 80, character: 9 } },
};

const factHit: Hit = {
  path: 'fact/20261129T101500000Z-uploads-retry-three-times',
  kind: 'fact',
  format: 'text',
  score: 2,
  chunk: null,
};

describe('recallParams', () => {
  test('asks for every kind, without bodies, with the scope when there is one', () => {
    assert.deepEqual(recallParams('  open store ', {}), { query: 'open store', n: RECALL_HITS_PER_KIND, body: false });
    assert.deepEqual(recallParams('x', { scope: 'team-a' }), { query: 'x', n: RECALL_HITS_PER_KIND, body: false, scope: 'team-a' });
  });

  test('n stays inside the server\'s 1–200', () => {
    assert.ok(RECALL_HITS_PER_KIND >= 1 && RECALL_HITS_PER_KIND <= 200);
  });
});

describe('hitsInOrder', () => {
  test('a flat answer keeps its order', () => {
    const hits = [codeHit({ score: 1 }), codeHit({ score: 9 })];
    assert.deepEqual(hitsInOrder({ hits }), hits);
  });

  test('groups come code, doc, fact, episode whatever the JSON order, each in server order', () => {
    const second = codeHit({ path: 'b.py', score: 1 });
    const result: RecallResult = { groups: { fact: [factHit], doc: [docHit], code: [codeHit(), second], episode: [] } };
    assert.deepEqual(
      hitsInOrder(result).map((hit) => hit.path),
      ['index/store.py', 'b.py', 'docs/protocol.md', factHit.path],
    );
  });

  test('a kind this client does not know goes last instead of vanishing', () => {
    const future = { ...docHit, kind: 'ticket', path: 'T-1' } as unknown as Hit;
    const groups = { ticket: [future], code: [codeHit()] } as RecallResult['groups'];
    assert.deepEqual(hitsInOrder({ groups }).map((hit) => hit.path), ['index/store.py', 'T-1']);
  });

  test('no hits and no groups is empty', () => {
    assert.deepEqual(hitsInOrder({ partial: true }), []);
  });
});

describe('recallPickItems', () => {
  test('code: symbol with an icon, path and 1-based lines', () => {
    const [item] = recallPickItems({ hits: [codeHit()] });
    assert.deepEqual(item, {
      label: '$(symbol-method) Store.open',
      description: 'index/store.py:12–40',
      hit: codeHit(),
    });
  });

  test('other kinds say their kind; a one-line chunk shows one line', () => {
    const [item] = recallPickItems({ hits: [docHit] });
    assert.equal(item?.label, '$(book) Errors');
    assert.equal(item?.description, 'doc · docs/protocol.md:81');
  });

  test('no symbol: the file name; no chunk: the path alone', () => {
    const [module] = recallPickItems({ hits: [codeHit({ chunk: { symbol: null, startLine: 0, endLine: 9 } })] });
    assert.equal(module?.label, '$(symbol-method) store.py');
    const [whole] = recallPickItems({ hits: [{ ...docHit, chunk: null }] });
    assert.equal(whole?.description, 'doc · docs/protocol.md');
  });

  test('written memory (no file): the whole id, and its kind', () => {
    const [fact] = recallPickItems({ hits: [factHit] });
    assert.equal(fact?.label, `$(lightbulb) ${factHit.path}`);
    assert.equal(fact?.description, 'fact');
    const [episode] = recallPickItems({ hits: [{ ...factHit, kind: 'episode', chunk: { symbol: 'deploy', startLine: 0, endLine: 0 } }] });
    assert.equal(episode?.label, '$(history) deploy');
  });

  test('an unknown kind gets a neutral icon', () => {
    const future = { ...factHit, kind: 'ticket' } as unknown as Hit;
    assert.match(recallPickItems({ hits: [future] })[0]?.label ?? '', /^\$\(circle-small\) /);
  });
});

describe('recallTitle', () => {
  test('counts matches and says when the index is still being built', () => {
    assert.equal(recallTitle('store', { hits: [codeHit()] }), '1 match');
    assert.equal(recallTitle('store', { groups: { code: [codeHit(), codeHit()], doc: [docHit] } }), '3 matches');
    assert.equal(recallTitle(' nothing ', { groups: {}, partial: false }), 'No matches for "nothing"');
    assert.equal(recallTitle('x', { hits: [codeHit()], partial: true }), '1 match (results may be incomplete: still indexing)');
    // The server's reason when it gives one (not always "still indexing": no vectors yet, a full disk, …).
    const full = 'the index could not take the latest text of 1 file (… database or disk is full)';
    assert.equal(recallTitle('x', { hits: [codeHit()], partial: true, partialReason: full }),
      `1 match (results may be incomplete: ${full})`);
  });
});

describe('hitLocation', () => {
  test('uses the hit\'s uri and range', () => {
    assert.deepEqual(hitLocation(codeHit()), { uri: codeHit().uri, range: codeHit().range });
  });

  test('without a range: the chunk\'s whole lines', () => {
    const { range: _range, ...withoutRange } = codeHit();
    assert.deepEqual(hitLocation(withoutRange), {
      uri: 'file:///repo/index/store.py',
      range: { start: { line: 11, character: 0 }, end: { line: 40, character: 0 } },
    });
  });

  test('without range or chunk: the top of the file', () => {
    const { range: _range, ...withoutRange } = codeHit();
    assert.deepEqual(hitLocation({ ...withoutRange, chunk: null }), {
      uri: 'file:///repo/index/store.py',
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
    });
  });

  test('written memory (no uri) has no location', () => {
    assert.equal(hitLocation(factHit), undefined);
    assert.equal(hitLocation({ ...factHit, uri: '' }), undefined);
  });
});

describe('recallTitle of a weak answer', () => {
  test('says the hits are only the nearest rows, and why', () => {
    // A weak answer was shown as a plain "15 matches", as if the repository answered the query.
    const reason = 'few of the query\'s words occur in this repository (1 of 4) and the nearest meaning is distant';
    assert.equal(recallTitle('kubernetes helm chart', { hits: [codeHit()], weak: true, weakReason: reason }),
      `1 match (weak: ${reason}; these are only the nearest rows)`);
    assert.equal(recallTitle('x', { hits: [codeHit()], weak: true }),
      '1 match (weak: the repository looks unrelated to the query; these are only the nearest rows)');
    assert.equal(recallTitle('x', { hits: [codeHit()], weak: false }), '1 match');
  });
});
