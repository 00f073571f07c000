--- ctxls for Neovim: starts the ctxls language server per repository and
--- adds commands for its custom requests (docs/protocol.md).
---
---   require("ctxls").setup({ ... })   -- see :help ctxls-setup
local client_module = require("ctxls.client")
local config = require("ctxls.config")
local format = require("ctxls.format")
local lens = require("ctxls.lens")
local progress = require("ctxls.progress")

local M = {}

---@type ctxls.Options|nil the resolved options; nil until setup() ran
M.options = nil

local METHOD_NOT_FOUND = -32601

local function notify(message, level)
  vim.notify("ctxls: " .. message, level or vim.log.levels.INFO)
end

local function describe_error(method, err)
  if err.code == METHOD_NOT_FOUND then
    return ("this ctxls server does not implement %s yet; upgrade ctxls"):format(method)
  end
  return ("%s failed: %s"):format(method, err.message)
end

--- How long a command waits for a server that is starting or restarting.
local START_WAIT_MS = 30000
local START_POLL_MS = 100

--- True from :CtxRestart until the new clients exist (vim.lsp.enable creates
--- them in scheduled callbacks): commands wait instead of finding none.
local restarting = false

--- Why no client answers for the current buffer, in words the user can act on.
---@param found ctxls.Lookup|nil what client_module.lookup() found
local function why_no_client(found)
  if not M.options then
    return 'setup() has not been called: add require("ctxls").setup() to your config'
  end
  if not client_module.executable(M.options.cmd) then
    return ("server executable %q not found: install ctxls or set `cmd` in setup() "
      .. "(see :checkhealth ctxls), then :CtxRestart"):format(M.options.cmd[1])
  end
  found = found or {}
  if found.starting then
    return ("the ctxls server has not finished starting after %d s: :LspLog has its output; "
      .. ":CtxRestart starts it again"):format(START_WAIT_MS / 1000)
  end
  if found.root then
    return client_module.describe_unserved(found.root)
      .. ": :CtxRestart starts it again (:LspLog has the server's output)"
  end
  return ("no ctxls server for this buffer: open a file inside a repository (a folder with %s)"):format(
    table.concat(M.options.root_markers, ", ")
  )
end

--- Run `send(client)` with the client for the current buffer
--- (client_module.lookup) once it is ready: a server that is starting or
--- restarting is waited for (the user is told once), else the user is told
--- why there is none. `send` returns false when the client's connection is
--- closing (a restart raced the command): then the lookup is done again.
---@param send fun(client: vim.lsp.Client): boolean|nil
local function with_client(send)
  if not M.options or not client_module.executable(M.options.cmd) then
    notify(why_no_client(), vim.log.levels.ERROR)
    return
  end
  -- The buffers of the moment the command ran, not of when the server is ready.
  local buffers = client_module.context_buffers()
  local waited_ms, told = 0, false
  local function attempt()
    local found = client_module.lookup(buffers, M.options)
    if found.client then
      if send(found.client) ~= false then
        return
      end
      if not client_module.is_stopped(found.client) then
        notify("the request could not be sent to the ctxls server: :CtxRestart starts it again",
          vim.log.levels.ERROR)
        return
      end
      found = client_module.lookup(buffers, M.options)
    end
    -- A buffer just opened gets its client in a callback vim.lsp.enable
    -- schedules: look once more before saying there is none.
    local start_pending = found.root and waited_ms == 0
    if (found.starting or restarting or start_pending) and waited_ms < START_WAIT_MS then
      if not told and not start_pending then
        notify("the server is starting; the command runs once it is ready")
        told = true
      end
      waited_ms = waited_ms + START_POLL_MS
      vim.defer_fn(attempt, START_POLL_MS)
      return
    end
    notify(why_no_client(found), vim.log.levels.ERROR)
  end
  attempt()
end

--- A request unanswered this long gets a "still waiting" notice naming the
--- server's PID and what to do (the CLI gives up on a daemon after 10 s).
M.still_waiting_ms = 10000

