import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Status } from '../core/protocol';
import { needsPolling, ProgressTracker, StatusPoller, statusView } from '../core/status';
import { deferred, FakeClock, settle, type Deferred } from './fakes';

function status(overrides: Partial<Status> = {}): Status {
  return {
    indexing: false,
    files: 1234,
    chunks: 9876,
    vectors: 9000,
    pending: 0,
    embeddings: { enabled: true, model: 'all-MiniLM-L6-v2', dim: 384 },
    root: '/work/repo',
    dbPath: '/work/repo/.ctxls/index.db',
    version: '0.1.0',
    ...overrides,
  };
}

describe('ProgressTracker', () => {
  test('begin, report and end of one task', () => {
    const tracker = new ProgressTracker();
    assert.equal(tracker.current(), undefined);
    tracker.apply('t1', { kind: 'begin', title: 'ctxls: indexing', message: '/work/repo', percentage: 0 });
    assert.deepEqual(tracker.current(), { title: 'indexing', message: '/work/repo', percentage: 0 });
    tracker.apply('t1', { kind: 'report', message: '40/100 files', percentage: 40 });
    assert.deepEqual(tracker.current(), { title: 'indexing', message: '40/100 files', percentage: 40 });
    tracker.apply('t1', { kind: 'report', percentage: 50 });
    assert.deepEqual(tracker.current(), { title: 'indexing', message: '40/100 files', percentage: 50 });
    tracker.apply('t1', { kind: 'end', message: 'indexed 100 files' });
    assert.equal(tracker.current(), undefined);
  });

  test('several tasks at once: the first one\'s title, the mean percentage', () => {
    const tracker = new ProgressTracker();
    tracker.apply(1, { kind: 'begin', title: 'ctxls: indexing', percentage: 20 });
    tracker.apply(2, { kind: 'begin', title: 'ctxls: embedding', percentage: 61 });
    tracker.apply(3, { kind: 'begin', title: 'untitled work' });
    assert.deepEqual(tracker.current(), { title: 'indexing (+2 more)', message: undefined, percentage: 41 });
    tracker.apply(1, { kind: 'end' });
    tracker.apply(3, { kind: 'end' });
    assert.deepEqual(tracker.current(), { title: 'embedding', message: undefined, percentage: 61 });
  });

  test('reports for unknown tokens are ignored; clear forgets everything', () => {
    const tracker = new ProgressTracker();
    tracker.apply('ghost', { kind: 'report', percentage: 10 });
    assert.equal(tracker.current(), undefined);
    tracker.apply('t', { kind: 'begin', title: 'x' });
    tracker.clear();
    assert.equal(tracker.current(), undefined);
  });
});

