// The status bar item's model: work-done progress the server reports
// (`$/progress`), the last `ctxls/status` answer, and when to ask again.

import { formatCount, plural } from './format';
import type { Status, WorkDoneProgressValue } from './protocol';
import { realTimers, type Timers } from './timers';

export interface ProgressState {
  /** The task, without a leading "ctxls: " (e.g. "indexing", "embedding"). */
  title: string;
  message?: string;
  percentage?: number;
}

/** Active progress by token; the server runs one per folder and task, possibly at once. */
export class ProgressTracker {
  private readonly active = new Map<string | number, ProgressState>();

  apply(token: string | number, value: WorkDoneProgressValue): void {
    switch (value.kind) {
      case 'begin':
        this.active.set(token, {
          title: value.title.replace(/^ctxls:\s*/, ''),
          message: value.message,
          percentage: value.percentage,
        });
        break;
      case 'report': {
        const state = this.active.get(token);
        if (state !== undefined) {
          this.active.set(token, {
            title: state.title,
            message: value.message ?? state.message,
            percentage: value.percentage ?? state.percentage,
          });
        }
        break;
      }
      case 'end':
        this.active.delete(token);
        break;
    }
  }

  clear(): void {
    this.active.clear();
  }

  /** The oldest active task, with the mean percentage over every task that has one. */
  current(): ProgressState | undefined {
    const states = [...this.active.values()];
    const [first] = states;
    if (first === undefined) {
      return undefined;
    }
    const percentages = states.flatMap((state) => (state.percentage === undefined ? [] : [state.percentage]));
    const percentage =
      percentages.length === 0 ? undefined : Math.round(percentages.reduce((sum, p) => sum + p, 0) / percentages.length);
    return {
      title: states.length === 1 ? first.title : `${first.title} (+${states.length - 1} more)`,
      message: first.message,
      percentage,
    };
  }
}

export interface StatusView {
  /** May hold `$(codicon)` icons. */
  text: string;
  tooltip: string;
}

export interface StatusInputs {
  status?: Status;
  progress?: ProgressState;
  /** Why the server is not running or the last status request failed. */
  error?: string;
}

export function statusView({ status, progress, error }: StatusInputs): StatusView {
  if (error !== undefined) {
    return { text: '$(error) ctxls', tooltip: `${error}\nClick to show the server's output.` };
  }
  const details = status === undefined ? [] : statusDetails(status);
  // Before any progress: a store that cannot be used keeps its first pass's
  // progress open while the server retries, and the bar said "indexing 0%" for good.
  const failure = status === undefined ? undefined : statusError(status);
  if (failure !== undefined && status !== undefined) {
    // Not "ready": answers come from what the index holds, and the server retries.
    return { text: `$(error) ctxls · ${plural(status.files, 'file')} · not updated`, tooltip: [failure, ...details].join('\n') };
  }
  // Once the first index is done the bar says so, whatever runs after it (embedding, a backlog).
  const indexed = status !== undefined && !status.indexing ? `${plural(status.files, 'file')} indexed` : undefined;
  if (progress !== undefined) {
    const amount = progress.percentage === undefined ? '' : ` ${Math.max(0, Math.min(100, progress.percentage))}%`;
    const headline = progress.message === undefined ? progress.title : `${progress.title}: ${progress.message}`;
    const text =
      indexed === undefined || progress.title === 'indexing'
        ? `$(sync~spin) ctxls ${progress.title}${amount}`
        : `$(sync~spin) ctxls · ${indexed} · ${progress.title}${amount}`;
    return { text, tooltip: [headline, ...details].join('\n') };
  }
  if (status === undefined) {
    return { text: '$(sync~spin) ctxls', tooltip: 'Starting the ctxls server…' };
  }
  if (status.indexing) {
    return { text: `$(sync~spin) ctxls indexing · ${plural(status.files, 'file')}`, tooltip: details.join('\n') };
  }
  if (status.pending > 0) {
    return { text: `$(sync~spin) ctxls · ${indexed} · ${formatCount(status.pending)} pending`, tooltip: details.join('\n') };
  }
  // Every state above ends here: indexed, embedded, nothing pending.
  const warning = status.embeddings.error === undefined ? '' : '$(warning) ';
  return { text: `${warning}$(database) ctxls ready · ${plural(status.files, 'file')}`, tooltip: details.join('\n') };
}

/** Why the index cannot be used or updated now (this folder's, else another folder's), or undefined. */
function statusError(status: Status): string | undefined {
  const error = status.storeError ?? status.indexError;
  if (error !== undefined) {
    return error.message;
  }
  const folder = status.folders?.find((each) => each.storeError !== undefined || each.indexError !== undefined);
  return folder === undefined ? undefined : `${folder.root}: ${(folder.storeError ?? folder.indexError)?.message}`;
}

function statusDetails(status: Status): string[] {
  const lines = [
    `ctxls ${status.version}${status.indexing ? ' — indexing' : ''}`,
    `${plural(status.files, 'file')}, ${plural(status.chunks, 'chunk')}, ${plural(status.vectors, 'vector')}`,
  ];
  if (status.pending > 0) {
    lines.push(`${formatCount(status.pending)} pending (files to index, chunks to embed)`);
  }
  if (status.embeddings.error !== undefined) {
    lines.push(`Embeddings off: ${status.embeddings.error}`);
  } else if (status.embeddings.enabled) {
    lines.push(`Embeddings: ${status.embeddings.model || 'on'}${status.embeddings.dim > 0 ? ` (${status.embeddings.dim}d)` : ''}`);
  } else {
    lines.push('Embeddings: off (lexical search only)');
  }
  const roots = status.folders?.map((folder) => folder.root) ?? (status.root === '' ? [] : [status.root]);
  lines.push(...roots.map((root) => `Root: ${root}`));
  if (status.dbPath !== '') {
    lines.push(`Index: ${status.dbPath}`);
  }
  return lines;
}

/** Worth asking again soon: the numbers are still moving. */
export function needsPolling(status: Status): boolean {
  return status.indexing || status.pending > 0;
}

export interface StatusPollerOptions {
  intervalMs: number;
  fetch(): Promise<Status>;
  onStatus(status: Status): void;
  onError(error: unknown): void;
  timers?: Timers;
}

/**
 * Asks for `ctxls/status` when kicked, then every `intervalMs` while the index
 * is still moving; stops once it settles (or a request fails) until the next
 * kick. Never has two requests in flight.
 */
export class StatusPoller {
  private readonly timers: Timers;
  private timer: unknown;
  private fetching = false;
  /** A kick arrived while a request was in flight: ask again when it returns. */
  private kickedWhileFetching = false;
  private disposed = false;

  constructor(private readonly options: StatusPollerOptions) {
    this.timers = options.timers ?? realTimers;
  }

  kick(): void {
    if (this.disposed) {
      return;
    }
    if (this.fetching) {
      this.kickedWhileFetching = true;
      return;
    }
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
    void this.poll();
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private async poll(): Promise<void> {
    this.fetching = true;
    let status: Status | undefined;
    try {
      status = await this.options.fetch();
    } catch (error) {
      if (!this.disposed) {
        this.options.onError(error);
      }
    }
    this.fetching = false;
    if (this.disposed) {
      return;
    }
    if (status !== undefined) {
      this.options.onStatus(status);
    }
    if (this.kickedWhileFetching) {
      this.kickedWhileFetching = false;
      void this.poll();
    } else if (status !== undefined && needsPolling(status)) {
      this.timer = this.timers.setTimeout(() => {
        this.timer = undefined;
        void this.poll();
      }, this.options.intervalMs);
    }
  }
}
