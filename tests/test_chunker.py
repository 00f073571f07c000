"""Chunker: exact chunk tables per language, Markdown sections, line windows,
long-chunk splitting and robustness against any input."""

from __future__ import annotations

import io
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tree_sitter_language_pack import get_parser

from ctxls.index import chunk_worker, chunker, languages
from ctxls.index.chunker import definition_chunks, split_lines
from ctxls.index.chunking import rust, spans
from ctxls.index.chunking.pieces import MAX_CHUNK_LINES, OVERLAP_LINES
from ctxls.impact.syntax import SourceFile
from ctxls.index.chunk_worker import ChunkWorker, _ReplyUnpickler, chunk_guarded
from ctxls.index.model import UNPARSED_HAZARD, Chunk, ParsedFile

Row = tuple[str | None, str, int, int]


def source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def assert_well_formed(text: str, parsed: ParsedFile) -> None:
    """Every chunk's text is exactly its lines; chunks are sorted and non-blank."""
    lines = split_lines(text)
    for chunk in parsed.chunks:
        assert 0 <= chunk.start_line <= chunk.end_line < len(lines)
        assert chunk.text == "\n".join(lines[chunk.start_line : chunk.end_line + 1])
        assert chunk.text.strip()
        assert chunk.end_line - chunk.start_line < MAX_CHUNK_LINES
    positions = [(chunk.start_line, chunk.end_line) for chunk in parsed.chunks]
    assert positions == sorted(positions)


def table(parsed: ParsedFile) -> list[Row]:
    return [(chunk.symbol, chunk.symbol_kind, chunk.start_line, chunk.end_line) for chunk in parsed.chunks]


def check(path: str, text: str, expected: list[Row], language: str | None = None) -> ParsedFile:
    parsed = definition_chunks(path, text)
    assert_well_formed(text, parsed)
    assert table(parsed) == expected
    if language is not None:
        assert parsed.language == language
        assert {chunk.language for chunk in parsed.chunks} <= {language}
    return parsed


# --- One realistic file per language ----------------------------------------

PYTHON = source(
    '''
    """HTTP session helpers."""

    import json
    from dataclasses import dataclass

    DEFAULT_TIMEOUT = 30


    @dataclass
    class Session:
        """A connection pool."""

        base_url: str
        timeout: float = DEFAULT_TIMEOUT

        def request(self, path):
            return self.base_url + path

        # Shortcut for GET requests.
        @staticmethod
        def get(path):
            return Session("").request(path)

        class Retry:
            count = 3

            def backoff(self):
                return 2 ** self.count


    def parse(body):
        def inner(x):
            return x

        return json.loads(inner(body))


    if __name__ == "__main__":
        print(parse("{}"))
    '''
)
PYTHON_TABLE: list[Row] = [
    (None, "module", 0, 5),
    ("Session", "class", 8, 13),
    ("Session.request", "method", 15, 16),
    ("Session.get", "method", 18, 21),
    ("Session.Retry", "class", 23, 24),
    ("Session.Retry.backoff", "method", 26, 27),
    ("parse", "function", 30, 34),
    (None, "module", 37, 38),
]

JAVASCRIPT = source(
    """
    import { readFile } from "node:fs/promises";
    const path = require("./path");

    /**
     * Loads a config file.
     */
    export async function loadConfig(file) {
      const text = await readFile(file, "utf8");
      return JSON.parse(text);
    }

    export class Cache {
      #entries = new Map();
      static instances = 0;

      constructor(limit) {
        this.limit = limit;
      }

      /** Returns the cached value. */
      get(key) {
        return this.#entries.get(key);
      }

      onEvict = (key) => {
        this.#entries.delete(key);
      };
    }

    export const normalize = (name) => name.trim().toLowerCase();

    const cache = new Cache(10);
    export default cache;
    """
)
JAVASCRIPT_TABLE: list[Row] = [
    (None, "module", 0, 1),
    ("loadConfig", "function", 3, 9),
    ("Cache", "class", 11, 13),
    ("Cache.constructor", "method", 15, 17),
    ("Cache.get", "method", 19, 22),
    ("Cache.onEvict", "method", 24, 27),
    ("normalize", "function", 29, 29),
    (None, "module", 31, 32),
]

TYPESCRIPT = source(
    """
    import type { Request } from "./http";

    /** A user record. */
    export interface User {
      id: number;
      name: string;
    }

    export type UserId = User["id"];

    export enum Role {
      Admin,
      Member,
    }

    @Injectable()
    export class UserService {
      private readonly users = new Map<UserId, User>();

      constructor(private readonly http: Request) {}

      @Log()
      find(id: UserId): User | undefined {
        return this.users.get(id);
      }
    }

    export namespace Validation {
      export function isValid(user: User): boolean {
        return user.name.length > 0;
      }
    }

    export const byName = (a: User, b: User): number => a.name.localeCompare(b.name);
    """
)
TYPESCRIPT_TABLE: list[Row] = [
    (None, "module", 0, 0),
    ("User", "interface", 2, 6),
    ("UserId", "type", 8, 8),
    ("Role", "enum", 10, 13),
    ("UserService", "class", 15, 17),
    ("UserService.constructor", "method", 19, 19),
    ("UserService.find", "method", 21, 25),
    ("Validation", "namespace", 27, 27),
    ("Validation.isValid", "function", 28, 31),
    ("byName", "function", 33, 33),
]

TSX = source(
    """
    import React, { useState } from "react";
    import { Button } from "./Button";

    type Props = { label: string };

    /** A counter button. */
    export function Counter({ label }: Props) {
      const [count, setCount] = useState(0);
      return <Button onClick={() => setCount(count + 1)}>{label}: {count}</Button>;
    }

    export const Badge = ({ label }: Props) => <span className="badge">{label}</span>;

    export default class Panel extends React.Component<Props> {
      state = { open: false };

      toggle = () => this.setState({ open: !this.state.open });

      render() {
        return <div>{this.props.label}</div>;
      }
    }
    """
)
TSX_TABLE: list[Row] = [
    (None, "module", 0, 1),
    ("Props", "type", 3, 3),
    ("Counter", "function", 5, 9),
    ("Badge", "function", 11, 11),
    ("Panel", "class", 13, 14),
    ("Panel.toggle", "method", 16, 16),
    ("Panel.render", "method", 18, 21),
]

GO = source(
    """
    // Package server runs the HTTP API.
    package server

    import (
    \t"fmt"
    \t"net/http"
    )

    const defaultPort = 8080

    // Server serves the API.
    type Server struct {
    \tAddr string
    \tmux  *http.ServeMux
    }

    // Handler handles one route.
    type Handler interface {
    \tServeHTTP(w http.ResponseWriter, r *http.Request)
    }

    // Start listens on Addr.
    func (s *Server) Start() error {
    \treturn http.ListenAndServe(s.Addr, s.mux)
    }

    func (s Server) String() string { return fmt.Sprintf("server %s", s.Addr) }

    // New returns a server on the default port.
    func New() *Server {
    \treturn &Server{Addr: fmt.Sprintf(":%d", defaultPort)}
    }
    """
)
GO_TABLE: list[Row] = [
    (None, "module", 0, 8),
    ("Server", "struct", 10, 14),
    ("Handler", "interface", 16, 17),
    ("Handler.ServeHTTP", "method", 18, 19),
    ("Server.Start", "method", 21, 24),
    ("Server.String", "method", 26, 26),
    ("New", "function", 28, 31),
]

RUST = source(
    """
    use std::fmt;

    /// A 2-D point.
    #[derive(Debug, Clone, Copy)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }

    impl Point {
        pub const ORIGIN: Point = Point { x: 0.0, y: 0.0 };

        /// Distance from the origin.
        pub fn norm(&self) -> f64 {
            (self.x * self.x + self.y * self.y).sqrt()
        }
    }

    impl fmt::Display for Point {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "({}, {})", self.x, self.y)
        }
    }

    pub trait Shape {
        fn area(&self) -> f64;
    }

    pub enum Kind {
        Circle,
        Square,
    }

    pub fn midpoint(a: Point, b: Point) -> Point {
        Point { x: (a.x + b.x) / 2.0, y: (a.y + b.y) / 2.0 }
    }
    """
)
RUST_TABLE: list[Row] = [
    (None, "module", 0, 0),
    ("Point", "struct", 2, 7),
    ("Point", "impl", 9, 9),
    ("Point.ORIGIN", "constant", 10, 10),
    ("Point.norm", "method", 12, 16),
    ("Point", "impl", 18, 18),
    ("Point.fmt", "method", 19, 22),
    ("Shape", "trait", 24, 24),
    ("Shape.area", "method", 25, 26),
    ("Kind", "enum", 28, 31),
    ("midpoint", "function", 33, 35),
]

JAVA = source(
    """
    package com.example.store;

    import java.util.HashMap;
    import java.util.Map;

    /**
     * An in-memory key-value store.
     */
    @Deprecated
    public class Store<V> {
        private final Map<String, V> items = new HashMap<>();
        private int hits;

        /** Creates an empty store. */
        public Store() {
            this.hits = 0;
        }

        @Override
        public String toString() {
            return "Store(" + items.size() + ")";
        }

        public V get(String key) {
            hits++;
            return items.get(key);
        }

        public interface Listener {
            void changed(String key);
        }

        enum Mode { READ, WRITE }
    }
    """
)
JAVA_TABLE: list[Row] = [
    (None, "module", 0, 3),
    ("Store", "class", 5, 11),
    ("Store.Store", "method", 13, 16),
    ("Store.toString", "method", 18, 21),
    ("Store.get", "method", 23, 26),
    ("Store.Listener", "interface", 28, 28),
    ("Store.Listener.changed", "method", 29, 30),
    ("Store.Mode", "enum", 32, 33),
]

