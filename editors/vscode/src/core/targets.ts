// Which file clicking a tree node (or picking a recall or locate hit) opens,
// decided without VS Code: src/views.ts passes its file system in and opens
// the answer.

import { displayPath, type Target } from './trees';

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
 * nonexistent file"). Every kind of target is checked, locations included.
 */
export async function fileToOpen<U>(target: Target, lookup: FileLookup<U>): Promise<U | undefined> {
  const named = target.type === 'location' ? target.location.uri : target.uri;
  if (named === undefined) {
    return target.type === 'symbol' ? lookup.findInWorkspace(target.path) : undefined;
  }
  const uri = lookup.parse(named);
  return (await lookup.exists(uri)) ? uri : undefined;
}

/**
 * What the user is told when `fileToOpen` found nothing; `rootUris` (the
 * workspace folders) shorten a location's URI to a repo-relative path.
 */
export function missingFileMessage(target: Target, rootUris: readonly string[]): string {
  if (target.type === 'location') {
    return `ctxls: ${displayPath(target.location.uri, rootUris)} is no longer there (deleted or moved?).`;
  }
  return target.uri === undefined
    ? `ctxls: ${target.path} is not in any workspace folder (deleted or moved?).`
    : `ctxls: ${target.path} is no longer there (deleted or moved?).`;
}
