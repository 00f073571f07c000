// Entry point: starts the server and wires commands, views and the status bar.
// Code lens and call hierarchy need nothing here: the language client registers
// whatever the server's capabilities announce.

import * as vscode from 'vscode';

import { locate, remember, showImpact, showRecentActivity } from './commands';
import type { Target } from './core/trees';
import { MemoryDocuments } from './memoryDocuments';
import { showRecallPicker } from './recallPicker';
import { CtxlsServer } from './server';
import { StatusBar } from './statusBar';
import { NodeTreeView, OPEN_TARGET_COMMAND, openTarget } from './views';

let server: CtxlsServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const ctxls = new CtxlsServer();
  server = ctxls;
  const statusBar = new StatusBar(ctxls);
  const impactView = new NodeTreeView('ctxls.impactView');
  const recentView = new NodeTreeView('ctxls.recentView');
  const memoryDocuments = new MemoryDocuments(ctxls);

  context.subscriptions.push(
    ctxls,
    statusBar,
    impactView,
    recentView,
    memoryDocuments,
    vscode.commands.registerCommand('ctxls.recall', () => showRecallPicker(ctxls, memoryDocuments)),
    vscode.commands.registerCommand('ctxls.impact', () => showImpact(ctxls, impactView)),
    vscode.commands.registerCommand('ctxls.recentActivity', () => showRecentActivity(ctxls, recentView)),
    vscode.commands.registerCommand('ctxls.remember', () => remember(ctxls)),
    vscode.commands.registerCommand('ctxls.locate', () => locate(ctxls)),
    vscode.commands.registerCommand('ctxls.restart', () => ctxls.restart()),
    vscode.commands.registerCommand('ctxls.showOutput', () => ctxls.showOutput()),
    vscode.commands.registerCommand(OPEN_TARGET_COMMAND, (target: Target) => openTarget(target)),
    // initializationOptions only reach the server at start-up.
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('ctxls')) {
        void ctxls.restart();
      }
    }),
    // Trusted now: the workspace's own serverPath, serverArgs and dbPath apply.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void ctxls.restart()),
    // A save queues re-indexing (and embedding); show the backlog drain.
    vscode.workspace.onDidSaveTextDocument(() => statusBar.refresh()),
  );

  // Not awaited: commands and views are usable (and say so) while the server starts.
  void ctxls.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