C = source(
    """
    #include <stdlib.h>
    #include "list.h"

    #define LIST_MAX 64

    /* A singly linked list node. */
    struct node {
        int value;
        struct node *next;
    };

    typedef struct {
        struct node *head;
        size_t length;
    } list_t;

    enum color { RED, GREEN };

    static int count = 0;

    /* Pushes a value; returns the new node. */
    struct node *list_push(list_t *list, int value)
    {
        struct node *n = malloc(sizeof *n);
        n->value = value;
        n->next = list->head;
        list->head = n;
        return n;
    }

    #ifdef DEBUG
    void list_dump(const list_t *list) {}
    #endif
    """
)
C_TABLE: list[Row] = [
    (None, "module", 0, 3),
    ("node", "struct", 5, 9),
    ("list_t", "struct", 11, 14),
    ("color", "enum", 16, 16),
    (None, "module", 18, 18),
    ("list_push", "function", 20, 28),
    (None, "module", 30, 30),
    ("list_dump", "function", 31, 31),
    (None, "module", 32, 32),
]

CPP = source(
    """
    #include <string>

    namespace geo {

    /// Base class for shapes.
    class Shape {
     public:
      explicit Shape(std::string name) : name_(std::move(name)) {}
      virtual ~Shape() = default;

      virtual double area() const = 0;

     private:
      std::string name_;
    };

    template <typename T>
    struct Box {
      T width;
      T height;
      T area() const { return width * height; }
    };

    double Circle::area() const {
      return 3.14159 * radius_ * radius_;
    }

    }  // namespace geo

    int main() {
      return 0;
    }
    """
)
CPP_TABLE: list[Row] = [
    (None, "module", 0, 0),
    ("geo", "namespace", 2, 2),
    ("geo.Shape", "class", 4, 6),
    ("geo.Shape.Shape", "method", 7, 7),
    ("geo.Shape.~Shape", "method", 8, 8),
    (None, "module", 10, 14),
    ("geo.Box", "struct", 16, 19),
    ("geo.Box.area", "method", 20, 21),
    ("geo.Circle.area", "method", 23, 25),
    (None, "module", 27, 27),
    ("main", "function", 29, 31),
]

RUBY = source(
    """
    require "json"
    require_relative "store/base"

    module Store
      # A cached HTTP client.
      class Client < Base
        DEFAULT_TTL = 60

        attr_reader :ttl

        def initialize(ttl = DEFAULT_TTL)
          @ttl = ttl
        end

        # Builds a client from ENV.
        def self.from_env
          new(Integer(ENV.fetch("TTL", DEFAULT_TTL)))
        end

        def fetch(key)
          JSON.parse(read(key))
        end
      end
    end

    def helper(value)
      value.to_s
    end
    """
)
RUBY_TABLE: list[Row] = [
    (None, "module", 0, 1),
    ("Store", "namespace", 3, 3),
    ("Store.Client", "class", 4, 8),
    ("Store.Client.initialize", "method", 10, 12),
    ("Store.Client.from_env", "method", 14, 17),
    ("Store.Client.fetch", "method", 19, 23),
    ("helper", "function", 25, 27),
]

PHP = source(
    """
    <?php

    namespace App\\Models;

    use Illuminate\\Database\\Eloquent\\Model;

    /**
     * A registered user.
     */
    #[ObservedBy(UserObserver::class)]
    class User extends Model
    {
        use HasFactory;

        protected $fillable = ['name', 'email'];

        /** The user's display name. */
        public function displayName(): string
        {
            return ucfirst($this->name);
        }

        public static function findByEmail(string $email): ?self
        {
            return static::where('email', $email)->first();
        }
    }

    interface Notifiable
    {
        public function notify(string $message): void;
    }

    function slugify(string $text): string
    {
        return strtolower(trim($text));
    }
    """
)
PHP_TABLE: list[Row] = [
    (None, "module", 0, 4),
    ("User", "class", 6, 14),
    ("User.displayName", "method", 16, 20),
    ("User.findByEmail", "method", 22, 26),
    ("Notifiable", "interface", 28, 29),
    ("Notifiable.notify", "method", 30, 31),
    ("slugify", "function", 33, 36),
]

MARKDOWN = source(
    """
    ---
    title: Guide
    ---

    Intro paragraph.

    # Install

    Run the installer.

    ## From source

    ```sh
    # not a heading
    make install
    ```

    Setext Title
    ============

    Body.

    Usage notes
    -----------

    - item
    """
)
MARKDOWN_TABLE: list[Row] = [
    (None, "section", 0, 4),
    ("Install", "section", 6, 8),
    ("Install > From source", "section", 10, 15),
    ("Setext Title", "section", 17, 20),
    ("Setext Title > Usage notes", "section", 22, 25),
]

LANGUAGE_CASES = [
    ("pkg/session.py", PYTHON, PYTHON_TABLE, "python"),
    ("src/config.js", JAVASCRIPT, JAVASCRIPT_TABLE, "javascript"),
    ("src/users.ts", TYPESCRIPT, TYPESCRIPT_TABLE, "typescript"),
    ("src/Counter.tsx", TSX, TSX_TABLE, "tsx"),
    ("server/server.go", GO, GO_TABLE, "go"),
    ("src/point.rs", RUST, RUST_TABLE, "rust"),
    ("src/main/java/Store.java", JAVA, JAVA_TABLE, "java"),
    ("src/list.c", C, C_TABLE, "c"),
    ("src/shape.cpp", CPP, CPP_TABLE, "cpp"),
    ("lib/store/client.rb", RUBY, RUBY_TABLE, "ruby"),
    ("app/Models/User.php", PHP, PHP_TABLE, "php"),
    ("docs/guide.md", MARKDOWN, MARKDOWN_TABLE, "markdown"),
]


@pytest.mark.parametrize(("path", "text", "expected", "language"), LANGUAGE_CASES, ids=lambda case: str(case)[:12])
def test_language_chunk_table(path: str, text: str, expected: list[Row], language: str) -> None:
    check(path, text, expected, language)


@pytest.mark.parametrize(("path", "text", "expected", "language"), LANGUAGE_CASES, ids=lambda case: str(case)[:12])
def test_crlf_files_chunk_like_lf_files(path: str, text: str, expected: list[Row], language: str) -> None:
    crlf = text.replace("\n", "\r\n")
    parsed = check(path, crlf, expected, language)
    assert all("\r" not in chunk.text for chunk in parsed.chunks)


def test_chunk_kinds_and_hashes() -> None:
    code = definition_chunks("pkg/session.py", PYTHON)
    assert {chunk.kind for chunk in code.chunks} == {"code"}
    docs = definition_chunks("docs/guide.md", MARKDOWN)
    assert {chunk.kind for chunk in docs.chunks} == {"doc"}
    first = code.chunks[0]
    assert first.hash == Chunk(None, "module", "code", "python", 0, 0, first.text).hash


# --- Python specifics -------------------------------------------------------


def test_python_definitions_inside_module_level_conditionals() -> None:
    text = source(
        """
        import sys

        if sys.platform == "win32":
            def home():
                return "C:\\\\"
        else:
            def home():
                return "/"
        """
    )
    check(
        "pkg/paths.py",
        text,
        [
            (None, "module", 0, 2),
            ("home", "function", 3, 4),
            (None, "module", 5, 5),
            ("home", "function", 6, 7),
        ],
    )


def test_comment_separated_by_blank_line_or_trailing_is_not_attached() -> None:
    text = source(
        """
        x = 1  # trailing comment of x
        # doc of f
        def f():
            pass

        # a section comment

        def g():
            pass
        """
    )
    check(
        "pkg/m.py",
        text,
        [
            (None, "module", 0, 0),
            ("f", "function", 1, 3),
            (None, "module", 5, 5),
            ("g", "function", 7, 8),
        ],
    )


def test_the_comment_above_a_classs_first_member_is_that_members() -> None:
    # tree-sitter-python makes it the class's child, before the block that holds the members;
    # a comment on the class's own line stays the class's.
    text = source(
        """
        class A:
            # Recomputes the totals.
            def f(self):
                pass


        class C(Base):  # the cache
            # The cached size.
            @property
            def h(self):
                pass
        """
    )
    check("pkg/a.py", text, [("A", "class", 0, 0), ("A.f", "method", 1, 3),
                             ("C", "class", 6, 6), ("C.h", "method", 7, 10)])
    haskell = "module M where\n\nclass Priced a where\n  -- | Price in cents.\n  price :: a -> Int\n"
    assert [(s.symbol, s.start_line, s.end_line) for s in definition_chunks("src/M.hs", haskell).symbols] == [
        ("Priced", 2, 2), ("Priced.price", 3, 4)]


def test_class_fields_after_methods_become_module_residue() -> None:
    text = source(
        """
        class Config:
            name = "a"

            def load(self):
                pass

            path = "b"
            mode = "c"
        """
    )
    check(
        "pkg/config.py",
        text,
        [
            ("Config", "class", 0, 1),
            ("Config.load", "method", 3, 4),
            (None, "module", 6, 7),
        ],
    )


# --- Other language details -------------------------------------------------


def test_go_grouped_type_declaration_chunks_each_type() -> None:
    text = source(
        """
        package ids

        type (
        \t// ID identifies a row.
        \tID int64
        \tName string
        )
        """
    )
    check(
        "ids/ids.go",
        text,
        [
            (None, "module", 0, 2),
            ("ID", "type", 3, 4),
            ("Name", "type", 5, 6),
        ],
    )


def test_cpp_nested_namespaces_out_of_line_methods_and_extern_c() -> None:
    text = source(
        """
        namespace a::b {
        void Widget::draw() {}
        }
        namespace {
        int hidden() { return 1; }
        }
        extern "C" {
        void exported() {}
        }
        """
    )
    check(
        "src/widget.cc",
        text,
        [
            ("a.b", "namespace", 0, 0),
            ("a.b.Widget.draw", "method", 1, 1),
            (None, "module", 2, 3),
            ("hidden", "function", 4, 4),
            (None, "module", 5, 6),
            ("exported", "function", 7, 8),
        ],
    )


