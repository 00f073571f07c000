import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { findSymbolRange, type SymbolNode } from '../core/symbols';

// Ranges are plain labels here: findSymbolRange passes them through untouched.
const symbols: SymbolNode<string>[] = [
  { name: 'helper', range: 'helper@1', children: [] },
  {
    name: 'Store',
    range: 'Store@10',
    children: [
      { name: 'open', range: 'Store.open@12' },
      { name: 'Nested', range: 'Nested@30', children: [{ name: 'open', range: 'Store.Nested.open@31' }] },
    ],
  },
  { name: 'Engine', range: 'Engine@50', children: [{ name: 'open', range: 'Engine.open@52' }] },
  // ctxls itself names a node by its last part and puts the dotted name in detail.
  { name: 'recall', detail: 'Engine.recall', range: 'Engine.recall@70' },
];

describe('findSymbolRange', () => {
  test('top-level and nested symbols by their dotted name', () => {
    assert.equal(findSymbolRange(symbols, 'helper'), 'helper@1');
    assert.equal(findSymbolRange(symbols, 'Store'), 'Store@10');
    assert.equal(findSymbolRange(symbols, 'Store.open'), 'Store.open@12');
    assert.equal(findSymbolRange(symbols, 'Engine.open'), 'Engine.open@52');
    assert.equal(findSymbolRange(symbols, 'Store.Nested.open'), 'Store.Nested.open@31');
  });

  test('by detail, the way ctxls reports document symbols', () => {
    assert.equal(findSymbolRange(symbols, 'Engine.recall'), 'Engine.recall@70');
  });

  test('a container another server does not report: the first symbol with the same last name', () => {
    assert.equal(findSymbolRange(symbols, 'module.Store.open'), 'Store.open@12');
  });

  test('a deleted symbol is not found', () => {
    assert.equal(findSymbolRange(symbols, 'Store.close'), undefined);
    assert.equal(findSymbolRange([], 'x'), undefined);
  });
});
