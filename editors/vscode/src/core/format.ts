// Small text helpers shared by the QuickPick, the trees and the status bar.
// Lines on the wire are 0-based; everything shown to a person is 1-based.

export function basename(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

export function dirname(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const slash = trimmed.lastIndexOf('/');
  return slash <= 0 ? '' : trimmed.slice(0, slash);
}

/** `12` or `12–40`, 1-based, from 0-based inclusive lines. */
export function lineSpan(startLine: number, endLine: number): string {
  return endLine > startLine ? `${startLine + 1}–${endLine + 1}` : `${startLine + 1}`;
}

export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${formatCount(count)} ${count === 1 ? singular : pluralForm}`;
}

export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** How long ago `thenMs` was, coarsely: "just now", "5 min ago", "3 h ago", "2 d ago", then a date. */
export function formatAge(thenMs: number, nowMs: number): string {
  const age = Math.max(0, nowMs - thenMs);
  if (age < MINUTE_MS) {
    return 'just now';
  }
  if (age < HOUR_MS) {
    return `${Math.floor(age / MINUTE_MS)} min ago`;
  }
  if (age < DAY_MS) {
    return `${Math.floor(age / HOUR_MS)} h ago`;
  }
  if (age < 30 * DAY_MS) {
    return `${Math.floor(age / DAY_MS)} d ago`;
  }
  return new Date(thenMs).toISOString().slice(0, 10);
}

/** What a title adds for a partial answer: why it may miss something, as the server says. */
export function incompleteNote(result: { partial?: boolean; partialReason?: string }): string {
  return result.partial === true ? ` (results may be incomplete: ${result.partialReason ?? 'still indexing'})` : '';
}