def test_javascript_commonjs_and_prototype_assignments_and_objects_of_functions() -> None:
    text = source(
        """
        function Router() {}
        Router.prototype.use = function use(fn) {
          return this;
        };
        exports.parse = (text) => JSON.parse(text);
        const ruleFixer = Object.freeze({
          remove(node) {
            return node;
          },
          insertTextAfter: function (node, text) {
            return text;
          },
        });
        const config = { retries: 3 };
        res.header = res.set = function header(field) {
          return this;
        };
        module.exports = {
          error(...args) {
            console.error(...args);
          },
        };
        """
    )
    check(
        "lib/router.js",
        text,
        [
            ("Router", "function", 0, 0),
            ("Router.use", "function", 1, 3),
            ("parse", "function", 4, 4),
            ("ruleFixer", "object", 5, 5),
            ("ruleFixer.remove", "method", 6, 8),
            ("ruleFixer.insertTextAfter", "method", 9, 11),
            (None, "module", 12, 13),  # a plain object
            ("res.header", "function", 14, 16),  # a chained alias, named by its first target
            (None, "module", 17, 17),  # the anonymous holder's first line
            ("error", "function", 18, 21),
        ],
    )


def test_c_typedefs_are_definitions_by_the_name_the_code_writes() -> None:
    text = source(
        """
        typedef long long mstime_t;
        typedef void (*scan_fn)(void *data, const void *key);
        typedef char name_t[16];
        typedef struct redisObject {
            int refcount;
        } robj;
        typedef struct fwd Fwd;
        """
    )
    check(
        "src/server.h",
        text,
        [
            ("mstime_t", "typedef", 0, 0),
            ("scan_fn", "typedef", 1, 1),
            ("name_t", "typedef", 2, 2),
            ("robj", "struct", 3, 5),
            ("Fwd", "typedef", 6, 6),
        ],
    )


def test_cpp_qualified_names_drop_template_arguments() -> None:
    text = source(
        """
        template <typename T>
        T Foo<std::vector<T>>::bar() const { return T(); }
        bool Foo::operator<(const Foo& other) const { return true; }
        Foo::~Foo() {}
        """
    )
    check(
        "src/foo.hpp",
        text,
        [("Foo.bar", "method", 0, 1), ("Foo.operator<", "method", 2, 2), ("Foo.~Foo", "method", 3, 3)],
    )


def test_cpp_functions_returning_a_reference_and_conversions_are_named_by_their_names() -> None:
    # tree-sitter-cpp's reference_declarator holds its function declarator
    # under no field: the whole declarator text was the name (`&Foo::get()`).
    text = source(
        """
        struct Foo {
            Foo& self() { return *this; }
            const int& cget() const { return x; }
        };
        int& Foo::get() { return x; }
        Foo& Foo::operator=(const Foo& o) { return *this; }
        int&& take(int&& v) { return v; }
        Foo::operator bool() const { return true; }
        std::ostream& operator<<(std::ostream& o, const Foo& f) { return o; }
        """
    )
    symbols = [(s.symbol, s.symbol_kind, s.line) for s in definition_chunks("src/foo.cpp", text).symbols]
    assert symbols == [("Foo", "struct", 0), ("Foo.self", "method", 1), ("Foo.cget", "method", 2),
                       ("Foo.get", "method", 4), ("Foo.operator=", "method", 5), ("take", "function", 6),
                       ("Foo.operator bool", "method", 7), ("operator<<", "function", 8)]


def test_a_ruby_method_passed_to_a_call_is_a_definition() -> None:
    # `private def x … end`: the method is the call's argument, not a member of its own.
    text = source(
        """
        class Account
          # Balance in cents.
          private def balance
            0
          end
          protected def compare(other) = other
          private_class_method def self.build
            new
          end
          private memoize def total
            1
          end
        end
        """
    )
    symbols = [(s.symbol, s.symbol_kind, s.start_line, s.end_line, s.line)
               for s in definition_chunks("lib/account.rb", text).symbols]
    assert symbols == [("Account", "class", 0, 0, 0), ("Account.balance", "method", 1, 4, 2),
                       ("Account.compare", "method", 5, 5, 5), ("Account.build", "method", 6, 8, 6),
                       ("Account.total", "method", 9, 11, 9)]


def test_rust_module_qualifies_its_items() -> None:
    text = source(
        """
        mod net {
            pub fn connect() {}
        }
        """
    )
    check("src/lib.rs", text, [("net", "namespace", 0, 0), ("net.connect", "function", 1, 2)])


def test_a_rust_impl_on_a_trait_object_or_a_raw_pointer_is_named_by_its_type() -> None:
    # `dyn Shape.describe`, `*const T.summarize` were qualified by the type's whole text.
    text = source(
        """
        impl dyn Shape {
            fn describe(&self) {}
        }
        impl<T> *const T {
            fn summarize(&self) {}
        }
        impl dyn fmt::Debug + Send {
            fn dbg(&self) {}
        }
        """
    )
    assert [s.symbol for s in definition_chunks("src/lib.rs", text).symbols] == [
        "Shape", "Shape.describe", "T", "T.summarize", "Debug", "Debug.dbg"]


def test_rust_items_inside_a_cfg_macro_are_definitions_at_their_own_rows() -> None:
    # tokio gates groups of items behind `cfg_rt! { … }`; tree-sitter leaves the
    # body a token tree, so without a second parse they were one residue chunk.
    text = source(
        """
        use std::io;

        cfg_rt! {
            /// Runs a blocking closure on a thread of its own.
            pub fn spawn_blocking<F>(f: F) {
                run(f)
            }

            impl Pool {
                fn grow(&self) {}
            }
        }

        bitflags! {
            pub struct Ready: u8 {
                const READABLE = 1;
            }
        }
        """
    )
    check("src/task/blocking.rs", text, [
        (None, "module", 0, 2),  # the `use` and the macro's first line
        ("spawn_blocking", "function", 3, 6),
        ("Pool", "impl", 8, 8),
        ("Pool.grow", "method", 9, 9),
        (None, "module", 10, 17),  # `bitflags!` is not items: residue
    ])
    assert [s.symbol for s in definition_chunks("src/task/blocking.rs", text).symbols] == [
        "spawn_blocking", "Pool", "Pool.grow"]


def test_javascript_functions_behind_a_guard_or_inside_a_call_are_definitions() -> None:
    # axios exports its adapters as `supported && function httpAdapter(…) {…}`;
    # zod builds its schemas as `$constructor("Name", (inst, def) => {…})`.
    text = source(
        """
        export default isHttpAdapterSupported && function httpAdapter(config) {
          return dispatch(config);
        }
        export const $ZodString = core.$constructor("$ZodString", (inst, def) => {
          inst.parse = def.parse;
        });
        const total = compute(1, 2);
        """
    )
    check("lib/adapters/http.js", text, [
        ("httpAdapter", "function", 0, 2),
        ("$ZodString", "function", 3, 5),
        (None, "module", 6, 6),
    ])


def test_nested_macro_bodies_are_parsed_again_only_within_the_file_budget() -> None:
    # Each nesting level parses its body again; 800 levels took a second
    # before the budget. The outer levels' items are read, the deep one is not.
    shallow = "outer! {\n    inner! {\n        pub fn near() {}\n    }\n}\n"
    assert [d.symbol for d in chunk_file("src/a.rs", shallow).symbols] == ["near"]
    depth = 100
    deep = "".join("m! {\n" for _ in range(depth)) + "pub fn far() {}\n" + "}\n" * depth
    parsed = chunk_file("src/b.rs", deep)
    assert_well_formed(deep, parsed)
    assert parsed.symbols == []


def test_a_macro_bodys_item_line_is_found_on_its_own_line_not_across_blank_lines() -> None:
    # `^\s*` under MULTILINE ran from every line start across all the blank
    # lines after it: quadratic in a macro body of blank lines.
    match = rust._RUST_ITEM_LINE.search(b"\n \n\n    pub fn spawn() {}")
    assert match is not None and match.start() == 4


def test_a_class_or_function_assigned_to_module_exports_is_named_by_itself() -> None:
    # eslint: `module.exports = class ConfigCommentParser {…}` was residue, so
    # the `require` lines of its importers outranked it for its own name.
    text = source(
        """
        module.exports = class ConfigCommentParser {
            parse(text) {
                return text;
            }
        };
        module.exports = function createServer(options) {
          return options;
        };
        """
    )
    check("lib/linter/config-comment-parser.js", text, [
        ("ConfigCommentParser", "class", 0, 0),
        ("ConfigCommentParser.parse", "method", 1, 4),
        ("createServer", "function", 5, 7),
    ])


def test_an_anonymous_class_exported_through_a_chain_is_named_by_its_first_named_target() -> None:
    # hapi: `exports = module.exports = internals.Compression = class {…}` left
    # the whole class to module residue (one 118-line chunk, its methods unseen).
    text = source(
        """
        exports = module.exports = internals.Compression = class {
            addEncoder(encoding, encoder) {
                this.encoders[encoding] = encoder;
            }
        };
        """
    )
    check("lib/compression.js", text, [
        ("internals.Compression", "class", 0, 0),
        ("internals.Compression.addEncoder", "method", 1, 4),
    ])


def test_the_functions_of_a_default_exported_object_are_definitions() -> None:
    # vitest's environments: `export default <Environment>{ setupVM() {…} }`
    # was residue, its methods unseen.
    text = source(
        """
        export default <Environment>{
          name: 'jsdom',
          async setupVM({ jsdom = {} }) {
            return jsdom
          },
        }
        """
    )
    check("integrations/env/jsdom.ts", text, [(None, "module", 0, 1), ("setupVM", "function", 2, 5)])
    text = source(
        """
        export default {
          setup(global) {
            return global
          },
        } satisfies Environment
        """
    )
    check("integrations/env/node.ts", text, [(None, "module", 0, 0), ("setup", "function", 1, 3),
                                              (None, "module", 4, 4)])


