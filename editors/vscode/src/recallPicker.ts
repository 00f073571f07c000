// "ctxls: Recall…": a QuickPick that asks the server as you type.

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { LatestSearch } from './core/latestSearch';
import { Method, type Hit, type Item, type RecallResult } from './core/protocol';
import { hitLocation, recallParams, recallPickItems, recallTitle } from './core/recall';
import type { CtxlsServer } from './server';
import { openLocation } from './views';

/** Long enough to skip most intermediate keystrokes, short enough to feel live. */
const RECALL_DEBOUNCE_MS = 150;
const TITLE = 'ctxls: Recall';

interface HitPickItem extends vscode.QuickPickItem {
  hit: Hit;
}

export function showRecallPicker(server: CtxlsServer): void {
  const picker = vscode.window.createQuickPick<HitPickItem>();
  picker.title = TITLE;
  picker.placeholder = 'Search code, docs and memory';
  const search = new LatestSearch<RecallResult>({
    delayMs: RECALL_DEBOUNCE_MS,
    search: (query, signal) => server.request<RecallResult>(Method.recall, recallParams(query, server.scope()), signal),
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
    openHit(server, chosen.hit).catch((error: unknown) => {
      void vscode.window.showErrorMessage(describeRequestError(Method.get, error));
    });
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

/** A file hit opens at its range; written memory has no file, so its text opens in a new editor. */
async function openHit(server: CtxlsServer, hit: Hit): Promise<void> {
  const location = hitLocation(hit);
  if (location !== undefined) {
    await openLocation(location);
    return;
  }
  const item = await server.request<Item | null>(Method.get, { id: hit.path, ...server.scope() });
  if (item === null || item.text === null) {
    void vscode.window.showWarningMessage(`ctxls: ${hit.path} is no longer stored.`);
    return;
  }
  const document = await vscode.workspace.openTextDocument({ content: item.text, language: 'markdown' });
  await vscode.window.showTextDocument(document, { preview: true });
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
