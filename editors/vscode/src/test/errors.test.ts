import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { describeRequestError, errorCode, isMissingProgram } from '../core/errors';
import { ErrorCode, Method } from '../core/protocol';

function rpcError(code: number, message: string, data?: unknown): Error & { code: number; data?: unknown } {
  return Object.assign(new Error(message), { code, data });
}

describe('describeRequestError', () => {
  test('an older server without the method', () => {
    assert.equal(
      describeRequestError(Method.impact, rpcError(ErrorCode.methodNotFound, 'Unhandled method ctxls/impact')),
      'ctxls: the running server does not answer ctxls/impact; update ctxls to a version that has it.',
    );
  });

  test('bad params name the param', () => {
    assert.equal(
      describeRequestError(Method.recall, rpcError(ErrorCode.invalidParams, 'must be an integer', { param: 'n' })),
      'ctxls: ctxls/recall rejected the parameter "n": must be an integer',
    );
    assert.equal(
      describeRequestError(Method.recall, rpcError(ErrorCode.invalidParams, 'bad')),
      'ctxls: ctxls/recall rejected its parameters: bad',
    );
  });

  test('protocol errors say what to do', () => {
    assert.match(describeRequestError(Method.impact, rpcError(ErrorCode.ripgrepMissing, 'rg not found')), /ripgrep \(rg\).*rg not found/);
    assert.match(describeRequestError(Method.remember, rpcError(ErrorCode.scopeRequired, 'scope required', { verb: 'remember' })), /ctxls\.owner/);
    assert.equal(
      describeRequestError(Method.get, rpcError(ErrorCode.outsideRoot, 'outside', { path: '../etc/passwd' })),
      'ctxls: ../etc/passwd is outside the workspace.',
    );
    assert.equal(describeRequestError(Method.get, rpcError(ErrorCode.outsideRoot, 'outside')), 'ctxls: that path is outside the workspace.');
  });

  test('an index not ready yet says how far it is and when to try again', () => {
    // -32011 fell through to "ctxls/impact failed: index not ready: …".
    const error = rpcError(ErrorCode.indexNotReady, 'index not ready: 1950 of 2506 files, retry in ~4 s',
      { root: '/repo', done: 1950, total: 2506, retryAfterS: 4 });
    assert.equal(describeRequestError(Method.locate, error),
      'ctxls: ctxls/locate needs the first index, which is still being built (1,950 of 2,506 files); try again in ~4 s.');
    assert.equal(
      describeRequestError(Method.locate, rpcError(ErrorCode.indexNotReady, 'index not ready: listing files, retry in ~2 s',
        { root: '/repo', done: 0, total: 0, retryAfterS: 2 })),
      'ctxls: ctxls/locate needs the first index, which is still being built (listing files); try again in ~2 s.');
  });

  test('anything else: the method and the message', () => {
    assert.equal(describeRequestError(Method.status, new Error('the ctxls server is not running')), 'ctxls: ctxls/status failed: the ctxls server is not running');
    assert.equal(describeRequestError(Method.status, 'weird'), 'ctxls: ctxls/status failed: weird');
    assert.equal(describeRequestError(Method.status, null), 'ctxls: ctxls/status failed: null');
  });
});

describe('errorCode', () => {
  test('codes are read from JSON-RPC errors only', () => {
    assert.equal(errorCode(rpcError(-32603, 'internal')), -32603);
    assert.equal(errorCode(new Error('plain')), undefined);
    assert.equal(errorCode({ code: 'ENOENT' }), undefined);
    assert.equal(errorCode(undefined), undefined);
  });
});

describe('isMissingProgram', () => {
  test('a spawn the program itself failed: ctxls.serverPath is the fix', () => {
    // As vscode-languageclient rejects client.start() when the spawn fails.
    assert.equal(isMissingProgram('Launching server using command /opt/ctxls failed. Error: spawn /opt/ctxls ENOENT'), true);
    assert.equal(isMissingProgram('Launching server using command ./run.sh failed. Error: spawn ./run.sh EACCES'), true);
    assert.equal(isMissingProgram(new Error('spawn ctxls ENOENT')), true);
  });

  test('a server that started and then failed is not blamed on the setting', () => {
    assert.equal(isMissingProgram(new Error('Pending response rejected since connection got disposed')), false);
    assert.equal(isMissingProgram(rpcError(-32603, "ENOENT: no such file or directory, open '/tmp/x.db'")), false);
    assert.equal(isMissingProgram(undefined), false);
  });
});