def test_a_typescript_constant_object_of_functions_is_read_through_its_type_syntax() -> None:
    # Chart.js's easing table (`{…} as const`), Vue's array instrumentations (`<any>{…}`).
    text = source(
        """
        const effects = {
          linear: (t: number) => t,
          easeInQuad(t: number) {
            return t * t
          },
        } as const
        export const instrumentations: Record<string, Function> = <any>{
          join(separator?: string) {
            return separator
          },
        }
        """
    )
    check("src/easing.ts", text, [("effects", "object", 0, 0), ("effects.linear", "method", 1, 1),
                                  ("effects.easeInQuad", "method", 2, 4), (None, "module", 5, 5),
                                  ("instrumentations", "object", 6, 6), ("instrumentations.join", "method", 7, 10)])


def test_a_c_family_file_is_read_again_without_its_macro_lines_and_other_branches() -> None:
    # fmt's `FMT_BEGIN_NAMESPACE` / `FMT_BEGIN_EXPORT` lines read as unfinished
    # declarations; a macro used as a statement (with its semicolon) stays.
    from ctxls.index.chunking.spans import preprocessed_lines

    lines = ["FMT_BEGIN_NAMESPACE", "#if FMT_USE_LOCALE", "int f();", "#else", "int g();", "#endif",
             "G_DEFINE_TYPE (Foo, foo, G_TYPE_OBJECT)", "FMT_TYPE_CONSTANT(int, int_type);",
             "int h() { return 0; }"]
    assert preprocessed_lines(lines) == ["", "", "int f();", "", "", "", "",
                                         "FMT_TYPE_CONSTANT(int, int_type);", "int h() { return 0; }"]


def test_a_c_function_whose_ifdef_branches_split_a_statement_is_still_a_definition() -> None:
    # curl's bindlocal: each branch opens its own `if(…) {`, closed once after
    # `#endif`; tree-sitter cannot parse that, and the function was residue.
    text = source(
        """
        static int before(void)
        {
          return 0;
        }

        static int bindlocal(int af)
        {
        #ifdef ENABLE_IPV6
          if(af == AF_INET6) {
        #else
          if(af == AF_INET) {
        #endif
            return 1;
          }
          return 0;
        }

        static int after(void)
        {
          return 2;
        }
        """
    )
    rows = [(c.symbol, c.start_line, c.end_line) for c in definition_chunks("lib/cf-socket.c", text).chunks]
    assert rows == [("before", 0, 3), ("bindlocal", 5, 15), ("after", 17, 20)]


def test_typescript_exported_constants_built_by_a_call_are_definitions() -> None:
    """zod's `safeParse`, mobx's `action`, tRPC's `router` are exported
    consts built by a call, an alias or `new`: each names its line. A
    module's private `require` is an import, and a plain value stays residue."""
    text = source(
        """
        const helpers = require("./helpers");
        export const safeParse: <T>(schema: T, value: unknown) => Result<T> =
          /* @__PURE__ */ _safeParse(RealError) as any;
        export const action = createActionFactory(false);
        export const router = t.router;
        export const scheduler = new AsyncScheduler(AsyncAction);
        export const version = "3.0";
        """
    )
    check(
        "src/api.ts",
        text,
        [
            (None, "module", 0, 0),
            ("safeParse", "function", 1, 2),
            ("action", "constant", 3, 3),
            ("router", "constant", 4, 4),
            ("scheduler", "constant", 5, 5),
            (None, "module", 6, 6),
        ],
    )


def test_rust_consts_and_statics_are_definitions() -> None:
    text = source(
        """
        pub const MAX_DEPTH: usize = 128;

        static DEFAULT: Config = Config::new();

        impl Limits {
            pub const LIMIT: usize = 4;
        }
        """
    )
    rows = [(c.symbol, c.symbol_kind) for c in definition_chunks("src/limits.rs", text).chunks]
    assert rows == [("MAX_DEPTH", "constant"), ("DEFAULT", "constant"), ("Limits", "impl"),
                    ("Limits.LIMIT", "constant")]


def test_python_types_made_by_an_assignment_are_definitions() -> None:
    """A type alias, a namedtuple, a NewType or a functional Enum is
    searched for by its name like a class; a type parameter and a plain
    constant stay in the module's residue."""
    text = source(
        """
        from typing import NamedTuple, NewType, TypeAlias, TypeVar
        T = TypeVar("T")
        DEFAULT_TIMEOUT = 5.0
        JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str"
        Point = collections.namedtuple("Point", "x y")
        UserId = NewType("UserId", int)
        Color = enum.Enum("Color", "RED GREEN")
        type Pair = tuple[int, int]
        """
    )
    rows = [(c.symbol, c.symbol_kind) for c in definition_chunks("pkg/types.py", text).chunks]
    assert rows == [(None, "module"), ("JsonValue", "type"), ("Point", "class"), ("UserId", "type"),
                    ("Color", "enum"), ("Pair", "type")]


def test_typescript_declare_module_and_default_export() -> None:
    text = source(
        """
        declare module "cache" {
          export function get(key: string): string;
        }
        export default function () {
          return 1;
        }
        """
    )
    check(
        "types/cache.d.ts",
        text,
        [
            ("cache", "namespace", 0, 0),
            ("cache.get", "function", 1, 2),
            ("default", "function", 3, 5),
        ],
    )


# --- Markdown ---------------------------------------------------------------


def test_markdown_without_headings_is_one_untitled_section() -> None:
    check("notes.md", "just text\n\nmore text\n", [(None, "section", 0, 2)], "markdown")


def test_markdown_heading_path_pops_to_the_right_level() -> None:
    text = source(
        """
        # A
        ## B
        ### C
        ## D
        # E
        #not-a-heading
        """
    )
    check(
        "README.markdown",
        text,
        [
            ("A", "section", 0, 0),
            ("A > B", "section", 1, 1),
            ("A > B > C", "section", 2, 2),
            ("A > D", "section", 3, 3),
            ("E", "section", 4, 5),
        ],
    )


def test_markdown_headings_are_titled_by_the_words_a_reader_sees() -> None:
    """Images by their alt text, links by their text, tags dropped: no URL
    in a section's symbol, which BM25 weighs most."""
    text = source(
        """
        # <img alt="chi" src="https://cdn.example.com/chi/master/logo.svg" width="220" />
        ## [Install](https://example.com/install) ![badge](https://ci.example.com/b.svg)
        Usage <b>notes</b>
        ---
        """
    )
    check(
        "README.md",
        text,
        [
            ("chi", "section", 0, 0),
            ("chi > Install badge", "section", 1, 1),
            ("chi > Usage notes", "section", 2, 3),
        ],
    )


def test_a_markdown_headings_attributes_are_not_in_its_title() -> None:
    """Pandoc's, Quarto's and R Markdown's `## References {.unnumbered}`,
    `# Methods {#sec-methods}` and MkDocs' `{ #id }`: an anchor or a class
    the reader never sees was part of the section's title; braces that are
    words stay."""
    text = source(
        """
        # Methods {#sec-methods .unnumbered}
        ## Install { #install }
        ## References {-}
        ## The {x} set
        """
    )
    check(
        "report.qmd",
        text,
        [
            ("Methods", "section", 0, 0),
            ("Methods > Install", "section", 1, 1),
            ("Methods > References", "section", 2, 2),
            ("Methods > The {x} set", "section", 3, 3),
        ],
    )


def test_markdown_long_section_is_split_and_keeps_its_symbol() -> None:
    text = "# Big\n" + "".join(f"line {n}\n" for n in range(1, 200))
    check(
        "docs/big.md",
        text,
        [("Big", "section", 0, 149), ("Big", "section", 130, 199)],
    )


# --- Line windows -----------------------------------------------------------


def test_line_windows_for_plain_text() -> None:
    text = "".join(f"line {n}\n" for n in range(130))
    parsed = check(
        "notes.txt",
        text,
        [(None, "window", 0, 59), (None, "window", 50, 109), (None, "window", 100, 129)],
        "text",
    )
    assert {chunk.kind for chunk in parsed.chunks} == {"doc"}


def test_line_windows_trim_blank_lines_and_skip_blank_windows() -> None:
    # "title" lies in the overlap of the first two windows: one chunk, not two.
    text = "\n" * 55 + "title\n" + "\n" * 60 + "end\n"
    parsed = check("pyproject.toml", text, [(None, "window", 55, 55), (None, "window", 116, 116)], "text")
    assert {chunk.kind for chunk in parsed.chunks} == {"config"}


def test_unknown_extension_gets_windows() -> None:
    check("notes.xyz", "all:\n\tcc main.c\n", [(None, "window", 0, 1)], "text")


def test_a_language_without_a_definitions_table_gets_windows_named_by_its_language() -> None:
    check("Makefile", "all:\n\tcc main.c\n", [(None, "window", 0, 1)], "make")
    check("build.gradle", "plugins {\n    id 'java'\n}\n", [(None, "window", 0, 2)], "groovy")


# --- Long chunks ------------------------------------------------------------


def test_long_function_is_split_with_overlap() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(399))
    text = "def big():\n" + body + "\n\ndef small():\n    pass\n"
    parsed = check(
        "pkg/big.py",
        text,
        [
            ("big", "function", 0, 149),
            ("big", "function", 130, 279),
            ("big", "function", 260, 399),
            ("small", "function", 402, 403),
        ],
    )
    first, second = parsed.chunks[0], parsed.chunks[1]
    overlap = split_lines(first.text)[-OVERLAP_LINES:]
    assert split_lines(second.text)[:OVERLAP_LINES] == overlap


def test_long_module_residue_is_split() -> None:
    text = "".join(f"X{n} = {n}\n" for n in range(200))
    check("pkg/constants.py", text, [(None, "module", 0, 149), (None, "module", 130, 199)])


# --- Robustness -------------------------------------------------------------


def test_empty_and_blank_files_have_no_chunks() -> None:
    for path in ("a.py", "a.md", "a.txt", "a.go"):
        assert definition_chunks(path, "").chunks == []
        assert definition_chunks(path, "\n\n  \n").chunks == []


