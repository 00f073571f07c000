import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { LatestSearch } from '../core/latestSearch';
import { deferred, FakeClock, settle, type Deferred } from './fakes';

interface Harness {
  clock: FakeClock;
  search: LatestSearch<string>;
  /** Searches sent, in order, each with its signal and the promise the test settles. */
  sent: { query: string; signal: AbortSignal; answer: Deferred<string> }[];
  events: string[];
}

function harness(delayMs = 100): Harness {
  const clock = new FakeClock();
  const sent: Harness['sent'] = [];
  const events: string[] = [];
  const search = new LatestSearch<string>({
    delayMs,
    timers: clock,
    search: (query, signal) => {
      const answer = deferred<string>();
      sent.push({ query, signal, answer });
      return answer.promise;
    },
    onStart: (query) => events.push(`start ${query}`),
    onResult: (query, result) => events.push(`result ${query} → ${result}`),
    onError: (query, error) => events.push(`error ${query} → ${String(error)}`),
    onCleared: () => events.push('cleared'),
  });
  return { clock, search, sent, events };
}

describe('LatestSearch', () => {
  test('waits for typing to pause, then searches once for the last query', async () => {
    const { clock, search, sent, events } = harness();
    search.update('s');
    clock.advance(50);
    search.update('st');
    clock.advance(50);
    search.update('sto');
    clock.advance(99);
    assert.equal(sent.length, 0);
    clock.advance(1);
    assert.deepEqual(sent.map((s) => s.query), ['sto']);
    sent[0]?.answer.resolve('hits for sto');
    await settle();
    assert.deepEqual(events, ['start sto', 'result sto → hits for sto']);
  });

  test('a newer query aborts the request in flight and drops its late answer', async () => {
    const { clock, search, sent, events } = harness();
    search.update('open');
    clock.advance(100);
    search.update('opens');
    assert.equal(sent[0]?.signal.aborted, true);
    clock.advance(100);
    assert.equal(sent[1]?.signal.aborted, false);
    // The server ignores the cancellation and answers the old query last.
    sent[1]?.answer.resolve('new');
    sent[0]?.answer.resolve('old');
    await settle();
    assert.deepEqual(events, ['start open', 'start opens', 'result opens → new']);
  });

  test('answers arriving out of order: only the latest query\'s is shown', async () => {
    const { clock, search, sent, events } = harness(0);
    search.update('a');
    clock.advance(0);
    search.update('ab');
    clock.advance(0);
    sent[0]?.answer.resolve('A');
    await settle();
    sent[1]?.answer.resolve('AB');
    await settle();
    assert.deepEqual(events, ['start a', 'start ab', 'result ab → AB']);
  });

  test('errors: shown for the latest query, dropped for an obsolete one', async () => {
    const { clock, search, sent, events } = harness(0);
    search.update('a');
    clock.advance(0);
    search.update('ab');
    clock.advance(0);
    sent[0]?.answer.reject(new Error('cancelled'));
    sent[1]?.answer.reject(new Error('boom'));
    await settle();
    assert.deepEqual(events, ['start a', 'start ab', 'error ab → Error: boom']);
  });

  test('a blank query clears at once, cancels what is pending and sends nothing', async () => {
    const { clock, search, sent, events } = harness();
    search.update('x');
    clock.advance(100);
    search.update('y');
    search.update('   ');
    assert.equal(sent[0]?.signal.aborted, true);
    clock.advance(1000);
    assert.equal(sent.length, 1);
    sent[0]?.answer.resolve('late');
    await settle();
    assert.deepEqual(events, ['start x', 'cleared']);
    assert.equal(clock.pending, 0);
  });

  test('the same query typed again after clearing searches again', async () => {
    const { clock, search, sent, events } = harness(0);
    search.update('q');
    clock.advance(0);
    sent[0]?.answer.resolve('1');
    await settle();
    search.update('');
    search.update('q');
    clock.advance(0);
    sent[1]?.answer.resolve('2');
    await settle();
    assert.deepEqual(events, ['start q', 'result q → 1', 'cleared', 'start q', 'result q → 2']);
  });

  test('dispose cancels the timer and the request, and ignores later updates', async () => {
    const { clock, search, sent, events } = harness();
    search.update('a');
    clock.advance(100);
    search.update('ab');
    search.dispose();
    assert.equal(sent[0]?.signal.aborted, true);
    assert.equal(clock.pending, 0);
    search.update('abc');
    clock.advance(1000);
    sent[0]?.answer.resolve('late');
    await settle();
    assert.equal(sent.length, 1);
    assert.deepEqual(events, ['start a']);
  });

  test('a synchronous throw from search is reported like a rejection', async () => {
    const clock = new FakeClock();
    const errors: unknown[] = [];
    const search = new LatestSearch<string>({
      delayMs: 0,
      timers: clock,
      search: () => {
        throw new Error('not running');
      },
      onResult: () => assert.fail('no result expected'),
      onError: (_query, error) => errors.push(error),
    });
    search.update('x');
    clock.advance(0);
    await settle();
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /not running/);
  });
});
