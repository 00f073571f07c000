// The Impact and Recent Activity views as plain data; src/views.ts renders
// these nodes as TreeItems.

import { basename, dirname, formatAge, lineSpan, plural } from './format';
import type { ActivityItem, Impact, Location } from './protocol';

/** What clicking a node opens. */
export type Target =
  | { type: 'location'; location: Location }
  /**
   * A repo-relative file, and the symbol in it to reveal (null: the file's
   * top); `uri` names the file where several workspace folders may hold `path`.
   */
  | { type: 'symbol'; path: string; symbol: string | null; uri?: string };

export interface TreeNode {
  /** Unique within one tree, stable across refreshes so expansion state survives. */
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  /** A codicon name. */
  icon?: string;
  /** Only meaningful when there are children. */
  expanded?: boolean;
  children: TreeNode[];
  target?: Target;
}

// Partial and keyed by string: a newer server may send risks this table lacks.
const RISK_ICONS: Partial<Record<string, string>> = { low: 'pass', med: 'warning', high: 'error' };

/** `rootUris`: the workspace folders' URIs, so locations show as repo-relative paths. */
export function impactTree(impact: Impact, rootUris: readonly string[]): TreeNode[] {
  const nodes: TreeNode[] = [riskNode(impact)];
  if (impact.hedges.length > 0) {
    nodes.push({
      id: 'hedges',
      label: 'Hedges',
      description: String(impact.hedges.length),
      icon: 'info',
      expanded: true,
      children: impact.hedges.map((hedge, index) => ({
        id: `hedges/${index}`,
        label: hedge,
        tooltip: hedge,
        children: [],
      })),
    });
  }
  // Confirmed callers first; the unconfirmed ones folded in a group of their own.
  const callerNodes = impact.callers.map((caller, index) => ({
    id: `callers/${index}`,
    label: caller.symbol ?? basename(caller.path),
    description: `${caller.path}:${caller.range.start.line + 1}${
      caller.confirmed ? '' : ` · unconfirmed${caller.reason === undefined ? '' : ` (${caller.reason})`}`
    }`,
    tooltip: caller.confirmed
      ? 'A call the server resolved to this symbol'
      : 'A textual match the server could not confirm as a call to this symbol',
    icon: caller.confirmed ? 'symbol-method' : 'question',
    children: [],
    target: { type: 'location' as const, location: { uri: caller.uri, range: caller.range } },
  }));
  const unconfirmed = callerNodes.filter((_, index) => impact.callers[index]?.confirmed !== true);
  const unconfirmedCount = impact.unconfirmed ?? unconfirmed.length;
  const reasons = Object.entries(impact.unconfirmedReasons ?? {}).map(([reason, count]) => `${reason}: ${count}`);
  nodes.push({
    id: 'callers',
    label: 'Callers',
    description: String(impact.confirmed),
    icon: 'call-incoming',
    expanded: true,
    children: [
      ...callerNodes.filter((_, index) => impact.callers[index]?.confirmed === true),
      ...(unconfirmedCount === 0
        ? []
        : [
            {
              id: 'callers/unconfirmed',
              label: 'Unconfirmed',
              description: String(unconfirmedCount),
              tooltip: ['Textual matches the server could not tie to this symbol', ...reasons].join('\n'),
              icon: 'question',
              expanded: false,
              children: unconfirmed,
            },
          ]),
    ],
  });
  nodes.push({
    id: 'callees',
    label: 'Callees',
    description: String(impact.callees.length),
    icon: 'call-outgoing',
    expanded: true,
    children: impact.callees.map((callee, index): TreeNode => {
      const id = `callees/${index}`;
      const [only] = callee.definitions;
      if (callee.definitions.length <= 1) {
        return {
          id,
          label: callee.symbol,
          description: only === undefined ? 'no definition found' : locationText(only, rootUris),
          icon: 'symbol-method',
          children: [],
          ...(only === undefined ? {} : { target: { type: 'location', location: only } }),
        };
      }
      return {
        id,
        label: callee.symbol,
        description: plural(callee.definitions.length, 'definition'),
        icon: 'symbol-method',
        expanded: false,
        children: locationNodes(id, callee.definitions, rootUris),
      };
    }),
  });
  // Several definitions matched: the answer is the first (best) one's; each is listed.
  const perDefinition = impact.perDefinition ?? [];
  if (perDefinition.length > 1) {
    nodes.push({
      id: 'definitions',
      label: 'Definitions',
      description: `${impact.definitionsMatched ?? perDefinition.length} matched · showing the first`,
      icon: 'symbol-class',
      expanded: true,
      children: locationNodes('definitions', perDefinition.map((answer) => answer.definition), rootUris).map(
        (node, index) => ({
          ...node,
          description: `${perDefinition[index]?.confirmed ?? 0} confirmed · risk ${perDefinition[index]?.risk ?? '?'}`,
        }),
      ),
    });
  } else if (impact.definitions.length > 0) {
    nodes.push({
      id: 'definitions',
      label: 'Definitions',
      description: String(impact.definitions.length),
      icon: 'symbol-class',
      expanded: false,
      children: locationNodes('definitions', impact.definitions, rootUris),
    });
  }
  return nodes;
}