def test_syntax_error_keeps_the_valid_python_definitions() -> None:
    text = source(
        """
        def ok1():
            return 1

        def broken(:
            x = = 2

        class K:
            def m(self):
                return 3

        def ok2():
            pass
        """
    )
    check(
        "pkg/broken.py",
        text,
        [
            ("ok1", "function", 0, 1),
            (None, "module", 3, 4),
            ("K", "class", 6, 6),
            ("K.m", "method", 7, 8),
            ("ok2", "function", 10, 11),
        ],
    )


def test_unclosed_brace_does_not_swallow_later_definitions() -> None:
    text = source(
        """
        package p

        func a() {
        }

        func b() {
        \tif x {
        }

        func c() {}
        """
    )
    check(
        "p/p.go",
        text,
        [
            (None, "module", 0, 0),
            ("a", "function", 2, 3),
            (None, "module", 5, 7),
            ("c", "function", 9, 9),
        ],
    )


@pytest.mark.parametrize(("path", "text"), [
    ("a.rb", "def a\n  0\nend\n\ndef f\n  x = = 1\n  x\nend\n\ndef g\n  2\nend\n"),
    ("a.lua", "local function a() return 0 end\n\nlocal function f()\n  local x = = 1\n  return x\nend\n\n"
              "local function g() return 2 end\n"),
    ("a.jl", "function a()\n  0\nend\n\nfunction f()\n  x = = 1\n  x\nend\n\nfunction g()\n  2\nend\n"),
])
def test_a_function_closed_by_end_in_column_0_keeps_a_syntax_error_inside_it(path: str, text: str) -> None:
    # Its `end` was taken for a swallowed top-level line: the parse restarted
    # there and `f` (being typed, `x = = 1`) was dropped from the definitions.
    parsed = definition_chunks(path, text)
    assert_well_formed(text, parsed)
    rows = [(s.symbol, s.start_line, s.end_line) for s in parsed.symbols]
    assert rows[0][0] == "a" and rows[2][0] == "g"
    assert rows[1] == ("f", 4 if path != "a.lua" else 2, 7 if path != "a.lua" else 5)


def test_unclosed_brace_in_java_method_keeps_next_class_top_level() -> None:
    text = source(
        """
        class A {
            void m1() { return; }
            void m2() {
                if (x) {
            }
        }
        class B { void z() {} }
        """
    )
    # Without the restart, tree-sitter nests B inside A as `A.B`.
    check(
        "A.java",
        text,
        [
            ("A", "class", 0, 0),
            ("A.m1", "method", 1, 1),
            ("A.m2", "method", 2, 5),
            ("B", "class", 6, 6),
            ("B.z", "method", 6, 6),
        ],
    )


def test_typescript_and_go_interface_methods_are_its_methods() -> None:
    # As Java's, C#'s and Rust's traits' are; a TypeScript abstract method was listed already.
    typescript = source(
        """
        export interface PaymentGateway {
          /** Charge the card. */
          charge(amount: number): Promise<boolean>;
          readonly name: string;
          refund(id: string): void;
        }
        """
    )
    go = source(
        """
        package store

        // Getter reads values.
        type Getter interface {
        \tio.Closer
        \t// Get returns the value of key.
        \tGet(key string) (string, error)
        }
        """
    )
    definitions = {path: [(d.symbol, d.symbol_kind, d.start_line, d.line, d.end_line, d.body_end)
                          for d in chunker.chunk_file(path, text).symbols]
                   for path, text in (("gateway.ts", typescript), ("store/store.go", go))}
    assert definitions == {
        "gateway.ts": [
            ("PaymentGateway", "interface", 0, 0, 0, 5),
            ("PaymentGateway.charge", "method", 1, 2, 2, 2),
            ("PaymentGateway.refund", "method", 4, 4, 4, 4),
        ],
        "store/store.go": [
            ("Getter", "interface", 2, 3, 4, 7),
            ("Getter.Get", "method", 5, 6, 6, 6),
        ],
    }


def test_an_error_in_a_quoted_plpgsql_body_does_not_restart_at_its_column_0_lines() -> None:
    # tree-sitter-sql cannot parse `NEW.updated_at = now();` nor `IF … END IF;`.
    # The restart after an error took the body's `END;` in column 0 for a
    # swallowed definition: `touch_updated_at` vanished, `add_points` ended
    # at `END IF;`. The `$$` pair (or `$body$`) says where the body ends.
    for quote in ("$$", "$body$"):
        text = source(
            """
            CREATE OR REPLACE FUNCTION touch_updated_at() RETURNS trigger AS $$
            BEGIN
                NEW.updated_at = now();
                RETURN NEW;
            END;
            $$ LANGUAGE plpgsql;

            CREATE FUNCTION add_points(p_user int, p_pts int) RETURNS void AS $$
            DECLARE
                cur int;
            BEGIN
                SELECT points INTO cur FROM users WHERE id = p_user;
                IF cur IS NULL THEN
                    RAISE EXCEPTION 'no user %', p_user;
                END IF;
                UPDATE users SET points = cur + p_pts WHERE id = p_user;
            END;
            $$ LANGUAGE plpgsql;

            CREATE TABLE users (id int, points int);
            """
        ).replace("$$", quote)
        check(
            "db/schema.sql",
            text,
            [
                ("touch_updated_at", "function", 0, 5),
                ("add_points", "function", 7, 17),
                ("users", "table", 19, 19),
            ],
        )


def test_a_struct_whose_closing_brace_the_parser_could_not_place_ends_there(monkeypatch) -> None:
    # fmt's format.h: tree-sitter-cpp reads the constructor's initializer
    # list as an error and the struct's `};` with it, then keeps the body open
    # until a later `}`. Once re-parsing's budget is spent (a long header),
    # `size_padding` took in 1,800 lines and named their definitions as its members.
    monkeypatch.setattr(spans, "REPARSE_BUDGET", 0)
    text = source(
        """
        namespace detail {

        struct size_padding {
          unsigned size;
          unsigned padding;

          FMT_CONSTEXPR size_padding(int num_digits, unsigned prefix,
                                     const format_specs& specs)
              : size((prefix >> 24) + to_unsigned(num_digits)), padding(0) {
            if (specs.align() == align::numeric) {
              auto width = to_unsigned(specs.width);
              if (width > size) {
                padding = width - size;
                size = width;
              }
            } else if (specs.precision > num_digits) {
              size = (prefix >> 24) + to_unsigned(specs.precision);
            }
          }
        };

        template <typename T, typename Char, type TYPE>
        template <typename FormatContext>
        FMT_CONSTEXPR auto native_formatter<T, Char, TYPE>::format(
            const T& val, FormatContext& ctx) const -> decltype(ctx.out()) {
          return write<Char>(ctx.out(), val, specs_, ctx.locale());
        }
        }  // namespace detail
        }  // namespace fmt
        """
    )
    symbols = definition_chunks("include/fmt/format.h", text).symbols
    assert [(symbol.symbol, symbol.start_line, symbol.body_end) for symbol in symbols] == [
        ("detail", 0, 28), ("detail.size_padding", 2, 19), ("detail.native_formatter.format", 21, 26)]


def test_nul_characters_lone_surrogates_and_form_feeds() -> None:
    text = "x = 1\x00\n\x0c\ndef f():\n    return '\udc80\x00'\n"
    parsed = check("pkg/odd.py", text, [(None, "module", 0, 0), ("f", "function", 2, 3)])
    assert parsed.chunks[1].hash  # hashing survives the surrogate


def test_binary_like_text_does_not_raise() -> None:
    text = "".join(chr(n) for n in range(0, 0x800)) + "\udfff\ud800"
    for path in ("blob.py", "blob.js", "blob.c", "blob.md", "blob.bin", "blob.rs", "blob.php"):
        assert_well_formed(text, definition_chunks(path, text))


def test_huge_single_line() -> None:
    text = "var a = [" + "1," * 200_000 + "];"
    parsed = check("dist/bundle.min.js", text, [(None, "module", 0, 0)])
    assert parsed.chunks[0].text == text


def test_parser_failure_falls_back_to_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_parser(language: str) -> None:
        raise RuntimeError("grammar failed to load")

    monkeypatch.setattr(chunker, "parser_for", broken_parser)
    parsed = check("pkg/session.py", PYTHON, [(None, "window", 0, 38)], "python")
    assert parsed.imports == []


@pytest.mark.parametrize("path", ["x.py", "x.ts", "x.go", "x.rb", "x.md", "x.txt"])
def test_text_equals_lines_for_mixed_line_endings(path: str) -> None:
    text = "def f():\r\n    return 1\n\r\nclass A:\r\n    pass\r"
    assert_well_formed(text, definition_chunks(path, text))


def test_split_lines_semantics() -> None:
    assert split_lines("") == [""]
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\r\nb\r\n\r\n") == ["a", "b", ""]
    assert split_lines("a\x0cb\u2028c") == ["a\x0cb\u2028c"]  # only "\n" breaks lines


# --- Performance ------------------------------------------------------------


# --- Packing (chunk_file): no 1-2-line chunk unless the file is that small ------

from ctxls.index.chunker import chunk_file  # noqa: E402
from ctxls.index.chunking.packing import PACK_CHARS  # noqa: E402


def test_packing_joins_a_class_header_with_its_short_members() -> None:
    text = source(
        """
        class Point:
            x: int
            y: int

            def norm(self):
                return (self.x ** 2 + self.y ** 2) ** 0.5

            def flip(self):
                return Point(self.y, self.x)
        """
    )
    parsed = chunk_file("geo.py", text)
    assert_well_formed(text, parsed)
    assert [(c.symbol, c.start_line, c.end_line, c.names) for c in parsed.chunks] == [
        ("Point", 0, 8, ("Point", "Point.norm", "Point.flip"))]
    # The symbol table still knows every definition, each at its own lines.
    assert [(d.symbol, d.start_line, d.end_line) for d in parsed.symbols] == [
        ("Point", 0, 3), ("Point.norm", 4, 5), ("Point.flip", 7, 8)]


