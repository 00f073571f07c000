import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { basename, dirname, formatAge, formatCount, lineSpan, plural } from '../core/format';

describe('paths', () => {
  test('basename and dirname of repo-relative POSIX paths', () => {
    assert.equal(basename('index/store.py'), 'store.py');
    assert.equal(basename('README.md'), 'README.md');
    assert.equal(basename('docs/'), 'docs');
    assert.equal(dirname('index/store.py'), 'index');
    assert.equal(dirname('a/b/c.ts'), 'a/b');
    assert.equal(dirname('README.md'), '');
    assert.equal(dirname('/abs.py'), '');
  });
});

describe('numbers', () => {
  test('1-based line spans from 0-based inclusive lines', () => {
    assert.equal(lineSpan(0, 0), '1');
    assert.equal(lineSpan(11, 39), '12–40');
  });

  test('counts with separators, and singular or plural', () => {
    assert.equal(formatCount(1234567), '1,234,567');
    assert.equal(plural(1, 'file'), '1 file');
    assert.equal(plural(0, 'file'), '0 files');
    assert.equal(plural(2500, 'entry', 'entries'), '2,500 entries');
  });
});

describe('formatAge', () => {
  const now = Date.UTC(2026, 10, 29, 12, 0, 0);
  test('coarse steps from seconds to days, then a date', () => {
    assert.equal(formatAge(now - 59_000, now), 'just now');
    assert.equal(formatAge(now + 5_000, now), 'just now');
    assert.equal(formatAge(now - 60_000, now), '1 min ago');
    assert.equal(formatAge(now - 59 * 60_000, now), '59 min ago');
    assert.equal(formatAge(now - 60 * 60_000, now), '1 h ago');
    assert.equal(formatAge(now - 23 * 3_600_000, now), '23 h ago');
    assert.equal(formatAge(now - 24 * 3_600_000, now), '1 d ago');
    assert.equal(formatAge(now - 29 * 86_400_000, now), '29 d ago');
    assert.equal(formatAge(now - 30 * 86_400_000, now), '2026-10-30');
  });
});
