// The parts of docs/protocol.md this extension sends and reads. Shapes are
// typed as the server documents them; fields marked optional there (or added
// by later server versions) are optional here too.

export const Method = {
  status: 'ctxls/status',
  recall: 'ctxls/recall',
  get: 'ctxls/get',
  impact: 'ctxls/impact',
  recentActivity: 'ctxls/recentActivity',
  remember: 'ctxls/remember',
  locate: 'ctxls/locate',
} as const;

export type MethodName = (typeof Method)[keyof typeof Method];

/** The JSON-RPC error codes the extension explains to the user. */
export const ErrorCode = {
  methodNotFound: -32601,
  invalidParams: -32602,
  ripgrepMissing: -32001,
  scopeRequired: -32003,
  outsideRoot: -32004,
  /** The folder's first index is still being built: `data` is `IndexNotReadyData`. */
  indexNotReady: -32011,
} as const;

/** `data` of -32011 IndexNotReady: how far the first index is, and when to ask again. */
export interface IndexNotReadyData {
  root: string;
  done: number;
  total: number;
  retryAfterS: number;
}

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface Location {
  uri: string;
  range: Range;
}

export type HitKind = 'code' | 'doc' | 'config' | 'fact' | 'episode';

export const HIT_KINDS: readonly HitKind[] = ['code', 'doc', 'config', 'fact', 'episode'];

export interface Hit {
  path: string;
  kind: HitKind;
  format: string;
  score: number;
  chunk: { symbol: string | null; startLine: number; endLine: number } | null;
  uri?: string;
  range?: Range;
  body?: string | null;
  meta?: Record<string, unknown>;
}

export interface RecallParams {
  query: string;
  kind?: HitKind | HitKind[];
  n?: number;
  body?: boolean;
  scope?: string;
}

/** `hits` when one kind was asked for, `groups` otherwise. */
export interface RecallResult {
  hits?: Hit[];
  groups?: Partial<Record<HitKind, Hit[]>>;
  partial?: boolean;
  /** Why a partial answer may miss something: still indexing, no vectors yet, an index that cannot be updated, … */
  partialReason?: string;
  /**
   * Ranked by meaning in a repository that looks unrelated to the query: the
   * hits are only the nearest rows, not an answer; `weakReason` says why.
   */
  weak?: boolean;
  weakReason?: string;
}

export interface Item {
  id: string;
  kind: string;
  format: string;
  text: string | null;
}

export interface Caller {
  path: string;
  uri: string;
  range: Range;
  symbol: string | null;
  confirmed: boolean;
  /** Why an unconfirmed caller could not be tied to the symbol (builtin-name, shared-name, ...). */
  reason?: string;
}

/** One definition's answer when a symbol query matched several. */
export interface DefinitionImpact {
  definition: Location;
  callers: Caller[];
  confirmed: number;
  unconfirmed: number;
  risk: Risk;
  hedges: string[];
}

export interface Callee {
  symbol: string;
  definitions: Location[];
}

export type Risk = 'low' | 'med' | 'high';

export interface Impact {
  symbol: string;
  definitions: Location[];
  callers: Caller[];
  callees: Callee[];
  /** The counts in words, confirmed callers first: "3 callers (+5 unconfirmed) · 56 mentions". */
  summary: string;
  refCount: number;
  confirmed: number;
  mentions: number;
  risk: Risk;
  hedges: string[];
  complexity: number;
  /** Unconfirmed callers, listed or not, and by reason. */
  unconfirmed?: number;
  unconfirmedReasons?: Record<string, number>;
  /** Present when several definitions matched: the best (this answer's) first. */
  perDefinition?: DefinitionImpact[];
  definitionsMatched?: number;
}

/**
 * At a position in a document the server has, or by name: a name or a
 * qualified symbol (`Session.request`); with a name, `textDocument` only ranks
 * several definitions by how close they are to it.
 */
export type ImpactParams =
  | { textDocument: { uri: string }; position: Position }
  | { symbol: string; textDocument?: { uri: string } };

export interface ActivityItem {
  /** Repo-relative POSIX path of the edited file. */
  id: string;
  /** The file itself: in a multi-root workspace `id` may be a file of several folders. */
  uri?: string;
  /** Null for module-level code. */
  symbol: string | null;
  kind: string;
  lastEditedAt: number;
  edits: number;
}

export interface RecentActivityResult {
  items: ActivityItem[];
}

export interface RememberParams {
  id: string;
  text: string;
  kind: 'fact';
  by: 'human';
  scope?: string;
}

export interface FolderStatus {
  indexing: boolean;
  files: number;
  chunks: number;
  vectors?: number;
  pending: number;
  root: string;
  dbPath: string;
  storeError?: StatusError;
  indexError?: StatusError;
}

export interface Status {
  indexing: boolean;
  files: number;
  chunks: number;
  vectors: number;
  /** Files left in a running pass, buffers waiting, and chunks still without a vector. */
  pending: number;
  embeddings: { enabled: boolean; model: string; dim: number; error?: string };
  root: string;
  dbPath: string;
  version: string;
  complete?: boolean;
  folders?: FolderStatus[];
  /** `error` while the store cannot be used or the index not updated (a full disk, …): the two errors say why. */
  state?: string;
  storeError?: StatusError;
  indexError?: StatusError;
}

export interface StatusError {
  code: number;
  message: string;
}

/** `$/progress` values of LSP work-done progress. */
export type WorkDoneProgressValue =
  | { kind: 'begin'; title: string; message?: string; percentage?: number }
  | { kind: 'report'; message?: string; percentage?: number }
  | { kind: 'end'; message?: string };

export interface LocateParams {
  text: string;
  n?: number;
  includeTests?: boolean;
}

/** Why a file was located: a traceback frame, a name it defines, a path or message the text mentions, … */
export interface LocateReason {
  signal: string;
  detail: string;
  /** 0-based line in the file, when the evidence names one (a frame's line). */
  line?: number;
}

export interface Located {
  path: string;
  uri?: string;
  score: number;
  signals: Record<string, number>;
  why: LocateReason[];
  chunks: { symbol: string | null; startLine: number; endLine: number; range?: Range }[];
}

export interface LocateResult {
  files: Located[];
  partial?: boolean;
  partialReason?: string;
}
