// Which file clicking a tree node opens, decided without VS Code: src/views.ts
// passes its file system in and opens the answer.

import type { Target } from './trees';

export type FileTarget = Extract<Target, { type: 'symbol' }>;

export interface FileLookup<U> {
  /** A URI the server sent, as the editor's URI type. */
  parse(uri: string): U;
  /** Whether a file is there now. */
  exists(uri: U): Promise<boolean>;
  /** A repo-relative path in the first workspace folder that has it. */
  findInWorkspace(path: string): Promise<U | undefined>;
}

/**
 * The file to open, or undefined when it is not there. The server's URI names
 * the file as it was indexed or last edited: an agent may have deleted or
 * moved it since (opening it anyway showed VS Code's raw "Unable to resolve
 * nonexistent file").
 */
export async function fileToOpen<U>(target: FileTarget, lookup: FileLookup<U>): Promise<U | undefined> {
  if (target.uri === undefined) {
    return lookup.findInWorkspace(target.path);
  }
  const uri = lookup.parse(target.uri);
  return (await lookup.exists(uri)) ? uri : undefined;
}

/** What the user is told when `fileToOpen` found nothing. */
export function missingFileMessage(target: FileTarget): string {
  return target.uri === undefined
    ? `ctxls: ${target.path} is not in any workspace folder (deleted or moved?).`
    : `ctxls: ${target.path} is no longer there (deleted or moved?).`;
}
