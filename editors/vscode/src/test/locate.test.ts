import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { LOCATED_FILES, locatedLocation, locatedPickItems, locateParams, locateText, locateTitle } from '../core/locate';
import type { Located } from '../core/protocol';

const session: Located = {
  path: 'pkg/session.py',
  uri: 'file:///repo/pkg/session.py',
  score: 0.9134,
  signals: { frame: 1, symbol: 0.5 },
  why: [
    { signal: 'frame', detail: '/srv/app/pkg/session.py:10 in request', line: 9 },
    { signal: 'symbol', detail: 'send_prepared defined here', line: 15 },
  ],
  chunks: [{ symbol: 'Session', startLine: 3, endLine: 12 }],
};

const readme: Located = {
  path: 'pkg/retry.py',
  uri: 'file:///repo/pkg/retry.py',
  score: 0.25,
  signals: { text: 0.3 },
  why: [{ signal: 'text', detail: 'upload retry' }],
  chunks: [{ symbol: 'retry_upload', startLine: 3, endLine: 7 }],
};

describe('locateText', () => {
  test('takes the selection first, else the clipboard, else nothing', () => {
    assert.equal(locateText('Traceback …', 'copied'), 'Traceback …');
    assert.equal(locateText('  \n', 'copied report'), 'copied report');
    assert.equal(locateText('', ' \t'), undefined);
  });

  test('cuts a huge paste instead of sending it whole', () => {
    assert.equal(locateText('x'.repeat(300_000), '')?.length, 200_000);
  });
});

describe('locate results', () => {
  test('asks for a fix-sized list of files', () => {
    assert.deepEqual(locateParams('boom'), { text: 'boom', n: LOCATED_FILES });
  });

  test('each file shows its score, its strongest signal and every reason', () => {
    const [first, second] = locatedPickItems({ files: [session, readme] });
    assert.equal(first?.label, '$(file-code) pkg/session.py');
    assert.equal(first?.description, '0.91 · frame');
    assert.equal(first?.detail, 'frame: /srv/app/pkg/session.py:10 in request · symbol: send_prepared defined here');
    assert.equal(second?.description, '0.25 · text');
  });

  test('a file opens at the line its evidence names, else at its best chunk', () => {
    assert.deepEqual(locatedLocation(session)?.range.start, { line: 9, character: 0 });
    assert.deepEqual(locatedLocation(readme)?.range.start, { line: 3, character: 0 });
    assert.equal(locatedLocation({ ...readme, uri: undefined }), undefined);
  });

  test('the title counts the files and says when indexing is unfinished', () => {
    assert.equal(locateTitle({ files: [session] }), '1 file');
    assert.equal(locateTitle({ files: [], partial: true }),
      'No file located for this text (results may be incomplete: still indexing)');
    assert.equal(locateTitle({ files: [session], partial: true, partialReason: 'indexing is still running' }),
      '1 file (results may be incomplete: indexing is still running)');
  });
});
