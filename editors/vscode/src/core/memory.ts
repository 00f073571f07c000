// "ctxls: Remember…": what a typed note becomes on the wire.

import type { RememberParams } from './protocol';

const SLUG_MAX = 48;

/** Undefined when the text is acceptable, else the reason (shown under the input box). */
export function validateMemoryText(text: string): string | undefined {
  return text.trim() === '' ? 'Type the fact to remember.' : undefined;
}

/**
 * An id that says when and roughly what: `fact/20261129T213305123Z-retry-uploads-3-times`.
 * The timestamp keeps ids unique; the slug keeps them readable in recall results.
 */
export function memoryId(text: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:.]/g, '');
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents, split off by NFKD: "é" → "e"
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX)
    .replace(/-+$/, '');
  return slug === '' ? `fact/${stamp}` : `fact/${stamp}-${slug}`;
}

export function rememberParams(text: string, now: Date, scope: { scope?: string }): RememberParams {
  const trimmed = text.trim();
  return { id: memoryId(trimmed, now), text: trimmed, kind: 'fact', by: 'human', ...scope };
}

/**
 * Written memory opens as a read-only document of this scheme (src/memoryDocuments.ts),
 * not as an untitled one: that was dirty, and closing it asked to save text
 * the user had only read.
 */
export const MEMORY_SCHEME = 'ctxls-memory';

/** The document path of a memory id: `.md` so it shows as Markdown; any id round-trips. */
export function memoryDocumentPath(id: string): string {
  return `/${id}.md`;
}

/** The memory id a `memoryDocumentPath` names; undefined for any other path. */
export function memoryIdOfPath(path: string): string | undefined {
  return path.startsWith('/') && path.endsWith('.md') && path.length > 4 ? path.slice(1, -3) : undefined;
}
