"""Names the language or its standard library provides: they are never
callees of the indexed code, and a method call on a receiver of unknown type
with one of these names is more likely the builtin's, so it never confirms
by name alone."""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextvars
import datetime
import email.message
import http.client
import io
import logging
import pathlib
import queue
import re
import socket
import ssl
import subprocess
import threading

_PYTHON_BUILTIN_TYPES = (
    dict, list, str, bytes, bytearray, set, frozenset, tuple, int, float, object,
    io.TextIOWrapper, io.BufferedReader, io.StringIO, io.BytesIO,
    # The standard library's everyday objects.
    collections.deque, collections.OrderedDict, collections.Counter, threading.Event,
    threading.Thread, threading.Condition, type(threading.Lock()), queue.Queue, socket.socket,
    logging.Logger, pathlib.Path, type(re.compile("")), type(re.match("", "")), datetime.datetime,
    subprocess.Popen, asyncio.Future, asyncio.Task, asyncio.Event, asyncio.Queue,
    asyncio.AbstractEventLoop, contextvars.ContextVar, http.client.HTTPResponse,
    email.message.Message, ssl.SSLSocket, ssl.SSLObject, ssl.SSLContext, http.client.HTTPConnection)
BUILTIN_METHODS: dict[str, frozenset[str]] = {
    "python": frozenset(name for t in _PYTHON_BUILTIN_TYPES for name in dir(t)),
    "js": frozenset("""
        toString valueOf hasOwnProperty constructor call apply bind then catch finally
        push pop shift unshift slice splice concat join reverse sort indexOf lastIndexOf
        includes find findIndex filter map forEach reduce reduceRight some every flat flatMap
        keys values entries fill at get set has delete clear add size length split replace
        replaceAll trim trimStart trimEnd startsWith endsWith toLowerCase toUpperCase
        padStart padEnd repeat match matchAll search charAt charCodeAt substring substr
        toFixed assign freeze create next return throw emit on off once addEventListener
        removeEventListener dispatchEvent querySelector querySelectorAll json text send
        write end close open read log error warn info debug
        union intersection difference symmetricDifference isSubsetOf isSupersetOf isDisjointFrom
    """.split()),
    "go": frozenset("""
        Error String Read Write Close Len Less Swap Lock Unlock RLock RUnlock Done Wait Add
        Get Set Del Load Store Delete Range Seek Flush ReadFrom WriteTo ServeHTTP Next Err
        Value Deadline Do Scan Format Unwrap Is As Reset Bytes Sum Sort
    """.split()),
    "generic": frozenset(),
}
BUILTIN_FUNCTIONS: dict[str, frozenset[str]] = {
    "python": frozenset(dir(builtins)),
    "js": frozenset("""
        require parseInt parseFloat isNaN isFinite setTimeout clearTimeout setInterval
        clearInterval setImmediate queueMicrotask structuredClone fetch encodeURIComponent
        decodeURIComponent encodeURI decodeURI String Number Boolean Array Object Promise Map
        Set WeakMap WeakSet Symbol Error TypeError RangeError Date RegExp JSON Math Reflect
        Proxy BigInt console alert
    """.split()),
    "go": frozenset("""
        append cap clear close complex copy delete imag len make max min new panic print
        println real recover string int int64 int32 uint uint64 byte rune float64 float32
        bool error any
    """.split()),
    "generic": frozenset(),
}
