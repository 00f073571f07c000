// Turns a failed request into one sentence for a notification. JSON-RPC errors
// carry the protocol's codes (docs/protocol.md, "Errors"); the sentence says
// what the user can do about each.

import { ErrorCode, type MethodName } from './protocol';

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
    case ErrorCode.outsideRoot:
      return `ctxls: ${typeof data?.path === 'string' ? data.path : 'that path'} is outside the workspace.`;
    default:
      return `ctxls: ${method} failed: ${message}`;
  }
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
