import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { fileToOpen, missingFileMessage, type FileLookup } from '../core/targets';
import type { Target } from '../core/trees';

const ROOT = 'file:///work/repo';

/** A workspace whose files are `present` (URIs); every look-up is recorded. */
function lookup(present: string[]): FileLookup<string> & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    parse: (uri) => uri,
    exists: (uri) => {
      asked.push(uri);
      return Promise.resolve(present.includes(uri));
    },
    findInWorkspace: (path) => {
      asked.push(path);
      return Promise.resolve(present.find((uri) => uri.endsWith(`/${path}`)));
    },
  };
}

describe('fileToOpen', () => {
  test('a file the server named by URI that is still there is opened', async () => {
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const target: Target = { type: 'symbol', path: 'pkg/kept.py', symbol: null, uri: `${ROOT}/pkg/kept.py` };
    assert.equal(await fileToOpen(target, files), `${ROOT}/pkg/kept.py`);
  });

  test('a file the server named by URI that was deleted is not opened, and the user is told', async () => {
    // Recent Activity lists a file an agent wrote, then deleted: its row
    // carries the URI, and opening it showed VS Code's raw "Unable to
    // resolve nonexistent file".
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const target: Target = { type: 'symbol', path: 'pkg/gone.py', symbol: 'gone', uri: `${ROOT}/pkg/gone.py` };
    assert.equal(await fileToOpen(target, files), undefined);
    assert.deepEqual(files.asked, [`${ROOT}/pkg/gone.py`]);
    assert.equal(missingFileMessage(target, [ROOT]), 'ctxls: pkg/gone.py is no longer there (deleted or moved?).');
  });

  test('a path without a URI is looked for in the workspace folders', async () => {
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const kept: Target = { type: 'symbol', path: 'pkg/kept.py', symbol: null };
    assert.equal(await fileToOpen(kept, files), `${ROOT}/pkg/kept.py`);
    const gone: Target = { type: 'symbol', path: 'pkg/gone.py', symbol: null };
    assert.equal(await fileToOpen(gone, files), undefined);
    assert.equal(missingFileMessage(gone, [ROOT]), 'ctxls: pkg/gone.py is not in any workspace folder (deleted or moved?).');
  });

  test('a location (an impact caller, a callee, a recall or locate hit) whose file was deleted is not opened', async () => {
    // Clicking an Impact-tree caller in a file deleted since showed VS Code's
    // raw "cannot open … Unable to resolve nonexistent file": locations went
    // straight to showTextDocument, without this check.
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const range = { start: { line: 5, character: 4 }, end: { line: 5, character: 20 } };
    const gone: Target = { type: 'location', location: { uri: `${ROOT}/pkg/retry.py`, range } };
    assert.equal(await fileToOpen(gone, files), undefined);
    assert.deepEqual(files.asked, [`${ROOT}/pkg/retry.py`]);
    assert.equal(missingFileMessage(gone, [ROOT]), 'ctxls: pkg/retry.py is no longer there (deleted or moved?).');
    const kept: Target = { type: 'location', location: { uri: `${ROOT}/pkg/kept.py`, range } };
    assert.equal(await fileToOpen(kept, files), `${ROOT}/pkg/kept.py`);
  });
});
