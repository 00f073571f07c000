// package.json and the code that implements it must agree: a command declared
// but never registered fails only when a user runs it, in VS Code, which these
// machines cannot start.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

const root = join(__dirname, '..', '..');

interface Manifest {
  main: string;
  engines: { vscode: string };
  activationEvents: string[];
  capabilities: {
    untrustedWorkspaces: { supported: boolean | 'limited'; restrictedConfigurations?: string[] };
  };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    views: Record<string, { id: string }[]>;
    viewsContainers: { activitybar: { id: string; icon: string }[] };
    viewsWelcome: { view: string; contents: string }[];
    configuration: { properties: Record<string, unknown> };
  };
}

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
const sources = ['extension.ts', 'views.ts']
  .map((file) => readFileSync(join(root, 'src', file), 'utf8'))
  .join('\n');

function matches(pattern: RegExp, text: string): string[] {
  return [...text.matchAll(pattern)].map((match) => match[1] ?? '');
}

describe('package.json', () => {
  const declared = manifest.contributes.commands.map((command) => command.command).sort();

  test('every declared command is registered, and nothing else', () => {
    const registered = matches(/registerCommand\('([^']+)'/g, sources);
    const openTarget = matches(/OPEN_TARGET_COMMAND = '([^']+)'/g, sources);
    assert.deepEqual([...registered, ...openTarget].sort(), declared);
  });

  test('the palette shows the commands as "ctxls: …" and hides the internal one', () => {
    const titles = manifest.contributes.commands.map((command) => `${command.category ?? ''}: ${command.title}`);
    for (const title of ['ctxls: Recall…', 'ctxls: Impact of Symbol', 'ctxls: Recent Activity', 'ctxls: Remember…', 'ctxls: Locate Files for a Bug Report…']) {
      assert.ok(titles.includes(title), title);
    }
    assert.ok(manifest.contributes.menus.commandPalette?.some((entry) => entry.command === 'ctxls.openTarget' && entry.when === 'false'));
  });

  test('menus and welcome links only name declared commands and views', () => {
    const views = Object.values(manifest.contributes.views).flat().map((view) => view.id);
    for (const entry of Object.values(manifest.contributes.menus).flat()) {
      assert.ok(declared.includes(entry.command), entry.command);
      for (const view of matches(/view == ([\w.]+)/g, entry.when ?? '')) {
        assert.ok(views.includes(view), view);
      }
    }
    for (const welcome of manifest.contributes.viewsWelcome) {
      assert.ok(views.includes(welcome.view), welcome.view);
      for (const command of matches(/\(command:([\w.]+)\)/g, welcome.contents)) {
        assert.ok(declared.includes(command), command);
      }
    }
  });

  test('every declared view gets a tree, in a declared container', () => {
    const views = Object.values(manifest.contributes.views).flat().map((view) => view.id).sort();
    assert.deepEqual(matches(/new NodeTreeView\('([^']+)'\)/g, sources).sort(), views);
    const containers = manifest.contributes.viewsContainers.activitybar.map((container) => container.id);
    assert.deepEqual(Object.keys(manifest.contributes.views), containers);
  });

  test('the entry point is the bundle, started once VS Code is up', () => {
    assert.equal(manifest.main, './dist/extension.js');
    assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
  });

  test('the API types are no newer than the oldest VS Code the extension claims', () => {
    assert.equal(manifest.engines.vscode, '^1.82.0');
    assert.match(manifest.devDependencies['@types/vscode'] ?? '', /^~1\.82\./);
    assert.match(manifest.dependencies['vscode-languageclient'] ?? '', /^\^9\./);
  });

  test('in Restricted Mode the settings that start a program or choose where it writes are the user\'s only', () => {
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, 'limited');
    const restricted = [...(untrusted.restrictedConfigurations ?? [])].sort();
    assert.deepEqual(restricted, ['ctxls.dbPath', 'ctxls.serverArgs', 'ctxls.serverPath']);
    for (const key of restricted) {
      assert.ok(key in manifest.contributes.configuration.properties, key);
    }
  });
});
