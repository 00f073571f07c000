import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MEMORY_SCHEME, memoryDocumentPath, memoryId, memoryIdOfPath, rememberParams, validateMemoryText } from '../core/memory';

const now = new Date(Date.UTC(2026, 10, 29, 21, 33, 5, 123));

describe('validateMemoryText', () => {
  test('blank text is refused with a reason; anything else is fine', () => {
    assert.equal(validateMemoryText(''), 'Type the fact to remember.');
    assert.equal(validateMemoryText(' \n\t'), 'Type the fact to remember.');
    assert.equal(validateMemoryText('uploads retry 3 times'), undefined);
  });
});

describe('memoryId', () => {
  test('a timestamp and a slug of the text', () => {
    assert.equal(memoryId('Uploads retry 3 times!', now), 'fact/20261129T213305123Z-uploads-retry-3-times');
  });

  test('accents are folded, other scripts and punctuation dropped', () => {
    assert.equal(memoryId('Résumé: café ☕ über', now), 'fact/20261129T213305123Z-resume-cafe-uber');
    assert.equal(memoryId('日本語', now), 'fact/20261129T213305123Z');
  });

  test('the slug is cut at 48 characters without a dangling dash', () => {
    const id = memoryId('the quick brown fox jumps over the lazy dog again and again', now);
    const slug = id.slice('fact/20261129T213305123Z-'.length);
    assert.ok(slug.length <= 48, slug);
    assert.doesNotMatch(slug, /-$/);
    assert.equal(slug, 'the-quick-brown-fox-jumps-over-the-lazy-dog-agai');
  });

  test('different moments give different ids for the same text', () => {
    assert.notEqual(memoryId('x', now), memoryId('x', new Date(now.getTime() + 1)));
  });
});

describe('rememberParams', () => {
  test('a human-written fact, trimmed, with the scope when there is one', () => {
    assert.deepEqual(rememberParams('  deploys freeze on Fridays \n', now, {}), {
      id: 'fact/20261129T213305123Z-deploys-freeze-on-fridays',
      text: 'deploys freeze on Fridays',
      kind: 'fact',
      by: 'human',
    });
    assert.equal(rememberParams('x', now, { scope: 'team-a' }).scope, 'team-a');
  });
});

describe('memory documents', () => {
  test('an id round-trips through its read-only document path, whatever it holds', () => {
    // A fact opened from Recall was an untitled (dirty) document; it now opens
    // as `ctxls-memory:` + this path, whose text the provider fetches by id.
    for (const id of ['fact/20261207T101500000Z-deploys-on-tuesdays', 'notes.md', 'a b/c?d#e%20é', 'x']) {
      assert.equal(memoryIdOfPath(memoryDocumentPath(id)), id);
    }
    assert.equal(MEMORY_SCHEME, 'ctxls-memory');
    assert.equal(memoryIdOfPath('/plain.txt'), undefined);
    assert.equal(memoryIdOfPath('/.md'), undefined);
  });
});
