import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import {
  buildServerLaunch,
  resolveServerPath,
  scopeParam,
  serverWorkingFolder,
  SETTING_KEYS,
  type RawSettings,
} from '../core/settings';

const context = { homeDir: '/home/ada', workspaceFolder: '/work/repo', trusted: true };

interface ConfigurationProperty {
  default: unknown;
}

function packageDefaults(): RawSettings {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, ConfigurationProperty> } };
  };
  const properties = manifest.contributes.configuration.properties;
  return Object.fromEntries(Object.entries(properties).map(([key, property]) => [key.replace(/^ctxls\./, ''), property.default]));
}

describe('package.json settings', () => {
  test('declare exactly the keys the extension reads', () => {
    assert.deepEqual(Object.keys(packageDefaults()).sort(), [...SETTING_KEYS].sort());
  });

  test('defaults launch `ctxls serve` with no problems and leave unset options to the server', () => {
    const launch = buildServerLaunch(packageDefaults(), context);
    assert.deepEqual(launch, {
      command: 'ctxls',
      args: ['serve'],
      initializationOptions: { debounceMs: 150, embeddings: true, strictScope: false },
      problems: [],
    });
  });
});

describe('buildServerLaunch', () => {
  test('nothing set at all: defaults everywhere', () => {
    assert.deepEqual(buildServerLaunch({}, context), {
      command: 'ctxls',
      args: ['serve'],
      initializationOptions: {},
      problems: [],
    });
  });

  test('maps every option to initializationOptions', () => {
    const launch = buildServerLaunch(
      {
        serverPath: '/opt/ctxls/bin/ctxls',
        serverArgs: ['--log-level', 'debug'],
        include: ['py', ' .ts '],
        exclude: ['vendor/**', '*.min.js'],
        debounceMs: 0,
        embeddings: false,
        owner: ' team-a ',
        session: 's1',
        strictScope: true,
        dbPath: '/tmp/index.db',
      },
      context,
    );
    assert.equal(launch.command, '/opt/ctxls/bin/ctxls');
    assert.deepEqual(launch.args, ['serve', '--log-level', 'debug']);
    assert.deepEqual(launch.initializationOptions, {
      include: ['py', '.ts'],
      exclude: ['vendor/**', '*.min.js'],
      debounceMs: 0,
      embeddings: false,
      owner: 'team-a',
      session: 's1',
      strictScope: true,
      dbPath: '/tmp/index.db',
    });
    assert.deepEqual(launch.problems, []);
  });

  test('empty strings and lists mean "not set"', () => {
    const launch = buildServerLaunch(
      { serverPath: '', include: [], exclude: [], owner: '', session: '   ', dbPath: '' },
      context,
    );
    assert.equal(launch.command, 'ctxls');
    assert.deepEqual(launch.initializationOptions, {});
    assert.deepEqual(launch.problems, []);
  });

  test('null values (cleared in settings.json) are not set either', () => {
    const raw = Object.fromEntries(SETTING_KEYS.map((key) => [key, null])) as RawSettings;
    assert.deepEqual(buildServerLaunch(raw, context), {
      command: 'ctxls',
      args: ['serve'],
      initializationOptions: {},
      problems: [],
    });
  });

  test('each bad value is named once, left out, and the rest still apply', () => {
    const launch = buildServerLaunch(
      {
        serverPath: 42,
        serverArgs: '--verbose',
        include: ['py', ''],
        exclude: 'vendor',
        debounceMs: 1.5,
        embeddings: 'yes',
        owner: 7,
        session: 's1',
        strictScope: 1,
        dbPath: ['a'],
      },
      context,
    );
    assert.equal(launch.command, 'ctxls');
    assert.deepEqual(launch.args, ['serve']);
    assert.deepEqual(launch.initializationOptions, { session: 's1' });
    assert.deepEqual(launch.problems, [
      'ctxls.serverPath must be a command name or a path; using the default.',
      'ctxls.serverArgs must be a list of strings; using the default.',
      'ctxls.include must be a list of non-empty strings; using the default.',
      'ctxls.exclude must be a list of non-empty strings; using the default.',
      'ctxls.debounceMs must be a whole number of milliseconds from 0 to 10000; using the default.',
      'ctxls.embeddings must be true or false; using the default.',
      'ctxls.strictScope must be true or false; using the default.',
      'ctxls.owner must be a string; using the default.',
      'ctxls.dbPath must be a string; using the default.',
    ]);
  });

  test('debounceMs bounds match the server (0 to 10000 inclusive)', () => {
    assert.equal(buildServerLaunch({ debounceMs: 10_000 }, context).initializationOptions.debounceMs, 10_000);
    for (const bad of [-1, 10_001, Number.NaN, true, '150']) {
      const launch = buildServerLaunch({ debounceMs: bad }, context);
      assert.equal(launch.initializationOptions.debounceMs, undefined, String(bad));
      assert.equal(launch.problems.length, 1);
    }
  });

  test('serverArgs with a non-string entry is rejected whole', () => {
    const launch = buildServerLaunch({ serverArgs: ['--tcp', 9000] }, context);
    assert.deepEqual(launch.args, ['serve']);
    assert.equal(launch.problems.length, 1);
  });

  test('an owner the server refuses as a scope is named once and not sent', () => {
    // Sent as `scope` with every recall, remember and get: a refused name failed them all.
    for (const [owner, problem] of [
      ['@me', "ctxls.owner must not start with '@' ('@global', the shared tier, excepted); using the default."],
      [' @team ', "ctxls.owner must not start with '@' ('@global', the shared tier, excepted); using the default."],
      ['t'.repeat(257), 'ctxls.owner must be at most 256 characters; using the default.'],
    ]) {
      const launch = buildServerLaunch({ owner, session: 's1' }, context);
      assert.deepEqual(launch.initializationOptions, { session: 's1' }, owner);
      assert.deepEqual(launch.problems, [problem], owner);
      assert.deepEqual(scopeParam(launch.initializationOptions), {}, owner);
    }
  });

  test('the shared tier and names up to 256 characters are owners the server accepts', () => {
    for (const owner of ['@global', 'team@a', 't'.repeat(256), '\u{1F600}'.repeat(256)]) {
      const launch = buildServerLaunch({ owner }, context);
      assert.deepEqual(launch.initializationOptions, { owner }, owner);
      assert.deepEqual(launch.problems, [], owner);
    }
  });

  test('dbPath under ~ is expanded (the server does not)', () => {
    const launch = buildServerLaunch({ dbPath: '~/indexes/repo.db' }, context);
    assert.equal(launch.initializationOptions.dbPath, '/home/ada/indexes/repo.db');
  });
});