--- Send a custom request to the ctxls client of the current buffer; errors are
--- reported to the user, `on_result` only ever sees a successful result. A
--- stopped or hung server answers nothing: the user is told after
--- M.still_waiting_ms, and the answer is still shown if it comes.
---@param method string
---@param params table|fun(client: vim.lsp.Client): table|nil the params, or what makes them for the
--- client (in its position encoding); nil from it cancels the request (it told the user why)
---@param on_result fun(result: any, client: vim.lsp.Client)
local function call(method, params, on_result)
  with_client(function(client)
    local request_params = params
    if type(params) == "function" then
      request_params = params(client)
      if request_params == nil then
        return
      end
    end
    local answered = false
    local sent = client_module.request(client, method, request_params, function(err, result)
      answered = true
      if err then
        notify(describe_error(method, err), vim.log.levels.ERROR)
        return
      end
      on_result(format.present(result), client)
    end)
    if sent then
      vim.defer_fn(function()
        if not answered and not client_module.is_stopped(client) then
          notify(("the ctxls server has not answered %s after %g s: %s"):format(
            method, M.still_waiting_ms / 1000, client_module.not_answering_advice(client)),
            vim.log.levels.WARN)
        end
      end, M.still_waiting_ms)
    end
    return sent
  end)
end

local function show_quickfix(title, items)
  vim.fn.setqflist({}, " ", { title = title, items = items })
  if M.options.open_quickfix and #items > 0 then
    vim.cmd("botright copen")
  end
end

local function jump_to_hit(hit, client)
  if format.present(hit.uri) then
    vim.lsp.util.show_document({ uri = hit.uri, range = hit.range }, client.offset_encoding, { focus = true })
  else -- written memory has no file: show its text
    vim.api.nvim_echo({ { format.present(hit.body) or hit.path } }, true, {})
  end
end

--- Search the index; results go to the quickfix list or vim.ui.select.
---@param query string
---@param opts { picker: "quickfix"|"select"|nil }|nil picker defaults to options.recall.picker
function M.recall(query, opts)
  local picker = (opts and opts.picker) or M.options.recall.picker
  local params = {
    query = query,
    n = M.options.recall.n,
    kind = M.options.recall.kind,
    body = true, -- written memory has no file to show: its text is the result
    scope = M.options.scope,
  }
  call("ctxls/recall", params, function(result, client)
    local hits = format.recall_hits(result, params.n)
    local weak = format.weak(result)
    local title = "ctxls recall: " .. query
    if #hits == 0 then
      notify("nothing found for " .. query)
    elseif weak then
      -- The nearest rows, not an answer (the CLI prints "(weak: …)" and exits 1).
      notify(weak .. "; the hits are only the nearest rows", vim.log.levels.WARN)
      title = ("%s (%s)"):format(title, weak)
    end
    if #hits > 0 and result.partial then
      notify(format.incomplete(result))
    end
    if picker == "select" then
      if #hits > 0 then
        vim.ui.select(hits, { prompt = "ctxls recall: " .. query, format_item = format.hit_select_label }, function(hit)
          if hit then
            jump_to_hit(hit, client)
          end
        end)
      end
      return
    end
    show_quickfix(title, vim.tbl_map(format.hit_to_qf_item, hits))
  end)
end

--- The files a bug report, a log or a stack trace points at, into the
--- quickfix list: each at the line its evidence names, with why.
---@param text string
function M.locate(text)
  call("ctxls/locate", { text = format.locate_text(text), n = M.options.locate.n }, function(result)
    local items = format.located_to_qf_items(result.files or {})
    if #items == 0 then
      notify("no file located for this text")
    elseif result.partial then
      notify(format.incomplete(result))
    end
    show_quickfix("ctxls locate", items)
  end)
end

