import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { cleanExitAsInfo, isStartFailureNotice } from '../core/clientLog';

describe('cleanExitAsInfo', () => {
  test('a clean exit is information, as vscode-languageclient 10 says it', () => {
    assert.equal(
      cleanExitAsInfo('[Error - 4:57:10 PM] Server process exited with code 0.'),
      '[Info  - 4:57:10 PM] Server process exited successfully',
    );
  });

  test('a failed exit, and every other line, stay as they are', () => {
    for (const line of [
      '[Error - 4:57:10 PM] Server process exited with code 1.',
      '[Error - 4:57:10 PM] Server process exited with signal SIGKILL.',
      '[Error - 4:57:10 PM] Server process exited with code 0. And more',
      'Server process exited with code 0.',
    ]) {
      assert.equal(cleanExitAsInfo(line), line);
    }
  });
});

describe('isStartFailureNotice', () => {
  test("the client's own start-failure notice is recognised, and nothing else", () => {
    // A wrong ctxls.serverPath showed two error toasts: the extension's, with
    // the cause and an Open Settings button, and this one, which says nothing
    // more. The extension's LanguageClient logs this one only.
    assert.equal(isStartFailureNotice("ctxls client: couldn't create connection to server."), true);
    for (const message of [
      'Restarting server failed',
      'Connection to server got closed. Server will not be restarted.',
      'Request ctxls/recall failed.',
      "couldn't create connection to server",
    ]) {
      assert.equal(isStartFailureNotice(message), false);
    }
  });
});