describe('resolveServerPath', () => {
  test('a bare name stays a PATH lookup', () => {
    assert.equal(resolveServerPath('ctxls', context), 'ctxls');
  });

  test('absolute paths are kept', () => {
    assert.equal(resolveServerPath('/usr/local/bin/ctxls', context), '/usr/local/bin/ctxls');
    assert.equal(resolveServerPath('C:\\tools\\ctxls.exe', context), 'C:\\tools\\ctxls.exe');
  });

  test('~ is the home directory', () => {
    assert.equal(resolveServerPath('~/.local/bin/ctxls', context), '/home/ada/.local/bin/ctxls');
    assert.equal(resolveServerPath('~/bin/ctxls', { homeDir: '/home/ada/', trusted: true }), '/home/ada/bin/ctxls');
  });

  test('a relative path with a slash is the workspace folder\'s', () => {
    assert.equal(resolveServerPath('.venv/bin/ctxls', context), '/work/repo/.venv/bin/ctxls');
    assert.equal(resolveServerPath('./.venv/bin/ctxls', context), '/work/repo/.venv/bin/ctxls');
    assert.equal(resolveServerPath('.venv/bin/ctxls', { homeDir: '/h', workspaceFolder: '/w/', trusted: true }), '/w/.venv/bin/ctxls');
  });

  test('without a workspace folder a relative path is left to the process cwd', () => {
    assert.equal(resolveServerPath('.venv/bin/ctxls', { homeDir: '/h', trusted: true }), '.venv/bin/ctxls');
  });
});

describe('serverWorkingFolder', () => {
  const existing = new Set(['/work/beta', '/work/gamma']);
  const isDirectory = (path: string): boolean => existing.has(path);

  test('the first workspace folder, while it exists', () => {
    assert.equal(serverWorkingFolder(['/work/beta', '/work/gamma'], isDirectory), '/work/beta');
  });

  test('a first folder removed since the workspace was saved is passed over', () => {
    // As the spawn's cwd it failed every start with ENOENT, blamed on ctxls.serverPath.
    assert.equal(serverWorkingFolder(['/work/gone', '/work/beta', '/work/gamma'], isDirectory), '/work/beta');
  });

  test('no folder that exists, or none at all: no working directory', () => {
    assert.equal(serverWorkingFolder(['/work/gone'], isDirectory), undefined);
    assert.equal(serverWorkingFolder([], isDirectory), undefined);
  });
});

describe('scopeParam', () => {
  test('sends the owner as scope, or nothing', () => {
    assert.deepEqual(scopeParam({ owner: 'team-a' }), { scope: 'team-a' });
    assert.deepEqual(scopeParam({}), {});
  });
});

describe('Restricted Mode (an untrusted workspace)', () => {
  const untrusted = { ...context, trusted: false };

  test('a relative serverPath names no program inside the folder: the default runs, with a warning', () => {
    assert.equal(resolveServerPath('.venv/bin/ctxls', untrusted), undefined);
    assert.equal(resolveServerPath('./run.sh', untrusted), undefined);
    const launch = buildServerLaunch({ serverPath: '.venv/bin/ctxls' }, untrusted);
    assert.equal(launch.command, 'ctxls');
    assert.deepEqual(launch.problems, [
      'ctxls.serverPath is relative to the workspace, which is not trusted (Restricted Mode); using the default.',
    ]);
  });

  test('a bare name, an absolute path and a home path are the user\'s own and still apply', () => {
    assert.equal(resolveServerPath('ctxls', untrusted), 'ctxls');
    assert.equal(resolveServerPath('/opt/ctxls/bin/ctxls', untrusted), '/opt/ctxls/bin/ctxls');
    assert.equal(resolveServerPath('~/.local/bin/ctxls', untrusted), '/home/ada/.local/bin/ctxls');
  });
});
