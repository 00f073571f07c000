// Turns a failed request into one sentence for a notification. JSON-RPC errors
// carry the protocol's codes (docs/protocol.md, "Errors"); the sentence says
// what the user can do about each.

import { formatCount } from './format';
import { ErrorCode, type IndexNotReadyData, type MethodName } from './protocol';

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  data?: unknown;
}

export function errorCode(error: unknown): number | undefined {
  const code = (error as ErrorLike | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

export function describeRequestError(method: MethodName, error: unknown): string {
  const message = errorMessage(error);
  const data = (error as ErrorLike | null)?.data as Record<string, unknown> | undefined;
  switch (errorCode(error)) {
    case ErrorCode.methodNotFound:
      return `ctxls: the running server does not answer ${method}; update ctxls to a version that has it.`;
    case ErrorCode.invalidParams:
      return typeof data?.param === 'string'
        ? `ctxls: ${method} rejected the parameter "${data.param}": ${message}`
        : `ctxls: ${method} rejected its parameters: ${message}`;
    case ErrorCode.ripgrepMissing:
      return `ctxls: impact analysis needs ripgrep (rg) on the server's PATH: ${message}`;
    case ErrorCode.scopeRequired:
      return `ctxls: the server runs with strictScope; set "ctxls.owner" so requests carry a scope.`;
    case ErrorCode.indexNotReady: {
      const wait = indexWait(error);
      return wait === undefined
        ? `ctxls: ${method} needs the first index, which is still being built: ${message}`
        : `ctxls: ${method} needs the first index, which is still being built (${indexProgress(wait)}); try again in ~${Math.round(wait.retryAfterMs / 1000)} s.`;
    }
    case ErrorCode.outsideRoot:
      return `ctxls: ${typeof data?.path === 'string' ? data.path : 'that path'} is outside the workspace.`;
    default:
      return `ctxls: ${method} failed: ${message}`;
  }
}

/** A -32011 IndexNotReady: how far the first index is, and how long to wait before asking again. */
export interface IndexWait {
  done: number;
  /** 0 while the files are still being listed. */
  total: number;
  retryAfterMs: number;
}

/** Undefined unless `error` is -32011 IndexNotReady. */
export function indexWait(error: unknown): IndexWait | undefined {
  if (errorCode(error) !== ErrorCode.indexNotReady) {
    return undefined;
  }
  const data = ((error as ErrorLike).data ?? {}) as Partial<IndexNotReadyData>;
  const count = (value: unknown): number => (typeof value === 'number' && value >= 0 ? value : 0);
  // The server never says less than 1 s; a reply without the field is asked again after as long.
  return { done: count(data.done), total: count(data.total), retryAfterMs: Math.max(1, count(data.retryAfterS)) * 1000 };
}

/** `800 of 3,005 files`, or `listing files` before the count is known. */
export function indexProgress(wait: IndexWait): string {
  return wait.total === 0 ? 'listing files' : `${formatCount(wait.done)} of ${formatCount(wait.total)} files`;
}

/**
 * Whether starting the server failed because its program is not there or
 * cannot run: the spawn's ENOENT or EACCES (the language client rejects with
 * "Launching server using command X failed. Error: spawn X ENOENT"). With a
 * working directory that exists, that is the program's fault, which
 * ctxls.serverPath fixes; anything else is in the server's log.
 */
export function isMissingProgram(error: unknown): boolean {
  return /\bspawn\b.*\b(ENOENT|EACCES)\b/.test(errorMessage(error));
}

function errorMessage(error: unknown): string {
  const message = (error as ErrorLike | null)?.message;
  if (typeof message === 'string' && message !== '') {
    return message;
  }
  return String(error);
}
