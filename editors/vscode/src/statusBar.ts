// The status bar item: indexing progress and the pending backlog.

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { Method, type Status } from './core/protocol';
import { ProgressTracker, StatusPoller, statusView } from './core/status';
import type { CtxlsServer } from './server';

/** Often enough to watch a backlog drain, rarely enough to cost nothing. */
const POLL_INTERVAL_MS = 3000;

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('ctxls.status', vscode.StatusBarAlignment.Left, 0);
  private readonly progress = new ProgressTracker();
  private readonly poller: StatusPoller;
  private readonly subscriptions: vscode.Disposable[] = [];
  private status: Status | undefined;
  private error: string | undefined;

  constructor(server: CtxlsServer) {
    this.item.name = 'ctxls';
    this.item.command = 'ctxls.showOutput';
    this.poller = new StatusPoller({
      intervalMs: POLL_INTERVAL_MS,
      fetch: () => server.request<Status>(Method.status, {}),
      onStatus: (status) => {
        this.status = status;
        this.error = undefined;
        this.render();
      },
      onError: (error) => {
        this.error = describeRequestError(Method.status, error);
        this.render();
      },
    });
    this.subscriptions.push(
      server.onProgress(({ token, value }) => {
        this.progress.apply(token, value);
        this.render();
        if (value.kind !== 'report') {
          this.poller.kick();
        }
      }),
      server.onDidChangeState((state) => {
        if (state.running) {
          this.error = undefined;
          this.poller.kick();
        } else {
          this.progress.clear();
          this.status = undefined;
          this.error = state.error;
        }
        this.render();
      }),
    );
    this.render();
    this.item.show();
  }

  /** Ask for fresh numbers now (e.g. after a save queued work). */
  refresh(): void {
    this.poller.kick();
  }

  private render(): void {
    const view = statusView({ status: this.status, progress: this.progress.current(), error: this.error });
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
  }

  dispose(): void {
    this.poller.dispose();
    vscode.Disposable.from(...this.subscriptions).dispose();
    this.item.dispose();
  }
}
