// "ctxls: Recall…": a QuickPick that asks the server as you type.

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { describeIndexWait, whenIndexReady } from './core/indexReady';
import { LatestSearch } from './core/latestSearch';
import { Method, type Hit, type RecallResult } from './core/protocol';
import { hitLocation, recallParams, recallPickItems, recallTitle } from './core/recall';
import type { MemoryDocuments } from './memoryDocuments';
import type { CtxlsServer } from './server';
import { openTarget } from './views';

/** Long enough to skip most intermediate keystrokes, short enough to feel live. */
const RECALL_DEBOUNCE_MS = 150;
const TITLE = 'ctxls: Recall';

interface HitPickItem extends vscode.QuickPickItem {
  hit: Hit;
}

export function showRecallPicker(server: CtxlsServer, memory: MemoryDocuments): void {
  const picker = vscode.window.createQuickPick<HitPickItem>();
  picker.title = TITLE;
  picker.placeholder = 'Search code, docs and memory';
  const search = new LatestSearch<RecallResult>({
    delayMs: RECALL_DEBOUNCE_MS,
    // While the first index is built the server answers -32011 with when to
    // ask again: the picker asks again then (or when indexing progress
    // ends), for as long as it is open and the query unchanged (a new
    // keystroke aborts the wait).
    search: (query, signal) =>
      whenIndexReady((abort) => server.request<RecallResult>(Method.recall, recallParams(query, server.scope()), abort), {
        signal,
        onMaybeReady: (listener) => server.onProgressEnd(listener),
        onWait: (wait) => {
          picker.items = [];
          picker.title = `${TITLE} — ${describeIndexWait(wait)}`;
        },
      }),
    onStart: () => {
      picker.busy = true;
    },
    onResult: (query, result) => {
      picker.busy = false;
      // The server has ranked these already: alwaysShow stops VS Code from
      // filtering them again by label.
      picker.items = recallPickItems(result).map((item) => ({ ...item, alwaysShow: true }));
      picker.title = `${TITLE} — ${recallTitle(query, result)}`;
    },
    onError: (_query, error) => {
      picker.busy = false;
      picker.items = [];
      picker.title = describeRequestError(Method.recall, error);
    },
    onCleared: () => {
      picker.busy = false;
      picker.items = [];
      picker.title = TITLE;
    },
  });
  picker.onDidChangeValue((value) => search.update(value));
  picker.onDidAccept(() => {
    const [chosen] = picker.selectedItems;
    if (chosen === undefined) {
      return;
    }
    picker.hide();
    // Both say what went wrong themselves.
    const location = hitLocation(chosen.hit);
    void (location === undefined ? memory.open(chosen.hit.path) : openTarget({ type: 'location', location }));
  });
  picker.onDidHide(() => {
    search.dispose();
    picker.dispose();
  });
  picker.show();
  const selection = selectedText();
  if (selection !== undefined) {
    picker.value = selection;
    // Some VS Code versions report a programmatic value change, some do not;
    // a second update only restarts the same debounce.
    search.update(selection);
  }
}

/** The editor's selection, when it is a short single line worth searching for. */
function selectedText(): string | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.selection.isEmpty || !editor.selection.isSingleLine) {
    return undefined;
  }
  const text = editor.document.getText(editor.selection).trim();
  return text === '' || text.length > 200 ? undefined : text;
}
