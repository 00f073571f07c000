// What "ctxls: Locate Files for a Bug Report…" sends and shows, and where a file opens.

import { incompleteNote } from './format';
import type { Located, LocateParams, LocateResult, Location } from './protocol';

/** Files to list: a fix rarely touches more. */
export const LOCATED_FILES = 10;
/** Longer than any issue text: the server reads 2,000-character issues in tens of milliseconds. */
const MAX_TEXT_CHARS = 200_000;

/**
 * The text to locate from: the editor's selection when there is one, else the
 * clipboard (a bug report or stack trace is usually pasted or copied).
 * Undefined when both are blank.
 */
export function locateText(selection: string, clipboard: string): string | undefined {
  for (const text of [selection, clipboard]) {
    if (text.trim() !== '') {
      return text.slice(0, MAX_TEXT_CHARS);
    }
  }
  return undefined;
}

export function locateParams(text: string): LocateParams {
  return { text, n: LOCATED_FILES };
}

export interface LocatedPickItem {
  /** Starts with a `$(codicon)`, which VS Code renders as an icon. */
  label: string;
  description: string;
  /** Every reason, in the server's order. */
  detail: string;
  file: Located;
}

export function locatedPickItems(result: LocateResult): LocatedPickItem[] {
  return result.files.map((file) => ({
    label: `$(file-code) ${file.path}`,
    description: `${file.score.toFixed(2)}${file.why.length > 0 ? ` · ${file.why[0]?.signal}` : ''}`,
    detail: file.why.map((why) => `${why.signal}: ${why.detail}`).join(' · '),
    file,
  }));
}

/** The QuickPick's title for an answer. */
export function locateTitle(result: LocateResult): string {
  const count = result.files.length;
  const found = count === 0 ? 'No file located for this text' : `${count} ${count === 1 ? 'file' : 'files'}`;
  return found + incompleteNote(result);
}

/**
 * Where a located file opens: the first line its evidence names (a traceback
 * frame's line), else its best chunk, else its top. Undefined without a uri.
 */
export function locatedLocation(file: Located): Location | undefined {
  if (file.uri === undefined || file.uri === '') {
    return undefined;
  }
  const named = file.why.find((why) => why.line !== undefined)?.line;
  const line = named ?? file.chunks[0]?.startLine ?? 0;
  return { uri: file.uri, range: { start: { line, character: 0 }, end: { line, character: 0 } } };
}
