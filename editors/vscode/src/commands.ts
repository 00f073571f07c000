// "ctxls: Impact of Symbol", "ctxls: Recent Activity", "ctxls: Remember…" and
// "ctxls: Locate Files for a Bug Report…".

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { impactAsk } from './core/impact';
import { locatedLocation, locatedPickItems, locateParams, locateText, locateTitle } from './core/locate';
import { rememberParams, validateMemoryText } from './core/memory';
import { Method, type Impact, type LocateResult, type RecentActivityResult } from './core/protocol';
import { impactTree, recentActivityTree } from './core/trees';
import type { CtxlsServer } from './server';
import { openLocation, type NodeTreeView } from './views';

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
  let impact: Impact | null;
  try {
    impact = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ctxls: impact' },
      () => server.request<Impact | null>(Method.impact, ask.params),
    );
  } catch (error) {
    void vscode.window.showErrorMessage(describeRequestError(Method.impact, error));
    return;
  }
  if (impact === null) {
    void vscode.window.showInformationMessage(
      ask.symbol === undefined
        ? 'ctxls: no symbol the server knows at the cursor.'
        : `ctxls: ${ask.symbol} is not defined anywhere in the index.`,
    );
    return;
  }
  const rootUris = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.toString());
  view.show(impactTree(impact, rootUris), impact.symbol, undefined);
}

export async function showRecentActivity(server: CtxlsServer, view: NodeTreeView): Promise<void> {
  let result: RecentActivityResult;
  try {
    result = await server.request<RecentActivityResult>(Method.recentActivity, { limit: RECENT_ACTIVITY_LIMIT });
  } catch (error) {
    void vscode.window.showErrorMessage(describeRequestError(Method.recentActivity, error));
    return;
  }
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
  let result: LocateResult;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ctxls: locate' },
      () => server.request<LocateResult>(Method.locate, locateParams(text)),
    );
  } catch (error) {
    void vscode.window.showErrorMessage(describeRequestError(Method.locate, error));
    return;
  }
  const chosen = await vscode.window.showQuickPick(locatedPickItems(result), {
    title: `ctxls: Locate — ${locateTitle(result)}`,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  const location = chosen === undefined ? undefined : locatedLocation(chosen.file);
  if (location !== undefined) {
    await openLocation(location);
  }
}

async function readClipboard(): Promise<string> {
  try {
    return await vscode.env.clipboard.readText();
  } catch {
    return '';
  }
}
