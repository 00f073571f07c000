// "ctxls: Impact of Symbol", "ctxls: Recent Activity" and "ctxls: Remember…".

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { rememberParams, validateMemoryText } from './core/memory';
import { Method, type Impact, type ImpactParams, type RecentActivityResult } from './core/protocol';
import { impactTree, recentActivityTree } from './core/trees';
import type { CtxlsServer } from './server';
import type { NodeTreeView } from './views';

/** More rows than a day's work touches; the server allows up to 1000. */
const RECENT_ACTIVITY_LIMIT = 200;

export async function showImpact(server: CtxlsServer, view: NodeTreeView): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showInformationMessage('ctxls: put the cursor on a symbol in an editor first.');
    return;
  }
  const params: ImpactParams = {
    textDocument: { uri: editor.document.uri.toString() },
    position: { line: editor.selection.active.line, character: editor.selection.active.character },
  };
  let impact: Impact | null;
  try {
    impact = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ctxls: impact' },
      () => server.request<Impact | null>(Method.impact, params),
    );
  } catch (error) {
    void vscode.window.showErrorMessage(describeRequestError(Method.impact, error));
    return;
  }
  if (impact === null) {
    void vscode.window.showInformationMessage('ctxls: no symbol the server knows at the cursor.');
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
