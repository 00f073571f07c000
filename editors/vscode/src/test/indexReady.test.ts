import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { IndexWait } from '../core/errors';
import { describeIndexWait, whenIndexReady } from '../core/indexReady';
import { ErrorCode } from '../core/protocol';
import { FakeClock, settle } from './fakes';

function notReady(done: number, total: number, retryAfterS: number): Error {
  return Object.assign(new Error(`index not ready: ${done} of ${total} files, retry in ~${retryAfterS} s`), {
    code: ErrorCode.indexNotReady,
    data: { root: '/repo', done, total, retryAfterS },
  });
}

/** A server that answers each request with the next of `answers` (an Error rejects). */
function server<T>(answers: (T | Error)[]): { send: () => Promise<T>; sent: number } {
  const state = {
    sent: 0,
    send: (): Promise<T> => {
      const answer = answers[state.sent++];
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer as T);
    },
  };
  return state;
}

describe('whenIndexReady', () => {
  test('a request made while the first index is built is sent again when the server says, and answered', async () => {
    // A Recall typed while the first index ran stayed failed ("index not
    // ready: 800 of 3005 files, retry in ~8 s") after the index was ready;
    // Impact showed an error toast and never tried again.
    const clock = new FakeClock();
    const ctxls = server<string>([notReady(800, 3005, 8), notReady(2900, 3005, 1), 'hits']);
    const waits: IndexWait[] = [];
    let answer: string | undefined;
    void whenIndexReady(ctxls.send, { onWait: (wait) => waits.push(wait), timers: clock }).then((value) => {
      answer = value;
    });
    await settle();
    assert.equal(ctxls.sent, 1);
    assert.deepEqual(waits, [{ done: 800, total: 3005, retryAfterMs: 8000 }]);
    assert.equal(describeIndexWait(waits[0] as IndexWait),
      'the first index is being built (800 of 3,005 files); trying again in ~8 s');
    clock.advance(7999);
    await settle();
    assert.equal(ctxls.sent, 1, 'not before retryAfterS');
    clock.advance(1);
    await settle();
    assert.equal(ctxls.sent, 2);
    clock.advance(1000);
    await settle();
    assert.equal(ctxls.sent, 3);
    assert.equal(answer, 'hits');
    assert.equal(waits.length, 2);
  });

  test('any other failure is thrown at once', async () => {
    const clock = new FakeClock();
    const failure = Object.assign(new Error('bad'), { code: ErrorCode.invalidParams });
    const ctxls = server<string>([failure]);
    await assert.rejects(whenIndexReady(ctxls.send, { onWait: () => assert.fail('no wait'), timers: clock }), failure);
    assert.equal(ctxls.sent, 1);
    assert.equal(clock.pending, 0);
  });

  test('aborting (a newer query, a closed picker, a cancelled notice) ends the wait and sends nothing more', async () => {
    const clock = new FakeClock();
    const first = notReady(0, 0, 5);
    const ctxls = server<string>([first, 'never asked']);
    const abort = new AbortController();
    const waiting = whenIndexReady(ctxls.send, { signal: abort.signal, onWait: () => undefined, timers: clock });
    await settle();
    abort.abort();
    await assert.rejects(waiting, first);
    assert.equal(clock.pending, 0);
    clock.advance(10_000);
    await settle();
    assert.equal(ctxls.sent, 1);
  });
});

describe('whenIndexReady woken early', () => {
  test('the end of indexing sends the request again before retryAfterS is over', async () => {
    // retryAfterS is an estimate (~33 s early in a 3,000-file pass): the
    // picker still waited after the status bar said "ready".
    const clock = new FakeClock();
    const ctxls = server<string>([notReady(250, 3005, 33), 'hits']);
    const listeners = new Set<() => void>();
    const onMaybeReady = (listener: () => void): (() => void) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    };
    let answer: string | undefined;
    void whenIndexReady(ctxls.send, { onWait: () => undefined, onMaybeReady, timers: clock }).then((value) => {
      answer = value;
    });
    await settle();
    assert.equal(listeners.size, 1);
    clock.advance(5000);
    for (const listener of [...listeners]) {
      listener();
    }
    await settle();
    assert.equal(ctxls.sent, 2);
    assert.equal(answer, 'hits');
    assert.equal(listeners.size, 0, 'unsubscribed');
    assert.equal(clock.pending, 0, 'its timer cleared');
  });
});
