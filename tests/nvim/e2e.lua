-- Headless end-to-end test of the ctxls Neovim plugin against the real server.
-- Run by tests/test_nvim_plugin.py, which reads the JSON written to
-- $CTXLS_TEST_RESULT: { passed = [name], failed = [{ name, error }], notifications = [str],
--   shown = { impact = str, lens = str } (what the commands suite showed for send_prepared) }.
--
-- Environment:
--   CTXLS_TEST_REPO    fixture repository (tests/conftest.py SAMPLE_FILES)
--   CTXLS_TEST_PYTHON  interpreter that runs `-m ctxls.daemon.cli serve`
--   CTXLS_TEST_SUITE   "commands" (every command, via vim.lsp.enable),
--                      "roots" (one client per root, via the plugin's own autocmd),
--                      "defaults" (the documented setup(): init_options, progress),
--                      "symbols" (document and workspace symbols),
--                      "store" (a store that cannot be used: health says so),
--                      "model" (an embedding model that cannot load: health says so),
--                      "missing" (no server executable) or
--                      "lifecycle" (commands while the server starts, restarts or has died)
--   CTXLS_TEST_OTHER_REPO, CTXLS_TEST_LOOSE_FILE  only for the "roots" suite
--   CTXLS_TEST_BAD_MODEL, CTXLS_TEST_BAD_TOKENIZER  only for the "model" suite
local repo = assert(os.getenv("CTXLS_TEST_REPO"))
local python = assert(os.getenv("CTXLS_TEST_PYTHON"))
local result_path = assert(os.getenv("CTXLS_TEST_RESULT"))
local suite = assert(os.getenv("CTXLS_TEST_SUITE"))

local results = { passed = {}, failed = {}, notifications = {}, shown = vim.empty_dict() }

-- Errors from the plugin's request handlers arrive as notifications: keep them
-- for the report (and so headless Neovim does not print them).
vim.notify = function(message)
  table.insert(results.notifications, message)
end

local function finish()
  local file = assert(io.open(result_path, "w"))
  file:write(vim.json.encode(results))
  file:close()
  vim.cmd(#results.failed == 0 and "qall!" or "cquit 1")
end

--- Poll `predicate` until it returns a value (not nil/false); fail after `timeout_ms`.
local function wait_for(what, timeout_ms, predicate)
  local value
  local done = vim.wait(timeout_ms, function()
    value = predicate()
    return value ~= nil and value ~= false
  end, 20)
  if not done then
    error(("timed out after %d ms waiting for %s"):format(timeout_ms, what), 2)
  end
  return value
end

local function expect(condition, message, ...)
  if not condition then
    error(message:format(...), 2)
  end
end

local function real(path)
  return vim.uv.fs_realpath(path) or path
end

local function ends_with(text, suffix)
  return text:sub(-#suffix) == suffix
end

local function item_path(item)
  return real(vim.api.nvim_buf_get_name(item.bufnr))
end

local function describe_items(items)
  return vim.inspect(vim.tbl_map(function(item)
    return ("%s:%d %s"):format(vim.fn.fnamemodify(item_path(item), ":t"), item.lnum, item.text)
  end, items))
end

--- Run a command that fills the quickfix list; return the new list once its
--- title starts with `title` (a weak recall adds " (weak: …)" to it).
local function quickfix_from(command, title)
  local previous = vim.fn.getqflist({ id = 0 }).id
  vim.cmd(command)
  local list = wait_for(command .. " to fill the quickfix list", 5000, function()
    local list = vim.fn.getqflist({ id = 0, title = 1, items = 1 })
    return list.id ~= previous and list.title:sub(1, #title) == title and list
  end)
  vim.cmd("cclose") -- back to the file window
  return list.items
end

local function find_item(items, path_suffix, lnum, text_pattern)
  for _, item in ipairs(items) do
    if ends_with(item_path(item), path_suffix) and item.lnum == lnum and item.text:match(text_pattern) then
      return item
    end
  end
end

local function attached_client(bufnr)
  return wait_for("the ctxls client to attach", 10000, function()
    local client = vim.lsp.get_clients({ name = "ctxls", bufnr = bufnr })[1]
    return client and client.initialized and client
  end)
end

local function wait_indexed(client)
  return wait_for("ctxls/status to report the index finished", 20000, function()
    local response = client:request_sync("ctxls/status", vim.empty_dict(), 1000)
    local status = response and response.result
    return status and not status.indexing and status
  end)
end

--- Run `fn` as the named step unless an earlier step failed: later steps build
--- on earlier ones.
local function step(name, fn)
  if #results.failed > 0 then
    return
  end
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    table.insert(results.passed, name)
  else
    table.insert(results.failed, { name = name, error = err })
  end
end

local server_cmd = { python, "-m", "ctxls.daemon.cli", "serve" }
local session_path = repo .. "/pkg/session.py"

local function commands_suite()
  local session_buf, client
  require("ctxls").setup({ cmd = server_cmd, init_options = { debounceMs = 50 } })

  step("attach: vim.lsp.enable starts the server for a file in the repository", function()
    vim.cmd.edit(session_path)
    session_buf = vim.api.nvim_get_current_buf()
    client = attached_client(session_buf)
    expect(real(client.root_dir) == real(repo), "root_dir %s, expected %s", client.root_dir, repo)
    expect(client.config.init_options.debounceMs == 50, "init_options not passed on")
    wait_indexed(client)
  end)

  step(":CtxRecall puts the hits in the quickfix list", function()
    local items = quickfix_from("CtxRecall send prepared request", "ctxls recall: send prepared request")
    -- `def send_prepared` is line 16 of pkg/session.py.
    expect(
      find_item(items, "pkg/session.py", 16, "^send_prepared$"),
      "send_prepared at pkg/session.py:16 is not among the hits: %s",
      describe_items(items)
    )
  end)

  step(":CtxRecall! picks with vim.ui.select and jumps to the hit", function()
    local offered
    vim.ui.select = function(hits, opts, on_choice)
      offered = vim.tbl_map(opts.format_item, hits)
      for index, label in ipairs(offered) do
        if label:match("^retry_upload ") then
          return on_choice(hits[index], index)
        end
      end
      on_choice(nil, nil)
    end
    vim.cmd("CtxRecall! retry upload")
    -- The hit is the chunk that starts at the import packed with the function.
    wait_for("a jump to pkg/retry.py:1", 5000, function()
      return ends_with(vim.api.nvim_buf_get_name(0), "pkg/retry.py") and vim.api.nvim_win_get_cursor(0)[1] == 1
    end)
    expect(vim.tbl_contains(offered, "retry_upload  pkg/retry.py:1"), "labels: %s", vim.inspect(offered))
    vim.cmd.buffer(session_buf)
  end)

  step(":CtxRecent lists an unsaved edit with its symbol's line", function()
    -- Line 13 is the body of Session.close (`def close` is line 12).
    vim.api.nvim_buf_set_lines(session_buf, 12, 13, false, { "        self.closed = bool(1)" })
    local items
    wait_for("Session.close to be the newest recent activity", 10000, function()
      items = quickfix_from("CtxRecent", "ctxls recent activity")
      return items[1] and find_item({ items[1] }, "pkg/session.py", 12, "^Session%.close · %d+ edits? · ")
    end)
  end)

  step(":CtxImpact puts the callers of the symbol under the cursor in the quickfix list", function()
    vim.api.nvim_win_set_cursor(0, { 16, 4 }) -- on `send_prepared` in its definition
    local items = quickfix_from("CtxImpact", "ctxls impact: send_prepared")
    -- Session.request calls it on line 10.
    expect(
      find_item(items, "pkg/session.py", 10, "^called from Session%.request: return send_prepared%("),
      "Session.request is not among the callers: %s",
      describe_items(items)
    )
    local messages = vim.fn.execute("messages")
    expect(messages:match("ctxls impact of send_prepared: risk %a+ · 1 caller"), "risk not echoed: %s", messages)
    -- A message wider than the command line, or of several lines, makes Neovim
    -- ask "Press ENTER": the echo must be one line that fits.
    local last = vim.split(vim.trim(messages), "\n")
    last = last[#last]
    expect(last:match("^ctxls impact of send_prepared"), "the impact summary is not one line: %q", messages)
    results.shown.impact = last
    expect(vim.fn.strdisplaywidth(last) <= vim.v.echospace, "%q is wider than %d", last, vim.v.echospace)
  end)

  step("code lenses show caller counts on definitions", function()
    expect(client.server_capabilities.codeLensProvider, "the server does not advertise codeLensProvider")
    local lens = wait_for("a resolved lens on send_prepared (line 16)", 5000, function()
      for _, lens in ipairs(vim.lsp.codelens.get(session_buf)) do
        if lens.range.start.line == 15 and lens.command and lens.command.title:match("caller") then
          return lens
        end
      end
    end)
    results.shown.lens = lens.command.title
    local namespace = vim.lsp.codelens.__namespaces[client.id]
    wait_for("the lens to be drawn as virtual text", 5000, function()
      local marks = vim.api.nvim_buf_get_extmarks(session_buf, namespace, { 15, 0 }, { 15, -1 }, { details = true })
      return marks[1] and marks[1][4].virt_text[1][1] == lens.command.title
    end)
    -- Running the lens shows the impact, through the plugin's client command.
    vim.api.nvim_win_set_cursor(0, { 16, 0 })
    local items = quickfix_from("lua vim.lsp.codelens.run()", "ctxls impact: send_prepared")
    local callers = vim.tbl_filter(function(item)
      return item.bufnr ~= 0
    end, items)
    expect(#callers == 1, "the lens's impact has %d callers, expected 1", #callers)
  end)

  step(":CtxLocate reads a traceback from selected lines or the last yank", function()
    local traceback = {
      "Traceback (most recent call last):",
      '  File "/srv/app/main.py", line 9, in <module>',
      "    retry_upload(data)",
      '  File "/srv/app/pkg/retry.py", line 6, in retry_upload',
      "    if Session().request('PUT', payload):",
      '  File "/srv/app/pkg/session.py", line 10, in request',
      "    return send_prepared(method, url, self.timeout)",
      "TypeError: send_prepared() missing 1 required positional argument: 'timeout'",
    }
    vim.cmd.enew() -- a scratch buffer outside the repository, as a pasted report is
    vim.api.nvim_buf_set_lines(0, 0, -1, false, traceback)
    local items = quickfix_from("1,$CtxLocate", "ctxls locate")
    -- The deepest frame inside the repository first, at its line.
    expect(
      items[1] and find_item({ items[1] }, "pkg/session.py", 10, "^%d+%.%d%d frame: .*pkg/session%.py:10 in request"),
      "pkg/session.py:10 is not the first file: %s",
      describe_items(items)
    )
    expect(find_item(items, "pkg/retry.py", 6, "frame: "), "pkg/retry.py:6 is not listed: %s", describe_items(items))
    vim.fn.setreg('"', table.concat(traceback, "\n"))
    local yanked = quickfix_from("CtxLocate", "ctxls locate")
    -- The same places; the scores may differ, as the embedding worker can
    -- finish between the two requests and add the semantic signal.
    local function places(list)
      return vim.inspect(vim.tbl_map(function(item)
        return ("%s:%d"):format(item_path(item), item.lnum)
      end, list))
    end
    expect(places(yanked) == places(items), "the last yank located %s, the selection %s",
      describe_items(yanked), describe_items(items))
    vim.cmd.buffer(session_buf)
  end)

  step(":[range]CtxLocate {text} locates the text, not the lines", function()
    vim.cmd.enew()
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { '  File "/srv/app/pkg/retry.py", line 6, in retry_upload' })
    local items = quickfix_from('1CtxLocate File "/srv/app/pkg/session.py", line 13, in close', "ctxls locate")
    expect(items[1] and find_item({ items[1] }, "pkg/session.py", 13, "frame: .*pkg/session%.py:13 in close"),
      "pkg/session.py:13 is not the first file: %s", describe_items(items))
    expect(not find_item(items, "pkg/retry.py", 6, "frame: "), "the line's frame was located: %s",
      describe_items(items))
    vim.cmd.buffer(session_buf)
  end)

  step(":CtxRemember writes a fact that :CtxRecall finds", function()
    vim.cmd("CtxRemember the deploy fails when FOO_URL is unset")
    wait_for("the remembered notification", 5000, function()
      return vim.tbl_contains(results.notifications, "ctxls: remembered: the deploy fails when FOO_URL is unset")
    end)
    local items = quickfix_from("CtxRecall FOO_URL deploy", "ctxls recall: FOO_URL deploy")
    expect(
      vim.iter(items):any(function(item)
        return item.text == "[fact] the deploy fails when FOO_URL is unset" and item.bufnr == 0
      end),
      "the fact is not recalled: %s",
      vim.inspect(items)
    )
  end)

  step(":checkhealth ctxls reports the executable, version, client and index", function()
    vim.cmd("checkhealth ctxls")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("tabclose")
    for _, expected in ipairs({
      "OK server executable: ",
      "OK version: ctxls ",
      "OK client %d+ %(root ",
      "OK index: %d+ files, %d+ chunks, %d+ vectors, %d+ pending",
    }) do
      expect(report:match(expected), "%q missing from the health report:\n%s", expected, report)
    end
    expect(not report:match("ERROR"), "health report has errors:\n%s", report)
  end)

  step(":CtxRestart stops the server and starts a new one for the open buffers", function()
    vim.cmd.buffer(session_buf)
    local old = client
    -- The old server's last word: its first index stored the files ("N new").
    -- The one progress item ends once ranking by meaning sees every chunk.
    local before = wait_for("the first index's last word", 10000, function()
      local line = require("ctxls").statusline()
      return line:match("^ctxls: ready; indexed 5 files %([1-5] new") and line
    end)
    vim.cmd("CtxRestart")
    local shown = { require("ctxls").statusline() }
    client = wait_for("a new client attached to pkg/session.py", 10000, function()
      table.insert(shown, require("ctxls").statusline())
      local attached = vim.lsp.get_clients({ name = "ctxls", bufnr = session_buf })[1]
      return attached and attached.id ~= old.id and attached.initialized and attached
    end)
    expect(old:is_stopped(), "the old client %d still runs", old.id)
    expect(vim.tbl_contains(results.notifications, "ctxls: restarted (1 server(s) stopped)"), "no restart notice")
    -- The new server's own first pass (the index is stored: nothing new) ends the list.
    wait_for("the new server's index in the statusline", 20000, function()
      local line = require("ctxls").statusline()
      table.insert(shown, line)
      return line:match("^ctxls: ready; indexed 5 files %(0 new")
    end)
    for _, line in ipairs(shown) do
      expect(line ~= before, "the old server's progress after :CtxRestart: %s", vim.inspect(shown))
    end
    local items = quickfix_from("CtxRecall send prepared request", "ctxls recall: send prepared request")
    expect(find_item(items, "pkg/session.py", 16, "^send_prepared$"), "items: %s", describe_items(items))
  end)
end

local function defaults_suite()
  local statuslines = {}
  -- The documented setup: no init_options, so the plugin's default `{}`.
  require("ctxls").setup({ cmd = server_cmd })
  -- Registered after the plugin's own LspProgress handler: sees its result.
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function()
      table.insert(statuslines, require("ctxls").statusline())
    end,
  })
  local client

  step("init_options default to an empty JSON object, accepted without a warning", function()
    vim.cmd.edit(session_path)
    client = attached_client(0)
    expect(vim.json.encode(client.config.init_options) == "{}", "init_options encode as %s",
      vim.json.encode(client.config.init_options))
    wait_indexed(client)
    for _, message in ipairs(results.notifications) do
      expect(not message:match("initializationOptions"), "the server warned: %s", message)
    end
  end)

  step("progress shows in the statusline helper and the message area", function()
    local final = wait_for("the statusline to say ready", 10000, function()
      local line = require("ctxls").statusline()
      return line:match("^ctxls: ready; indexed %d+ files") and line
    end)
    expect(final:match("^ctxls: ready; indexed 5 files"), "statusline: %s", final)
    expect(vim.iter(statuslines):any(function(line)
      return line:match("^ctxls: indexing %d+%%") ~= nil
    end), "no progress in the statusline while indexing: %s", vim.inspect(statuslines))
    local messages = vim.fn.execute("messages")
    expect(messages:match("ctxls: ready; indexed 5 files"), "no message when indexing ended: %s", messages)
  end)
end

--- The item of an `on_list` list (filename, lnum, text) at path_suffix:lnum naming `name`.
local function listed_at(items, path_suffix, lnum, name)
  for _, item in ipairs(items) do
    if ends_with(real(item.filename), path_suffix) and item.lnum == lnum and item.text:find(name, 1, true) then
      return item
    end
  end
end

local function describe_listed(items)
  return vim.inspect(vim.tbl_map(function(item)
    return ("%s:%d %s"):format(vim.fn.fnamemodify(item.filename, ":t"), item.lnum, item.text)
  end, items))
end

--- Neovim's own symbol requests answered by ctxls's definition table.
local function symbols_suite()
  require("ctxls").setup({ cmd = server_cmd })
  local client

  step("vim.lsp.buf.document_symbol lists the file's definitions at their lines", function()
    vim.cmd.edit(session_path)
    client = attached_client(0)
    wait_indexed(client)
    local listed
    vim.lsp.buf.document_symbol({ on_list = function(list) listed = list.items end })
    wait_for("the document symbols", 5000, function() return listed end)
    -- `class Session` is line 4, `def request` line 9, `def send_prepared` line 16.
    for _, want in ipairs({ { 4, "Session" }, { 9, "request" }, { 16, "send_prepared" } }) do
      expect(listed_at(listed, "pkg/session.py", want[1], want[2]), "%s not at line %d: %s",
        want[2], want[1], describe_listed(listed))
    end
  end)

  step("vim.lsp.buf.workspace_symbol finds a definition by part of its name", function()
    local listed
    vim.lsp.buf.workspace_symbol("retry_up", { on_list = function(list) listed = list.items end })
    wait_for("the workspace symbols", 5000, function() return listed end)
    expect(#listed == 1 and listed_at(listed, "pkg/retry.py", 4, "retry_upload"),
      "retry_upload is not the one symbol at pkg/retry.py:4: %s", describe_listed(listed))
  end)

  step(":CtxRecent puts a decorated function at its def line, below its comments and decorator", function()
    -- Its DocumentSymbol range starts at the comment (line 4); the item sat there.
    vim.fn.writefile({ "import functools", "", "", "# Computes the total.", "# Second comment line.",
      "@functools.lru_cache", "def decorated_total(x):", "    return x", "" }, repo .. "/pkg/deco.py")
    vim.cmd.edit(repo .. "/pkg/deco.py")
    wait_indexed(attached_client(0))
    vim.api.nvim_buf_set_lines(0, 7, 8, false, { "    return x + 1" })
    local items
    wait_for("decorated_total to be the newest recent activity", 10000, function()
      items = quickfix_from("CtxRecent", "ctxls recent activity")
      return items[1] and items[1].text:match("^decorated_total ")
    end)
    expect(find_item({ items[1] }, "pkg/deco.py", 7, "^decorated_total · %d+ edits? · "), "items: %s",
      describe_items(items))
  end)
end

local function missing_suite()
  require("ctxls").setup({ cmd = { "/nonexistent/bin/ctxls", "serve" } })

  step("setup() says the executable is missing and starts nothing", function()
    vim.cmd.edit(session_path)
    vim.wait(300) -- nothing to poll for: give a wrongly started client time to attach
    expect(#vim.lsp.get_clients({ name = "ctxls" }) == 0, "a client was started")
    local said = results.notifications[1] or ""
    expect(said:match('server executable "/nonexistent/bin/ctxls" not found'), "notifications: %s",
      vim.inspect(results.notifications))
  end)

  step("commands name the missing executable, not setup()", function()
    results.notifications = {}
    vim.cmd("CtxRecall anything")
    vim.cmd("CtxRestart")
    expect(#results.notifications == 2, "notifications: %s", vim.inspect(results.notifications))
    for _, message in ipairs(results.notifications) do
      expect(message:match('server executable "/nonexistent/bin/ctxls" not found'), "said: %s", message)
      expect(not message:match("no server running") and not message:match("call setup"), "blames setup(): %s", message)
    end
  end)
end

local function store_suite()
  -- A store that cannot be made (its folder is a file): the index cannot be
  -- used or updated, and health says so instead of "ok".
  require("ctxls").setup({ cmd = server_cmd, init_options = { dbPath = repo .. "/README.md/index.db" } })

  step(":checkhealth ctxls reports an index that cannot be updated as an error", function()
    vim.cmd.edit(session_path)
    attached_client(0)
    vim.cmd("checkhealth ctxls")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("tabclose")
    expect(report:match("ERROR index: %d+ files.-: the index cannot be updated: index store .-README%.md/index%.db"),
      "no index error in the health report:\n%s", report)
  end)
end

local function model_suite()
  -- A model and tokenizer that cannot load: the fast tier ranks by meaning
  -- instead. :checkhealth said "embeddings: off, recall is lexical only".
  require("ctxls").setup({
    cmd = server_cmd,
    init_options = {
      embedModel = assert(os.getenv("CTXLS_TEST_BAD_MODEL")),
      embedTokenizer = assert(os.getenv("CTXLS_TEST_BAD_TOKENIZER")),
    },
  })

  step(":checkhealth ctxls names a model that could not load and the tier ranking by meaning", function()
    vim.cmd.edit(session_path)
    local client = attached_client(0)
    wait_for("the fast tier to serve", 20000, function()
      local response = client:request_sync("ctxls/status", vim.empty_dict(), 1000)
      local embeddings = response and response.result and response.result.embeddings
      return embeddings and embeddings.serving == "fast"
    end)
    vim.cmd("checkhealth ctxls")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("tabclose")
    expect(report:match("WARNING embeddings: the model could not load: cannot load the tokenizer .-bad%.json.-; "
      .. "the fast tier %(ctxls%-code%-static%-256%) ranks by meaning"), "health report:\n%s", report)
    expect(not report:match("lexical only"), "health report:\n%s", report)
  end)
end

local function roots_suite()
  local other_repo = assert(os.getenv("CTXLS_TEST_OTHER_REPO"))
  local loose_file = assert(os.getenv("CTXLS_TEST_LOOSE_FILE"))
  local first
  require("ctxls").setup({ cmd = server_cmd, native_enable = false, codelens = false })

  step("attach: the plugin's autocmd starts the server for a file in the repository", function()
    vim.cmd.edit(session_path)
    first = attached_client(0)
    expect(real(first.root_dir) == real(repo), "root_dir %s, expected %s", first.root_dir, repo)
    vim.cmd.edit(repo .. "/pkg/retry.py")
    expect(attached_client(0).id == first.id, "a second file of the same root started a second client")
  end)

  step("another repository gets its own client", function()
    vim.cmd.edit(other_repo .. "/notes.md")
    local second = attached_client(0)
    expect(
      second.id ~= first.id and real(second.root_dir) == real(other_repo),
      "root_dir %s, expected a new client for %s",
      second.root_dir,
      other_repo
    )
  end)

  step("a file outside every repository gets no client", function()
    vim.cmd.edit(loose_file)
    vim.wait(300) -- nothing to poll for: give a wrongly started client time to attach
    expect(#vim.lsp.get_clients({ bufnr = 0 }) == 0, "a client attached to %s", loose_file)
  end)

  step(":CtxRecall from a buffer without a client uses the previous window's client", function()
    wait_indexed(first)
    vim.cmd.edit(session_path)
    vim.cmd.split(loose_file)
    local items = quickfix_from("CtxRecall send prepared request", "ctxls recall: send prepared request")
    expect(find_item(items, "pkg/session.py", 16, "^send_prepared$"), "items: %s", describe_items(items))
  end)

  step(":CtxImpact in a buffer the server does not have asks by the word under the cursor", function()
    -- Its position means nothing to the server: it said "not defined anywhere in the index".
    local call = { "    return send_prepared(method, url, self.timeout)" }
    vim.cmd.edit(vim.fs.dirname(loose_file) .. "/caller.py")
    vim.api.nvim_buf_set_lines(0, 0, -1, false, call)
    vim.api.nvim_win_set_cursor(0, { 1, 14 })
    local items = quickfix_from("CtxImpact", "ctxls impact: send_prepared")
    expect(find_item(items, "pkg/session.py", 10, "^called from Session%.request"), "items: %s", describe_items(items))
    vim.cmd.enew() -- unnamed
    vim.api.nvim_buf_set_lines(0, 0, -1, false, call)
    vim.api.nvim_win_set_cursor(0, { 1, 14 })
    items = quickfix_from("CtxImpact", "ctxls impact: send_prepared")
    expect(find_item(items, "pkg/session.py", 10, "^called from Session%.request"), "items: %s", describe_items(items))
  end)

  -- The buffer stays attached to the repository's client, but the server has
  -- no file of its new name: a position there was answered "not defined anywhere".
  step(":CtxImpact in a repository file renamed without writing asks by the word under the cursor", function()
    vim.cmd.edit(session_path)
    vim.cmd.file(vim.fn.fnameescape(repo .. "/pkg/moved.py"))
    vim.api.nvim_win_set_cursor(0, { 16, 4 }) -- on `send_prepared` in its definition
    local items = quickfix_from("CtxImpact", "ctxls impact: send_prepared")
    -- The caller in pkg/session.py; its item may name the renamed buffer, which
    -- Neovim still takes for that file.
    expect(find_item(items, ".py", 10, "^called from Session%.request"), "items: %s", describe_items(items))
    -- Named as the server has it again: asked by position. On `def`, which
    -- names no symbol, the answer says so of the position, not of the word "def".
    vim.cmd.file(vim.fn.fnameescape(session_path))
    results.notifications = {}
    vim.api.nvim_win_set_cursor(0, { 16, 0 })
    vim.cmd("CtxImpact")
    local said = "ctxls: the symbol under the cursor is not defined anywhere in the index"
    wait_for("the answer for the position", 5000, function()
      return vim.tbl_contains(results.notifications, said)
    end)
  end)

  step(":CtxImpact after :saveas to a file outside the repository asks by the word under the cursor", function()
    vim.cmd.saveas(vim.fn.fnameescape(vim.fs.dirname(loose_file) .. "/copy.py"))
    expect(#vim.lsp.get_clients({ bufnr = 0 }) == 1, "the copy is expected to stay attached")
    vim.api.nvim_win_set_cursor(0, { 16, 4 })
    local items = quickfix_from("CtxImpact", "ctxls impact: send_prepared")
    -- As above, the item of pkg/session.py may name the buffer once named so.
    expect(find_item(items, ".py", 10, "^called from Session%.request"), "items: %s", describe_items(items))
  end)
end

--- The text of :checkhealth ctxls.
local function health_report()
  vim.cmd("checkhealth ctxls")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("tabclose")
  return report
end

local function notified(pattern)
  return vim.iter(results.notifications):any(function(message)
    return message:match(pattern) ~= nil
  end)
end

--- The server starts only once a gate file exists (and writes its pid first),
--- so the steps can act while it is starting, and kill it.
local function lifecycle_suite()
  local folder = vim.fs.dirname(result_path)
  local gate, pid_file = folder .. "/server-gate", folder .. "/server-pid"
  local script = ("echo $$ > %s; while [ ! -e %s ]; do sleep 0.05; done; exec %s -m ctxls.daemon.cli serve"):format(
    vim.fn.shellescape(pid_file), vim.fn.shellescape(gate), vim.fn.shellescape(python))
  require("ctxls").setup({ cmd = { "sh", "-c", script }, init_options = { readyWaitMs = 20000 } })
  local session_buf, client

  local function starting_client()
    return wait_for("a ctxls client that is starting", 10000, function()
      local created = vim.lsp.get_clients({ name = "ctxls", bufnr = session_buf, _uninitialized = true })[1]
      return created and not created.initialized and not created:is_stopped() and created
    end)
  end

  --- Run `command` while the server waits at the gate: it must say the server
  --- is starting and wait, then answer once the gate opens.
  local function answered_after_start(command, title)
    results.notifications = {}
    local previous = vim.fn.getqflist({ id = 0 }).id
    vim.cmd(command)
    wait_for("the notice that the server is starting", 5000, function()
      return notified("^ctxls: the server is starting; the command runs once it is ready$")
    end)
    local starting = starting_client()
    expect(not notified("open a file inside a repository"), "%s blamed the buffer: %s", command,
      vim.inspect(results.notifications))
    expect(vim.fn.getqflist({ id = 0 }).id == previous, "%s was answered before the server started", command)
    vim.fn.writefile({}, gate)
    wait_for(command .. " to fill the quickfix list once the server is up", 20000, function()
      local list = vim.fn.getqflist({ id = 0, title = 1 })
      return list.id ~= previous and list.title == title
    end)
    vim.cmd("cclose")
    return starting
  end

  step("a command while the server starts waits for it, and :checkhealth says it is starting", function()
    vim.cmd.edit(session_path)
    session_buf = vim.api.nvim_get_current_buf()
    starting_client()
    local report = health_report()
    expect(report:match("WARNING client %d+ %(root .-%) is still starting"), "health report:\n%s", report)
    expect(not report:match("open a file inside a repository"), "health report:\n%s", report)
    client = answered_after_start("CtxRecall send prepared request", "ctxls recall: send prepared request")
  end)

  step("a command right after :CtxRestart reaches the new server", function()
    vim.fn.delete(gate)
    vim.cmd("CtxRestart")
    local new = answered_after_start("CtxRecall retry upload", "ctxls recall: retry upload")
    expect(new.id ~= client.id, "the old client %d answered", client.id)
    client = new
  end)

  step("after the server died, commands and :checkhealth name the exit and :CtxRestart", function()
    attached_client(session_buf)
    vim.uv.kill(tonumber(vim.fn.readfile(pid_file)[1]), "sigkill")
    wait_for("the killed server's client to go", 10000, function()
      return #vim.lsp.get_clients({ name = "ctxls", _uninitialized = true }) == 0
    end)
    results.notifications = {}
    vim.cmd("CtxImpact send_prepared")
    wait_for("a message about the dead server", 5000, function()
      return notified("^ctxls: the ctxls server for .- was killed by signal 9: :CtxRestart starts it again")
    end)
    expect(not notified("open a file inside a repository"), "notifications: %s", vim.inspect(results.notifications))
    local report = health_report()
    expect(report:match("ERROR the ctxls server for .- was killed by signal 9"), "health report:\n%s", report)
    expect(not report:match("open a file inside a repository"), "health report:\n%s", report)
  end)
end

-- Below pytest's own timeout, so a hung suite still reports which steps passed.
local SUITE_DEADLINE_MS = 45000
vim.defer_fn(function()
  table.insert(
    results.failed,
    { name = "deadline", error = ("suite still running after %d ms"):format(SUITE_DEADLINE_MS) }
  )
  finish()
end, SUITE_DEADLINE_MS)

-- Scheduled so the steps run after startup (VimEnter), like a user's commands.
vim.schedule(function()
  local suites = { commands = commands_suite, roots = roots_suite, defaults = defaults_suite, missing = missing_suite,
    symbols = symbols_suite, store = store_suite, model = model_suite, lifecycle = lifecycle_suite }
  local ok, err = xpcall(assert(suites[suite], "unknown suite"), debug.traceback)
  if not ok then
    table.insert(results.failed, { name = "suite " .. suite, error = err })
  end
  finish()
end)
