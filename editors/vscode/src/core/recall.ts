// What the "ctxls: Recall…" QuickPick sends and shows, and where a hit opens.

import { basename, incompleteNote, lineSpan } from './format';
import { HIT_KINDS, type Hit, type Location, type RecallParams, type RecallResult } from './protocol';

/** Hits per kind: enough to scroll through, few enough to come back within one keystroke. */
export const RECALL_HITS_PER_KIND = 15;

// Partial and keyed by string: a newer server may send kinds this table lacks.
const KIND_ICONS: Partial<Record<string, string>> = {
  code: 'symbol-method',
  doc: 'book',
  config: 'settings-gear',
  fact: 'lightbulb',
  episode: 'history',
};

export interface RecallPickItem {
  /** Starts with a `$(codicon)`, which VS Code renders as an icon. */
  label: string;
  description: string;
  hit: Hit;
}

export function recallParams(query: string, scope: { scope?: string }): RecallParams {
  // No `kind`: every kind comes back, grouped, so memory shows next to code.
  // No bodies: labels come from symbols and paths, and each keystroke stays cheap.
  return { query: query.trim(), n: RECALL_HITS_PER_KIND, body: false, ...scope };
}

/** Hits of every kind, code first, each kind in the server's ranking order. */
export function hitsInOrder(result: RecallResult): Hit[] {
  if (result.hits !== undefined) {
    return result.hits;
  }
  const groups = result.groups ?? {};
  const known = HIT_KINDS.flatMap((kind) => groups[kind] ?? []);
  // Kinds a newer server adds go last rather than missing.
  const other = Object.entries(groups)
    .filter(([kind]) => !(HIT_KINDS as readonly string[]).includes(kind))
    .flatMap(([, hits]) => hits);
  return [...known, ...other];
}

export function recallPickItems(result: RecallResult): RecallPickItem[] {
  return hitsInOrder(result).map(pickItem);
}

function pickItem(hit: Hit): RecallPickItem {
  const icon = KIND_ICONS[hit.kind] ?? 'circle-small';
  if (hit.uri === undefined || hit.uri === '') {
    // Written memory has no file: its id (or the chunk's symbol) is the label.
    return { label: `$(${icon}) ${hit.chunk?.symbol ?? hit.path}`, description: hit.kind, hit };
  }
  const where = hit.chunk === null ? hit.path : `${hit.path}:${lineSpan(hit.chunk.startLine, hit.chunk.endLine)}`;
  return {
    label: `$(${icon}) ${hit.chunk?.symbol ?? basename(hit.path)}`,
    description: hit.kind === 'code' ? where : `${hit.kind} · ${where}`,
    hit,
  };
}

/**
 * The QuickPick's title for a finished search. A weak answer says so, as the
 * CLI does: its hits are the nearest rows in a repository that looks
 * unrelated to the query, not an answer.
 */
export function recallTitle(query: string, result: RecallResult): string {
  const count = hitsInOrder(result).length;
  const found = count === 0 ? `No matches for "${query.trim()}"` : `${count} ${count === 1 ? 'match' : 'matches'}`;
  const weak =
    result.weak === true
      ? ` (weak: ${result.weakReason ?? 'the repository looks unrelated to the query'}; these are only the nearest rows)`
      : '';
  return found + weak + incompleteNote(result);
}

/**
 * Where a hit opens: its `uri` and `range`, or the chunk's whole lines when the
 * server sent no range. Undefined for written memory, which has no file.
 */
export function hitLocation(hit: Hit): Location | undefined {
  if (hit.uri === undefined || hit.uri === '') {
    return undefined;
  }
  if (hit.range !== undefined) {
    return { uri: hit.uri, range: hit.range };
  }
  if (hit.chunk !== null) {
    // End at the start of the line after the chunk: the character count of its last line is unknown.
    return {
      uri: hit.uri,
      range: { start: { line: hit.chunk.startLine, character: 0 }, end: { line: hit.chunk.endLine + 1, character: 0 } },
    };
  }
  return { uri: hit.uri, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } } };
}
