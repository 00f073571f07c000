import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { impactAsk } from '../core/impact';

const position = { line: 0, character: 2 };

describe('impactAsk', () => {
  test('a document the server has: the cursor position', () => {
    assert.deepEqual(
      impactAsk({ uri: 'file:///work/repo/pkg/session.py', position, word: 'send_prepared', serverHasDocument: true }),
      { params: { textDocument: { uri: 'file:///work/repo/pkg/session.py' }, position } },
    );
  });

  test('an untitled editor or a file outside every folder: the word under the cursor, by name', () => {
    // Its position means nothing to the server, which answered null: "no symbol at the cursor".
    for (const uri of ['untitled:Untitled-1', 'file:///tmp/loose.py']) {
      assert.deepEqual(impactAsk({ uri, position, word: 'send_prepared', serverHasDocument: false }), {
        params: { symbol: 'send_prepared' },
        symbol: 'send_prepared',
      });
    }
  });

  test('no word under the cursor there: nothing to ask', () => {
    assert.equal(impactAsk({ uri: 'untitled:Untitled-1', position, word: '', serverHasDocument: false }), undefined);
    assert.equal(impactAsk({ uri: 'untitled:Untitled-1', position, word: '  ', serverHasDocument: false }), undefined);
  });
});
