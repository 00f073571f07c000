"""Languages read by their rows of index/definition_table.py: one small real
file per language in tests/fixtures/languages, with the definitions it must
yield (qualified name, kind, first and last line, 0-based), in the style of
the chunker's tables; recall finds each language's functions by name, and
status says which files were read without a grammar."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import write_tree
from ctxls.impact import analysis
from ctxls.index.chunker import chunk_file, definition_chunks, split_lines
from ctxls.index.discovery import DiscoveryOptions, FileFilter
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.languages import header_language, language_for_path

FIXTURES = Path(__file__).parent / "fixtures" / "languages"

# (file, language, [(symbol, kind, start line, end line)]): the file's definitions.
DEFINITIONS = [
    ('Cache.swift', 'swift', [
        ('Cacheable', 'protocol', 2, 5),
        ('Entry', 'struct', 7, 10),
        ('Cache', 'class', 12, 15),
        ('Cache.init', 'method', 16, 18),
        ('Cache.insert', 'method', 20, 22),
        ('Cache.lookup', 'method', 24, 29),
        ('CachePolicy', 'enum', 32, 35),
        ('Cache', 'extension', 37, 37),
        ('Cache.evictExpired', 'method', 38, 41),
        ('makeDefaultCache', 'function', 44, 48),
    ]),
    ('LoggingInterceptor.kt', 'kotlin', [  # ktfmt's constructor below the class's name
        ('LoggingInterceptor', 'class', 2, 8),
        ('LoggingInterceptor.redactHeader', 'method', 9, 11),
        ('LoggingInterceptor.intercept', 'method', 13, 13),
    ]),
    ('Flags.kt', 'kotlin', [  # properties with accessors are code (a setter below its getter too)
        ('Flags', 'class', 2, 2),
        ('Flags.isEmpty', 'property', 3, 3),
        ('Flags.primary', 'property', 5, 7),
        ('Flags.isBlank', 'property', 12, 12),
    ]),
    ('helpers.php', 'php', [  # defined under a condition (a helper, a polyfill)
        ('app', 'function', 3, 6),
        ('Stringable', 'class', 10, 12),
        ('Stringable', 'interface', 14, 16),
    ]),
    ('clock.rb', 'ruby', [  # methods defined under a condition
        ('Clock', 'namespace', 0, 1),
        ('Clock.clock_time', 'method', 2, 4),
        ('Clock.clock_time', 'method', 6, 8),
    ]),
    ('money.rb', 'ruby', [  # classes made by Struct.new and Data.define; a plain constant is none
        ('Billing', 'namespace', 0, 0),
        ('Billing.Money', 'class', 1, 2),
        ('Billing.Money.to_s', 'method', 3, 5),
        ('Billing.Rate', 'class', 8, 8),
    ]),
    ('Sizes.swift', 'swift', [  # computed properties are code; stored ones are not definitions
        ('Sizes', 'struct', 2, 5),
        ('Sizes.isEmpty', 'property', 6, 8),
        ('Sizes.total', 'property', 10, 13),
    ]),
    ('Counter.svelte', 'svelte', [
        ('increment', 'function', 7, 10),
        ('reset', 'function', 12, 15),
    ]),
    ('Inventory.kt', 'kotlin', [
        ('Item', 'class', 4, 5),  # its comment, inside the grammar's import_list, leads it
        ('StockListener', 'interface', 7, 7),
        ('StockListener.onChange', 'method', 8, 8),
        ('Inventory', 'class', 11, 13),
        ('Inventory.restock', 'method', 14, 20),
        ('Inventory.lowStock', 'method', 22, 23),
        ('Inventory.empty', 'method', 26, 28),
        ('Clock', 'object', 32, 32),
        ('Clock.now', 'method', 33, 33),
        ('String.toSku', 'function', 36, 36),
        ('reportLowStock', 'function', 38, 43),
    ]),
    ('AsyncWriter.cs', 'csharp', [  # `#if` in the base list and round the file: the first branch read
        ('AsyncWriter', 'class', 5, 11),
        ('AsyncWriter.DisposeAsync', 'method', 12, 12),
        ('AsyncWriter.WriteAsync', 'method', 17, 20),
        ('AsyncWriter.op_Explicit', 'method', 22, 22),  # a conversion, named as the compiler names it
    ]),
    ('OrderService.cs', 'csharp', [
        ('Shop.Orders', 'namespace', 3, 4),
        ('Shop.Orders.IOrderRepository', 'interface', 5, 6),
        ('Shop.Orders.IOrderRepository.Find', 'method', 7, 7),
        ('Shop.Orders.IOrderRepository.Save', 'method', 8, 8),
        ('Shop.Orders.Order', 'record', 11, 11),
        ('Shop.Orders.OrderService', 'class', 13, 16),
        ('Shop.Orders.OrderService.OrderService', 'method', 17, 20),
        ('Shop.Orders.OrderService.TotalFor', 'method', 22, 30),
        ('Shop.Orders.OrderService.Status', 'property', 32, 32),
        ('Shop.Orders.OrderService.Close', 'method', 34, 38),
        ('Shop.Orders.Money', 'struct', 41, 43),
        ('Shop.Orders.Money.ToString', 'method', 44, 44),
        ('Shop.Orders.OrderState', 'enum', 47, 47),
    ]),
    ('Queue.hs', 'haskell', [
        ('Queue', 'type', 10, 12),  # its haddock, inside the grammar's imports, leads it
        ('Container', 'class', 14, 14),
        ('Container.size', 'method', 15, 15),
        ('Container', 'impl', 17, 17),
        ('Container.size', 'method', 18, 18),
        ('empty', 'function', 20, 21),
        ('push', 'function', 23, 24),
        ('pop', 'function', 26, 29),
        ('Size', 'type', 31, 31),
        ('drain', 'function', 33, 36),
    ]),
    ('ImageView.m', 'objc', [  # a method's header split over `#if` branches: the first branch read
        ('ImageView', 'class', 2, 4),
        ('ImageView.initWithFrame', 'method', 5, 11),
        ('ImageView.stopAnimating', 'method', 13, 15),
    ]),
    ('RequestQueue.m', 'objc', [
        ('RequestQueue', 'interface', 2, 5),
        ('RequestQueue', 'class', 7, 8),
        ('RequestQueue.init', 'method', 9, 15),
        ('RequestQueue.enqueue', 'method', 17, 20),
        ('RequestQueue.startNextIfIdle', 'method', 22, 29),
        ('RequestQueue.sharedQueue', 'method', 31, 37),
        ('DescribeRequest', 'function', 41, 43),
    ]),
    ('Router.scala', 'scala', [
        ('Route', 'class', 4, 5),
        ('Middleware', 'trait', 7, 7),
        ('Middleware.wrap', 'method', 8, 8),
        ('Router', 'class', 11, 13),
        ('Router.add', 'method', 14, 16),
        ('Router.dispatch', 'method', 18, 23),
        ('Router', 'object', 26, 26),
        ('Router.empty', 'method', 27, 27),
        ('Method', 'enum', 32, 34),
        ('serve', 'function', 36, 38),
    ]),
    ('codecs.scala', 'scala', [  # a package object and its defs (its vals are not definitions)
        ('codecs', 'object', 2, 7),
        ('codecs.parseRoute', 'method', 8, 11),
    ]),
    ('TodoList.vue', 'vue', [
        ('data', 'function', 16, 18),
        ('computed', 'object', 19, 19),
        ('computed.visible', 'function', 20, 22),
        ('methods', 'object', 24, 24),
        ('methods.toggle', 'function', 25, 27),
        ('formatTitle', 'function', 31, 33),
    ]),
    ('optional_json.ex', 'elixir', [  # inside `if Code.ensure_loaded?(…) do`: the first branch read
        ('Shop.JSON', 'namespace', 1, 3),
        ('Shop.JSON.encode', 'function', 4, 4),
        ('Shop.Codec', 'namespace', 8, 9),
        ('Shop.Codec.decode', 'function', 10, 10),
    ]),
    ('bank_account.ex', 'elixir', [
        ('Bank.Account', 'namespace', 0, 6),
        ('Bank.Account.open', 'function', 7, 10),
        ('Bank.Account.deposit', 'function', 12, 14),
        ('Bank.Account.withdraw', 'function', 16, 22),
        ('Bank.Account.audit', 'function', 24, 24),
        ('Bank.Account.with_account', 'function', 26, 31),
        ('Bank.Describable', 'protocol', 34, 34),
        ('Bank.Describable.describe', 'function', 35, 35),
        ('Bank.Ledger', 'namespace', 38, 38),
        ('Bank.Ledger.transfer', 'function', 39, 43),
    ]),
    ('install.sh', 'bash', [  # inside the script's `{ … }` and under `if`
        ('install_dir', 'function', 3, 5),
        ('shell_name', 'function', 8, 8),
        ('shell_name', 'function', 10, 10),
    ]),
    ('deploy.sh', 'bash', [
        ('log', 'function', 6, 8),
        ('build_archive', 'function', 10, 15),
        ('upload_to_host', 'function', 17, 21),
        ('main', 'function', 23, 30),
    ]),
    ('kalman.jl', 'julia', [
        ('Kalman', 'namespace', 0, 3),
        ('Kalman.KalmanFilter', 'struct', 4, 10),
        ('Kalman.AbstractModel', 'type', 12, 12),
        ('Kalman.ConstantVelocity', 'struct', 14, 16),
        ('Kalman.transition', 'function', 18, 20),
        ('Kalman.predict!', 'function', 22, 27),
        ('Kalman.update!', 'function', 29, 34),
        ('Kalman.innovation', 'function', 36, 36),
        ('Kalman.checked', 'macro', 38, 40),
    ]),
    ('lexer.ml', 'ocaml', [
        ('token', 'type', 2, 6),
        ('Lex_error', 'type', 8, 8),
        ('is_digit', 'function', 10, 10),
        ('read_int', 'function', 12, 15),
        ('tokenize', 'function', 17, 30),
        ('Printer', 'namespace', 32, 32),
        ('Printer.show', 'function', 33, 37),
        ('SOURCE', 'interface', 40, 40),
        ('SOURCE.next', 'method', 41, 41),
    ]),
    ('rate_limiter.erl', 'erlang', [
        ('state', 'record', 7, 7),
        ('start_link', 'function', 9, 10),
        ('allow', 'function', 12, 13),
        ('init', 'function', 15, 16),
        ('handle_call', 'function', 18, 21),
        ('handle_cast', 'function', 23, 24),
        ('refill', 'function', 26, 27),
    ]),
    ('orders.proto', 'proto', [
        ('Order', 'struct', 3, 5),
        ('Order.Line', 'struct', 6, 6),
        ('Status', 'enum', 10, 10),
        ('Orders', 'interface', 12, 12),
        ('Orders.Get', 'method', 13, 13),
    ]),
    ('Token.sol', 'solidity', [
        ('Token', 'class', 2, 4),
        ('Token.Sent', 'type', 5, 5),
        ('Token.Holder', 'struct', 6, 6),
        ('Token.onlyOwner', 'method', 7, 7),
        ('Token.constructor', 'method', 8, 8),
        ('Token.send', 'method', 9, 11),
        ('IToken', 'interface', 14, 14),
        ('IToken.balanceOf', 'method', 14, 14),
        ('Math', 'namespace', 15, 15),
        ('Math.max', 'function', 15, 15),
        ('free', 'function', 16, 16),
    ]),
    ('schema.graphql', 'graphql', [  # a field with arguments is an operation; plain fields are not
        ('Order', 'type', 0, 4),
        ('Status', 'enum', 6, 6),
        ('Node', 'interface', 8, 8),
        ('Query', 'type', 10, 10),
        ('Query.order', 'method', 11, 11),
        ('GetOrder', 'function', 15, 15),
    ]),
    ('bounded.zig', 'zig', [  # a generic type: a function returning a struct
        ('BoundedList', 'struct', 2, 9),
        ('BoundedList.append', 'method', 10, 14),
    ]),
    ('ring_buffer.zig', 'zig', [
        ('RingBuffer', 'struct', 2, 7),
        ('RingBuffer.init', 'method', 8, 10),
        ('RingBuffer.write', 'method', 12, 16),
        ('RingBuffer.isFull', 'method', 18, 20),
        ('RingBuffer.mask', 'method', 22, 24),
        ('Color', 'enum', 27, 27),
        ('fill', 'function', 29, 33),
        ('fill fills the buffer', 'function', 35, 40),  # a `test` block
    ]),
    ('shopping_cart.clj', 'clojure', [
        ('empty-cart', 'constant', 4, 4),
        ('add-item', 'function', 6, 9),
        ('line-total', 'function', 11, 12),
        ('total', 'function', 14, 15),
        ('discount', 'function', 17, 17),
        ('discount', 'method', 19, 20),
        ('Priced', 'protocol', 22, 23),
        ('Product', 'record', 25, 27),
        ('with-cart', 'macro', 29, 30),
        ('checkout', 'function', 32, 33),
    ]),
    ('event.lua', 'lua', [  # inside a `do … end` scope and under `if`
        ('Event.set', 'function', 6, 8),
        ('M.now', 'function', 12, 12),
        ('M.now', 'function', 14, 14),
    ]),
    ('statusline.lua', 'lua', [
        ('mode_name', 'function', 8, 11),
        ('M.setup', 'function', 13, 15),
        ('M.render', 'function', 17, 24),
        ('Segment.new', 'function', 29, 31),
        ('Segment.width', 'function', 33, 35),
        ('M.refresh', 'function', 37, 39),
    ]),
    ('summarise.R', 'r', [
        ('clean_responses', 'function', 4, 7),
        ('summarise_by_group', 'function', 9, 12),
        ('weighted_mean', 'function', 14, 16),
        ('report', 'function', 18, 24),
        ('Survey', 'class', 26, 26),  # S4
    ]),
    ('todo_store.dart', 'dart', [
        ('Todo', 'class', 2, 6),
        ('Todo.Todo', 'method', 7, 7),
        ('Todo.toggled', 'method', 9, 9),
        ('TodoRepository', 'class', 12, 12),
        ('TodoRepository.load', 'method', 13, 13),
        ('TodoRepository.save', 'method', 14, 14),
        ('Logging', 'class', 17, 17),
        ('Logging.log', 'method', 18, 20),
        ('TodoStore', 'class', 23, 27),
        ('TodoStore.TodoStore', 'method', 28, 28),
        ('TodoStore.changes', 'method', 30, 30),
        ('TodoStore.add', 'method', 32, 37),
        ('Filter', 'enum', 40, 40),
        ('TodoFilters', 'extension', 42, 42),
        ('TodoFilters.where', 'method', 43, 43),
        ('countOpen', 'function', 46, 48),
    ]),
    ('Lib.fs', 'fsharp', [
        ('Shop.Cart', 'namespace', 0, 1),
        ('Shop.Cart.Item', 'type', 2, 2),
        ('Shop.Cart.total', 'function', 4, 5),
        ('Shop.Cart.add', 'function', 7, 7),
        ('Shop.Cart.Cart', 'type', 9, 9),  # a type's members are its methods
        ('Shop.Cart.Cart.Count', 'method', 10, 10),
        ('Shop.Cart.Cart.Empty', 'method', 11, 11),
    ]),
    ('Tool.pm', 'perl', [
        ('My.Tool', 'namespace', 0, 0),
        ('My.Tool.new', 'function', 3, 6),
        ('My.Tool.run', 'function', 8, 11),
    ]),
    ('build.ps1', 'powershell', [
        ('Get-Version', 'function', 0, 3),
        ('Builder', 'class', 5, 6),
        ('Builder.Run', 'method', 7, 9),
    ]),
    ('default.nix', 'nix', [
        ('mkTool', 'function', 3, 6),
    ]),
    ('main.tf', 'terraform', [
        ('var.region', 'constant', 0, 3),
        ('aws_s3_bucket.logs', 'object', 5, 7),
        ('module.network', 'object', 9, 11),
        ('output.bucket_arn', 'constant', 13, 15),
    ]),
    ('schema.sql', 'sql', [
        ('users', 'table', 0, 3),
        ('active_users', 'view', 5, 5),
        ('user_count', 'function', 7, 9),
    ]),
    ('Cart.elm', 'elm', [  # a signature and its equation are one definition
        ('Item', 'type', 7, 8),
        ('Cart', 'type', 11, 12),
        ('Msg', 'type', 15, 17),
        ('empty', 'function', 20, 22),
        ('total', 'function', 25, 28),
        ('save', 'function', 31, 31),
    ]),
    ('inventory.gleam', 'gleam', [  # an attribute and a doc comment lead their function
        ('Item', 'type', 3, 6),
        ('Stock', 'type', 8, 9),
        ('low_water', 'constant', 11, 11),
        ('restock', 'function', 13, 20),
        ('describe', 'function', 22, 24),
        ('now', 'function', 26, 27),
    ]),
    ('billing.thrift', 'thrift', [  # a service's functions are its methods
        ('MAX_LINES', 'constant', 5, 5),
        ('Cents', 'type', 7, 7),
        ('Currency', 'enum', 9, 12),
        ('Line', 'struct', 14, 18),
        ('Payment', 'union', 20, 23),
        ('NotFound', 'type', 25, 27),
        ('Billing', 'interface', 29, 29),
        ('Billing.lines', 'method', 30, 31),
        ('Billing.refresh', 'method', 32, 32),
    ]),
    ('stats.f90', 'fortran', [  # a module's procedures are its functions; an unnamed interface's are read one by one
        ('stats', 'namespace', 0, 5),
        ('stats.sample_t', 'type', 6, 10),
        ('stats.mean', 'interface', 12, 14),
        ('stats.mean_real', 'function', 18, 23),
        ('stats.clear', 'function', 25, 28),
        ('stats.sample_size', 'function', 30, 33),
        ('main', 'namespace', 36, 39),
        ('stats_io', 'namespace', 41, 42),
        ('stats_io.write_sample', 'function', 43, 45),
        ('c_sleep', 'function', 49, 51),
    ]),
    ('queue.d', 'd', [  # a constructor is `this`; a template is a scope
        ('Queue', 'struct', 4, 8),
        ('Queue.push', 'method', 9, 9),
        ('Queue.pop', 'method', 11, 17),
        ('Sink', 'interface', 20, 20),
        ('Sink.put', 'method', 20, 20),
        ('FileSink', 'class', 22, 23),
        ('FileSink.this', 'method', 24, 24),
        ('FileSink.put', 'method', 25, 25),
        ('Level', 'enum', 28, 28),
        ('twice', 'function', 30, 30),
        ('Max', 'namespace', 32, 32),
    ]),
    ('stack.nim', 'nim', [  # an exported name's `*` is not part of it
        ('Stack', 'type', 6, 8),
        ('StackError', 'type', 9, 9),
        ('newStack', 'function', 11, 13),
        ('push', 'function', 15, 18),
        ('peek', 'function', 20, 21),
        ('items', 'function', 23, 24),
        ('withStack', 'macro', 26, 26),
        ('debugDump', 'macro', 27, 27),
        ('describe', 'function', 28, 28),
    ]),
    ('session.vim', 'vim', [  # named as called: scope and autoload parts kept
        ('session#Save', 'function', 3, 7),
        ('s:restore', 'function', 9, 13),
        ('s:obj.count', 'function', 15, 17),
        ('SessionSave', 'macro', 19, 19),
    ]),
    ('blur.glsl', 'glsl', [  # the C reading, and a block of uniforms as a struct
        ('Light', 'struct', 5, 8),
        ('Lights', 'struct', 10, 12),
        ('weight', 'function', 14, 17),
        ('blur', 'function', 19, 24),
        ('luma', 'function', 28, 28),
    ]),
    ('lighting.hlsl', 'hlsl', [  # the C++ reading; a cbuffer with a register is its header line
        ('PerFrame', 'struct', 2, 2),
        ('VSInput', 'struct', 11, 15),
        ('PSInput', 'struct', 17, 21),
        ('lambert', 'function', 23, 27),
        ('VSMain', 'function', 29, 35),
        ('CSMain', 'function', 37, 40),
        ('tonemap', 'namespace', 42, 42),
        ('tonemap.aces', 'function', 42, 42),
    ]),
    ('particles.wgsl', 'wgsl', [  # this grammar predates module-scope `const`: that line is an error, the rest reads
        ('Particle', 'struct', 0, 4),
        ('step', 'function', 11, 16),
        ('main', 'function', 18, 21),
    ]),
    ('queue.lisp', 'commonlisp', [  # a def form defines its second element; #+sbcl forms too
        ('*queue*', 'constant', 3, 4),
        ('*limit*', 'constant', 6, 6),
        ('job', 'class', 8, 10),
        ('run-job', 'function', 12, 13),
        ('run-job', 'method', 15, 16),
        ('enqueue', 'function', 18, 21),
        ('with-queue', 'macro', 23, 24),
        ('point', 'struct', 26, 26),
        ('cpu-count', 'function', 29, 30),
    ]),
    ('notes.el', 'elisp', [
        ('notes', 'constant', 4, 6),
        ('notes-directory', 'constant', 8, 10),
        ('notes--history', 'constant', 12, 12),
        ('notes-version', 'constant', 14, 14),
        ('notes-new', 'function', 16, 20),
        ('notes-with-buffer', 'macro', 22, 23),
        ('notes-mode', 'function', 25, 27),
        ('notes-search', 'function', 29, 30),
    ]),
    ('ledger.rkt', 'racket', [  # a submodule's definitions are its own
        ('account', 'struct', 5, 5),
        ('fee', 'constant', 7, 7),
        ('credit!', 'function', 9, 12),
        ('balance-of', 'function', 14, 17),
        ('with-account', 'macro', 19, 20),
        ('test', 'namespace', 22, 23),
        ('test.check-credit!', 'function', 24, 25),
    ]),
    ('matrix.scm', 'scheme', [  # a define of a lambda is a function; of a value, a constant
        ('matrix', 'record', 2, 7),
        ('zero', 'constant', 9, 9),
        ('matrix-ref', 'function', 11, 13),
        ('matrix-identity', 'function', 15, 19),
        ('unless-empty', 'macro', 21, 23),
    ]),
    ('accounts.ads', 'ada', [  # a package's declarations are its own; a generic package is a scope
        ('Accounts', 'namespace', 0, 2),
        ('Accounts.Account', 'type', 3, 3),
        ('Accounts.Kind', 'type', 5, 5),
        ('Accounts.Deposit', 'function', 9, 9),
        ('Accounts.Balance', 'function', 11, 11),
        ('Accounts.Ledgers', 'namespace', 13, 15),
        ('Accounts.Ledgers.Record_Item', 'function', 16, 16),
        ('Accounts.Account', 'type', 20, 22),
    ]),
    ('Queue.purs', 'purescript', [  # an instance is named by its class, as Haskell's
        ('Queue', 'type', 10, 11),
        ('Name', 'type', 13, 13),
        ('Pair', 'type', 15, 15),
        ('Sized', 'class', 17, 17),
        ('Sized.size', 'method', 18, 18),
        ('Sized', 'impl', 20, 20),
        ('Sized.size', 'method', 21, 21),
        ('empty', 'function', 23, 24),
        ('push', 'function', 26, 27),
        ('now', 'function', 29, 29),
    ]),
    ('ring.odin', 'odin', [  # an attribute and a comment lead their declaration
        ('Ring', 'struct', 4, 9),
        ('Error', 'enum', 11, 14),
        ('MAX_RINGS', 'constant', 16, 16),
        ('push', 'function', 18, 23),
        ('Value', 'union', 25, 25),
        ('dump', 'function', 27, 30),
        ('size', 'function', 32, 32),
    ]),
    ('shapes.pas', 'pascal', [  # a class's methods are declared inside it and defined as Class.Method
        ('TShapeKind', 'enum', 5, 5),
        ('TShape', 'class', 7, 11),
        ('TShape.Create', 'method', 12, 12),
        ('TShape.Area', 'method', 13, 13),
        ('TPoint', 'struct', 17, 19),
        ('Register', 'function', 21, 21),
        ('TShape.Create', 'method', 25, 28),
        ('Register', 'function', 30, 33),
    ]),
    ('cache.tcl', 'tcl', [  # a namespace eval's procs are qualified by it; TclOO classes hold methods
        ('cache', 'namespace', 3, 6),
        ('cache.put', 'function', 7, 11),
        ('cache.get', 'function', 13, 18),
        ('cache.clear', 'function', 21, 23),
        ('Counter', 'class', 25, 26),
        ('Counter.constructor', 'method', 27, 27),
        ('Counter.incr', 'method', 28, 28),
    ]),
]


def definitions(name: str) -> list[tuple[str, str, int, int]]:
    parsed = definition_chunks(name, (FIXTURES / name).read_text())
    return [(s.symbol, s.symbol_kind, s.start_line, s.end_line) for s in parsed.symbols]


@pytest.mark.parametrize(("name", "language", "expected"), DEFINITIONS, ids=[row[0] for row in DEFINITIONS])
def test_each_language_yields_its_named_definitions_at_their_lines(name, language, expected):
    text = (FIXTURES / name).read_text()
    assert language_for_path(name, text) == language
    assert definitions(name) == expected
    # The packed chunks keep the chunker's invariants: each chunk is exactly
    # its lines, and none is 1-2 lines long while the file has more.
    lines = split_lines(text)
    parsed = chunk_file(name, text)
    assert parsed.language == language
    for chunk in parsed.chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line:chunk.end_line + 1])
        assert chunk.end_line - chunk.start_line + 1 > 2, (chunk.symbol, chunk.start_line)
    named = {name for chunk in parsed.chunks for name in chunk.names}
    assert named == {symbol for symbol, *_ in expected}


@pytest.mark.parametrize(("name", "language", "expected"), DEFINITIONS, ids=[row[0] for row in DEFINITIONS])
def test_crlf_files_yield_the_same_definitions(name, language, expected, tmp_path):
    crlf = (FIXTURES / name).read_text().replace("\n", "\r\n")
    parsed = definition_chunks(name, crlf)
    assert [(s.symbol, s.symbol_kind, s.start_line, s.end_line) for s in parsed.symbols] == expected


def test_broken_input_in_every_language_still_chunks():
    for name, language, _ in DEFINITIONS:
        text = (FIXTURES / name).read_text()
        for broken in (text[: len(text) // 2], text.replace("(", "", 3), "\x00" + text[::-1]):
            parsed = chunk_file(name, broken)
            lines = split_lines(broken)
            assert all(c.text == "\n".join(lines[c.start_line:c.end_line + 1]) for c in parsed.chunks)
            assert parsed.chunks or not broken.strip()


# Header texts: C++ when the text shows C++ or nothing either way; C only
# when written for C (an `extern "C"` guard and nothing of C++); Objective-C by its keywords.
CPP_HEADER = "#pragma once\nnamespace geo {\nclass Point {\n public:\n  double x;\n};\n}\n"
PLAIN_HEADER = "#pragma once\nint area(int w, int h);\n"
C_HEADER = ('#ifndef LIST_H\n#define LIST_H\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
            "struct node { int value; struct node *next; };\nint list_length(struct node *head);\n"
            "#ifdef __cplusplus\n}\n#endif\n#endif\n")
OBJC_HEADER = "#import <Foundation/Foundation.h>\n@interface Queue : NSObject\n- (void)push;\n@end\n"


def test_a_header_is_cpp_unless_its_text_says_c_or_objective_c():
    assert header_language(CPP_HEADER) == "cpp"
    assert header_language(PLAIN_HEADER) == "cpp"
    assert header_language(C_HEADER) == "c"
    assert header_language(OBJC_HEADER) == "objc"
    assert language_for_path("include/geo/point.h") == "cpp"
    parsed = definition_chunks("include/geo/point.h", CPP_HEADER)
    assert parsed.language == "cpp"
    assert [(s.symbol, s.symbol_kind) for s in parsed.symbols] == [("geo", "namespace"), ("geo.Point", "class")]
    # `int list_length(struct node *head);`: a header's prototype is its function's definition.
    assert [s.symbol for s in definition_chunks("src/list.h", C_HEADER).symbols] == ["node", "list_length"]


def test_a_components_script_is_read_at_the_files_own_lines():
    vue = (FIXTURES / "TodoList.vue").read_text()
    lines = split_lines(vue)
    toggle = next(s for s in definition_chunks("TodoList.vue", vue).symbols if s.symbol == "methods.toggle")
    assert lines[toggle.start_line].strip() == "toggle(todo) {"
    # Without a <script>, a component is its template: windows, no definitions.
    parsed = chunk_file("Empty.vue", "<template>\n  <p>hi</p>\n</template>\n")
    assert parsed.symbols == [] and parsed.chunks


def symbols_of(path: str, text: str) -> list[tuple[str, str, int, int]]:
    return [(s.symbol, s.symbol_kind, s.start_line, s.end_line) for s in definition_chunks(path, text).symbols]


# Operators made of the characters a name is cut at (`=`, `<`, `(`): they were
# no definitions (`==`) or cut (`!=` -> `!`, `(<+>)` -> `+>)`).
OPERATORS = [
    ("Vec.swift", "struct Vec {\n    static func == (l: Vec, r: Vec) -> Bool { true }\n"
                  "    static func < (l: Vec, r: Vec) -> Bool { true }\n}\n", ["Vec", "Vec.==", "Vec.<"]),
    ("Money.scala", "class Money(val c: Int) {\n  def <(o: Money): Boolean = c < o.c\n"
                    "  def ==(o: Money): Boolean = true\n  def ::(o: Money): Money = o\n}\n",
     ["Money", "Money.<", "Money.==", "Money.::"]),
    ("Money.cs", "public class Money\n{\n    public static bool operator ==(Money a, Money b) => true;\n"
                 "    public static bool operator !=(Money a, Money b) => false;\n}\n",
     ["Money", "Money.==", "Money.!="]),
    ("Money.kt", "class Money {\n    fun `<=>`(o: Money) = 1\n}\n", ["Money", "Money.<=>"]),
    ("Ops.hs", "module Ops where\n\n(<+>) :: Int -> Int -> Int\na <+> b = a + b\n", ["<+>"]),
    # Dart's operator signature has no name field: no definition (dart-lang/collection's `DelegatingList.[]`).
    ("wrappers.dart", "class DelegatingList<E> {\n  E operator [](int index) => _base[index];\n"
                      "  void operator []=(int index, E value) {}\n  List<E> operator +(List<E> other) => other;\n"
                      "  bool operator ==(Object other) => true;\n}\n",
     ["DelegatingList", "DelegatingList.[]", "DelegatingList.[]=", "DelegatingList.+", "DelegatingList.=="]),
]


@pytest.mark.parametrize(("path", "text", "expected"), OPERATORS, ids=[row[0] for row in OPERATORS])
def test_an_operator_definition_is_named_by_its_whole_operator(path, text, expected):
    assert [symbol for symbol, *_ in symbols_of(path, text)] == expected


def test_a_haskell_equation_written_infix_is_its_signatures_definition():
    text = "module Ops where\n\n(<+>) :: Int -> Int -> Int\na <+> b = a + b\n\nx `near` y = True\n"
    assert symbols_of("Ops.hs", text) == [("<+>", "function", 2, 3), ("near", "function", 5, 5)]


def test_a_scala_body_on_the_lines_below_its_def_ends_at_its_own_last_token():
    # tree-sitter-scala ends an indented body at the next token: on the next
    # definition's first line, which outline then nested inside this one.
    text = ("class Pricing {\n  def double(x: Int): Int =\n    x * 2\n\n  def triple(x: Int): Int = x * 3\n}\n\n"
            "object Tax:\n  def rate(x: Int): Int =\n    x / 5\n  def flat(x: Int): Int = 1\n")
    assert symbols_of("Pricing.scala", text) == [
        ("Pricing", "class", 0, 0), ("Pricing.double", "method", 1, 2), ("Pricing.triple", "method", 4, 4),
        ("Tax", "object", 7, 7), ("Tax.rate", "method", 8, 9), ("Tax.flat", "method", 10, 10)]


def test_a_scala_3_anonymous_given_is_named_as_the_compiler_names_it():
    """`given Ordering[Color] with def compare …` and `given Eq[Animal] =
    Eq.fromUniversalEquals` (a type class instance, the common Scala 3 form)
    were no definitions and their methods were lost; scalac names them
    `given_Ordering_Color`, `given_Eq_Animal`."""
    text = ("object Color:\n  given Ordering[Color] with\n    def compare(a: Color, b: Color): Int = 0\n\n"
            "  given Conversion[String, Color] with\n    def apply(s: String): Color = ???\n\n"
            "  given Eq[List[Color]] = Eq.fromUniversalEquals\n\n"
            "  given byName: Ordering[Int] with\n    def compare(a: Int, b: Int): Int = 0\n")
    assert symbols_of("Color.scala", text) == [
        ("Color", "object", 0, 0), ("Color.given_Ordering_Color", "object", 1, 1),
        ("Color.given_Ordering_Color.compare", "method", 2, 2),
        ("Color.given_Conversion_String_Color", "object", 4, 4),
        ("Color.given_Conversion_String_Color.apply", "method", 5, 5),
        ("Color.given_Eq_List", "object", 7, 7),
        ("Color.byName", "object", 9, 9), ("Color.byName.compare", "method", 10, 10)]


def test_the_methods_of_a_scala_3_extension_are_its_members():
    # tree-sitter-scala puts them under the extension itself, with no body node around them.
    text = ("package shop\n\nextension (s: String)\n  /** Turns a string into a SKU. */\n"
            "  def toSku: String = s.toUpperCase\n  def isSku: Boolean =\n    s.nonEmpty\n\n"
            "object Other {\n  extension (d: Double) {\n    def rounded: Long = math.round(d)\n  }\n}\n")
    assert symbols_of("Ext.scala", text) == [
        ("String", "extension", 2, 2), ("String.toSku", "method", 3, 4), ("String.isSku", "method", 5, 6),
        ("Other", "object", 8, 8), ("Other.Double", "extension", 9, 9), ("Other.Double.rounded", "method", 10, 10)]


# The grammar puts the first declaration's doc comment inside the imports or
# the `package` line before it: it still leads the declaration.
FIRST_DOCS = [
    ("Cart.kt", "package shop\n\nimport a.B\n\n/** A shopping cart. */\nclass Cart {\n    fun add() = 1\n}\n",
     ("Cart", "class", 4, 5)),
    ("Ext.kt", "package shop\n\n/** Second element. */\nfun <T> List<T>.second(): T = this[1]\n",
     ("List.second", "function", 2, 3)),
    ("Cart.hs", "module Cart where\n\nimport Data.List\n\n-- | Adds an item.\naddItem :: Int -> Int\naddItem x = x\n",
     ("addItem", "function", 4, 6)),
    # Apart by a blank line, or indented into the code above: no lead.
    ("Far.kt", "package shop\n\nimport a.B\n// imports end\n\nclass Far\n", ("Far", "class", 5, 5)),
]


@pytest.mark.parametrize(("path", "text", "expected"), FIRST_DOCS, ids=[row[0] for row in FIRST_DOCS])
def test_a_doc_comment_the_grammar_puts_in_the_imports_leads_the_next_declaration(path, text, expected):
    assert symbols_of(path, text)[0] == expected


def test_a_comment_indented_into_the_block_above_does_not_lead_the_next_definition():
    text = "for x in y:\n    pass\n    # the loop's last word\ndef g():\n    pass\n"
    assert symbols_of("loop.py", text) == [("g", "function", 3, 4)]


def test_swift_subscripts_and_csharp_indexers_are_definitions_named_by_their_keyword():
    swift = ("struct Grid {\n    var cells: [Int]\n\n    /// The cell at an index.\n"
             "    subscript(i: Int) -> Int {\n        get { cells[i] }\n        set { cells[i] = newValue }\n"
             "    }\n\n    func size() -> Int { cells.count }\n}\n")
    assert symbols_of("Grid.swift", swift) == [("Grid", "struct", 0, 2), ("Grid.subscript", "property", 3, 7),
                                               ("Grid.size", "method", 9, 9)]
    csharp = ("public class Grid\n{\n    /// <summary>The cell at an index.</summary>\n    public int this[int i]\n"
              "    {\n        get { return cells[i]; }\n    }\n\n    public int Size() => 0;\n}\n")
    assert symbols_of("Grid.cs", csharp) == [("Grid", "class", 0, 1), ("Grid.this", "property", 2, 6),
                                             ("Grid.Size", "method", 8, 8)]
    assert [s.line for s in definition_chunks("Grid.cs", csharp).symbols][1] == 3



def test_a_swift_extension_of_sugared_type_is_named_by_the_type_it_stands_for():
    """`extension [String]` (swift-case-paths) was named `String]`,
    `extension [String: Int]` read as an extension of `String`, `extension
    Int?` named `Int?`: they extend Array, Dictionary and Optional."""
    text = ("extension [String] {\n  var joined: String { \"\" }\n}\n\n"
            "extension [String: Int] {\n  func total() -> Int { 0 }\n}\n\n"
            "extension Int? {\n  func orZero() -> Int { 0 }\n}\n\n"
            "extension Optional<Int> {\n  func orOne() -> Int { 1 }\n}\n")
    assert symbols_of("Sugar.swift", text) == [
        ("Array", "extension", 0, 0), ("Array.joined", "property", 1, 1),
        ("Dictionary", "extension", 4, 4), ("Dictionary.total", "method", 5, 5),
        ("Optional", "extension", 8, 8), ("Optional.orZero", "method", 9, 9),
        ("Optional", "extension", 12, 12), ("Optional.orOne", "method", 13, 13)]

# Layout grammars end a definition at the next token, past the comments
# before it: the doc comment of a definition was counted in the one above.
DOCS_INSIDE_THE_DEFINITION_ABOVE = [
    ("Core.fs", "module Core\n\n/// Combines two handlers.\nlet compose f g =\n    fun x -> g (f x)\n\n"
                "/// Picks the first handler.\n/// None when none does.\nlet rec choose fs x =\n    match fs with\n"
                "    | [] -> None\n    | f :: rest -> choose rest x\n",
     [("Core", "namespace", 0, 1), ("Core.compose", "function", 2, 4), ("Core.choose", "function", 6, 11)]),
    # The last member of a type holds the doc of the `let` after the type.
    ("Shop.fs", "module Shop\n\ntype Cart =\n    { Items: int list }\n    member this.Count = this.Items.Length\n\n"
                "/// An empty cart.\nlet empty () =\n    { Items = [] }\n",
     [("Shop", "namespace", 0, 1), ("Shop.Cart", "type", 2, 3), ("Shop.Cart.Count", "method", 4, 4),
      ("Shop.empty", "function", 6, 8)]),
    ("Tax.scala", "object Tax:\n  def rate(x: Int): Int =\n    x / 5\n\n  /** A flat fee. */\n  def flat(x: Int): Int =\n    1\n",
     [("Tax", "object", 0, 0), ("Tax.rate", "method", 1, 2), ("Tax.flat", "method", 4, 6)]),
    ("stack.nim", "proc push(s: var seq[int], x: int) =\n  s.add(x)\n\n# Removes the top.\nproc pop(s: var seq[int]): int =\n"
                  "  s.pop()\n",
     [("push", "function", 0, 1), ("pop", "function", 3, 5)]),
]


@pytest.mark.parametrize(("path", "text", "expected"), DOCS_INSIDE_THE_DEFINITION_ABOVE,
                         ids=[row[0] for row in DOCS_INSIDE_THE_DEFINITION_ABOVE])
def test_a_doc_comment_the_grammar_puts_in_the_definition_above_leads_its_own(path, text, expected):
    assert symbols_of(path, text) == expected


def test_a_julia_method_is_named_by_its_function_and_a_callable_objects_by_its_type():
    # `(a::Dense)(x)` is every Flux layer's forward pass: it was named `a.Dense)`.
    text = ("function (a::Dense)(x::AbstractVecOrMat)\n  return a.weight * x\nend\n"
            "(c::Chain)(x) = foldl((y, f) -> f(y), c.layers; init = x)\n"
            "function (::Flux.Scale{F})(x) where {F}\n  x\nend\n"
            # A return type or a `where` on a one-line method, and a function
            # without methods, were no definitions.
            "function area(r)::Float64\n  r^2\nend\n"
            "double(x::T)::T where {T} = 2x\n"
            "function __initialize end\n")
    assert symbols_of("layers.jl", text) == [
        ("Dense", "function", 0, 2), ("Chain", "function", 3, 3), ("Flux.Scale", "function", 4, 6),
        ("area", "function", 7, 9), ("double", "function", 10, 10), ("__initialize", "function", 11, 11)]


def test_a_scala_3_extension_on_a_by_name_parameter_is_named_by_its_type():
    # fastparse's `extension [T](inline parse0: => P[T])` was named `>`.
    text = ("package object parsers {\n  extension [T](inline parse0: => P[T])\n"
            "    inline def opaque(msg: String): P[T] = parse0\n}\n")
    assert [symbol for symbol, *_ in symbols_of("package.scala", text)] == ["parsers", "parsers.P", "parsers.P.opaque"]


def test_an_elixir_modules_name_line_is_its_defmodule_not_a_later_use_of_its_last_part():
    text = ('defmodule Ecto.Changeset do\n  @moduledoc """\n  Changesets.\n  """\n'
            "  def change(data) do\n    %Changeset{data: data}\n  end\nend\n")
    assert [(s.symbol, s.line) for s in definition_chunks("changeset.ex", text).symbols] == [
        ("Ecto.Changeset", 0), ("Ecto.Changeset.change", 4)]


def test_a_typescript_augmentation_of_a_projects_file_names_its_members_as_that_file_does():
    # zustand's middleware: `declare module '../vanilla'` was a namespace `../vanilla`.
    text = ("declare module '../vanilla' {\n  interface StoreMutators<S, A> {\n    devtools: S\n  }\n}\n"
            "declare module 'cache' {\n  export function get(key: string): string;\n}\n")
    assert [symbol for symbol, *_ in symbols_of("devtools.ts", text)] == ["StoreMutators", "cache", "cache.get"]


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory) -> Engine:
    root = tmp_path_factory.mktemp("polyglot")
    for fixture in FIXTURES.iterdir():
        (root / fixture.name).write_bytes(fixture.read_bytes())
    (root / "Makefile").write_text("release:\n\t./deploy.sh prod-1 prod-2\n")
    (root / "build.gradle").write_text("plugins {\n    id 'java'\n}\n")
    (root / "Blob.kt").write_bytes(b"\x00\x01binary")
    engine = Engine(root, EngineOptions(discovery=DiscoveryOptions()))
    engine.index()
    return engine


# One function per language, asked for by its name as a user would type it.
RECALLED = [
    ("Cache.swift", "evictExpired", "Cache.evictExpired"),
    ("Counter.svelte", "increment", "increment"),
    ("Inventory.kt", "restock", "Inventory.restock"),
    ("OrderService.cs", "TotalFor", "Shop.Orders.OrderService.TotalFor"),
    ("Queue.hs", "drain", "drain"),
    ("RequestQueue.m", "startNextIfIdle", "RequestQueue.startNextIfIdle"),
    ("Router.scala", "dispatch", "Router.dispatch"),
    ("TodoList.vue", "formatTitle", "formatTitle"),
    ("bank_account.ex", "withdraw", "Bank.Account.withdraw"),
    ("deploy.sh", "upload_to_host", "upload_to_host"),
    ("kalman.jl", "predict!", "Kalman.predict!"),
    ("lexer.ml", "tokenize", "tokenize"),
    ("rate_limiter.erl", "handle_cast", "handle_cast"),
    ("ring_buffer.zig", "isFull", "RingBuffer.isFull"),
    ("shopping_cart.clj", "line-total", "line-total"),
    ("statusline.lua", "render", "M.render"),
    ("summarise.R", "summarise_by_group", "summarise_by_group"),
    ("todo_store.dart", "countOpen", "countOpen"),
    ("schema.sql", "user_count", "user_count"),
    ("main.tf", "bucket_arn", "output.bucket_arn"),
    ("build.ps1", "Get-Version", "Get-Version"),
    ("Lib.fs", "Cart.total", "Shop.Cart.total"),  # `total` is also Clojure's
    ("Tool.pm", "run", "My.Tool.run"),
    ("default.nix", "mkTool", "mkTool"),
]


@pytest.mark.parametrize(("path", "query", "symbol"), RECALLED, ids=[row[0] for row in RECALLED])
def test_recall_finds_a_function_by_name_in_each_language(polyglot, path, query, symbol):
    hits = polyglot.recall(query, ["code"], mode="lexical").hits_by_kind["code"]
    assert hits, query
    top = hits[0]
    assert top.path == path, [(h.path, h.symbol) for h in hits[:3]]
    definition = next(s for s in definitions(path) if s[0] == symbol)
    # The hit's chunk holds the definition's lines.
    assert top.start_line <= definition[2] and definition[3] <= top.end_line


def test_status_counts_files_per_language_and_lists_those_read_without_a_grammar(polyglot):
    status = polyglot.status()
    languages = status["languages"]
    assert {language for _, language, _ in DEFINITIONS} <= set(languages)
    assert all(languages[language]["definitions"] for _, language, _ in DEFINITIONS)
    assert languages["kotlin"] == {"files": 3, "definitions": True}
    assert languages["make"] == {"files": 1, "definitions": False}
    assert languages["groovy"] == {"files": 1, "definitions": False}
    assert status["without_grammar"] == {"count": 2, "files": ["Makefile", "build.gradle"]}
    assert status["files"] == len(DEFINITIONS) + 2  # the binary file is skipped
    assert [entry["path"] for entry in status["skipped"]["files"]] == ["Blob.kt"]


def test_web_templates_are_indexed_and_generated_html_is_not(tmp_path: Path):
    """The views of a Rails, Flask, Go or Node app are written by hand in a
    template language (razor was indexed, ERB and Jinja were not), and so
    are Django's and Angular's `.html` templates (no `.html` was indexed, for
    fear of generated docs): searching for what a page shows found nothing.
    HTML a generator wrote says so (a generator meta tag, a javadoc comment)
    and stays out, as a minified page does; prose that says "generated by"
    is no such mark."""
    templates = {
        "app/views/orders/show.html.erb": "<h1>Order</h1>\n<%= render 'shipping_address', order: @order %>\n",
        "templates/checkout.html.j2": "{% block content %}\n<form id=\"coupon-redeem\">{{ coupon_field }}</form>\n"
                                      "{% endblock %}\n",
        "web/views/invoice.hbs": "<table class=\"invoice-lines\">{{#each invoiceLines}}<tr>{{amount}}</tr>{{/each}}</table>\n",
        "site/_includes/footer.liquid": "<footer>{{ site.newsletter_signup }}</footer>\n",
        "ui/page.gohtml": "{{define \"dashboard\"}}<div>{{.QuotaRemaining}}</div>{{end}}\n",
        "docs/_build/html/api.html": ('<html><head><meta name="generator" content="Docutils 0.21">'
                                      "</head><body>shipping_address coupon_field</body></html>\n"),
        "templates/account/login.html": ('{% extends "base.html" %}\n{% block body %}\n'
                                         "<p>This page is generated by a view.</p>\n"
                                         '<form id="magic-link-login">{{ form }}</form>\n{% endblock %}\n'),
        "src/app/cart/cart.component.html": '<li *ngFor="let line of cartLines">{{ line.subtotal }}</li>\n',
        "apidocs/Session.html": ("<!DOCTYPE HTML>\n<!-- Generated by javadoc (17) -->\n<html><body>"
                                 "shipping_address</body></html>\n"),
        "site/bundle.html": "<html>" + "<div class=x>minified_bundle_word</div>" * 400 + "</html>",
    }
    for path, text in templates.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        for query, path in (("shipping_address", "app/views/orders/show.html.erb"),
                            ("coupon redeem form", "templates/checkout.html.j2"),
                            ("invoiceLines", "web/views/invoice.hbs"),
                            ("newsletter_signup", "site/_includes/footer.liquid"),
                            ("QuotaRemaining", "ui/page.gohtml"),
                            ("magic link login form", "templates/account/login.html"),
                            ("cartLines subtotal", "src/app/cart/cart.component.html")):
            hits = engine.recall(query, ["code"], mode="lexical").hits_by_kind["code"]
            assert [h.path for h in hits][:1] == [path], (query, [h.path for h in hits])
        status = engine.status()
        assert status["files"] == 7
        assert {"erb", "jinja", "handlebars", "liquid", "gotemplate", "html"} <= set(status["languages"])
        assert {(f["path"], f["reason"]) for f in status["skipped"]["files"]} == {
            ("docs/_build/html/api.html", "generated"), ("apidocs/Session.html", "generated"),
            ("site/bundle.html", "minified")}
    finally:
        engine.close()


def _notebook(cells: list[tuple[str, object, list]], language: str = "python") -> str:
    """nbformat 4 as Jupyter writes it: sorted keys, one-space indent, one source line per JSON line."""
    made = [{"cell_type": kind, "metadata": {}, "source": source,
             **({"execution_count": 1, "id": f"c{i}", "outputs": outputs} if kind == "code" else {})}
            for i, (kind, source, outputs) in enumerate(cells)]
    return json.dumps({"cells": made, "metadata": {"language_info": {"name": language}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1, sort_keys=True) + "\n"


def test_a_notebook_is_read_as_its_cells_at_the_files_rows(tmp_path: Path):
    """A Jupyter notebook is JSON: its code was never indexed. It is read as
    its cells (code as code, Markdown as comments, magics commented out) at
    the file's own rows, never its outputs (a base64 image, printed text);
    recall points at the notebook's lines and impact confirms a call made in
    a cell. Its plots do not put it over the size bound (16 times a file's)."""
    image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" * 40_000  # 1.3 MB of plot: past a file's 1 MiB bound
    text = _notebook([
        ("markdown", ["# Churn analysis\n", "Customer churn from billing events.\n"], []),
        ("code", ["%matplotlib inline\n", "from helpers import load_events\n"], []),
        ("code", ["def churn_rate(events, window_days=30):\n", "    \"\"\"Share gone quiet.\"\"\"\n",
                  "    return len(events) / window_days\n"],
         [{"output_type": "display_data", "metadata": {},
           "data": {"image/png": image, "text/plain": ["<Figure rendered_output_text>"]}}]),
        ("code", "rate = churn_rate(load_events())", []),
    ])
    rows = text.split("\n")
    write_tree(tmp_path, {"analysis.ipynb": text, "helpers.py": "def load_events():\n    return []\n"})
    parsed = chunk_file("analysis.ipynb", text)
    assert parsed.language == "jupyter"
    (definition,) = [s for s in parsed.symbols if s.symbol == "churn_rate"]
    assert rows[definition.start_line].strip() == '"def churn_rate(events, window_days=30):\\n",'
    assert rows[definition.end_line].strip().startswith('"    return len(events)')
    assert not any(image[:20] in chunk.text or "rendered_output_text" in chunk.text for chunk in parsed.chunks)
    assert any("# Customer churn from billing events." in chunk.text for chunk in parsed.chunks)
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        hit = engine.recall("churn_rate", ["code"], body=True, mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.start_line) == ("analysis.ipynb", definition.start_line)
        assert hit.body.startswith("def churn_rate(events, window_days=30):")
        assert engine.recall(image[:20], ["code"], mode="lexical").hits_by_kind["code"] == []
        assert engine.status()["languages"]["jupyter"] == {"files": 1, "definitions": True}
        found = analysis.analyze(engine, "load_events")
        assert [(c.path, c.confirmed) for c in found.callers] == [("analysis.ipynb", True)]
        assert rows[found.callers[0].span.start_line].strip() == '"source": "rate = churn_rate(load_events())"'
    finally:
        engine.close()


def test_a_notebook_that_is_not_nbformats_layout_indexes_nothing_and_fails_nothing():
    """A notebook of one JSON line, or no JSON at all, or JSON nested past
    the parser's recursion (that raised, and failed the whole pass): no row
    is known, so nothing of it is read (never its outputs), and the file
    costs no error."""
    cells = [("code", ["def on_one_line():\n", "    pass\n"], [])]
    compact = json.dumps(json.loads(_notebook(cells)))
    deep = '{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}"
    for text in (compact, "{not json", _notebook(cells)[:-40], deep):
        parsed = chunk_file("nb.ipynb", text)
        assert parsed.language == "jupyter" and parsed.chunks == [] and parsed.symbols == []


def test_markdown_with_code_is_prose_and_one_list_says_what_prose_is(tmp_path: Path):
    """MDX pages, R Markdown and Quarto documents were not indexed; they are
    Markdown (recall's `doc` kind, by section). What prose is comes from one
    list for recall's kind and for the doc path class locate reads (it said
    `.md`, `.rst`, `.txt` only, so an `.adoc` or `README.MD` was code there)."""
    from ctxls.index.languages import chunk_kind_for_path
    from ctxls.index.paths import is_doc_path
    write_tree(tmp_path, {"site/docs/intro.mdx": "# Getting started\n\nInstall the webhook relay first.\n",
                          "analysis/report.Rmd": "# Quarterly churn\n\n```{r}\nsummary(churn)\n```\n",
                          "paper.qmd": "# Method\n\nWe bootstrap the retention curves.\n"})
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        for query, path in (("webhook relay", "site/docs/intro.mdx"), ("quarterly churn", "analysis/report.Rmd"),
                            ("bootstrap retention curves", "paper.qmd")):
            hits = engine.recall(query, ["doc"], mode="lexical").hits_by_kind["doc"]
            assert [h.path for h in hits][:1] == [path], query
    finally:
        engine.close()
    for path in ("a.md", "b.MD", "c.markdown", "d.mdx", "e.Rmd", "f.qmd", "g.rst", "h.txt", "i.adoc"):
        assert chunk_kind_for_path(path) == "doc" and is_doc_path(f"src/{path}"), path
    assert not is_doc_path("src/notes.py") and chunk_kind_for_path("src/notes.py") == "code"


def test_cython_arduino_and_scripting_files_are_indexed():
    """Cython (scientific Python's compiled modules), Arduino sketches, PHP
    templates, CoffeeScript, Windows batch, awk, CUE, Bicep and JSP files,
    `Dockerfile.dev`-style Dockerfiles and LaTeX were not indexed at all. Cython's `def`s and classes are read with
    Python's grammar, a sketch with C++'s; the rest are line windows."""
    cython = ("cimport numpy as cnp\n\ncdef double _norm(double[:] v) nogil:\n    return 0\n\n"
              "def pairwise_distances(X, Y=None):\n    return X\n\n"
              "cdef class KDTree:\n    def query(self, X, k=1):\n        return X\n")
    assert [(s.symbol, s.start_line) for s in chunk_file("sklearn/_tree.pyx", cython).symbols] == [
        ("pairwise_distances", 5), ("KDTree", 8), ("KDTree.query", 9)]
    sketch = "void setup() {\n  pinMode(13, OUTPUT);\n}\n\nvoid blink_led(int times) {\n}\n"
    assert [s.symbol for s in chunk_file("blink/blink.ino", sketch).symbols] == ["setup", "blink_led"]
    for path, language in (("x.pxd", "python"), ("x.pxi", "python"), ("views/a.phtml", "php"),
                           ("app.coffee", "coffeescript"), ("build.bat", "batch"), ("make.cmd", "batch"),
                           ("tools/sum.awk", "awk"), ("schema.cue", "cue"), ("main.bicep", "bicep"),
                           ("WEB-INF/index.jsp", "jsp"), ("prod.Dockerfile", "dockerfile")):
        parsed = chunk_file(path, "one_distinctive_word here\n")
        assert parsed.language == language and parsed.chunks, path
        assert path.rsplit(".", 1)[1] in DiscoveryOptions().include
    # `Dockerfile.dev` is a Dockerfile (included with `Dockerfile`); automake's `Makefile.in` and
    # a lock file are not sources; LaTeX is prose.
    wanted = FileFilter(DiscoveryOptions())
    assert language_for_path("docker/Dockerfile.dev") == "dockerfile" and wanted("docker/Dockerfile.dev")
    assert not wanted("Makefile.in") and not wanted("Gemfile.lock")
    assert not FileFilter(DiscoveryOptions(include=("py",)))("Dockerfile.dev")
    paper = chunk_file("paper/main.tex", "\\section{Results}\nThe retention curves flatten.\n")
    assert paper.language == "latex" and paper.chunks[0].kind == "doc"


def _defined(path: str, text: str) -> list[tuple[str, str, int, int]]:
    return [(s.symbol, s.symbol_kind, s.start_line, s.end_line) for s in definition_chunks(path, text).symbols]


def test_a_haskell_name_ending_in_a_prime_is_its_own_definition():
    """`foldl'` lost its prime and was joined to `foldl` as one more clause."""
    text = ("foldl :: (b -> a -> b) -> b -> [a] -> b\nfoldl f z [] = z\nfoldl f z (x:xs) = foldl f (f z x) xs\n\n"
            "foldl' :: (b -> a -> b) -> b -> [a] -> b\nfoldl' f z [] = z\nfoldl' f z (x:xs) = z `seq` foldl' f z xs\n")
    assert _defined("Fold.hs", text) == [("foldl", "function", 0, 2), ("foldl'", "function", 4, 6)]


def test_erlang_and_elixir_functions_of_different_arity_are_different_definitions():
    """`take/1` and `take/2` (and Elixir's `pad/1`, `pad/2`) were one
    definition: clauses join only at one arity."""
    erlang = ("-module(lists2).\n\ntake([H | _]) -> H.\n\n"
              "take(0, _) -> [];\ntake(N, [H | T]) -> [H | take(N - 1, T)].\n")
    assert _defined("lists2.erl", erlang) == [("take", "function", 2, 2), ("take", "function", 4, 5)]
    elixir = ("defmodule Text do\n  def pad(s), do: pad(s, 10)\n\n"
              "  def pad(s, width) when is_binary(s) do\n    String.pad_leading(s, width)\n  end\nend\n")
    assert _defined("text.ex", elixir)[1:] == [("Text.pad", "function", 1, 1), ("Text.pad", "function", 3, 5)]


def test_an_erlang_functions_doc_comment_and_spec_are_its_head():
    """`%% @doc` and `-spec` above a function (OTP's layout) were left out of it."""
    text = ("-module(acc).\n\n%% @doc Open an account for an owner.\n-spec open(binary()) -> {ok, integer()}.\n"
            "open(Owner) ->\n    {ok, erlang:phash2(Owner)}.\n")
    assert _defined("acc.erl", text) == [("open", "function", 2, 5)]


def test_an_ocaml_interfaces_values_types_and_exceptions_are_definitions():
    """A `.mli` had no definitions: its grammar had no table row."""
    text = "type 'a t\n\nval empty : 'a t\n\n(** Removes the front element. *)\nval pop : 'a t -> 'a option\n\nexception Empty\n"
    assert language_for_path("queue.mli") == "ocaml_interface"
    assert _defined("queue.mli", text) == [("t", "type", 0, 0), ("empty", "function", 2, 2),
                                           ("pop", "function", 4, 5), ("Empty", "type", 7, 7)]


def test_each_binding_of_an_ocaml_let_and_is_a_definition_and_a_class_holds_its_methods():
    """`let rec is_even … and is_odd …` named only `is_even` (over both);
    `class counter = object … end` was no definition."""
    text = ("let rec is_even n = if n = 0 then true else is_odd (n - 1)\n\n(** Odd. *)\n"
            "and is_odd n = if n = 0 then false else is_even (n - 1)\n\n"
            "class counter = object\n  val mutable count = 0\n  method incr = count <- count + 1\n"
            "  method get = count\nend\n")
    assert _defined("parity.ml", text) == [
        ("is_even", "function", 0, 0), ("is_odd", "function", 2, 3), ("counter", "class", 5, 6),
        ("counter.incr", "method", 7, 7), ("counter.get", "method", 8, 8)]


def test_an_ocaml_doc_comment_under_its_value_is_that_values():
    """odoc's layout (angstrom.mli, the stdlib): `(** … *)` right under a
    `val`, a blank line after it, documents that `val`. It led the next
    one instead, so `peek_char_fail`'s lines held `peek_char`'s doc; a doc
    comment directly above a definition still leads it."""
    text = ("val peek_char : char option t\n(** [peek_char] accepts any char and returns it, or returns [None]\n"
            "    if the end of input has been reached. *)\n\nval peek_char_fail : char t\n"
            "(** [peek_char_fail] accepts any char and returns it. *)\n\n"
            "(** Skips a char. *)\nval skip : char t\n\nmodule Unsafe : sig\n  val take : int -> string t\n"
            "  (** [take n] takes [n] chars. *)\n\n  val peek : int -> string t\nend\n")
    assert _defined("angstrom.mli", text) == [
        ("peek_char", "function", 0, 2), ("peek_char_fail", "function", 4, 5), ("skip", "function", 7, 8),
        ("Unsafe", "namespace", 10, 10), ("Unsafe.take", "function", 11, 12), ("Unsafe.peek", "function", 14, 14)]


def test_the_values_of_an_ocaml_module_signature_are_its_members():
    """`module Buffered : sig … end` in a `.mli` (angstrom's Buffered,
    Unbuffered, BE, LE, Unsafe) was one opaque namespace: `Buffered.parse`
    was no definition. A module with a structure keeps the structure's."""
    text = ("module Buffered : sig\n  val parse : int -> int\n\n  val feed : int -> int\nend\n\n"
            "module M : sig\n  val g : int\nend = struct\n  let g = 1\nend\n")
    assert _defined("angstrom.mli", text) == [
        ("Buffered", "namespace", 0, 0), ("Buffered.parse", "function", 1, 1), ("Buffered.feed", "function", 3, 3),
        ("M", "namespace", 6, 8), ("M.g", "function", 9, 9)]


def test_the_values_of_a_terraform_locals_block_are_definitions_named_as_expressions_name_them():
    """terraform-aws-vpc's main.tf names `local.create_vpc` and its other
    locals 54 times; no `locals` value was a definition, so `ctxls symbols
    local.create_vpc` found nothing. An attribute of a resource, or of a
    `.tfvars` file, is none."""
    text = ('# Shared values.\nlocals {\n  # Whether to create anything.\n  create_vpc = var.create_vpc\n'
            '  len_public = length(var.public_subnets)\n}\n\nresource "aws_vpc" "this" {\n'
            '  count = local.create_vpc ? 1 : 0\n}\n')
    assert _defined("main.tf", text) == [
        ("local.create_vpc", "constant", 2, 3), ("local.len_public", "constant", 4, 4),
        ("aws_vpc.this", "object", 7, 9)]
    assert _defined("prod.tfvars", 'region = "eu-west-1"\n') == []


def test_an_ocaml_binding_of_no_name_is_no_definition():
    """`let () = main ()` (a program's entry, angstrom's benchmarks) was a
    definition named `)`, and `let _ = …` one named `_`."""
    text = "let main () = print_endline \"hi\"\n\nlet () = main ()\n\nlet _ = main ()\n"
    assert _defined("bench.ml", text) == [("main", "function", 0, 0)]


def test_sql_procedures_and_triggers_are_definitions():
    """`CREATE PROCEDURE` (which the grammar reads as an error before its
    `BEGIN … END` body) and `CREATE TRIGGER` had no definition."""
    text = ("-- Archive orders older than a cutoff date.\nCREATE PROCEDURE archive_old_orders(IN cutoff DATE)\n"
            "BEGIN\n  DELETE FROM orders WHERE created_at < cutoff;\nEND;\n\n"
            "CREATE TRIGGER orders_audit AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION audit();\n")
    assert _defined("procs.sql", text) == [("archive_old_orders", "procedure", 0, 4),
                                           ("orders_audit", "trigger", 6, 6)]


def test_a_julia_definition_behind_a_macro_is_a_definition():
    """`@inline function normalize(…)` (and `@noinline f(x) = …`, `@kwdef
    struct …`) had no definition: a macro applied to a definition defines it."""
    text = ('"""Scale to unit length."""\n@inline function normalize(v::Vec2)\n    v / norm(v)\nend\n\n'
            "@noinline halve(x) = x / 2\n\n@kwdef struct Options\n    depth::Int = 1\nend\n\n"
            '@testset "norms" begin\n    check(x) = 1\nend\n')
    assert _defined("vec.jl", text) == [("normalize", "function", 0, 3), ("halve", "function", 5, 5),
                                        ("Options", "struct", 7, 9)]


def test_a_perl_block_package_holds_its_subs():
    """`package Shape::Circle { sub area … }` was a namespace with no
    members; its `area` was unqualified, so `Shape::Circle::area` could
    answer another package's `area`."""
    text = ("package Shape::Circle {\n    # Area of the circle.\n    sub area {\n        return 3.14;\n    }\n}\n\n"
            "package Shape::Square;\n\nsub area {\n    return 4;\n}\n")
    assert _defined("Pkg.pm", text) == [("Shape.Circle", "namespace", 0, 0), ("Shape.Circle.area", "function", 1, 4),
                                        ("Shape.Square", "namespace", 7, 7), ("Shape.Square.area", "function", 9, 11)]


def test_a_perl_package_statement_holds_the_subs_after_it_up_to_the_next():
    """`package LWP::ConnCache;` (the common form: the rest of the file, or
    up to the next `package`) was a one-line namespace, its subs
    unqualified: `symbols LWP::ConnCache::deposit` had only the first-chunk
    fallback, and two packages' `new` in one file were one name."""
    text = ("package LWP::ConnCache;\nuse strict;\n\n# Make a cache.\nsub new { return bless {}, shift }\n\n"
            "sub deposit {\n    return 1;\n}\n\npackage LWP::ConnCache::Entry;\nsub new { 1 }\n"
            "package Other { sub inner { 2 } }\nsub after_block { 3 }\n1;\n")
    assert _defined("ConnCache.pm", text) == [
        ("LWP.ConnCache", "namespace", 0, 0), ("LWP.ConnCache.new", "function", 3, 4),
        ("LWP.ConnCache.deposit", "function", 6, 8), ("LWP.ConnCache.Entry", "namespace", 10, 10),
        ("LWP.ConnCache.Entry.new", "function", 11, 11), ("Other", "namespace", 12, 12),
        ("Other.inner", "function", 12, 12), ("LWP.ConnCache.Entry.after_block", "function", 13, 13)]


def test_a_doc_comment_leads_its_definition_across_one_blank_line():
    """commander writes a blank line between each JSDoc and its method: the
    doc was a chunk of its own with no symbol, and a question in its words
    found another method. A doc comment (`/**`, `///`) leads across one
    blank line; a plain comment, a doc across two, or a licence at the
    file's first row does not."""
    js = ("/**\n * @license MIT\n */\n\nfunction first() {}\n\n"
          "class Registry {\n  /**\n   * Parse the kilo options.\n   */\n\n  kiloMethod() {\n    return 1;\n  }\n\n"
          "  // a section heading\n\n  limaMethod() {\n    return 2;\n  }\n\n"
          "  /** Two blank lines away. */\n\n\n  mikeMethod() {\n    return 3;\n  }\n}\n")
    assert _defined("lib/registry.js", js) == [
        ("first", "function", 4, 4), ("Registry", "class", 6, 6), ("Registry.kiloMethod", "method", 7, 13),
        ("Registry.limaMethod", "method", 17, 19), ("Registry.mikeMethod", "method", 24, 26)]
    rust = "/// Doubles the delay.\n\npub fn delay(n: u32) -> u32 {\n    n * 2\n}\n"
    assert _defined("src/backoff.rs", "use std::fmt;\n\n" + rust)[-1] == ("delay", "function", 2, 6)


def test_a_name_in_backticks_is_one_name_whole():
    """Kotlin's JUnit-style tests, fun `rejects unterminated array`(), were
    cut to their first word: two tests were one `ParserTest.rejects`, and
    F#'s ``parser rejects …`` was `parser`."""
    kotlin = ("class ParserTest {\n    @Test\n    fun `rejects unterminated string`() {\n        check(true)\n    }\n\n"
              "    @Test\n    fun `rejects unterminated array`() {\n        check(true)\n    }\n}\n")
    assert _defined("ParserTest.kt", kotlin) == [
        ("ParserTest", "class", 0, 0), ("ParserTest.rejects unterminated string", "method", 1, 4),
        ("ParserTest.rejects unterminated array", "method", 6, 9)]
    fsharp = "module Tests\n\nlet ``parser rejects unterminated array`` () =\n    Assert.Null(parse \"[1,2\")\n"
    assert ("Tests.parser rejects unterminated array", "function", 2, 3) in _defined("Tests.fs", fsharp)


def test_ruby_methods_defined_in_a_block_given_to_a_call_are_definitions_of_its_scope():
    """An ActiveSupport::Concern's `included do … end` and `class_methods do
    … end` hid their methods: a block given to a call is walked for the
    methods it `def`ines, as the scope's own, with the comments above them."""
    text = ("module Taggable\n  extend ActiveSupport::Concern\n\n  included do\n    has_many :taggings\n\n"
            "    # Attach a tag by name.\n    def tag_with(name)\n      taggings.create!(name: name)\n    end\n  end\n\n"
            "  class_methods do\n    # Records carrying the tag.\n    def tagged(name)\n      where(name: name)\n"
            "    end\n  end\nend\n")
    assert _defined("taggable.rb", text) == [("Taggable", "namespace", 0, 5), ("Taggable.tag_with", "method", 6, 9),
                                             ("Taggable.tagged", "method", 13, 16)]


def test_r6_reference_and_s4_classes_and_functions_assigned_to_a_member_are_definitions():
    """`Account <- R6Class("Account", public = list(deposit = function…))`,
    `utils$percent <- function…` and S4's `setClass`/`setGeneric`/`setMethod`
    had no definitions ("no definitions in account.R")."""
    text = ('Account <- R6Class("Account",\n  public = list(\n    balance = 0,\n'
            "    # Deposit money.\n    deposit = function(amount) {\n      self$balance <- self$balance + amount\n"
            "    }\n  )\n)\n\nutils$percent <- function(x) {\n  paste0(100 * x, \"%\")\n}\n\n"
            'setClass("Person", representation(name = "character"))\n'
            'setGeneric("greet", function(obj) standardGeneric("greet"))\n'
            'setMethod("greet", "Person", function(obj) {\n  cat(obj@name)\n})\n')
    assert _defined("account.R", text) == [
        ("Account", "class", 0, 2), ("Account.deposit", "method", 3, 6), ("utils.percent", "function", 10, 12),
        ("Person", "class", 14, 14), ("greet", "function", 15, 15), ("greet", "method", 16, 18)]


def test_r_classes_made_by_a_call_named_with_its_package_are_definitions():
    """processx's `process <- R6::R6Class("process", public = list(kill =
    function…))` (a package that does not import R6 names it so) and
    `methods::setClass(…)` had no definitions: `process.kill` was unknown."""
    text = ('process <- R6::R6Class(\n  "process",\n  public = list(\n'
            "    kill = function(grace = 0.1) {\n      process_kill(self, grace)\n    }\n  )\n)\n\n"
            'methods::setClass("Person", representation(name = "character"))\n')
    assert _defined("process.R", text) == [
        ("process", "class", 0, 2), ("process.kill", "method", 3, 5), ("Person", "class", 9, 9)]


def test_an_objective_c_method_asked_in_its_own_notation_is_found(tmp_path: Path):
    """`-[Downloader cancel]`, `+[Downloader sharedDownloader]` and
    `-[Downloader startWithURL:completion:]` (as crash logs and Apple's docs
    print a method) were read as sentences: the whole @implementation came first."""
    write_tree(tmp_path, {"Downloader.m": (
        '#import "Downloader.h"\n\n@implementation Downloader\n\n/// Start fetching the resource.\n'
        "- (void)startWithURL:(NSURL *)url completion:(void (^)(NSData *))completion {\n    [self resume];\n}\n\n"
        "+ (instancetype)sharedDownloader {\n    static Downloader *shared;\n    return shared;\n}\n\n"
        "- (void)cancel {\n    [self stop];\n}\n\n@end\n")})
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        for query, line in (("-[Downloader startWithURL:completion:]", 4), ("+[Downloader sharedDownloader]", 9),
                            ("-[Downloader cancel]", 14)):
            hit = engine.recall(query, ["code"], mode="lexical").hits_by_kind["code"][0]
            assert (hit.path, hit.start_line) == ("Downloader.m", line), query
    finally:
        engine.close()


def test_a_script_with_no_extension_is_indexed_in_the_language_its_shebang_names(tmp_path: Path):
    """`bin/deploy` (`#!/usr/bin/env bash`) and `bin/tool` (`#!/usr/bin/env
    python3`) were never indexed, and status said nothing was skipped: a file
    with no extension is read in the language its `#!` line names, when one
    of that language's extensions is included."""
    write_tree(tmp_path, {
        "bin/deploy": "#!/usr/bin/env bash\n# Roll the release back.\nrollback_release_now() {\n  ln -sfn a b\n}\n",
        "bin/tool": "#!/usr/bin/env python3\ndef frobnicate_widgets(n):\n    return n * 2\n",
        "libexec/run": "#!/bin/sh\nstart_the_service() {\n  exec true\n}\n",
        "LICENSE": "Permission is hereby granted, free of charge\n",
    })
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        for name, path in (("rollback_release_now", "bin/deploy"), ("frobnicate_widgets", "bin/tool"),
                           ("start_the_service", "libexec/run")):
            hit = engine.recall(name, ["code"], mode="lexical").hits_by_kind["code"][0]
            assert (hit.path, hit.symbol) == (path, name)
        assert engine.status()["languages"]["bash"]["files"] == 2
    finally:
        engine.close()
    assert language_for_path("bin/tool", "#!/usr/bin/env -S python3.11 -u\n") == "python"
    assert language_for_path("bin/n", "#!/usr/bin/env node\n") == "javascript"
    assert language_for_path("LICENSE", "Permission is hereby granted\n") is None
    only_python = FileFilter(DiscoveryOptions(include=("py",)), tmp_path)
    assert only_python("bin/tool") and not only_python("bin/deploy") and not only_python("LICENSE")


def test_a_bats_test_file_is_indexed_as_shell(tmp_path: Path):
    """bats-core's 60 `test/*.bats` (and every shell project's Bats suite)
    were not indexed: a helper they define was unknown, and impact of
    `bats_pipe`, called only from test/bats_pipe.bats, found no caller."""
    write_tree(tmp_path, {
        "lib/pipe.bash": "bats_pipe() {\n  \"$@\"\n}\n",
        "test/pipe.bats": "#!/usr/bin/env bats\n\nsetup() {\n  load_fixtures_now\n}\n\n"
                          "@test \"pipes two commands\" {\n  bats_pipe echo hi\n}\n",
    })
    assert language_for_path("test/pipe.bats") == "bash" and "bats" in DiscoveryOptions().include
    assert language_for_path("bin/check", "#!/usr/bin/env bats\n") == "bash"
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        assert [s.symbol for s in chunk_file("test/pipe.bats", (tmp_path / "test/pipe.bats").read_text()).symbols] \
            == ["setup"]
        assert [c.path for c in analysis.analyze(engine, "bats_pipe").callers] == ["test/pipe.bats"]
    finally:
        engine.close()


# --- impact -------------------------------------------------------------------

@pytest.fixture(scope="module")
def polyglot_repo(tmp_path_factory) -> Engine:
    root = tmp_path_factory.mktemp("polyglot_git")
    for fixture in FIXTURES.iterdir():
        (root / fixture.name).write_bytes(fixture.read_bytes())
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    engine = Engine(root)
    engine.cold_index()
    yield engine
    engine.close()


# (symbol, its caller: file, 0-based line, enclosing definition). A bare call
# of the one function of that name its own file defines is confirmed.
CONFIRMED_CALLERS = [
    ("mode_name", ("statusline.lua", 20, "M.render")),
    ("build_archive", ("deploy.sh", 26, "main")),
    ("read_int", ("lexer.ml", 26, "tokenize")),
    ("transition", ("kalman.jl", 23, "Kalman.predict!")),
    ("clean_responses", ("summarise.R", 20, "report")),
    ("line-total", ("shopping_cart.clj", 15, "total")),
    ("drain", ("Queue.hs", 36, "drain")),
    ("refill", ("rate_limiter.erl", 24, "handle_cast")),
    ("Logging.log", ("todo_store.dart", 34, "TodoStore.add")),
    ("fill", ("ring_buffer.zig", 38, "fill fills the buffer")),  # inside a `test` block
]


@pytest.mark.parametrize(("symbol", "caller"), CONFIRMED_CALLERS, ids=[row[0] for row in CONFIRMED_CALLERS])
def test_impact_confirms_a_bare_call_of_a_function_of_the_same_file(polyglot_repo, symbol, caller):
    result = analysis.analyze(polyglot_repo, symbol)
    assert result is not None
    found = {(c.path, c.span.start_line, c.symbol): (c.confirmed, c.kind) for c in result.callers}
    assert found[caller] == (True, "call")
    assert result.confirmed >= 1


# A call through a receiver or a module is a call site, not confirmed: the
# language's bindings are not analysed (the hedge names the language).
RECEIVER_CALLERS = [
    ("Inventory.restock", ("Inventory.kt", 42, "reportLowStock"), "kotlin"),
    ("Cache.evictExpired", ("Cache.swift", 46, "makeDefaultCache"), "swift"),
    ("Router.dispatch", ("Router.scala", 37, "serve"), "scala"),
    ("Bank.Account.withdraw", ("bank_account.ex", 40, "Bank.Ledger.transfer"), "elixir"),
    ("RequestQueue.startNextIfIdle", ("RequestQueue.m", 19, "RequestQueue.enqueue"), "objc"),
    ("RingBuffer.isFull", ("ring_buffer.zig", 30, "fill"), "zig"),
]


@pytest.mark.parametrize(("symbol", "caller", "language"), RECEIVER_CALLERS, ids=[row[2] for row in RECEIVER_CALLERS])
def test_impact_finds_calls_through_a_receiver_as_unconfirmed_call_sites(polyglot_repo, symbol, caller, language):
    result = analysis.analyze(polyglot_repo, symbol)
    found = {(c.path, c.span.start_line, c.symbol): (c.confirmed, c.kind) for c in result.callers}
    assert found[caller] == (False, "call")
    assert any(language in hedge for hedge in result.hedges)


def test_impact_reports_callees_and_not_a_definitions_own_head(polyglot_repo):
    callees = {c.symbol for c in analysis.analyze(polyglot_repo, "build_archive").callees}
    assert callees == {"log"}
    # Elixir's `def withdraw(account, amount)` is written as a call: not a callee of itself.
    assert analysis.analyze(polyglot_repo, "Bank.Account.withdraw").callees == []
    transfer = {c.symbol for c in analysis.analyze(polyglot_repo, "Bank.Ledger.transfer").callees}
    assert transfer == {"Bank.Account.withdraw", "Bank.Account.deposit"}
    tokenize = {c.symbol for c in analysis.analyze(polyglot_repo, "tokenize").callees}
    assert {"is_digit", "read_int"} <= tokenize
    fill = {c.symbol for c in analysis.analyze(polyglot_repo, "fill").callees}
    assert fill == {"RingBuffer.isFull", "RingBuffer.write"}


def test_a_word_inside_a_longer_name_is_no_use_of_it(polyglot_repo):
    # Clojure's `add-item` holds the word `add` (Dart's TodoStore.add): not a caller.
    result = analysis.analyze(polyglot_repo, "TodoStore.add")
    assert all(c.path != "shopping_cart.clj" for c in result.callers)


def test_cli_status_names_each_language_and_those_read_as_windows(polyglot):
    from ctxls.daemon.formatting import languages_line

    line = languages_line(polyglot.status())
    assert "kotlin 3," in line and "make 1 (windows)" in line and "groovy 1 (windows)" in line
    assert "kotlin 2 (windows)" not in line


def test_a_c_headers_prototype_is_what_recall_finds_for_its_name(tmp_path):
    # A header that is an API surface: its prototypes' chunk, once module
    # residue, was placed after the one function the header defines.
    header = ("#ifndef STRBUF_H\n#define STRBUF_H\n\ntypedef struct strbuf { char *data; int len; } strbuf;\n\n"
              "/* Wrap a string without copying it; any of the strbuf_append functions may grow it later. */\n"
              "static inline void\nstrbuf_init_from(strbuf *sb, char *data, int len)\n{\n"
              "\tsb->data = data;\n\tsb->len = len;\n}\n\n"
              "/* Format text under the control of fmt and append it to the buffer. */\n"
              "extern void strbuf_append(strbuf *sb, const char *fmt, ...);\n\n#endif\n")
    write_tree(tmp_path, {"include/strbuf.h": header})
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    engine.index()
    top = engine.recall("strbuf_append", ["code"], mode="lexical").hits_by_kind["code"][0]
    assert (top.path, top.symbol) == ("include/strbuf.h", "strbuf_append")
    assert top.start_line <= 14 <= top.end_line
    # With the source that defines it, the definition (the body) comes first;
    # a function only the header defines still answers from the header.
    write_tree(tmp_path, {"src/strbuf.c": ('#include "strbuf.h"\n\nvoid\nstrbuf_append(strbuf *sb, '
                                           'const char *fmt, ...)\n{\n\tsb->len += 1;\n}\n')})
    engine.index()
    top = engine.recall("strbuf_append", ["code"], mode="lexical").hits_by_kind["code"][0]
    assert (top.path, top.symbol) == ("src/strbuf.c", "strbuf_append")
    top = engine.recall("strbuf_init_from", ["code"], mode="lexical").hits_by_kind["code"][0]
    assert (top.path, top.symbol) == ("include/strbuf.h", "strbuf_init_from")


def test_dart_named_and_factory_constructors_are_named_by_what_follows_the_class_name():
    text = ("class User {\n  final String name;\n\n  User(this.name);\n\n  /// Build a user from decoded JSON.\n"
            "  factory User.fromJson(Map<String, dynamic> json) {\n    return User(json['name'] as String);\n  }\n\n"
            "  User.guest() : name = 'guest';\n  const User.empty() : name = '';\n"
            "  factory User.other(String n) = User.named;\n  User.named(this.name);\n}\n")
    assert symbols_of("lib/user.dart", text) == [
        ("User", "class", 0, 2), ("User.User", "method", 3, 3), ("User.fromJson", "method", 5, 8),
        ("User.guest", "method", 10, 10), ("User.empty", "method", 11, 11), ("User.other", "method", 12, 12),
        ("User.named", "method", 13, 13)]


# An enum constant's body and a Scala 3 `given … with` hold methods of their
# own, named under the constant or the given.
MEMBERS_OF_INSTANCES = [
    ("CardBrand.java",
     "enum CardBrand {\n    VISA {\n        @Override\n        int fee() { return 150; }\n    },\n"
     "    AMEX {\n        int fee() { return 300; }\n    },\n    PLAIN;\n\n    abstract int fee();\n}\n",
     [("CardBrand", "enum", 0, 0), ("CardBrand.VISA", "constant", 1, 1), ("CardBrand.VISA.fee", "method", 2, 3),
      ("CardBrand.AMEX", "constant", 5, 5), ("CardBrand.AMEX.fee", "method", 6, 6),
      ("CardBrand.fee", "method", 10, 10)]),
    ("Planet.kt",
     "enum class Planet(val mass: Double) {\n    EARTH(5.97) {\n        override fun describe() = \"home\"\n    },\n"
     "    MARS(0.642);\n\n    abstract fun describe(): String\n}\n",
     [("Planet", "enum", 0, 0), ("Planet.EARTH", "constant", 1, 1), ("Planet.EARTH.describe", "method", 2, 2),
      ("Planet.describe", "method", 6, 6)]),
    ("Monoid.scala",
     "trait Monoid[A]:\n  def combine(x: A, y: A): A\n\ngiven intMonoid: Monoid[Int] with\n"
     "  def combine(x: Int, y: Int): Int = x + y\n\ngiven ord: Ordering[Int] = Ordering.Int\n",
     [("Monoid", "trait", 0, 0), ("Monoid.combine", "method", 1, 1), ("intMonoid", "object", 3, 3),
      ("intMonoid.combine", "method", 4, 4), ("ord", "object", 6, 6)]),
]


@pytest.mark.parametrize(("path", "text", "expected"), MEMBERS_OF_INSTANCES,
                         ids=[row[0] for row in MEMBERS_OF_INSTANCES])
def test_the_methods_of_an_enum_constants_body_or_a_given_instance_are_its_members(path, text, expected):
    assert symbols_of(path, text) == expected


def test_impact_of_a_haskell_operator_finds_its_infix_and_prefix_calls(tmp_path):
    """doclayout's `<+>`, used 16 times as `a <+> b`: impact answered no
    caller and no reference ("a candidate for review"), its uses counted
    as words inside other words."""
    text = ("module Ops where\n\ninfixr 6 <+>\n(<+>) :: Int -> Int -> Int\na <+> b = a + b\n\n"
            "total :: Int\ntotal = 1 <+> 2\n\nfolded :: Int\nfolded = foldr (<+>) 0 [1, 2]\n\n"
            "direct :: Int\ndirect = (<+>) 1 2\n\nnear :: Int -> Int -> Bool\nnear a b = a == b\n\n"
            "close :: Bool\nclose = 1 `near` 2\n")
    write_tree(tmp_path, {"Ops.hs": text})
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        uses = {(c.symbol, c.kind) for c in analysis.analyze(engine, "<+>").callers}
        assert {("total", "call"), ("direct", "call"), ("folded", "value")} <= uses
        assert ("close", "call") in {(c.symbol, c.kind) for c in analysis.analyze(engine, "near").callers}
    finally:
        engine.close()


def test_a_line_between_two_blocks_of_one_name_is_inside_neither(tmp_path):
    """doclayout's `infixr 6 <+>` (a module-level line between `instance
    Semigroup (Doc a)` and `instance Semigroup EmojiInfo`) was reported as
    a use inside `Semigroup`: the enclosing definition was read from the
    two instances' merged span. A use inside a definition keeps it."""
    text = ("module Ops where\n\ninstance Semigroup Doc where\n  a <> b = a\n\ninfixr 6 <+>\n"
            "(<+>) :: Doc -> Doc -> Doc\na <+> b = a <> b\n\ninstance Semigroup Info where\n  a <> b = a\n\n"
            "both :: Doc\nboth = x <+> y\n")
    write_tree(tmp_path, {"Ops.hs": text})
    engine = Engine(tmp_path, EngineOptions(discovery=DiscoveryOptions()))
    try:
        engine.index()
        uses = {(c.span.start_line, c.symbol) for c in analysis.analyze(engine, "<+>").callers}
        assert uses == {(5, None), (13, "both")}
    finally:
        engine.close()