function riskNode(impact: Impact): TreeNode {
  // The server words the counts, so VS Code and Neovim say the same.
  const counts = [impact.summary, `complexity ${impact.complexity}`];
  const [definition] = impact.definitions;
  return {
    id: 'risk',
    label: `Risk: ${impact.risk}`,
    description: counts.join(' · '),
    tooltip: `Changing ${impact.symbol}: risk ${impact.risk}\n${counts.join('\n')}`,
    icon: RISK_ICONS[impact.risk] ?? 'question',
    children: [],
    ...(definition === undefined ? {} : { target: { type: 'location', location: definition } }),
  };
}

function locationNodes(parentId: string, locations: Location[], rootUris: readonly string[]): TreeNode[] {
  return locations.map((location, index) => ({
    id: `${parentId}/${index}`,
    label: locationText(location, rootUris),
    icon: 'location',
    children: [],
    target: { type: 'location', location },
  }));
}

/** `src/app.py:12` under a workspace folder, else the file's full path (or the URI, if not a file). */
export function locationText(location: Location, rootUris: readonly string[]): string {
  return `${displayPath(location.uri, rootUris)}:${lineSpan(location.range.start.line, location.range.end.line)}`;
}

export function displayPath(uri: string, rootUris: readonly string[]): string {
  for (const root of rootUris) {
    const prefix = root.endsWith('/') ? root : `${root}/`;
    if (uri.startsWith(prefix)) {
      return decodeURIComponent(uri.slice(prefix.length));
    }
  }
  return uri.startsWith('file://') ? decodeURIComponent(uri.slice('file://'.length)) : uri;
}

/**
 * Recent edits grouped by file, the most recently edited file first; within a
 * file, symbols in the server's order (most recent first).
 */
export function recentActivityTree(items: ActivityItem[], nowMs: number): TreeNode[] {
  // By file: its URI where the server sends one (the same path in two folders is two files).
  const byFile = new Map<string, ActivityItem[]>();
  for (const item of items) {
    const key = item.uri ?? item.id;
    const group = byFile.get(key);
    if (group === undefined) {
      byFile.set(key, [item]);
    } else {
      group.push(item);
    }
  }
  const files = [...byFile.entries()].map(([key, edits]) => {
    const [first] = edits as [ActivityItem, ...ActivityItem[]]; // a group is never empty
    return { key, path: first.id, uri: first.uri, edits, latest: Math.max(...edits.map((edit) => edit.lastEditedAt)) };
  });
  files.sort((a, b) => b.latest - a.latest || a.path.localeCompare(b.path) || a.key.localeCompare(b.key));
  return files.map(({ key, path, uri, edits, latest }) => {
    const folder = dirname(path);
    const where = uri === undefined ? {} : { uri };
    return {
      id: `file:${key}`,
      label: basename(path),
      description: folder === '' ? formatAge(latest, nowMs) : `${folder} · ${formatAge(latest, nowMs)}`,
      tooltip: path,
      icon: 'file',
      expanded: true,
      target: { type: 'symbol', path, symbol: null, ...where },
      children: edits.map((edit) => ({
        id: `file:${key}/${edit.kind}/${edit.symbol ?? ''}`,
        label: edit.symbol ?? '(module level)',
        description: `${plural(edit.edits, 'edit')} · ${formatAge(edit.lastEditedAt, nowMs)}`,
        tooltip: `${edit.symbol ?? path} — ${edit.kind}, last edited ${new Date(edit.lastEditedAt).toISOString()}`,
        icon: edit.kind === 'doc' ? 'book' : 'symbol-method',
        children: [],
        target: { type: 'symbol', path, symbol: edit.symbol, ...where },
      })),
    };
  });
}