def test_packing_keeps_long_definitions_apart_and_joins_runs_of_one_liners() -> None:
    body = "\n".join(f"    total += {i}" for i in range(80))
    text = source(
        """
        type A = string;
        type B = number;
        type C = A | B;
        """
    ) + f"function big() {{\n    let total = 0;\n{body}\n    return total;\n}}\n"
    parsed = chunk_file("types.ts", text)
    assert_well_formed(text, parsed)
    rows = [(c.symbol, c.start_line, c.end_line) for c in parsed.chunks]
    assert rows[0] == ("A", 0, 2)  # three type aliases read as one
    assert rows[1][0] == "big" and rows[1][1] == 3  # the long function is its own chunk
    assert parsed.chunks[0].names == ("A", "B", "C")


def test_packing_joins_runs_of_short_siblings_but_not_across_containers() -> None:
    long_body = "\n".join(f"        let v{i} = self.bits >> {i};" for i in range(60))
    short = "".join(f"    fn is_{name}(&self) -> bool {{\n        self.bits & {bit} != 0\n    }}\n\n"
                    for bit, name in enumerate(["readable", "writable", "closed", "empty"]))
    text = ("impl State {\n    fn load(&self) -> usize {\n" + long_body + "\n        0\n    }\n\n"
            + short + "}\n\nfn is_ready(state: &State) -> bool {\n    state.is_readable()\n}\n")
    parsed = chunk_file("state.rs", text)
    assert_well_formed(text, parsed)
    names = [c.names for c in parsed.chunks]
    # The four three-line methods read as one chunk; the free function, of
    # another scope, is not packed into the impl's methods.
    assert ("State.is_readable", "State.is_writable", "State.is_closed", "State.is_empty") in names
    assert not any("is_ready" in n and any(x.startswith("State.") for x in n) for n in names)
    assert all(len(c.text) <= PACK_CHARS or len(c.names) <= 2 for c in parsed.chunks)


def test_a_tiny_header_joins_its_first_member_even_past_the_budget() -> None:
    long_body = "\n".join(f"        value = value + {i}  # step {i:04d} of a long computation" for i in range(40))
    text = f"class Engine:\n    def run(self, value):\n{long_body}\n        return value\n"
    assert len(text) > PACK_CHARS
    parsed = chunk_file("engine.py", text)
    assert_well_formed(text, parsed)
    assert parsed.chunks[0].symbol == "Engine" and parsed.chunks[0].start_line == 0
    assert parsed.chunks[0].end_line > 1


def test_packing_leaves_no_tiny_chunk_where_a_neighbour_can_take_it() -> None:
    text = source(
        """
        import os


        def load(path):
            with open(path) as handle:
                data = handle.read()
            return data


        # a stray comment


        def save(path, data):
            with open(path, "w") as handle:
                handle.write(data)
            return len(data)
        """
    )
    unpacked = definition_chunks("io_utils.py", text)
    packed = chunk_file("io_utils.py", text)
    assert_well_formed(text, packed)
    assert any(c.end_line - c.start_line < 2 for c in unpacked.chunks)
    assert not any(c.end_line - c.start_line < 2 for c in packed.chunks)
    # Every line of every unpacked chunk is still in a packed one.
    covered = {line for c in packed.chunks for line in range(c.start_line, c.end_line + 1)}
    assert all(line in covered for c in unpacked.chunks
               for line in range(c.start_line, c.end_line + 1))


def test_configuration_files_are_their_own_kind() -> None:
    assert {c.kind for c in chunk_file(".github/workflows/ci.yml", "on: push\njobs: {}\n").chunks} == {"config"}
    assert {c.kind for c in chunk_file("README.md", "# Title\n\ntext\n").chunks} == {"doc"}


def test_an_edited_file_parsed_from_its_previous_tree_chunks_as_a_fresh_parse(monkeypatch):
    # languages.parse keeps each recent file's tree and parses its next text
    # from it; the chunks must be those of a fresh parse, syntax errors or not.
    from_previous: list[bool] = []
    fresh_parser = languages.parser_for

    class Recording:
        def __init__(self, parser):
            self.parser = parser

        def parse(self, source, old_tree=None, **options):
            from_previous.append(old_tree is not None)
            return self.parser.parse(source, old_tree, **options) if old_tree else self.parser.parse(source, **options)

    monkeypatch.setattr(languages, "parser_for", lambda language: Recording(fresh_parser(language)))
    base = textwrap.dedent("""\
        import os


        class Store:
            def get(self, key):
                return self.rows[key]

            def put(self, key, value):
                self.rows[key] = value


        def helper(path):
            return os.path.basename(path)
        """)
    edits = [base,
             base.replace("return self.rows[key]", "return self.rows.get(key)"),  # from the tree
             base.replace("def put(self, key, value):", "def put(self, key, value"),  # an error
             base.replace("def helper(path):", "def helper(path, extra):"),  # after an error
             base.replace("def helper(path):", "def helper(path, extra):") + "\n\ndef more():\n    pass\n"]
    for n, text in enumerate(edits):
        assert chunker.chunk_file("pkg/store.py", text) == chunker.chunk_file(f"fresh/{n}.py", text), n
    # Per text: pkg/store.py's parses, then fresh/N's. The error is tried from
    # the tree, then parsed afresh; the text after it is parsed afresh.
    assert from_previous == [False, False, True, False, True, False, False, False, False,
                             True, False]


# -- parses that must be abandoned ---------------------------------------------------

# A 50 KB expression on one line: tree-sitter-d takes ~3 s on it (real files
# parse at under 0.3 s a MiB). Not longer: from ~17,000 terms its memory
# passes the chunk worker's cap before the 2 s deadline on a quiet machine,
# and the child dies (a crash, not a deadline).
SLOW_FOR_D = "x = " + "a + " * 12_500 + "b\n"
# A class name and annotation lines: tree-sitter-kotlin hangs inside one step
# (11 s at 20,000 lines; SIGSEGV at 100,000), where no deadline can stop it.
HANGS_KOTLIN = "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( {\n"


def test_a_parse_past_its_deadline_is_abandoned_and_the_parser_reads_the_next_text():
    parser = languages.parser_for("d")
    with languages.parse_deadline(0.2):
        with pytest.raises(languages.ParseAbandoned):
            languages.parse_source(parser, SLOW_FOR_D.encode())
    # A stopped parse is kept for resuming: the next text must not continue it.
    text = b"int twice(int x) { return 2 * x; }\n"
    assert str(languages.parse_source(parser, text).root_node) == str(
        get_parser("d").parse(text).root_node)


def test_a_parse_deadline_counts_the_parsing_threads_work_not_the_clocks_time():
    """A loaded machine (the thread waits for a core) must not make a real
    file unparsed: the deadline is of this thread's CPU time."""
    parser = languages.parser_for("c")
    text = b"int twice(int x) { return 2 * x; }\n"
    with languages.parse_deadline(0.2):
        time.sleep(0.4)  # the clock passes the deadline; the thread did no work
        assert str(languages.parse_source(parser, text).root_node) == str(
            get_parser("c").parse(text).root_node)


def test_a_file_whose_parse_is_abandoned_is_read_as_line_windows(monkeypatch):
    monkeypatch.setattr(languages, "PARSE_DEADLINE_S", 0.2)
    text = "int kept(int x) {\n  return x;\n}\n" + SLOW_FOR_D
    parsed = chunker.chunk_file("slow.d", text)
    assert parsed.language == "d" and not parsed.symbols and parsed.unparsed == "parse deadline"
    assert {c.symbol_kind for c in parsed.chunks} == {"window"}
    assert parsed.chunks[0].text.startswith("int kept(int x)")


def test_the_chunk_worker_reads_files_as_the_chunker_does_and_outlives_a_hung_grammar():
    worker = ChunkWorker(deadline_s=1.0)
    try:
        ordinary = "class Store {\n    fun get(key: String) = rows[key]\n}\n"
        after = "def after(x):\n    return x\n"
        # Submitted ahead, answered in order; the file behind the hung one
        # goes to the next child.
        tickets = [worker.submit("Store.kt", ordinary), worker.submit("Hostile.kt", HANGS_KOTLIN),
                   worker.submit("after.py", after)]
        assert tickets[2].result() == chunker.chunk_file("after.py", after)
        assert tickets[0].result() == chunker.chunk_file("Store.kt", ordinary)
        hung = tickets[1].result()  # killed at the deadline, not waited for
        assert worker.restarts == 1 and {c.symbol_kind for c in hung.chunks} == {"window"}
        assert hung.unparsed == "parser hung or crashed" and tickets[0].result().unparsed is None
        assert hung.chunks[0].text.startswith("class A\n@A")
        # Never parsed again in this process: not by the worker, not by impact.
        assert languages.hazard(HANGS_KOTLIN) == UNPARSED_HAZARD
        assert worker.chunk("Copy.kt", HANGS_KOTLIN) == chunker.window_file("Copy.kt", HANGS_KOTLIN)
        assert SourceFile("Hostile.kt", HANGS_KOTLIN).tree is None
        assert worker.restarts == 1
        # A child that died between requests is replaced; nothing is lost.
        assert worker.chunk("Store.kt", ordinary) == chunker.chunk_file("Store.kt", ordinary)
        assert worker._process is not None
        worker._process.kill()
        worker._process.wait()
        assert worker.chunk("Store.kt", ordinary).symbols == chunker.chunk_file("Store.kt", ordinary).symbols
        assert worker.restarts == 1
    finally:
        worker.close()


class _StarvedChild(ChunkWorker):
    """A child that gets no CPU for its first 2.5 s of the clock (a machine
    loaded six times over its cores), then serves as every child does."""

    @staticmethod
    def _child_command(boot: str) -> list[str]:
        return [sys.executable, "-I", "-c", "import time; time.sleep(2.5); " + boot]


def test_a_chunk_worker_starved_of_cpu_is_waited_for_not_failed():
    """The deadline was the clock's: on a loaded machine a child that had
    barely run was killed at it, and its file marked "parser hung or
    crashed" for good (read as line windows, impact blind to it). The
    deadline counts the child's CPU time, within a bound of the clock."""
    worker = _StarvedChild(deadline_s=1.0)
    text = "def served_after_the_wait(x):\n    return x\n"
    try:
        assert worker.chunk("late.py", text) == chunker.chunk_file("late.py", text)
        assert worker.restarts == 0 and languages.hazard(text) is None
    finally:
        worker.close()