--- Callers of a symbol (by name, or the one under the cursor) into the
--- quickfix list; risk and hedges echoed.
---@param symbol string|nil
function M.impact(symbol)
  -- Where the cursor is now, not once a starting server is ready.
  local bufnr = vim.api.nvim_get_current_buf()
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local word = vim.fn.expand("<cword>")
  local asked = symbol
  local function params(client)
    if symbol then
      return { symbol = symbol }
    end
    if client_module.serves_buffer(client, bufnr) then
      asked = nil
      return {
        textDocument = { uri = vim.uri_from_bufnr(bufnr) },
        -- The cursor column, counted in the client's position encoding.
        position = {
          line = row - 1,
          character = vim.lsp.util.character_offset(bufnr, row - 1, col, client.offset_encoding),
        },
      }
    end
    -- A buffer the server does not have (outside its repository, unnamed,
    -- renamed or written elsewhere since it was opened): its positions mean
    -- nothing to the server, so ask by name.
    asked = word
    if asked == "" then
      notify("no symbol under the cursor: :CtxImpact {symbol} names one", vim.log.levels.WARN)
      return nil
    end
    return { symbol = asked }
  end
  call("ctxls/impact", params, function(impact, impact_client)
    if not impact then
      notify(("%s is not defined anywhere in the index"):format(asked or "the symbol under the cursor"))
      return
    end
    local items = format.callers_to_qf_items(impact.callers, impact_client.offset_encoding)
    vim.list_extend(items, format.other_definition_qf_items(impact, impact_client.offset_encoding))
    vim.list_extend(items, format.hedge_qf_items(impact.hedges))
    show_quickfix("ctxls impact: " .. impact.symbol, items)
    -- After copen, so opening the window does not wipe the message; one line
    -- cut to the command line's width, so no "Press ENTER" prompt.
    progress.echo(format.impact_echo_chunks(impact), true)
  end)
end

--- Recently edited symbols into the quickfix list, newest first.
function M.recent()
  call("ctxls/recentActivity", { limit = M.options.recent.limit }, function(result, client)
    local activities = result.items
    local title = "ctxls recent activity"
    if #activities == 0 then
      notify("no recent edits")
      show_quickfix(title, {})
      return
    end
    -- Rows name a symbol, not a line: ask the server where each file's symbols are.
    local root = client.root_dir or client.config.root_dir
    local lines_by_path, pending = {}, 0
    local function finish()
      local now_ms = os.time() * 1000
      local items = vim.tbl_map(function(activity)
        return format.activity_to_qf_item(activity, root, lines_by_path[activity.id] or {}, now_ms)
      end, activities)
      show_quickfix(title, items)
    end
    for _, activity in ipairs(activities) do
      if format.present(activity.symbol) and not lines_by_path[activity.id] then
        local path = activity.id
        lines_by_path[path] = {}
        pending = pending + 1
        local params = { textDocument = { uri = vim.uri_from_fname(vim.fs.joinpath(root, path)) } }
        client_module.request(client, "textDocument/documentSymbol", params, function(err, symbols)
          if not err then
            lines_by_path[path] = format.symbol_lines(format.present(symbols))
          end
          pending = pending - 1
          if pending == 0 then
            finish()
          end
        end)
      end
    end
    if pending == 0 then
      finish()
    end
  end)
end

--- Write a fact to the server's memory. The id is derived from the text, so
--- remembering the same sentence twice keeps one fact.
---@param text string
function M.remember(text)
  local params = {
    id = "nvim/" .. vim.fn.sha256(text):sub(1, 16),
    text = text,
    kind = "fact",
    by = "human",
    scope = M.options.scope,
  }
  call("ctxls/remember", params, function()
    notify("remembered: " .. text)
  end)
end

--- The server's `ctxls/status` (index counts, whether indexing runs).
---@param callback fun(status: table)
function M.status(callback)
  call("ctxls/status", vim.empty_dict(), callback)
end

--- The hooks every client is started with (set by setup()).
local hooks