describe('statusView', () => {
  test('starting: a spinner until the first answer', () => {
    assert.deepEqual(statusView({}), { text: '$(sync~spin) ctxls', tooltip: 'Starting the ctxls server…' });
  });

  test('an error wins over everything and says how to see more', () => {
    const view = statusView({ status: status(), error: 'ctxls: could not start' });
    assert.equal(view.text, '$(error) ctxls');
    assert.match(view.tooltip, /^ctxls: could not start\nClick to show the server's output\.$/);
  });

  test('progress shows the task and its percentage, clamped', () => {
    assert.equal(statusView({ progress: { title: 'indexing', percentage: 42 } }).text, '$(sync~spin) ctxls indexing 42%');
    assert.equal(statusView({ progress: { title: 'indexing', percentage: 140 } }).text, '$(sync~spin) ctxls indexing 100%');
    const view = statusView({ status: status(), progress: { title: 'embedding', message: '300 chunks left' } });
    assert.equal(view.text, '$(sync~spin) ctxls · 1,234 files indexed · embedding');
    assert.match(view.tooltip, /^embedding: 300 chunks left\nctxls 0\.1\.0/);
  });

  test('indexing without progress (a client that lost it) still spins', () => {
    const view = statusView({ status: status({ indexing: true, files: 1 }) });
    assert.equal(view.text, '$(sync~spin) ctxls indexing · 1 file');
    assert.match(view.tooltip, /^ctxls 0\.1\.0 — indexing\n/);
  });

  test('a backlog shows its size', () => {
    const view = statusView({ status: status({ pending: 1500 }) });
    assert.equal(view.text, '$(sync~spin) ctxls · 1,234 files indexed · 1,500 pending');
    assert.match(view.tooltip, /1,500 pending \(files to index, chunks to embed\)/);
  });

  test('idle: ready, with counts, embeddings, root and index in the tooltip', () => {
    const view = statusView({ status: status() });
    assert.equal(view.text, '$(database) ctxls ready · 1,234 files');
    assert.equal(
      view.tooltip,
      [
        'ctxls 0.1.0',
        '1,234 files, 9,876 chunks, 9,000 vectors',
        'Embeddings: all-MiniLM-L6-v2 (384d)',
        'Root: /work/repo',
        'Index: /work/repo/.ctxls/index.db',
      ].join('\n'),
    );
  });

  test('an index that cannot be updated (a full disk) is an error, not "ready"', () => {
    const full = 'nothing was written to /work/repo/.ctxls/index.db: database or disk is full';
    const view = statusView({ status: status({ state: 'error', indexError: { code: -32007, message: full } }) });
    assert.equal(view.text, '$(error) ctxls · 1,234 files · not updated');
    assert.equal(view.tooltip.split('\n')[0], full);
    const unusable = statusView({
      status: status({ state: 'error', files: 0, storeError: { code: -32006, message: 'index store cannot be used' } }),
    });
    assert.equal(unusable.text, '$(error) ctxls · 0 files · not updated');
    // Its first pass's progress stays open while the server retries: still the error.
    const retrying = statusView({
      status: status({ state: 'error', files: 0, indexing: false, storeError: { code: -32006, message: 'index store cannot be used' } }),
      progress: { title: 'indexing', percentage: 0 },
    });
    assert.equal(retrying.text, '$(error) ctxls · 0 files · not updated');
    // One folder of several: named.
    const folders = [
      { indexing: false, files: 1, chunks: 1, pending: 0, root: '/a', dbPath: '/a/.ctxls/index.db' },
      { indexing: false, files: 2, chunks: 2, pending: 0, root: '/b', dbPath: '/b/.ctxls/index.db',
        indexError: { code: -32007, message: full } },
    ];
    const several = statusView({ status: status({ state: 'error', folders }) });
    assert.equal(several.text, '$(error) ctxls · 1,234 files · not updated');
    assert.equal(several.tooltip.split('\n')[0], `/b: ${full}`);
  });

  test('embeddings off, or failed (with a warning icon)', () => {
    const off = statusView({ status: status({ embeddings: { enabled: false, model: '', dim: 0 }, vectors: 1 }) });
    assert.match(off.tooltip, /\n1 vector\n|, 1 vector\n/);
    assert.match(off.tooltip, /Embeddings: off \(lexical search only\)/);
    const failed = statusView({
      status: status({ embeddings: { enabled: false, model: '', dim: 0, error: 'model file missing' } }),
    });
    assert.equal(failed.text, '$(warning) $(database) ctxls ready · 1,234 files');
    assert.match(failed.tooltip, /Embeddings off: model file missing/);
  });

  test('several folders: one root line each', () => {
    const folder = { indexing: false, files: 1, chunks: 1, pending: 0, dbPath: '' };
    const view = statusView({
      status: status({ folders: [{ ...folder, root: '/a' }, { ...folder, root: '/b' }] }),
    });
    assert.match(view.tooltip, /Root: \/a\nRoot: \/b/);
  });

  test('no folder open: no root or index lines', () => {
    const view = statusView({ status: status({ root: '', dbPath: '' }) });
    assert.doesNotMatch(view.tooltip, /Root:|Index:/);
  });
});

describe('needsPolling', () => {
  test('while indexing or anything is pending', () => {
    assert.equal(needsPolling(status()), false);
    assert.equal(needsPolling(status({ indexing: true })), true);
    assert.equal(needsPolling(status({ pending: 3 })), true);
  });
});

describe('StatusPoller', () => {
  function poller() {
    const clock = new FakeClock();
    const requests: Deferred<Status>[] = [];
    const seen: (Status | Error)[] = [];
    const instance = new StatusPoller({
      intervalMs: 3000,
      timers: clock,
      fetch: () => {
        const request = deferred<Status>();
        requests.push(request);
        return request.promise;
      },
      onStatus: (s) => seen.push(s),
      onError: (error) => seen.push(error as Error),
    });
    return { clock, requests, seen, poller: instance };
  }

  test('a kick asks once; a settled index is not asked again', async () => {
    const { clock, requests, seen, poller: p } = poller();
    p.kick();
    assert.equal(requests.length, 1);
    requests[0]?.resolve(status());
    await settle();
    clock.advance(60_000);
    assert.equal(requests.length, 1);
    assert.equal(seen.length, 1);
  });

  test('polls every interval while indexing or pending, then stops', async () => {
    const { clock, requests, seen, poller: p } = poller();
    p.kick();
    requests[0]?.resolve(status({ indexing: true }));
    await settle();
    clock.advance(2999);
    assert.equal(requests.length, 1);
    clock.advance(1);
    assert.equal(requests.length, 2);
    requests[1]?.resolve(status({ pending: 10 }));
    await settle();
    clock.advance(3000);
    assert.equal(requests.length, 3);
    requests[2]?.resolve(status());
    await settle();
    clock.advance(30_000);
    assert.equal(requests.length, 3);
    assert.deepEqual(seen.map((s) => (s as Status).pending), [0, 10, 0]);
  });

  test('kicks during a request do not overlap it: one follow-up after it returns', async () => {
    const { requests, poller: p } = poller();
    p.kick();
    p.kick();
    p.kick();
    assert.equal(requests.length, 1);
    requests[0]?.resolve(status());
    await settle();
    assert.equal(requests.length, 2);
    requests[1]?.resolve(status());
    await settle();
    assert.equal(requests.length, 2);
  });

  test('a kick while waiting for the next poll asks now instead of waiting', async () => {
    const { clock, requests, poller: p } = poller();
    p.kick();
    requests[0]?.resolve(status({ indexing: true }));
    await settle();
    clock.advance(1000);
    p.kick();
    assert.equal(requests.length, 2);
    requests[1]?.resolve(status());
    await settle();
    clock.advance(10_000);
    assert.equal(requests.length, 2);
    assert.equal(clock.pending, 0);
  });

  test('a failed request is reported and stops polling until the next kick', async () => {
    const { clock, requests, seen, poller: p } = poller();
    p.kick();
    requests[0]?.reject(new Error('server not running'));
    await settle();
    clock.advance(30_000);
    assert.equal(requests.length, 1);
    assert.match((seen[0] as Error).message, /server not running/);
    p.kick();
    assert.equal(requests.length, 2);
  });

  test('dispose stops the timer and swallows the answer in flight', async () => {
    const { clock, requests, seen, poller: p } = poller();
    p.kick();
    requests[0]?.resolve(status({ indexing: true }));
    await settle();
    clock.advance(3000);
    p.dispose();
    requests[1]?.resolve(status({ indexing: true }));
    await settle();
    clock.advance(30_000);
    p.kick();
    assert.equal(requests.length, 2);
    assert.equal(seen.length, 1);
  });
});