class _SignalledChild(ChunkWorker):
    """A child that gets SIGTERM and SIGHUP while it reads `stopped.py`, as
    every process of the daemon's group does when a service manager or
    `timeout` stops it (SIGTERM) or its terminal closes (SIGHUP)."""

    @staticmethod
    def _child_command(boot: str) -> list[str]:
        signalled = ("from ctxls.index import chunk_worker; import os, signal; read = chunk_worker.chunk_file; "
                     "chunk_worker.chunk_file = lambda path, text: (path == 'stopped.py' and [os.kill("
                     "os.getpid(), stop) for stop in (signal.SIGTERM, signal.SIGHUP)], read(path, text))[1]; ")
        return [sys.executable, "-I", "-c", boot.replace("from ctxls.index.chunk_worker import _serve; ",
                                                         signalled + "from ctxls.index.chunk_worker import _serve; ")]


def test_a_stop_signal_to_the_daemons_process_group_fails_no_file_of_the_chunk_worker():
    """The child died of a SIGTERM or SIGHUP sent to the daemon's whole
    group, which read as the parser crashing on its file: that file was
    stored as line windows ("parser hung or crashed") and, as an earlier
    process's give-up, kept so until it changed (no definitions in outline,
    symbols or impact). The daemon alone decides when its child ends."""
    worker = _SignalledChild(deadline_s=30.0)
    text = "def read_while_stopped(x):\n    return x\n"
    expected = chunker.chunk_file("stopped.py", text)
    try:
        parsed = worker.chunk("stopped.py", text)
        assert parsed == expected and parsed.unparsed is None
        assert worker.restarts == 0 and languages.hazard(text) is None
    finally:
        worker.close()


def test_a_chunk_workers_reply_may_hold_only_the_chunkers_records():
    import pickle

    hostile = pickle.dumps(ChunkWorker)  # any class but the chunker's records
    with pytest.raises(pickle.UnpicklingError):
        _ReplyUnpickler(io.BytesIO(hostile)).load()
    record = ParsedFile("python", [Chunk(None, "window", "code", "python", 0, 0, "x = 1", "h")])
    assert _ReplyUnpickler(io.BytesIO(pickle.dumps(record))).load() == record


def test_threads_sharing_the_chunk_worker_each_get_their_own_files_across_a_restart():
    """Requests of several threads interleave in one child; when it hangs on
    one file, the others' files (already sent) go to the next child."""
    import threading

    worker = ChunkWorker(deadline_s=1.0)
    texts = {f"mod{n}.py": f"def f{n}(x):\n    return x + {n}\n\n\nclass C{n}:\n    pass\n" for n in range(40)}
    got: dict[str, ParsedFile] = {}

    def chunk_some(names: list[str]) -> None:
        for name in names:
            got[name] = worker.chunk(name, texts[name])

    names = sorted(texts)
    threads = [threading.Thread(target=chunk_some, args=(names[i::4],)) for i in range(4)]
    try:
        hung = worker.submit("Hostile.kt", HANGS_KOTLIN + "// threads\n")
        for thread in threads:
            thread.start()
        assert {c.symbol_kind for c in hung.result().chunks} == {"window"}
        for thread in threads:
            thread.join(timeout=60)
        assert worker.restarts == 1
        assert got == {name: chunker.chunk_file(name, text) for name, text in texts.items()}
    finally:
        worker.close()



def test_a_file_sent_after_the_child_died_is_not_answered_with_another_files_reading():
    """The child died with a file in flight and another was sent before
    anyone read the first's answer: a new child got the second, and the
    first took its reading (the wrong file's chunks)."""
    worker = ChunkWorker(deadline_s=30.0)
    try:
        first = worker.submit("Hostile.kt", HANGS_KOTLIN + "// died\n")  # busy for seconds
        assert worker._process is not None
        worker._process.kill()
        worker._process.wait()
        after = "def after(x):\n    return x\n"
        second = worker.submit("after.py", after)
        assert second.result() == chunker.chunk_file("after.py", after)
        assert {c.symbol_kind for c in first.result().chunks} == {"window"}
        assert worker.restarts == 1
    finally:
        worker.close()


def test_a_chunk_worker_past_its_memory_bound_is_recycled_and_loses_no_file():
    """py-tree-sitter leaks what the deadline's read callback returns: the
    child leaves after a reply once past its bound; the files it had not
    answered go to the next child, as no failure (nothing marked hazardous)."""
    worker = ChunkWorker(recycle_bytes=1)  # past it after every reply
    texts = {f"mod{n}.py": f"def f{n}(x):\n    return x + {n}\n" for n in range(6)}
    try:
        tickets = {name: worker.submit(name, text) for name, text in texts.items()}  # all sent ahead
        assert {name: ticket.result() for name, ticket in tickets.items()} == {
            name: chunker.chunk_file(name, text) for name, text in texts.items()}
        assert worker.recycles >= 2 and worker.restarts == 0
        assert all(languages.hazard(text) is None for text in texts.values())
    finally:
        worker.close()


def test_a_chunk_workers_child_caps_its_address_space_and_marks_a_parse_past_the_deadline():
    """A grammar whose memory explodes (tree-sitter-kotlin's crash file grows
    ~0.8 GB/s) must abort the child, not take the machine; a text the child
    abandoned at the parse deadline is never parsed in the daemon, which
    parses without one."""
    from ctxls.index.chunk_worker import WORKER_ADDRESS_SPACE
    from ctxls.index.model import UNPARSED_DEADLINE

    worker = ChunkWorker()
    try:
        slow = SLOW_FOR_D + "// marked\n"
        assert worker.chunk("slow.d", slow).unparsed == UNPARSED_DEADLINE
        assert languages.hazard(slow) == UNPARSED_DEADLINE and worker.restarts == 0
        assert chunker.chunk_file("again.d", slow).unparsed == UNPARSED_DEADLINE  # not parsed again
        assert worker._process is not None
        limits = Path(f"/proc/{worker._process.pid}/limits").read_text()
        address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert address_space.split()[3:5] == [str(WORKER_ADDRESS_SPACE)] * 2
    finally:
        worker.close()


def test_the_daemon_parses_whole_sources_which_leak_nothing():
    """Outside the chunker's deadline, parse_source does not go through the
    read callback, whose every result py-tree-sitter 0.26.1 keeps alive
    (impact parsing django grew the daemon by ~50 MiB per round)."""
    import gc
    import tracemalloc

    parser = languages.parser_for("python")
    source = ("def f(x):\n    return x + 1\n" * 20_000).encode()
    tree = languages.parse_source(parser, source)  # parsers and grammars loaded first
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(10):
            tree = languages.parse_source(parser, source)
            assert tree.root_node.children[0].text == b"def f(x):\n    return x + 1"
        del tree
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert retained < len(source) // 4  # the callback kept about twice the source a parse


def test_a_reading_somebody_waits_on_never_queues_behind_a_pass(monkeypatch):
    """A buffer's or impact's reading goes to a second child while the
    pass's holds files (here one it hangs on for seconds); an idle pass
    child serves it itself (one child for an idle daemon)."""
    pass_worker, waited = ChunkWorker(deadline_s=30.0), ChunkWorker()
    monkeypatch.setitem(chunk_worker._workers, "pass", pass_worker)
    monkeypatch.setitem(chunk_worker._workers, "waited", waited)
    after = "def after(x):\n    return x\n"
    try:
        stuck = pass_worker.submit("Hostile.kt", HANGS_KOTLIN + "// lane\n")
        assert chunk_guarded("after.py", after) == chunker.chunk_file("after.py", after)
        assert stuck._result is None and waited._process is not None  # not resolved: not waited for
        assert {c.symbol_kind for c in stuck.result().chunks} == {"window"}
        assert not pass_worker.busy() and pass_worker._process is None
        assert chunk_guarded("again.py", after) == chunker.chunk_file("again.py", after)
        assert pass_worker._process is not None
    finally:
        pass_worker.close()
        waited.close()


def test_a_large_pass_leaves_no_child_holding_what_it_leaked(tmp_path, monkeypatch):
    """After a pass of a batch of files or more, the pass's child (holding what
    py-tree-sitter leaked on them) is stopped; a small pass keeps it."""
    from ctxls.index.engine import Engine, EngineOptions

    worker = ChunkWorker()
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    root = tmp_path / "repo"
    root.mkdir()
    for n in range(70):
        (root / f"mod{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n")
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "index.db")))
    try:
        engine.cold_index()
        assert worker._process is None and engine.status()["files"] == 70
        (root / "mod3.py").write_text("def g3(x):\n    return x * 3\n")
        engine.index()
        assert worker._process is not None  # one file: the child stays
        assert [d.symbol for d in engine.outline("mod3.py")] == ["g3"]
    finally:
        engine.close()
        worker.close()


def test_a_language_whose_grammar_gives_up_again_and_again_is_suspended(monkeypatch):
    """Each give-up costs a pass seconds; past a bound that language's other
    files are read as line windows at once (said as such), others parse on."""
    from ctxls.index.model import UNPARSED_SUSPENDED

    monkeypatch.setattr(languages, "GIVE_UPS_TO_SUSPEND", 2)  # give-ups start at 0 (conftest)
    worker = ChunkWorker()
    try:
        for n in range(2):
            assert worker.chunk(f"slow{n}.d", SLOW_FOR_D + f"// {n}\n").unparsed == "parse deadline"
        assert languages.suspended("d") and not languages.suspended("python")
        fine = "int twice(int x) { return 2 * x; }\n"
        read = worker.chunk("fine.d", fine)
        assert read.unparsed == UNPARSED_SUSPENDED and {c.symbol_kind for c in read.chunks} == {"window"}
        assert languages.hazard(fine) == UNPARSED_SUSPENDED  # impact will not parse it in the daemon
        after = "def after(x):\n    return x\n"
        assert worker.chunk("after.py", after) == chunker.chunk_file("after.py", after)
    finally:
        worker.close()