--- Stop every ctxls client, then start the server again for the open buffers
--- (also after installing a missing executable).
function M.restart()
  if not M.options then
    notify(why_no_client(), vim.log.levels.ERROR)
    return
  end
  -- Starting clients too: else enable() would keep them.
  local clients = client_module.all_clients()
  for _, client in ipairs(clients) do
    client_module.stop(client)
    progress.forget(client.id)
  end
  client_module.forget_exits()
  restarting = true
  -- Until Neovim counts them stopped, vim.lsp.enable would reuse them.
  local function all_stopped()
    return vim.iter(clients):all(client_module.neovim_is_stopped)
  end
  local waited_ms, STEP_MS, FORCE_AFTER_MS = 0, 50, 3000
  local function start_again()
    if not all_stopped() and waited_ms < FORCE_AFTER_MS then
      waited_ms = waited_ms + STEP_MS
      vim.defer_fn(start_again, STEP_MS)
      return
    end
    for _, client in ipairs(clients) do
      if not client_module.neovim_is_stopped(client) then
        client_module.stop(client, true)
      end
    end
    if client_module.enable(M.options, hooks) then
      notify(("restarted (%d server(s) stopped)"):format(#clients))
      -- After vim.lsp.enable's own scheduled starts: the new clients exist then.
      vim.schedule(function()
        restarting = false
      end)
    else
      restarting = false
      notify(why_no_client(), vim.log.levels.ERROR)
    end
  end
  start_again()
end

--- For a statusline (lualine: `sections = { lualine_x = { require("ctxls").statusline } }`):
--- what the current buffer's server is doing, e.g. "ctxls: indexing 40% 12/30 files".
---@return string
function M.statusline()
  return progress.statusline(M.options and client_module.get(M.options))
end

local function create_commands()
  local command = vim.api.nvim_create_user_command
  command("CtxRecall", function(args)
    local picker = M.options.recall.picker
    if args.bang then
      picker = picker == "select" and "quickfix" or "select"
    end
    if args.args ~= "" then
      M.recall(args.args, { picker = picker })
      return
    end
    vim.ui.input({ prompt = "ctxls recall: " }, function(query)
      if query and query ~= "" then
        M.recall(query, { picker = picker })
      end
    end)
  end, { nargs = "*", bang = true, desc = "ctxls: search code, docs and memory (! switches picker)" })
  command("CtxLocate", function(args)
    -- The argument first, also with a range (from Visual mode `:` puts
    -- '<,'> before whatever is typed), else the lines of the range.
    local text = args.args
    if text == "" and args.range > 0 then
      text = table.concat(vim.api.nvim_buf_get_lines(0, args.line1 - 1, args.line2, false), "\n")
    elseif text == "" then
      -- The system clipboard when Neovim has one, else the unnamed register
      -- (what was yanked last).
      local ok, clipboard = pcall(vim.fn.getreg, "+")
      text = (ok and clipboard ~= "") and clipboard or vim.fn.getreg('"')
    end
    if vim.trim(text) == "" then
      notify("nothing to locate: give the text, select its lines, or yank it first", vim.log.levels.WARN)
      return
    end
    M.locate(text)
  end, { nargs = "*", range = true, desc = "ctxls: the files a bug report or stack trace points at" })
  command("CtxImpact", function(args)
    M.impact(args.args ~= "" and args.args or nil)
  end, { nargs = "?", desc = "ctxls: callers, risk and hedges of the symbol under the cursor" })
  command("CtxRecent", function()
    M.recent()
  end, { nargs = 0, desc = "ctxls: recently edited symbols" })
  command("CtxRemember", function(args)
    M.remember(args.args)
  end, { nargs = "+", desc = "ctxls: remember a fact" })
  command("CtxRestart", function()
    M.restart()
  end, { nargs = 0, desc = "ctxls: stop the server(s) and start again for the open buffers" })
end

local function on_attach(client, bufnr)
  if M.options.codelens then
    lens.attach(client, bufnr)
  end
  if M.options.on_attach then
    M.options.on_attach(client, bufnr)
  end
end

---@param user_options table|nil see :help ctxls-options
function M.setup(user_options)
  M.options = config.resolve(user_options)
  create_commands()
  if M.options.codelens then
    lens.refresh_after_indexing(client_module.name)
  end
  progress.attach(client_module.name, M.options.progress_messages)
  hooks = {
    on_attach = on_attach,
    handlers = { ["workspace/codeLens/refresh"] = lens.on_refresh_request },
    commands = {
      -- What a resolved code lens runs (vim.lsp.codelens.run()): argument { uri, symbol }.
      ["ctxls.showImpact"] = function(command)
        M.impact(command.arguments[1].symbol)
      end,
    },
  }
  if not client_module.enable(M.options, hooks) then
    notify(why_no_client(), vim.log.levels.WARN)
  end
end

return M
