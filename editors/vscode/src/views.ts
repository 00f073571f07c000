// Renders core/trees.ts nodes in VS Code tree views, and opens what a node
// (or a recall hit) points at.

import * as vscode from 'vscode';

import type { Range } from './core/protocol';
import { findSymbolRange } from './core/symbols';
import { fileToOpen, missingFileMessage, type FileLookup } from './core/targets';
import type { Target, TreeNode } from './core/trees';

export const OPEN_TARGET_COMMAND = 'ctxls.openTarget';

class NodeTreeProvider implements vscode.TreeDataProvider<TreeNode> {
  private nodes: TreeNode[] = [];
  private readonly changeEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changeEmitter.event;

  set(nodes: TreeNode[]): void {
    this.nodes = nodes;
    this.changeEmitter.fire();
  }

  getChildren(node?: TreeNode): TreeNode[] {
    return node === undefined ? this.nodes : node.children;
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const collapsible =
      node.children.length === 0
        ? vscode.TreeItemCollapsibleState.None
        : node.expanded === true
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    if (node.icon !== undefined) {
      item.iconPath = new vscode.ThemeIcon(node.icon);
    }
    if (node.target !== undefined) {
      item.command = { title: 'Open', command: OPEN_TARGET_COMMAND, arguments: [node.target] };
    }
    return item;
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}

/** A tree view whose whole content is replaced at once. */
export class NodeTreeView implements vscode.Disposable {
  private readonly provider = new NodeTreeProvider();
  private readonly view: vscode.TreeView<TreeNode>;

  constructor(private readonly viewId: string) {
    this.view = vscode.window.createTreeView(viewId, { treeDataProvider: this.provider, showCollapseAll: true });
  }

  /** `description` sits next to the view's title; `message` above an empty or full tree. */
  show(nodes: TreeNode[], description: string | undefined, message: string | undefined): void {
    this.provider.set(nodes);
    this.view.description = description;
    this.view.message = message;
    void vscode.commands.executeCommand(`${this.viewId}.focus`);
  }

  dispose(): void {
    this.view.dispose();
    this.provider.dispose();
  }
}

export function toVscodeRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/**
 * Opens what a tree node, a recall hit or a located file points at: the file
 * with the cursor at the range's start (a symbol's, found in the file now)
 * and as much of the range in view as fits. The one way anything is opened:
 * a file deleted or moved since the server named it gets the extension's own
 * message, never VS Code's raw "Unable to resolve nonexistent file". Never
 * throws: it runs as a command, whose failures VS Code shows raw.
 */
export async function openTarget(target: Target): Promise<void> {
  const uri = await fileToOpen(target, WORKSPACE_FILES);
  if (uri === undefined) {
    void vscode.window.showWarningMessage(missingFileMessage(target, workspaceRootUris()));
    return;
  }
  try {
    await revealInFile(uri, await targetRange(target, uri));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`ctxls: cannot open ${vscode.workspace.asRelativePath(uri)}: ${reason}`);
  }
}

async function targetRange(target: Target, uri: vscode.Uri): Promise<vscode.Range> {
  if (target.type === 'location') {
    return toVscodeRange(target.location.range);
  }
  let range: vscode.Range | undefined;
  if (target.symbol !== null) {
    const symbols = await vscode.commands.executeCommand<vscode.DocumentSymbol[] | undefined>(
      'vscode.executeDocumentSymbolProvider',
      uri,
    );
    range = findSymbolRange<vscode.Range>(symbols ?? [], target.symbol);
  }
  // A symbol that is gone (a deletion is an edit too) opens the file at its top.
  return range ?? new vscode.Range(0, 0, 0, 0);
}

export function workspaceRootUris(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.toString());
}

async function revealInFile(uri: vscode.Uri, range: vscode.Range): Promise<void> {
  const editor = await vscode.window.showTextDocument(uri, { selection: new vscode.Range(range.start, range.start) });
  editor.revealRange(range, vscode.TextEditorRevealType.AtTop);
}

async function fileExists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** A repo-relative path in the first workspace folder that has it. */
async function findInWorkspace(path: string): Promise<vscode.Uri | undefined> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const uri = vscode.Uri.joinPath(folder.uri, ...path.split('/'));
    if (await fileExists(uri)) {
      return uri;
    }
  }
  return undefined;
}

const WORKSPACE_FILES: FileLookup<vscode.Uri> = {
  parse: (uri) => vscode.Uri.parse(uri),
  exists: fileExists,
  findInWorkspace,
};
