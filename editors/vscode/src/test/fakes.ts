// Test doubles: a manual clock for the debouncing and polling logic, and
// promises the test settles by hand to play out-of-order server answers.

import type { Timers } from '../core/timers';

interface Task {
  id: number;
  at: number;
  callback: () => void;
}

export class FakeClock implements Timers {
  now = 0;
  private nextId = 1;
  private tasks: Task[] = [];

  setTimeout(callback: () => void, ms: number): unknown {
    const task = { id: this.nextId++, at: this.now + ms, callback };
    this.tasks.push(task);
    return task.id;
  }

  clearTimeout(handle: unknown): void {
    this.tasks = this.tasks.filter((task) => task.id !== handle);
  }

  /** Moves time forward, running every timer that falls due, in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = this.tasks.filter((task) => task.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) {
        break;
      }
      this.tasks = this.tasks.filter((task) => task !== due);
      this.now = due.at;
      due.callback();
    }
    this.now = until;
  }

  get pending(): number {
    return this.tasks.length;
  }
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every already-settled promise run its callbacks. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
