// "ctxls: Impact of Symbol": what `ctxls/impact` is asked for the cursor.

import type { ImpactParams, Position } from './protocol';

export interface Cursor {
  uri: string;
  position: Position;
  /** The word under the cursor; '' when there is none. */
  word: string;
  /**
   * Whether the server has the document: a `file` document inside a workspace
   * folder. The language client sends it no other (an untitled editor, any
   * other scheme), and it answers null for a position outside every folder.
   */
  serverHasDocument: boolean;
}

export interface ImpactAsk {
  params: ImpactParams;
  /** The name asked for when the request goes by name, for a "not defined" message. */
  symbol?: string;
}

/**
 * The cursor's position where the server can place it; elsewhere the word
 * under the cursor, by name (undefined when there is no word).
 */
export function impactAsk(cursor: Cursor): ImpactAsk | undefined {
  if (cursor.serverHasDocument) {
    return { params: { textDocument: { uri: cursor.uri }, position: cursor.position } };
  }
  const symbol = cursor.word.trim();
  return symbol === '' ? undefined : { params: { symbol }, symbol };
}
