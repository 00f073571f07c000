import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { fileToOpen, missingFileMessage, type FileLookup, type FileTarget } from '../core/targets';

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
    const target: FileTarget = { type: 'symbol', path: 'pkg/kept.py', symbol: null, uri: `${ROOT}/pkg/kept.py` };
    assert.equal(await fileToOpen(target, files), `${ROOT}/pkg/kept.py`);
  });

  test('a file the server named by URI that was deleted is not opened, and the user is told', async () => {
    // Recent Activity lists a file an agent wrote, then deleted: its row
    // carries the URI, and opening it showed VS Code's raw "Unable to
    // resolve nonexistent file".
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const target: FileTarget = { type: 'symbol', path: 'pkg/gone.py', symbol: 'gone', uri: `${ROOT}/pkg/gone.py` };
    assert.equal(await fileToOpen(target, files), undefined);
    assert.deepEqual(files.asked, [`${ROOT}/pkg/gone.py`]);
    assert.equal(missingFileMessage(target), 'ctxls: pkg/gone.py is no longer there (deleted or moved?).');
  });

  test('a path without a URI is looked for in the workspace folders', async () => {
    const files = lookup([`${ROOT}/pkg/kept.py`]);
    const kept: FileTarget = { type: 'symbol', path: 'pkg/kept.py', symbol: null };
    assert.equal(await fileToOpen(kept, files), `${ROOT}/pkg/kept.py`);
    const gone: FileTarget = { type: 'symbol', path: 'pkg/gone.py', symbol: null };
    assert.equal(await fileToOpen(gone, files), undefined);
    assert.equal(missingFileMessage(gone), 'ctxls: pkg/gone.py is not in any workspace folder (deleted or moved?).');
  });
});
