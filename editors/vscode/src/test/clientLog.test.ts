import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { cleanExitAsInfo } from '../core/clientLog';

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
