// Written memory (facts, episodes) shown as read-only `ctxls-memory:`
// documents: their text comes from the server (`ctxls/get`), and closing one
// never asks to save it.

import * as vscode from 'vscode';

import { describeRequestError } from './core/errors';
import { MEMORY_SCHEME, memoryDocumentPath, memoryIdOfPath } from './core/memory';
import { Method, type Item } from './core/protocol';
import type { CtxlsServer } from './server';

export class MemoryDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changeEmitter.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly server: CtxlsServer) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(MEMORY_SCHEME, this);
  }

  /**
   * Opens the memory `id` read-only. The server is asked first, so a memory
   * gone since the recall gets a warning, and a failed `ctxls/get` says so.
   */
  async open(id: string): Promise<void> {
    let text: string | undefined;
    try {
      text = await this.fetch(id);
    } catch (error) {
      void vscode.window.showErrorMessage(describeRequestError(Method.get, error));
      return;
    }
    if (text === undefined) {
      void vscode.window.showWarningMessage(`ctxls: ${id} is no longer stored.`);
      return;
    }
    const uri = vscode.Uri.from({ scheme: MEMORY_SCHEME, path: memoryDocumentPath(id) });
    // An open document of the same memory shows its text as it is now.
    this.changeEmitter.fire(uri);
    try {
      await vscode.window.showTextDocument(uri, { preview: true });
    } catch (error) {
      void vscode.window.showErrorMessage(`ctxls: cannot show ${id}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = memoryIdOfPath(uri.path);
    if (id === undefined) {
      throw new Error(`ctxls: ${uri.toString()} names no memory.`);
    }
    return (await this.fetch(id)) ?? `(ctxls: ${id} is no longer stored.)`;
  }

  /** The memory's text, or undefined when the server no longer has it. */
  private async fetch(id: string): Promise<string | undefined> {
    const item = await this.server.request<Item | null>(Method.get, { id, ...this.server.scope() });
    return item === null || item.text === null ? undefined : item.text;
  }

  dispose(): void {
    this.registration.dispose();
    this.changeEmitter.dispose();
  }
}
