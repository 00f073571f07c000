// Requests that answer from a folder's index fail with -32011 IndexNotReady
// while its first index is built (docs/protocol.md, "Errors"): the error says
// when to ask again. Asking again then, instead of leaving the failure on
// screen, is what a user who typed a Recall or asked for an Impact wants.

import { indexProgress, indexWait, type IndexWait } from './errors';
import { realTimers, type Timers } from './timers';

export interface WhenIndexReadyOptions {
  /** Aborts the waiting and the request in flight; the last error is thrown. */
  signal?: AbortSignal;
  /** The index is not ready: called before each wait. */
  onWait(wait: IndexWait): void;
  /**
   * Subscribes to a sign that the index may be ready now (the server's
   * indexing progress ended), which ends a wait early: `retryAfterS` is an
   * estimate, tens of seconds early in a large first pass. Returns the
   * unsubscribe.
   */
  onMaybeReady?: (listener: () => void) => () => void;
  timers?: Timers;
}

/**
 * `send`'s answer, sent again after each IndexNotReady's `retryAfterS` (or
 * sooner, on `onMaybeReady`) for as long as it takes (the signal ends it);
 * any other failure is thrown at once.
 */
export async function whenIndexReady<Result>(
  send: (signal: AbortSignal | undefined) => Promise<Result>,
  options: WhenIndexReadyOptions,
): Promise<Result> {
  const timers = options.timers ?? realTimers;
  for (;;) {
    try {
      return await send(options.signal);
    } catch (error) {
      const wait = indexWait(error);
      if (wait === undefined || isAborted(options.signal)) {
        throw error;
      }
      options.onWait(wait);
      await pause(wait.retryAfterMs, timers, options.signal, options.onMaybeReady);
      if (isAborted(options.signal)) {
        throw error;
      }
    }
  }
}

// A function, not an inline test: TypeScript would take `aborted` as still
// false after the first look, across the awaits in between.
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Resolves after `ms`, or at once when `signal` aborts or `onMaybeReady` fires. */
function pause(
  ms: number,
  timers: Timers,
  signal: AbortSignal | undefined,
  onMaybeReady: WhenIndexReadyOptions['onMaybeReady'],
): Promise<void> {
  return new Promise((resolve) => {
    let unsubscribe = (): void => undefined;
    const finish = (): void => {
      timers.clearTimeout(handle);
      signal?.removeEventListener('abort', finish);
      unsubscribe();
      resolve();
    };
    const handle = timers.setTimeout(finish, ms);
    signal?.addEventListener('abort', finish, { once: true });
    unsubscribe = onMaybeReady?.(finish) ?? unsubscribe;
  });
}

/** What a user waiting on the first index is told: `the first index is being built (800 of 3,005 files); trying again in ~8 s`. */
export function describeIndexWait(wait: IndexWait): string {
  return `the first index is being built (${indexProgress(wait)}); trying again in ~${Math.round(wait.retryAfterMs / 1000)} s`;
}