def test_a_long_run_of_python_comment_lines_keeps_the_files_definitions():
    """tree-sitter-python's parse time grows with the square of a run of
    comment-only lines (8,000: 1.9 s): a file with a large commented-out
    block ran past the parse deadline and lost every definition to line
    windows. Such a run is parsed as spaces (languages.parse_view); the
    definitions around it keep their lines, and impact still reads calls."""
    from ctxls.index.languages import parse_view

    block = "# old_code(1)\n" * 20_000
    text = ("def before_the_block():\n    return 1\n\n" + block
            + "def after_the_block():\n    # kept: a short run\n    return before_the_block()\n")
    parsed = chunk_file("legacy.py", text)
    assert parsed.unparsed is None
    assert [(s.symbol, s.start_line) for s in parsed.symbols] == [
        ("before_the_block", 0), ("after_the_block", 20_003)]
    source = text.encode()
    view = parse_view("python", source)
    assert len(view) == len(source) and view.count(b"\n") == source.count(b"\n")
    assert b"old_code" not in view and b"# kept: a short run" in view
    assert parse_view("ruby", source) is source  # only Python's grammar needs it
    # Blank lines between the comments, and a run that ends the file.
    tail = chunk_file("tail.py", "def only_one():\n    return 1\n" + "# c\n\n" * 20_000)
    assert tail.unparsed is None and [s.symbol for s in tail.symbols] == ["only_one"]


def test_a_class_header_leads_its_members_not_the_short_function_before_it() -> None:
    # Rule 3 (runs of short siblings) took the header into the function's
    # chunk and left its members to the next: a 1-line header for the class.
    text = source(
        """
        def helper_one(x):
            \"\"\"convert one\"\"\"
            return x


        class PaymentGateway:
            def charge(self):
                return 1

            def refund(self):
                return 0
        """
    )
    parsed = chunk_file("svc.py", text)
    assert_well_formed(text, parsed)
    assert [(c.symbol, c.start_line, c.end_line) for c in parsed.chunks] == [
        ("helper_one", 0, 2), ("PaymentGateway", 5, 10)]
    ts = ("export function helperOne(x: number): number {\n  return x;\n}\n\n"
          "export class CartService {\n  addItem(id: string): void {\n    console.log(id);\n  }\n}\n")
    chunks = chunk_file("shop.ts", ts).chunks
    cart = next(c for c in chunks if "CartService" in c.names)
    assert cart.symbol == "CartService" and "CartService.addItem" in cart.names
    assert "helperOne" not in cart.names
    # Short siblings of one scope still read as one chunk.
    runs = chunk_file("ops.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\n"
                                "def c():\n    return 3\n").chunks
    assert [c.names for c in runs] == [("a", "b", "c")]


# A container whose last member is a method, followed by another container:
# its closing line(s) were residue of closing lines only, left in no chunk.
CLOSED_CONTAINERS = {
    "a.ts": "export class A {\n  x = 1;\n  f() {\n    return 1;\n  }\n}\n\n"
            "export class B {\n  g() {\n    return 2;\n  }\n}\n",
    "a.js": "class A {\n  f() {\n    return 1;\n  }\n}\n\nclass B {\n  g() {\n    return 2;\n  }\n}\n",
    "A.java": "class A {\n  int f() {\n    return 1;\n  }\n}\n\nclass B {\n  int g() {\n    return 2;\n  }\n}\n",
    "A.cs": "namespace N {\n  class A {\n    int F() {\n      return 1;\n    }\n  }\n\n"
            "  class B {\n    int G() {\n      return 2;\n    }\n  }\n}\n",
    "a.php": "<?php\nclass A {\n  function f() {\n    return 1;\n  }\n}\n\n"
             "class B {\n  function g() {\n    return 2;\n  }\n}\n",
    "a.rs": "struct A;\n\nimpl A {\n    fn f(&self) -> i32 {\n        1\n    }\n}\n\n"
            "impl B {\n    fn g(&self) -> i32 {\n        2\n    }\n}\n",
    "a.rb": "class A\n  def f\n    1\n  end\nend\n\nclass B\n  def g\n    2\n  end\nend\n",
}


@pytest.mark.parametrize("path", sorted(CLOSED_CONTAINERS))
def test_a_containers_closing_line_ends_its_last_chunk(path: str) -> None:
    """Every non-blank line is in some chunk, packed or not: a container's
    closing `}`/`end` ends the chunk before it, so a container's chunks
    reach its last line (the end of its outline range)."""
    text = CLOSED_CONTAINERS[path]
    lines = split_lines(text)
    for parsed in (definition_chunks(path, text), chunk_file(path, text)):
        assert_well_formed(text, parsed)
        covered = {row for chunk in parsed.chunks for row in range(chunk.start_line, chunk.end_line + 1)}
        assert [row for row, line in enumerate(lines) if line.strip() and row not in covered] == []
        # A closing line is read with what it closes, never as a chunk of its own.
        for container in (d for d in parsed.symbols if d.body_end > d.end_line):
            assert any(chunk.start_line < container.body_end <= chunk.end_line
                       for chunk in parsed.chunks), container
        # Chunks never overlap (a part of a long piece aside, none here).
        rows = [(chunk.start_line, chunk.end_line) for chunk in parsed.chunks]
        assert all(end < next_start for (_, end), (next_start, _) in zip(rows, rows[1:]))
    packed = chunk_file(path, text).chunks
    assert packed[-1].end_line == len(lines) - 1 and packed[-1].text.rstrip().endswith(("}", "end"))


def test_c_prototypes_at_file_or_namespace_scope_are_definitions_unless_the_file_defines_them() -> None:
    """A header that is an API surface (its .c files elsewhere) declares its
    functions only: those prototypes are its definitions. A pointer to a
    function is a variable, a class body's declaration its class's, and a
    forward declaration in a file that defines the function adds nothing."""
    header = source(
        """
        #ifndef STRBUF_H
        #define STRBUF_H
        extern void strbuf_append(strbuf *sb, const char *fmt, ...);
        char *strbuf_detach(strbuf *sb);
        struct strbuf *strbuf_new(void);
        int (*strbuf_hook)(strbuf *sb);
        extern int strbuf_count;
        #endif
        """
    )
    assert [(s.symbol, s.symbol_kind, s.start_line, s.end_line)
            for s in definition_chunks("src/strbuf.h", header).symbols] == [
        ("strbuf_append", "function", 2, 2), ("strbuf_detach", "function", 3, 3), ("strbuf_new", "function", 4, 4)]
    cpp = source(
        """
        namespace geo {
        class Outer {
        public:
            Outer();
            ~Outer();
            int size() const;
        };
        double distance(const Outer& a, const Outer& b);
        }
        extern "C" {
        void geo_init(void);
        }
        """
    )
    assert [(s.symbol, s.symbol_kind) for s in definition_chunks("include/geo/outer.h", cpp).symbols] == [
        ("geo", "namespace"), ("geo.Outer", "class"), ("geo.distance", "function"), ("geo_init", "function")]
    forward = source(
        """
        static void grow(strbuf *sb, int needed);
        void strbuf_reset(strbuf *sb) { grow(sb, 0); }
        static void grow(strbuf *sb, int needed) { sb->len = needed; }
        """
    )
    check("src/strbuf.c", forward, [(None, "module", 0, 0), ("strbuf_reset", "function", 1, 1),
                                    ("grow", "function", 2, 2)])


def test_a_c_prototype_with_an_attribute_macro_the_grammar_cannot_place_is_a_definition() -> None:
    # An attribute macro after the parameters, or one on the line above, is a
    # syntax error to the grammar: the declarator inside it still declares.
    attributed = source(
        """
        #ifdef __cplusplus
        extern "C" {
        #endif
        GLIB_AVAILABLE_IN_ALL
        void g_print (const gchar *format, ...) G_GNUC_PRINTF (1, 2);
        GLIB_AVAILABLE_IN_ALL
        gboolean g_str_has_prefix (const gchar *str, const gchar *prefix);
        #ifdef __cplusplus
        }
        #endif
        """
    )
    assert [(s.symbol, s.line) for s in definition_chunks("glib/gmessages.h", attributed).symbols] == [
        ("g_print", 4), ("g_str_has_prefix", 6)]


def test_an_indented_statement_the_reparse_reads_at_file_level_is_no_prototype() -> None:
    # A column-0 `#endif` inside a test macro's body restarts the parse there:
    # the indented statements after it are read at the file's level, and a
    # variable built from arguments (`Json j(…);`) reads as a prototype.
    cut_body = source(
        """
        TEST_CASE_TEMPLATE("element access", Json, nlohmann::json)
        {
            SECTION("object")
            {
        #ifdef JSON_HAS_CPP_17
                CHECK_THROWS_WITH_AS(j.at("foo"), "not found", typename Json::out_of_range&);
        #endif
                Json j_nonobject(Json::value_t::null);
                CHECK(j_nonobject.is_null());
            }
        }
        """
    )
    assert definition_chunks("tests/src/unit-element_access2.cpp", cut_body).symbols == []


def test_a_pre_ansi_prototype_macro_is_no_function_of_its_name() -> None:
    """zlib's `ZEXTERN const char * ZEXPORT zlibVersion OF((void));` (BSD's
    `__P((…))`, Tcl's `_ANSI_ARGS_((…))`): the grammar reads the macro as
    the declared function, so seven of zlib.h's prototypes were listed as
    functions named `OF`. The declared name stands outside the declarator:
    such a prototype lists nothing, as before prototypes were listed."""
    header = source(
        """
        #include "zconf.h"
        ZEXTERN const char * ZEXPORT zlibVersion OF((void));
        ZEXTERN int ZEXPORT deflate OF((z_streamp strm, int flush));
        int __P((int)) legacy_call;
        extern int plain_call(int flush);
        """
    )
    assert [s.symbol for s in definition_chunks("include/z.h", header).symbols] == ["plain_call"]
