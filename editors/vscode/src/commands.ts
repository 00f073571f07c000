// "ctxls: Impact of Symbol", "ctxls: Recent Activity", "ctxls: Remember…" and
// "ctxls: Locate Files for a Bug Report…".

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { impactAsk } from './core/impact';
import { describeIndexWait, whenIndexReady } from './core/indexReady';
import { locatedLocation, locatedPickItems, locateParams, locateText, locateTitle } from './core/locate';
import { rememberParams, validateMemoryText } from './core/memory';
import { Method, type Impact, type LocateResult, type MethodName, type RecentActivityResult } from './core/protocol';
import { impactTree, recentActivityTree } from './core/trees';
import type { CtxlsServer } from './server';
import { openTarget, workspaceRootUris, type NodeTreeView } from './views';

/** More rows than a day's work touches; the server allows up to 1000. */
const RECENT_ACTIVITY_LIMIT = 200;

export async function showImpact(server: CtxlsServer, view: NodeTreeView): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showInformationMessage('ctxls: put the cursor on a symbol in an editor first.');
    return;
  }
  const { document } = editor;
  const position = editor.selection.active;
  const wordRange = document.getWordRangeAtPosition(position);
  const ask = impactAsk({
    uri: document.uri.toString(),
    position: { line: position.line, character: position.character },
    word: wordRange === undefined ? '' : document.getText(wordRange),
    serverHasDocument: document.uri.scheme === 'file' && vscode.workspace.getWorkspaceFolder(document.uri) !== undefined,
  });
  if (ask === undefined) {
    void vscode.window.showInformationMessage('ctxls: no symbol under the cursor.');
    return;
  }
  const answer = await requestFromIndex(server, Method.impact, 'ctxls: impact', (signal) =>
    server.request<Impact | null>(Method.impact, ask.params, signal),
  );
  if (answer === undefined) {
    return;
  }
  const impact = answer.result;
  if (impact === null) {
    void vscode.window.showInformationMessage(
      ask.symbol === undefined
        ? 'ctxls: no symbol the server knows at the cursor.'
        : `ctxls: ${ask.symbol} is not defined anywhere in the index.`,
    );
    return;
  }
  view.show(impactTree(impact, workspaceRootUris()), impact.symbol, undefined);
}

export async function showRecentActivity(server: CtxlsServer, view: NodeTreeView): Promise<void> {
  const answer = await requestFromIndex(server, Method.recentActivity, 'ctxls: recent activity', (signal) =>
    server.request<RecentActivityResult>(Method.recentActivity, { limit: RECENT_ACTIVITY_LIMIT }, signal),
  );
  if (answer === undefined) {
    return;
  }
  const result = answer.result;
  const message = result.items.length === 0 ? 'No edits recorded in the last 7 days.' : undefined;
  view.show(recentActivityTree(result.items, Date.now()), undefined, message);
}

export async function remember(server: CtxlsServer): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selection = editor === undefined || editor.selection.isEmpty ? '' : editor.document.getText(editor.selection);
  const text = await vscode.window.showInputBox({
    title: 'ctxls: Remember',
    prompt: 'A fact for ctxls to recall later (for you and for agents)',
    value: selection.trim(),
    validateInput: validateMemoryText,
  });
  if (text === undefined) {
    return;
  }
  const params = rememberParams(text, new Date(), server.scope());
  try {
    await server.request<object>(Method.remember, params);
  } catch (error) {
    void vscode.window.showErrorMessage(describeRequestError(Method.remember, error));
    return;
  }
  void vscode.window.showInformationMessage(`ctxls: remembered as ${params.id}.`);
}

/** The files a bug report or stack trace points at (the selection, else the clipboard), in a QuickPick. */
export async function locate(server: CtxlsServer): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selection = editor === undefined || editor.selection.isEmpty ? '' : editor.document.getText(editor.selection);
  // The clipboard only when nothing is selected: a browser-hosted VS Code asks
  // for permission to read it, and may refuse.
  const text = locateText(selection, selection.trim() === '' ? await readClipboard() : '');
  if (text === undefined) {
    void vscode.window.showInformationMessage('ctxls: select the bug report or stack trace in an editor, or copy it, first.');
    return;
  }
  const answer = await requestFromIndex(server, Method.locate, 'ctxls: locate', (signal) =>
    server.request<LocateResult>(Method.locate, locateParams(text), signal),
  );
  if (answer === undefined) {
    return;
  }
  const result = answer.result;
  const chosen = await vscode.window.showQuickPick(locatedPickItems(result), {
    title: `ctxls: Locate — ${locateTitle(result)}`,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  const location = chosen === undefined ? undefined : locatedLocation(chosen.file);
  if (location !== undefined) {
    await openTarget({ type: 'location', location });
  }
}

/**
 * `send`: a request of `method` that answers from the index, with the
 * window's progress while it runs. While the first index is built (-32011)
 * it is sent again when the server says (or when indexing progress ends),
 * under a notification that shows the progress and can cancel the wait.
 * Undefined when it failed (the user was told) or was cancelled.
 */
async function requestFromIndex<Result>(
  server: CtxlsServer,
  method: MethodName,
  title: string,
  send: (signal: AbortSignal | undefined) => Promise<Result>,
): Promise<{ result: Result } | undefined> {
  const cancel = new AbortController();
  let waiting: WaitingNotice | undefined;
  try {
    const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title }, () =>
      whenIndexReady(send, {
        signal: cancel.signal,
        onMaybeReady: (listener) => server.onProgressEnd(listener),
        onWait: (wait) => {
          waiting ??= new WaitingNotice(title, cancel);
          waiting.report(describeIndexWait(wait));
        },
      }),
    );
    return { result };
  } catch (error) {
    if (!cancel.signal.aborted) {
      void vscode.window.showErrorMessage(describeRequestError(method, error));
    }
    return undefined;
  } finally {
    waiting?.close();
  }
}

/** A cancellable notification that stays up until closed; cancelling aborts `cancel`. */
class WaitingNotice {
  private progress: vscode.Progress<{ message?: string }> | undefined;
  private lastMessage = '';
  private closed = false;
  private resolveClosed: (() => void) | undefined;

  constructor(title: string, cancel: AbortController) {
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (progress, token) => {
        this.progress = progress;
        progress.report({ message: this.lastMessage });
        token.onCancellationRequested(() => cancel.abort());
        // VS Code may run this after close() was called: then it ends at once.
        return new Promise<void>((resolve) => {
          if (this.closed) {
            resolve();
          } else {
            this.resolveClosed = resolve;
          }
        });
      },
    );
  }

  report(message: string): void {
    this.lastMessage = message;
    this.progress?.report({ message });
  }

  close(): void {
    this.closed = true;
    this.resolveClosed?.();
  }
}

async function readClipboard(): Promise<string> {
  try {
    return await vscode.env.clipboard.readText();
  } catch {
    return '';
  }
}
