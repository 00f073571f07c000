// Search-as-you-type: wait until typing pauses, cancel the request a newer
// query makes obsolete, and never show an answer to an older query, even when
// the server answers out of order or ignores the cancellation.

import { realTimers, type Timers } from './timers';

export interface LatestSearchOptions<Result> {
  delayMs: number;
  /** Runs one search; `signal` aborts when the answer is no longer wanted. */
  search(query: string, signal: AbortSignal): Promise<Result>;
  /** A search for `query` was sent. */
  onStart?(query: string): void;
  /** The answer for the latest query. */
  onResult(query: string, result: Result): void;
  /** The latest query's search failed. */
  onError(query: string, error: unknown): void;
  /** The query became blank: nothing to search, earlier answers are void. */
  onCleared?(): void;
  timers?: Timers;
}

export class LatestSearch<Result> {
  private readonly timers: Timers;
  /** Bumped by every update; an answer is shown only if its generation is still current. */
  private generation = 0;
  private timer: unknown;
  private inFlight: AbortController | undefined;
  private disposed = false;

  constructor(private readonly options: LatestSearchOptions<Result>) {
    this.timers = options.timers ?? realTimers;
  }

  update(query: string): void {
    if (this.disposed) {
      return;
    }
    this.generation += 1;
    this.cancelPending();
    if (query.trim() === '') {
      this.options.onCleared?.();
      return;
    }
    const generation = this.generation;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      void this.run(query, generation);
    }, this.options.delayMs);
  }

  dispose(): void {
    this.disposed = true;
    this.generation += 1;
    this.cancelPending();
  }

  private cancelPending(): void {
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.inFlight?.abort();
    this.inFlight = undefined;
  }

  private async run(query: string, generation: number): Promise<void> {
    const controller = new AbortController();
    this.inFlight = controller;
    this.options.onStart?.(query);
    let result: Result;
    try {
      result = await this.options.search(query, controller.signal);
    } catch (error) {
      if (this.isCurrent(generation)) {
        this.inFlight = undefined;
        this.options.onError(query, error);
      }
      return;
    }
    if (this.isCurrent(generation)) {
      this.inFlight = undefined;
      this.options.onResult(query, result);
    }
  }

  private isCurrent(generation: number): boolean {
    return !this.disposed && generation === this.generation;
  }
}
